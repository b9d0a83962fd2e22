"""The host fast path: a repeated ``custom_kernel(data)`` costs an identity check and the launch.

A full call validates every tensor of every group (hundreds of microseconds for 8 groups), plans,
looks up the tables and marshals the kernel's arguments. A benchmark, a model or the
leaderboard calls the kernel again and again with the same tensors; this cache remembers, per
problem, the ready-made launch (:class:`kernel.host_pipeline.LaunchArgs`: the validated plan's
device tables, tensor maps and marshalled arguments).

**The key is the identity of the caller's objects**, not their values:

* every tensor of the problem, by ``id``; the entry holds a weak reference to each one whose
  callback evicts the entry when the tensor is freed, so an ``id`` found in the cache always
  names the very object that was validated (a freed tensor whose address, or whose ``id``, is
  reused by a new one can never hit);
* the structure of the tuple (how many group entries each of its three lists holds, and how many
  tensors each entry holds: the same tensors in the same flat order, grouped differently, never
  hit); the problem sizes
  (:func:`sizes_key`: the size tuples by identity, held by the entry, or by value and type); the
  config object (held, so its ``id`` cannot be reused); the current CUDA stream;
* each tensor's **metadata**, not its values (:func:`metadata`): its data pointer, dtype,
  device, sizes and strides. That is everything the entry was derived from: validation's rules on
  a tensor read only these (and its type, which an object keeps), the device tables hold the
  data pointers and the problem sizes, the tensor maps hold pointers, sizes and strides, the
  per-shape config is chosen from the problem sizes (a Python list of tuples, never a tensor), and
  the kernel reads the scales, like every operand, through pointers. No value of any tensor is
  read on the way to a launch, so a call whose tensors were only written in place (new A, B,
  scales; a poisoned C) hits and launches on the new values.

  Checking the metadata of every tensor costs more than the identity check itself, so the version
  counters (``Tensor._version``) vouch for it first: PyTorch bumps a tensor's counter on every
  in-place operation, including those that change metadata in place (``resize_``,
  ``as_strided_``, ``set_``, ``transpose_``...), and counters only grow, so an unchanged sum of the
  counters means no in-place operation since the entry was stored or last checked: a hit. A
  changed sum (values written in place, or metadata changed) compares the metadata with the
  entry's (:attr:`FastPathStats.rechecked` counts the hits it gives; the entry then keeps the new
  sum); different metadata is a miss, and the miss path validates again.

A hit therefore only happens for the same tensor objects, with the metadata of a call that
passed full validation, with the same sizes, config and stream; every bad problem takes the miss
path and gets the same typed error as without the cache. Values written through another view of
the same memory need nothing either: the kernel reads memory, the cache holds only addresses.

The key's walk over the problem (flatten, ids, lengths, sizes, the sum of the version counters)
is done in one C++ pass by the optional native probe (:mod:`kernel.native_probe`) once it is built
and loaded (in the background; ``NVFP4_NATIVE_PROBE=0`` turns it off): it returns the very key
bytes and sum the Python walk computes, or None for any problem of another shape, which the
Python walk then decides, so the decisions never depend on which probe ran. A store's version sum
and weak references (``REFS``) and the metadata bytes (``METADATA``) come from the same module
where it is loaded, the same way: the very bytes :func:`metadata` computes, or None (then the
Python function decides).

Not detected: replacing a tensor's storage behind its back with ``tensor.data = other`` or
``torch.utils.swap_tensors`` (neither bumps the version counter, so the metadata is not compared
while the counters stay put). Call :meth:`FastPath.clear` (``kernel.family.clear_caches()``)
after doing that.
"""

from __future__ import annotations

import operator
import struct
import threading
import weakref
from array import array
from collections import OrderedDict
from dataclasses import dataclass, field, fields
from itertools import chain, repeat
from typing import Any, Callable

import torch

from kernel import native_probe

_getter = getattr(torch._C, "_cuda_getCurrentStream", None)
_flat = chain.from_iterable


def build_native(verbose: bool = True) -> bool:
    """Build (unless cached) and load the native probe now, blocking (see
    :mod:`kernel.native_probe`); True when the fast path now probes natively."""
    return native_probe.build_native(verbose)


def probe_in_use() -> str:
    """Which probe :meth:`FastPath.probe` uses now: ``native``, or ``python (why)``."""
    return native_probe.describe()


def current_stream_id(device_index: int) -> Any:
    """A cheap identifier of torch's current stream on ``device_index`` (no Stream object)."""
    if _getter is not None:
        return _getter(device_index)[0]
    return torch.cuda.current_stream(device_index).cuda_stream


def flatten(data: Any) -> list:
    """The problem's tensors in a fixed order: every (a, b, c), then (sfa, sfb), then the blocked pair."""
    abc, sfs, blocked, _ = data
    return [*_flat(abc), *_flat(sfs), *_flat(blocked)]


_VERSION = operator.attrgetter("_version")
_SIZE = torch.Tensor.size  # method descriptors: raise TypeError on anything that is not a tensor
_STRIDE = torch.Tensor.stride
_PTR = torch.Tensor.data_ptr
_DTYPE = operator.attrgetter("dtype")
_DEVICE = operator.attrgetter("device")
_pack = struct.pack


def metadata(tensors: list) -> bytes | None:
    """What a launch derived from ``tensors`` depends on, as bytes (native-endian signed 64-bit
    words): every tensor's data pointer, then every ``id(dtype)`` (dtypes are singletons), every
    ``hash(device)`` (its type and index), every number of dimensions, then all sizes and all
    strides; None when a tensor has none of these (no storage, not a tensor, a pointer past
    2^63): such an entry is never refreshed. The native module's ``metadata`` returns these very
    bytes (properties/test_native_probe_properties.py)."""
    try:
        sizes = list(map(_SIZE, tensors))
        strides = list(map(_STRIDE, tensors))
        words = [*map(_PTR, tensors), *map(id, map(_DTYPE, tensors)), *map(hash, map(_DEVICE, tensors)),
                 *map(len, sizes), *_flat(sizes), *_flat(strides)]
        return _pack(f"{len(words)}q", *words)  # one C call (an array from an iterator appends per word)
    except Exception:
        return None


_TUPLES = {tuple}


def sizes_key(sizes: Any) -> tuple:
    """The problem sizes as a key that tells ``1`` from ``1.0`` and ``True``.

    Tuples (the usual ``problem_sizes`` entries) are immutable: they are keyed by identity, and
    an :class:`Entry` holds them, so an identity in the cache always names the same tuple
    (whose contents passed validation). Other entries (lists) are keyed by value *and* type.
    """
    if set(map(type, sizes)) == _TUPLES:
        return ("id", *map(id, sizes))
    return ("value", *(tuple((type(x), x) for x in s) for s in sizes))


assert array("Q").itemsize == 8


def identity_key(data: Any, config: Any, tensors: list | None = None) -> bytes | tuple | None:
    """The key :meth:`FastPath.probe` computes, or None when ``data`` is not shaped like a problem:
    the config's id, the structure (how many group entries each of ``abc``, ``sfs``, ``blocked``
    holds and how many tensors each entry holds, so that regrouped tensors never hit, within a
    list or across lists), every tensor's id and :func:`sizes_key`.

    With size tuples (the usual case) it is these numbers as bytes (native-endian 64-bit words,
    in that order; the counts say where each part ends), the very bytes the native probe
    (:mod:`kernel.native_probe`) builds; with other sizes a tuple (never equal to bytes)."""
    try:
        abc, sfs, blocked, sizes = data
        if tensors is None:
            tensors = [*_flat(abc), *_flat(sfs), *_flat(blocked)]
        if set(map(type, sizes)) == _TUPLES:  # sizes_key, inline (the probe's hot path)
            return array("Q", (id(config), len(abc), len(sfs), len(blocked), *map(len, abc), *map(len, sfs),
                               *map(len, blocked), *map(id, tensors), *map(id, sizes))).tobytes()
        return (id(config), len(abc), len(sfs), len(blocked), *map(len, abc), *map(len, sfs), *map(len, blocked),
                *map(id, tensors), *sizes_key(sizes))
    except Exception:  # anything odd goes the full way, where validation names the problem
        return None


@dataclass
class Entry:
    launch_args: Any  # kernel.host_pipeline.LaunchArgs
    # the sum of the tensors' version counters: each counter only ever grows (every in-place op
    # bumps it), so an unchanged sum means no in-place op since it was taken (the ids pin the
    # tensors themselves); a changed sum compares ``meta`` and, where equal, takes the new sum
    versions: int
    meta: bytes | None  # metadata(tensors) when stored (None: never refreshed)
    device_index: int
    stream_id: Any
    config: Any  # held, so that id(config) in the key cannot be reused
    refs: list = field(repr=False)
    keep: Any = field(default=None, repr=False)  # device tables the marshalled arguments point to
    sizes: Any = field(default=None, repr=False)  # held, so that the size tuples' ids cannot be reused
    outputs_slice: Any = None  # where the c tensors sit in the flat list

    def outputs(self, tensors: list) -> list:
        """The caller's c tensors, caller order (the objects passed in this call), from the
        flat list :meth:`FastPath.probe` returned."""
        return tensors[self.outputs_slice]


# FastPath.store builds entries without the dataclass __init__, from every one of these fields
assert [f.name for f in fields(Entry)] == ["launch_args", "versions", "meta", "device_index", "stream_id", "config",
                                           "refs", "keep", "sizes", "outputs_slice"]


@dataclass
class FastPathStats:
    hits: int = 0
    misses: int = 0
    stores: int = 0
    evictions: int = 0  # a tensor of the entry was freed, or the LRU was full
    # hits after an in-place write to a tensor of the entry (its version sum had moved): the
    # metadata compared equal (counted in ``hits`` too)
    rechecked: int = 0


class FastPath:
    """Bounded LRU of ready launches keyed by problem identity (see the module docstring)."""

    def __init__(self, capacity: int = 64, *, stream_id: Callable[[int], Any] | None = None, native: bool = True):
        self.capacity = capacity
        # the native probe (kernel.native_probe) once it is loaded, unless native=False;
        # switching it on or off never changes a decision (same key, same sum of versions)
        self.native = native
        if native:
            native_probe.start()
        self._stream_id = stream_id or current_stream_id
        self.stats = FastPathStats()
        self._entries: OrderedDict[bytes | tuple, Entry] = OrderedDict()
        self._entries_ref = weakref.ref(self._entries)  # what an entry's eviction callback holds
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def probe(self, data: Any, config: Any, stream: Any = None) -> tuple[Entry | None, list | None, tuple | None]:
        """``(entry or None, the flat tensors, the key)``: the entry of this very problem, and
        what was computed on the way (the miss path reuses it)."""
        native = native_probe.PROBE if self.native else None
        if native is not None:
            try:
                walked = native(data, config)  # (key, sum of versions, flat tensors) or None
            except Exception:
                walked = None
            if walked is not None:
                key, versions, tensors = walked
                return self._lookup(key, tensors, versions, stream)
        try:
            abc, sfs, blocked, _ = data
            tensors = [*_flat(abc), *_flat(sfs), *_flat(blocked)]
        except Exception:  # anything odd goes the full way, where validation names the problem
            self.stats.misses += 1
            return None, None, None
        key = identity_key(data, config, tensors)
        if key is None:
            self.stats.misses += 1
            return None, None, None
        return self._lookup(key, tensors, None, stream)

    def _lookup(self, key: tuple, tensors: list, versions: int | None, stream: Any):
        """``probe``'s answer for ``key``: the entry when it is fresh (the same stream, and the
        same version sum, computed here when ``versions`` is None, or else the same metadata),
        else a miss."""
        entry = self._entries.get(key)
        if entry is not None:
            try:
                if versions is None:
                    versions = sum(map(_VERSION, tensors))
                fresh = (self._stream_id(entry.device_index) if stream is None
                         else _explicit_stream_id(stream)) == entry.stream_id
                if fresh and versions != entry.versions:  # written in place since: compare the metadata
                    meta = self.metadata(tensors)
                    fresh = meta is not None and meta == entry.meta
                    if fresh:
                        entry.versions = versions
                        self.stats.rechecked += 1
            except Exception:
                fresh = False
            if fresh:
                self.stats.hits += 1
                return entry, tensors, key
        self.stats.misses += 1
        return None, tensors, key

    def metadata(self, tensors: list) -> bytes | None:
        """:func:`metadata` of ``tensors``, in one C call where the native module is loaded."""
        native = native_probe.METADATA if self.native else None
        meta = native(tensors) if native is not None else None
        return meta if meta is not None else metadata(tensors)

    def store(self, data: Any, config: Any, stream: Any, launch_args: Any, keep: Any = None,
              tensors: list | None = None, key: tuple | None = None) -> None:
        if key is None:
            key = identity_key(data, config)
            if key is None:
                return
            tensors = flatten(data)
        # a launched problem's tensors are all on one device: its first tensor's says which (the
        # CUDA index, else 0; no torch.device made)
        first = tensors[0] if tensors else None
        device_index = first.get_device() if first is not None and first.is_cuda else 0
        evict = self._evictor(key)
        # the version sum and the weak references in one C call (kernel.native_probe.REFS), or
        # None: the Python code below decides (it raises RuntimeError on inference tensors)
        native = native_probe.REFS if self.native else None
        made = native(tensors, evict) if native is not None else None
        try:
            if made is None:
                made = (sum(map(_VERSION, tensors)), list(map(weakref.ref, tensors, repeat(evict, len(tensors)))))
            # Entry(...) without the dataclass __init__ (every field given; equal field for field)
            entry = object.__new__(Entry)
            entry.__dict__ = {
                "launch_args": launch_args, "versions": made[0], "meta": self.metadata(tensors),
                "device_index": device_index,
                "stream_id": self._stream_id(device_index) if stream is None else _explicit_stream_id(stream),
                "config": config, "refs": made[1], "keep": keep, "sizes": list(data[3]),
                "outputs_slice": slice(2, 3 * len(data[3]), 3)}
        except RuntimeError:
            return  # inference-mode tensors have no version counter: such problems always take the full path
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            self.stats.stores += 1
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
                self.stats.evictions += 1

    def _evictor(self, key: tuple):
        entries = self._entries_ref
        stats = self.stats

        def evict(_ref):
            d = entries()
            if d is not None and d.pop(key, None) is not None:
                stats.evictions += 1

        return evict

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


def _explicit_stream_id(stream: Any) -> Any:
    """The key of a stream the caller passed: its raw handle."""
    if isinstance(stream, int):
        return ("handle", stream)
    handle = getattr(stream, "cuda_stream", None)
    return ("handle", int(handle if handle is not None else stream))
