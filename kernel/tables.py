"""Device-side tables a grouped kernel reads: sizes, tile prefix sums and pointers, in slot order.

Why a cache keyed by the pointers themselves: a graph-captured or back-to-back launch must not
pay a host-to-device copy per call, but a table must never be stale when the caller passes new
tensors of the same shapes (the seed kernel refreshed a reused buffer with a non-blocking copy
from pageable memory, which can race the kernel still reading it). Here every distinct
(plan, pointers) pair gets its own freshly allocated device tensor, filled by a blocking copy,
and is never written again; a hit returns the same immutable tensors.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Sequence

import torch

from kernel.plan import LaunchPlan
from kernel.validation import GroupTensors

POINTER_COLUMNS = ("a", "b", "c", "sfa_blocked", "sfb_blocked")


@dataclass(frozen=True)
class DeviceTables:
    sizes: torch.Tensor  # int32 [G, 4]: (m, n, k, l) per slot
    tile_prefix: torch.Tensor  # int32 [G + 1]
    pointers: torch.Tensor  # int64 [G, 5]: POINTER_COLUMNS per slot


def slot_pointers(plan: LaunchPlan, groups: Sequence[GroupTensors]) -> tuple[tuple[int, ...], ...]:
    return tuple(
        tuple(getattr(groups[g], col).data_ptr() for col in POINTER_COLUMNS) for g in plan.group_order
    )


@dataclass
class TableStats:
    hits: int = 0
    builds: int = 0


class ImmutableLru:
    """LRU of values that are built once per key and never written after (device tables, tensor
    maps): ``get(key, build)`` returns the cached value or builds, stores and returns it."""

    def __init__(self, capacity: int = 256):
        self.capacity = capacity
        self.stats = TableStats()
        self._entries: OrderedDict = OrderedDict()

    def get(self, key, build):
        hit = self._entries.get(key)
        if hit is not None:
            self._entries.move_to_end(key)
            self.stats.hits += 1
            return hit
        value = build()
        self._entries[key] = value
        self.stats.builds += 1
        if len(self._entries) > self.capacity:
            self._entries.popitem(last=False)
        return value

    def clear(self) -> None:
        self._entries.clear()


class TableCache(ImmutableLru):
    """:class:`DeviceTables` keyed by (plan, pointers, device)."""

    def get(self, plan: LaunchPlan, groups: Sequence[GroupTensors], device: torch.device) -> DeviceTables:
        pointers = slot_pointers(plan, groups)
        key = (plan.sizes, plan.tile_prefix, pointers, str(device))
        return super().get(key, lambda: build_tables(plan, pointers, device))


def build_tables(plan: LaunchPlan, pointers: Sequence[Sequence[int]], device: torch.device) -> DeviceTables:
    """Fresh tensors, copied synchronously: nothing later written on the host can reach them."""
    sizes = torch.tensor(plan.sizes, dtype=torch.int32).reshape(-1, 4)
    prefix = torch.tensor(plan.tile_prefix, dtype=torch.int32)
    ptrs = torch.tensor(pointers, dtype=torch.int64).reshape(-1, len(POINTER_COLUMNS))
    return DeviceTables(
        sizes=sizes.to(device, non_blocking=False),
        tile_prefix=prefix.to(device, non_blocking=False),
        pointers=ptrs.to(device, non_blocking=False),
    )
