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

Encoding costs about 10 us a map through the driver's Python bindings. For problems of shapes
seen before (:mod:`kernel.seen_shapes`), :class:`MapTemplate` keeps each slot's maps encoded once
and writes only the new addresses into them. A descriptor is opaque, so where its address sits is
*measured*, never assumed: :func:`address_word` encodes one map at three addresses and accepts a
64-bit word only when it holds exactly the address in each encoding and every other byte is the
same; otherwise there is no template and every problem encodes its maps.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Sequence

import numpy as np
import torch

from kernel.plan import LaunchPlan
from kernel.seen_shapes import AuxTemplate, flat_index
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


def encode_slots(maps: Sequence[tuple], encoder: Callable[[RowsMap], bytes] = None) -> np.ndarray:
    """``uint8 [slots, 2, 128]``: each slot's (A, B) maps, zeros where a slot has none."""
    encoder = encoder or encode
    out = np.zeros((len(maps), 2, TENSOR_MAP_BYTES), dtype=np.uint8)
    for i, pair in enumerate(maps):
        for j, rm in enumerate(pair):
            if rm is not None:
                out[i, j] = np.frombuffer(encoder(rm), dtype=np.uint8)
    return out


# two address changes that keep 16-byte alignment and stay inside a 47-bit address space
_PROBES = (0x0000_1234_5678_9A00, 0x0000_0F0F_0F0F_0F00)


def address_word(rm: RowsMap, encoder: Callable[[RowsMap], bytes] = None, encoded: bytes | None = None) -> int | None:
    """Index of the 64-bit word of ``rm``'s descriptor that holds its global address, measured
    by encoding it at three addresses (None when no word behaves exactly like the address).
    ``encoded``: ``rm``'s own encoding when the caller has it (two encodes instead of three)."""
    encoder = encoder or encode
    words = [np.frombuffer(encoder(rm) if encoded is None else encoded, dtype=np.uint64)]
    words += [np.frombuffer(encoder(replace(rm, address=rm.address ^ p)), dtype=np.uint64) for p in _PROBES]
    differ = np.nonzero((words[0] != words[1]) | (words[0] != words[2]))[0]
    if len(differ) != 1:
        return None
    w = int(differ[0])
    if any(int(words[i][w]) != rm.address ^ p for i, p in enumerate((0, *_PROBES))):
        return None
    return w


class MapTemplate(AuxTemplate):
    """One shape signature's tensor maps: encoded once, the A and B addresses written per problem."""

    element = "uint8"

    def __init__(self, encoded: np.ndarray, word: int, slots: Sequence[int], a_index: Sequence[int],
                 b_index: Sequence[int]):
        self.encoded = encoded  # uint8 [slots, 2, 128]
        self.word = word
        self.slots = np.asarray(slots, dtype=np.int64)
        self.a_index = np.asarray(a_index, dtype=np.int64)
        self.b_index = np.asarray(b_index, dtype=np.int64)
        self.shape = encoded.shape
        self.nbytes = encoded.nbytes

    def fill(self, out: np.ndarray, pointers: np.ndarray) -> None:
        out[:] = self.encoded.reshape(-1)
        words = out.view(np.uint64).reshape(self.shape[0], 2, TENSOR_MAP_BYTES // 8)
        words[self.slots, 0, self.word] = pointers[self.a_index]
        words[self.slots, 1, self.word] = pointers[self.b_index]

    def patches(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        per_map = TENSOR_MAP_BYTES // 8
        a_words = self.slots * 2 * per_map + self.word
        return (self.encoded.reshape(-1), np.concatenate([a_words, a_words + per_map]),
                np.concatenate([self.a_index, self.b_index]))


def map_template(plan: LaunchPlan, groups: Sequence[GroupTensors], box_rows_a: int, box_rows_b: int,
                 encoder: Callable[[RowsMap], bytes] = None) -> MapTemplate | None:
    """The :class:`MapTemplate` of this problem's shapes, or None when the address word cannot be
    measured (then every problem encodes its maps). Each map is encoded once (and two maps twice
    more, at probe addresses, to find the address word)."""
    maps = slot_maps(plan, groups, box_rows_a, box_rows_b)
    present = [s for s, (a, _) in enumerate(maps) if a is not None]
    if not present:
        return None
    encoded = encode_slots(maps, encoder)
    first, last = present[0], present[-1]
    word = address_word(maps[first][0], encoder, encoded[first, 0].tobytes())
    if word is None or address_word(maps[last][1], encoder, encoded[last, 1].tobytes()) != word:
        return None
    g = len(groups)
    return MapTemplate(
        encoded, word, present,
        [flat_index("a", plan.group_order[s], g) for s in present],
        [flat_index("b", plan.group_order[s], g) for s in present],
    )


def build_map_table(maps: Sequence[tuple], device: torch.device) -> torch.Tensor:
    host = torch.from_numpy(encode_slots(maps))
    table = host.to(device, copy=True)  # a fresh allocation (aligned), never the numpy buffer
    if table.data_ptr() % 64:
        raise RuntimeError("tensor map table is not 64-byte aligned")
    return table


class TensorMapCache(ImmutableLru):
    """Tensor-map tables keyed by (the slots' maps, device)."""

    def get(self, plan: LaunchPlan, groups: Sequence[GroupTensors], box_rows_a: int, box_rows_b: int,
            device: torch.device) -> torch.Tensor:
        maps = slot_maps(plan, groups, box_rows_a, box_rows_b)
        return super().get((tuple(maps), str(device)), lambda: build_map_table(maps, device))
