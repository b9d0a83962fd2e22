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

Everything else is a miss: a signature not seen, any element that differs (a stride of a
size-1 dimension, a subclass, a non-tensor), an address rule broken, any exception. A miss takes
the full path, which raises the error :func:`validate_problem` raises; so this path can only
accept problems that full validation accepts, and it never names an error itself.
"""

from __future__ import annotations

import functools
import operator
from collections import OrderedDict
from dataclasses import dataclass, field
from itertools import chain
from typing import Any, Sequence

import numpy as np
import torch

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

# where each tensor of group g sits in the flat list (kernel.fast_path.flatten), G groups
_COLUMN_OFFSET = {"a": (0, 3), "b": (1, 3), "c": (2, 3), "sfa": (3, 2), "sfb": (4, 2),
                  "sfa_blocked": (5, 2), "sfb_blocked": (6, 2)}


def flat_index(column: str, group: int, num_groups: int) -> int:
    """Index of ``column`` of group ``group`` in the flat tensor list of a ``num_groups`` problem."""
    pos, width = _COLUMN_OFFSET[column]
    if pos < 3:
        return width * group + pos
    return 3 * num_groups + 2 * num_groups * ((pos - 3) // 2) + 2 * group + (pos - 3) % 2


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
        return cls(
            caller_config=caller_config, config=config, sizes=sizes, num_groups=g, lens=[3] * g + [2] * g + [2] * g,
            dtypes=list(map(_DTYPE, tensors)), shapes=list(map(_SIZE, tensors)),
            strides=list(map(_STRIDE, tensors)), devices=list(map(_DEVICE, tensors)),
            nonempty=nonempty,
            spans=[(ranges[i][1] - ranges[i][0], i in outputs) for i in nonempty],
            align_mask=constraints.alignment_bytes - 1, plan=plan, pointer_index=index,
        )

    def accept(self, data: Any, tensors: list) -> list[int] | None:
        """The problem's flat data pointers when its signature matches and the address rules
        hold, else None."""
        try:
            abc, sfs, blocked, _ = data
            if (list(map(len, chain(abc, sfs, blocked))) != self.lens
                    or list(map(_DTYPE, tensors)) != self.dtypes
                    or list(map(_SIZE, tensors)) != self.shapes
                    or list(map(_STRIDE, tensors)) != self.strides
                    or list(map(_DEVICE, tensors)) != self.devices):
                return self._reject()
            pointers = list(map(_PTR, tensors))
        except Exception:
            return self._reject()
        starts = list(map(pointers.__getitem__, self.nonempty))
        if starts and functools.reduce(operator.or_, starts) & self.align_mask:
            return self._reject()
        if not _outputs_disjoint(starts, self.spans):
            return self._reject()
        self.stats["accepted"] += 1
        return pointers

    def _reject(self) -> None:
        self.stats["rejected"] += 1
        return None

    def groups(self, data: Any) -> "LazyGroups":
        """The problem unpacked per group (what full validation returns), built on first use."""
        return LazyGroups(data, self.sizes)


class LazyGroups(Sequence):
    """``list[GroupTensors]`` of an accepted problem, built when first read (most launches never do)."""

    def __init__(self, data: Any, sizes: tuple):
        # the outer lists are copied: a caller that edits them after the call changes nothing here
        self._data = (tuple(data[0]), tuple(data[1]), tuple(data[2]), None)
        self._sizes, self._groups = sizes, None

    def _build(self) -> list[GroupTensors]:
        if self._groups is None:
            abc, sfs, blocked, _ = self._data
            self._groups = [GroupTensors(*abc[j], *sfs[j], *blocked[j], self._sizes[j])
                            for j in range(len(self._sizes))]
            self._data = None
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
        key = signature_key(config, sizes)
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
