"""The first call on new tensors of shapes seen before: validate only what depends on addresses.

Full validation (:func:`kernel.validation.validate_problem`) checks every rule of every tensor of
every group: hundreds of microseconds for 8 groups. Most rules depend only on the problem's
*signature*: the config, the problem sizes (values and types), the structure of the tuple, and
each tensor's type, dtype, shape, strides and device. Once a problem passed full validation,
:class:`ShapeTemplates` keeps, per signature, a :class:`ShapeTemplate`: that signature, and what
follows from it alone (the launch plan, the immutable sizes and tile-prefix tables, each tensor's
byte extent, where each pointer goes in the pointer table, the compiled kernel, and the family's
patchable fourth table: the Hopper tensor maps, see :mod:`kernel.tensor_maps`).

A later problem whose signature compares equal, element by element, is valid exactly when the
address rules hold, so :meth:`ShapeTemplate.accept` checks only those:

* every non-empty tensor's data pointer is aligned (``alignment`` rule);
* no output overlaps an input or another output (``aliasing`` rule), by one sorted sweep over
  the byte ranges (the extents come from the template, the starts are the new pointers).

The signature comparison is one C++ call where torch has it: a ``TensorGuards`` object of
``torch._C._dynamo.guards`` (what ``torch.compile`` checks its graphs' tensor arguments with),
built from the validated problem's tensors, checks every tensor's Python type, dispatch keys
(device type included), dtype, device index, ``requires_grad``, sizes and strides, and that no
tensor object appears twice. It is stricter than the comparison it stands for, never looser
(:func:`tensor_guards` tests that on first use and otherwise leaves it out): when it says no,
the element-by-element comparison in Python decides, so the accepted set is exactly the same.
The address rules run on the pointers as one numpy array (the pointer table's gather reads the
same array).

Everything else is a miss: a signature not seen, any element that differs (a stride of a
size-1 dimension, a subclass, a non-tensor), an address rule broken, any exception. A miss takes
the full path, which raises the error :func:`validate_problem` raises; so this path can only
accept problems that full validation accepts, and it never names an error itself.

Where the native module of :mod:`kernel.native_probe` is loaded, a first call runs
:meth:`ShapeTemplate.accept` and the table block of
:meth:`kernel.host_pipeline.HostPipeline.seen_tables` as one C++ pass (``SEEN_TABLES``, on the
template's ``native_state``): the same structure and signature comparison (that of
:meth:`ShapeTemplate.signature_matches`, for exact lists/tuples and exact tensors), the same
pointers, the same alignment and overlap arithmetic, the same block bytes. It accepts or returns
None; on None :meth:`ShapeTemplate.accept` decides, so the accepted set and every error stay the
Python path's (properties/test_native_seen_properties.py).
"""

from __future__ import annotations

import operator
import os
from collections import OrderedDict
from dataclasses import dataclass, field
from itertools import chain
from typing import Any, Sequence

import numpy as np
import torch

from kernel import native_probe
from kernel.plan import LaunchPlan
from kernel.tables import POINTER_COLUMNS
from kernel.validation import GroupTensors, KernelConstraints, _byte_range

_Tensor = torch.Tensor
_DTYPE = operator.attrgetter("dtype")
_SIZE = _Tensor.size  # method descriptors: raise TypeError on anything that is not a tensor
_STRIDE = _Tensor.stride
_DEVICE = operator.attrgetter("device")  # type and index (a meta tensor is not a CPU one)
_PTR = _Tensor.data_ptr
_flat = chain.from_iterable
_HIGH_ADDRESS = -(1 << 61)  # as a mask: every bit from 61 up

# where each tensor of group g sits in the flat list (kernel.fast_path.flatten), G groups
_COLUMN_OFFSET = {"a": (0, 3), "b": (1, 3), "c": (2, 3), "sfa": (3, 2), "sfb": (4, 2),
                  "sfa_blocked": (5, 2), "sfb_blocked": (6, 2)}


def flat_index(column: str, group: int, num_groups: int) -> int:
    """Index of ``column`` of group ``group`` in the flat tensor list of a ``num_groups`` problem."""
    pos, width = _COLUMN_OFFSET[column]
    if pos < 3:
        return width * group + pos
    return 3 * num_groups + 2 * num_groups * ((pos - 3) // 2) + 2 * group + (pos - 3) % 2


# torch's batched tensor check (see the module docstring); None where this torch has none that
# behaves as tensor_guards expects. NVFP4_TENSOR_GUARDS=0 leaves it out (the Python comparison only).
_GUARDS: list = []  # [the TensorGuards class or None], decided on first use


def tensor_guards():
    """torch's ``TensorGuards`` class when it exists and passes a self-test of what
    :meth:`ShapeTemplate.accept` relies on, else None."""
    if not _GUARDS:
        _GUARDS.append(_checked_tensor_guards() if os.environ.get("NVFP4_TENSOR_GUARDS", "1") != "0" else None)
    return _GUARDS[0]


def _checked_tensor_guards():
    try:
        from torch._C._dynamo.guards import TensorGuards

        a = torch.zeros((1, 4, 6), dtype=torch.uint8).permute(1, 2, 0)  # strides (6, 1, 24)
        b = torch.zeros((3, 2), dtype=torch.float16)
        guard = TensorGuards(a, b, dynamic_dims_sizes=None, dynamic_dims_strides=None)

        class Sub(torch.Tensor):
            pass

        same = [(a.clone().as_strided(a.shape, a.stride()), b.clone())]
        differ = [
            (a.view(torch.int8), b), (a, b.view(torch.int16)),  # dtype
            (a[:3], b), (a, b.reshape(2, 3)), (a, b[:, :1]),  # shape
            (torch.zeros((4, 6, 1), dtype=torch.uint8), b),  # strides of a size-1 mode
            (a, b.t().contiguous().t()),  # strides
            (a.to("meta"), b), (a, b.to("meta")),  # device type
            (a.as_subclass(Sub), b), (a, 1), (a, None),  # type
            (a, a),  # one object twice
        ]
        ok = all(guard.check(*t) is True for t in same) and all(guard.check(*t) is False for t in differ)
        return TensorGuards if ok else None
    except Exception:  # absent, or another signature: the Python comparison does it all
        return None


def make_guard(tensors: list) -> Any:
    """A ``TensorGuards`` of ``tensors`` (flat), or None: no usable class, or a tensor object
    appears twice (the guard refuses every such problem: only the Python comparison can pass it)."""
    cls = tensor_guards()
    if cls is None or len(set(map(id, tensors))) != len(tensors):
        return None
    try:
        guard = cls(*tensors, dynamic_dims_sizes=None, dynamic_dims_strides=None)
        return guard if guard.check(*tensors) is True else None
    except Exception:
        return None


class OverlapCheck:
    """The aliasing rule on one signature's byte ranges: no output overlaps any other range.

    ``spans``: per non-empty tensor, (byte extent, is an output). :meth:`ok` takes the ranges'
    starts as an int64 array and compares every output with every range at once (the pairwise
    rule of kernel.validation, as numpy broadcasts): ``[lo1, hi1)`` and ``[lo2, hi2)`` overlap
    exactly when ``|(lo1 + hi1) - (lo2 + hi2)| < (hi1 - lo1) + (hi2 - lo2)``, whose right side is
    fixed per signature (zero for an output against itself). Starts below 2^61 and extents below
    2^48 cannot overflow it (:meth:`ShapeTemplate.accept` sends higher addresses the full way)."""

    def __init__(self, spans: Sequence[tuple[int, bool]]):
        self.extents = np.array([e for e, _ in spans], dtype=np.int64)
        out = np.array([i for i, (_, o) in enumerate(spans) if o], dtype=np.int64)
        self.outputs = out
        self.limits = self.extents[out][:, None] + self.extents[None, :]
        self.limits[np.arange(len(out)), out] = 0

    def ok(self, starts: np.ndarray) -> bool:
        if not len(self.outputs):
            return True
        centers = starts + starts
        centers += self.extents
        distance = np.subtract.outer(centers[self.outputs], centers)
        return not (np.abs(distance, out=distance) < self.limits).any()


def signature_key(config: Any, sizes: Any) -> tuple | None:
    """(config identity, sizes as int tuples), or None when a size is not a tuple of plain ints
    (full validation judges those)."""
    try:
        key = tuple(map(tuple, sizes))
    except TypeError:
        return None
    if set(map(type, _flat(key))) - {int}:
        return None
    return (id(config), key)


class AuxTemplate:
    """A family's fourth table for new addresses, from bytes fixed per signature (kernel.tensor_maps)."""

    nbytes: int
    shape: tuple  # of the device table (a uint8 view of the bytes)
    element: str = "uint8"

    def fill(self, out: np.ndarray, pointers: np.ndarray) -> None:
        """Write the table for the flat pointer array ``pointers`` into ``out`` (uint8, ``nbytes``)."""
        raise NotImplementedError

    def patches(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """``(bytes, words, sources)`` when the table is ``bytes`` (uint8, ``nbytes``) with the
        flat pointers ``pointers[sources]`` written at the 64-bit words ``words`` (what
        :meth:`fill` does, as index arrays the pipeline merges into one gather); None: call
        :meth:`fill`."""
        return None


@dataclass
class ShapeTemplate:
    caller_config: Any  # the config object callers pass; held, so that its id in the key cannot be reused
    config: Any  # resolved
    sizes: tuple
    num_groups: int
    lens: list[int]  # tensors per entry of abc, sfs, blocked (3, ..., 2, ..., 2, ...)
    dtypes: list
    shapes: list
    strides: list
    devices: list
    nonempty: list[int]  # flat indices of tensors with elements
    spans: list[tuple[int, bool]]  # per non-empty tensor: (byte extent, is an output)
    align_mask: int
    plan: LaunchPlan
    pointer_index: np.ndarray  # [slots, 5] flat indices, POINTER_COLUMNS in slot order
    sizes_table: Any = None  # device tensors, immutable (shared by every problem of the signature)
    prefix_table: Any = None
    compiled: Any = None
    aux: AuxTemplate | None = None
    aux_per_problem: bool = False  # the family has a fourth table but no template of it
    launch_protos: dict = field(default_factory=dict)  # stream -> LaunchArgs to rebase (host_pipeline)
    stats: dict = field(default_factory=lambda: {"accepted": 0, "rejected": 0})
    guard: Any = None  # torch's TensorGuards of the learned tensors (None: the Python comparison alone)
    overlap: OverlapCheck | None = None  # built from ``spans``
    layout: Any = field(default=None, repr=False)  # host_pipeline.TableLayout, built on first use
    # the native pass's capsule (kernel.native_probe.SEEN_STATE), built on first use; False: none
    native_state: Any = field(default=None, repr=False)

    @classmethod
    def learn(cls, caller_config: Any, config: Any, sizes: tuple, tensors: list,
              constraints: KernelConstraints, plan: LaunchPlan) -> "ShapeTemplate":
        """The template of a problem that just passed full validation (``tensors``: flat)."""
        g = len(sizes)
        ranges = [_byte_range(t) for t in tensors]
        nonempty = [i for i, r in enumerate(ranges) if r is not None]
        outputs = {flat_index("c", j, g) for j in range(g)}
        index = np.array([[flat_index(col, grp, g) for col in POINTER_COLUMNS] for grp in plan.group_order],
                         dtype=np.int64).reshape(-1, len(POINTER_COLUMNS))
        spans = [(ranges[i][1] - ranges[i][0], i in outputs) for i in nonempty]
        return cls(
            caller_config=caller_config, config=config, sizes=sizes, num_groups=g, lens=[3] * g + [2] * g + [2] * g,
            dtypes=list(map(_DTYPE, tensors)), shapes=list(map(_SIZE, tensors)),
            strides=list(map(_STRIDE, tensors)), devices=list(map(_DEVICE, tensors)),
            nonempty=nonempty, spans=spans,
            align_mask=constraints.alignment_bytes - 1, plan=plan, pointer_index=index,
            guard=make_guard(tensors), overlap=OverlapCheck(spans),
        )

    def __post_init__(self):
        # the non-empty tensors' flat indices, or None when every tensor has elements (no gather)
        self._nonempty = None if len(self.nonempty) == len(self.dtypes) else np.array(self.nonempty, dtype=np.int64)
        if self.overlap is None:
            self.overlap = OverlapCheck(self.spans)

    def signature_matches(self, tensors: list) -> bool:
        """The element-by-element comparison (raises on a non-tensor)."""
        return (list(map(_DTYPE, tensors)) == self.dtypes
                and list(map(_SIZE, tensors)) == self.shapes
                and list(map(_STRIDE, tensors)) == self.strides
                and list(map(_DEVICE, tensors)) == self.devices)

    def accept(self, data: Any, tensors: list) -> np.ndarray | None:
        """The problem's flat data pointers (int64 array) when its signature matches and the
        address rules hold, else None."""
        try:
            abc, sfs, blocked, _ = data
            # every list holds num_groups entries (not only the same entry lengths in a row: an
            # entry moved from abc's list to sfs's keeps those) of 3, 2 and 2 tensors
            g = self.num_groups
            if len(abc) != g or len(sfs) != g or len(blocked) != g or list(map(len, chain(abc, sfs, blocked))) != self.lens:
                return self._reject()
            guard = self.guard
            # the guard's yes implies the comparison's; its no (stricter) leaves the decision to it
            if (guard is None or guard.check(*tensors) is not True) and not self.signature_matches(tensors):
                return self._reject()
            pointers = np.fromiter(map(_PTR, tensors), dtype=np.int64, count=len(tensors))
        except Exception:
            return self._reject()
        starts = pointers if self._nonempty is None else pointers[self._nonempty]
        # one OR of every start: the alignment rule, and no address at or above 2^61 (those take
        # the full path; below it the overlap arithmetic cannot overflow)
        if len(starts) and int(np.bitwise_or.reduce(starts)) & (self.align_mask | _HIGH_ADDRESS):
            return self._reject()
        if not self.overlap.ok(starts):
            return self._reject()
        self.stats["accepted"] += 1
        return pointers

    def _reject(self) -> None:
        self.stats["rejected"] += 1
        return None

    def groups(self, tensors: list) -> "LazyGroups":
        """The problem unpacked per group (what full validation returns), built on first use from
        its flat tensor list ``tensors`` (:func:`kernel.fast_path.flatten` order; kept, not copied:
        the pipeline's own list, which nothing changes)."""
        return LazyGroups(tensors, self.sizes)


class LazyGroups(Sequence):
    """``list[GroupTensors]`` of an accepted problem, built when first read (most launches never do)."""

    def __init__(self, tensors: list, sizes: tuple):
        # the flat list (flatten order), not the caller's outer lists: a caller that edits those
        # after the call changes nothing here
        self._tensors, self._sizes, self._groups = tensors, sizes, None

    def _build(self) -> list[GroupTensors]:
        if self._groups is None:
            t, sizes = self._tensors, self._sizes
            g = len(sizes)
            self._groups = [GroupTensors(t[3 * j], t[3 * j + 1], t[3 * j + 2], t[3 * g + 2 * j], t[3 * g + 2 * j + 1],
                                         t[5 * g + 2 * j], t[5 * g + 2 * j + 1], sizes[j]) for j in range(g)]
            self._tensors = None
        return self._groups

    def __getitem__(self, i):
        return self._build()[i]

    def __len__(self) -> int:
        return len(self._sizes)


def _outputs_disjoint(starts: Sequence[int], spans: Sequence[tuple[int, bool]]) -> bool:
    """No output range overlaps any other range (inputs may overlap each other).

    Sorted by start, a range overlaps an earlier one exactly when it starts before the largest
    end seen so far; an output must start after every earlier end, an input after every earlier
    output's end."""
    last_end = last_output_end = 0
    for lo, (extent, is_output) in sorted(zip(starts, spans)):
        hi = lo + extent
        if is_output:
            if lo < last_end:
                return False
            if hi > last_output_end:
                last_output_end = hi
        elif lo < last_output_end:
            return False
        if hi > last_end:
            last_end = hi
    return True


class ShapeTemplates:
    """Bounded LRU of :class:`ShapeTemplate` by :func:`signature_key`."""

    def __init__(self, capacity: int = 64):
        self.capacity = capacity
        self._entries: OrderedDict[tuple, ShapeTemplate] = OrderedDict()

    def find(self, config: Any, sizes: Any) -> ShapeTemplate | None:
        native = native_probe.SIZES_KEY  # the same key in one C call, or None: the Python one decides
        sizes_part = native(sizes) if native is not None else None
        key = (id(config), sizes_part) if sizes_part is not None else signature_key(config, sizes)
        hit = self._entries.get(key) if key is not None else None
        if hit is not None and hit.caller_config is config:
            return hit
        return None

    def store(self, template: ShapeTemplate) -> None:
        key = (id(template.caller_config), template.sizes)
        self._entries[key] = template
        self._entries.move_to_end(key)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()
