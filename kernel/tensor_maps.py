"""TMA tensor maps of the packed FP4 operands, one pair (A, B) per slot, in device memory.

The Hopper kernel's ``loader="tma"`` loads a stage of an operand with one
``cp.async.bulk.tensor.2d`` whose tensor map describes that group's operand as a 2-D byte matrix
``[rows, K/2]`` (row pitch K/2 bytes). A box is ``box_rows`` rows x ``box_bytes`` bytes, written to
shared memory with the 128-byte swizzle (16-byte chunk ``c`` of row ``r`` lands at chunk
``c ^ (r % 8)``); rows past the operand's end are zero-filled by the hardware, and the
transaction count is always the whole box.

Maps are encoded on the host (``cuTensorMapEncodeTiled``) and copied once into a fresh device
tensor ``uint8 [G, 2, 128]`` (slot order, A then B), cached in the same LRU as
:mod:`kernel.tables`: keyed by the maps (addresses, rows, pitch, box), never written again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from kernel.plan import LaunchPlan
from kernel.tables import ImmutableLru
from kernel.validation import GroupTensors

TENSOR_MAP_BYTES = 128
SWIZZLE_SPAN_BYTES = 128  # the 128-byte swizzle: box rows must be exactly this wide


@dataclass(frozen=True)
class RowsMap:
    """What one tensor map describes: ``rows`` rows of ``row_bytes`` at ``address``."""

    address: int
    rows: int
    row_bytes: int
    box_rows: int
    box_bytes: int = SWIZZLE_SPAN_BYTES

    def problems(self) -> list[str]:
        p = []
        if self.address % 16:
            p.append(f"address {self.address:#x} is not 16-byte aligned")
        if self.row_bytes % 16:
            p.append(f"row pitch {self.row_bytes} B is not a multiple of 16")
        if not 1 <= self.box_rows <= 256:
            p.append(f"box rows {self.box_rows} not in 1..256")
        if self.box_bytes != SWIZZLE_SPAN_BYTES:
            p.append(f"box width {self.box_bytes} B must be {SWIZZLE_SPAN_BYTES} (128-byte swizzle)")
        if self.rows < 1:
            p.append("no rows")
        return p


def encode(m: RowsMap) -> bytes:
    """The 128 opaque bytes of ``m`` (needs the CUDA driver)."""
    problems = m.problems()
    if problems:
        raise ValueError("tensor map: " + "; ".join(problems))
    import cuda.bindings.driver as cu

    err, tmap = cu.cuTensorMapEncodeTiled(
        cu.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_UINT8,
        2,
        m.address,
        [cu.cuuint64_t(m.row_bytes), cu.cuuint64_t(m.rows)],
        [cu.cuuint64_t(m.row_bytes)],
        [cu.cuuint32_t(m.box_bytes), cu.cuuint32_t(m.box_rows)],
        [cu.cuuint32_t(1), cu.cuuint32_t(1)],
        cu.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        cu.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
        cu.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        cu.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
    )
    if err != cu.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuTensorMapEncodeTiled failed ({err}) for {m}")
    words = [int(w) for w in tmap.opaque]
    return b"".join(w.to_bytes(8, "little") for w in words)


def slot_maps(plan: LaunchPlan, groups: Sequence[GroupTensors], box_rows_a: int, box_rows_b: int) -> list[tuple]:
    """Per slot: (A map, B map), or None for a group with no rows (it has no tiles)."""
    out = []
    for g in plan.group_order:
        t = groups[g]
        m, n, k, _ = t.size
        a = RowsMap(t.a.data_ptr(), m, k // 2, box_rows_a) if m and n else None
        b = RowsMap(t.b.data_ptr(), n, k // 2, box_rows_b) if m and n else None
        out.append((a, b))
    return out


def build_map_table(maps: Sequence[tuple], device: torch.device) -> torch.Tensor:
    blob = bytearray(len(maps) * 2 * TENSOR_MAP_BYTES)
    for i, pair in enumerate(maps):
        for j, rm in enumerate(pair):
            if rm is not None:
                off = (2 * i + j) * TENSOR_MAP_BYTES
                blob[off : off + TENSOR_MAP_BYTES] = encode(rm)
    host = torch.frombuffer(blob, dtype=torch.uint8).reshape(len(maps), 2, TENSOR_MAP_BYTES).clone()
    table = host.to(device, non_blocking=False)
    if table.data_ptr() % 64:
        raise RuntimeError("tensor map table is not 64-byte aligned")
    return table


class TensorMapCache(ImmutableLru):
    """Tensor-map tables keyed by (the slots' maps, device)."""

    def get(self, plan: LaunchPlan, groups: Sequence[GroupTensors], box_rows_a: int, box_rows_b: int,
            device: torch.device) -> torch.Tensor:
        maps = slot_maps(plan, groups, box_rows_a, box_rows_b)
        return super().get((tuple(maps), str(device)), lambda: build_map_table(maps, device))
