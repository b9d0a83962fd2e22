"""The fp16 Y workspace of ``y_source="prepass"`` (issue 14p): layout, geometry, ownership. Pure
Python except :class:`WorkspacePool` (torch tensors, and the driver to encode a tensor map).

One workspace is a device ``uint8`` tensor:

* bytes 0..11: three u32 counters of phase 1's completion barrier (``CLAIM_WORD``: chunks
  claimed, ``DONE_WORD``: chunks decoded, ``PASSED_WORD``: CTAs through the barrier). Zero
  between launches: the last CTA through the barrier of a launch sets all three back to 0, so
  repeated launches (fast path, graph replays) need no host reset;
* bytes 128..255: the TMA tensor map over the data (encoded once per workspace, at its
  allocation: the map depends only on the data's address, its rows and its pitch);
* from byte 256: ``rows`` rows of ``pitch`` bytes (``pitch`` = 2 x the largest K of the problem):
  slot s's Y rows (the problem's A rows, swapped tiles) start at row ``row_offsets[s]`` = the
  prefix sum of M in slot order (``HopperConfig.y_row_pad``: of M rounded up to the smallest Y
  tile, the rows past M zero). 64 K of row r (sub-block q) is the 128-byte run at byte
  ``q * 128`` of the row, in the fragment K order of ``kernel.hopper.ptx.rs_physical_k``
  (chunk c, 16 bytes, holds what the shared-memory decode stores to chunk c of that row
  before the 128-byte swizzle). One TMA box of 128 bytes x ``tile_m`` rows at
  (``q * 128``, ``row_offsets[s] + m0``) with the 128-byte swizzle lands in shared memory exactly
  as the shared-memory decode lays out one fp16 Y buffer. Rows of a box past the group's M read
  the next slot's rows (or zero fill past the last row; with ``y_row_pad`` the slot's zero
  rows): they reach only accumulator columns that are never stored.

Phase 1 decodes ``items``: item i is (slot, row, sub-block) with the sub-block fastest, then the
row, then the slot (slots with N == 0 own none), so consecutive threads read consecutive 32-byte
runs of A and write consecutive 128-byte runs of the workspace. A CTA claims chunks of
``threads x ITEMS_PER_THREAD`` items with an atomic add, decodes them, and adds 1 to
``DONE_WORD``; every CTA then waits for ``DONE_WORD == chunks``. (Issue 14q,
``HopperConfig.prepass_chunk`` > 0: the chunk size is chosen at run time from the items and the
grid, and each CTA claims its next chunk while decoding the current one, so it makes one claim
past the end; the argument below is unchanged.) No CTA waits for a CTA that has
not started: a chunk is only counted by the CTA that claimed it, and only a running CTA claims.
So the barrier cannot deadlock even when the grid is not co-resident (another kernel on the
SMs, or a second launch on another stream); with the plan's grid (at most one CTA per SM, the
kernel takes most of the shared memory) all CTAs are normally resident anyway.

Readiness flags (issue 14, ``HopperConfig.prepass_sync="flags"``): no completion barrier.
Phase 1's items are then ordered K-chunk-major: item i is (level, row, sub-block of the level)
with the sub-block fastest, then the workspace row (all slots, in slot order), then the level
(``tile_k`` K each); every group is treated as if its K were the largest K (items past a
group's K, and the rows of slots with N == 0, are counted but decode nothing), so the first
claimed chunks hold every Y block's first ``tile_k`` K. A flag cell is 8 bytes (u32 counter,
u32 flag) per (Y block, level), at ``FLAGS`` = ``DATA_OFFSET + rows * pitch`` + 8 x (block x
levels + level); Y block b is rows ``m0 .. m0 + box_rows - 1`` of one slot (``m0`` a multiple of
``box_rows``, the blocks numbered in slot order). After a chunk's CTA barrier, per block-level
the chunk touched, one thread adds the chunk's items of it to the counter (acq_rel); the add
that completes the cell's count sets the counter back to 0 (no other add to it this launch)
and stores the flag = this launch's generation + 1 with a release. The generation is the u32
``GEN_WORD``: thread 0 of each CTA reads it before its first claim; each CTA's thread 0 counts
itself through ``PASSED_WORD`` (acq_rel) after its last claim, and the last one through sets
``CLAIM_WORD`` and ``PASSED_WORD`` back to 0 and ``GEN_WORD`` to generation + 1 (every CTA has
read the generation and made its last claim before it counted through). So a flag of an
earlier launch is <= the current generation and reads as not ready (compared as a signed
difference, wrap-safe): no host reset per launch. The producer warp waits on the cells of its
tile's Y block (one lane per level, ``ld.acquire.gpu``, a ballot, nanosleep backoff) before the
TMA load of a level's boxes. Deadlock freedom is the barrier's argument: a CTA waits only after
its own phase 1 (every chunk it claimed decoded and published), and it leaves phase 1 only when
every chunk has been claimed, by running CTAs, which publish them without waiting on anyone.
The flag cells are zeroed with the header when the workspace is made (a graph that captured
the allocation replays both, so the generation and the flags go back to 0 together).

Phase 1 in a launch of its own (``HopperConfig.prepass_kernel_warps``) with flags: every
phase-1 warp claims chunks of its own (``CLAIM_WORD``), decodes them, and adds each chunk's items
of a cell to the cell's counter with a release; the counters are never reset, so a cell is ready
for launch g (the generation) when its counter reaches (g + 1) x its items (its block's rows x
the level's sub-blocks), compared as a signed difference (wrap-safe); the flag word is unused.
That holds only while every launch on the workspace gives each cell the same items, so such a
workspace is keyed by its row layout (two problems with the same rows, pitch and cell count but
other groups get two workspaces), and never shared with the resetting protocol above
(``WorkspacePool.get``'s ``counting``). The GEMM's grid, launched once every phase-1 CTA passed its wait for the stream's
previous kernel, reads the generation in each CTA's producer warp before its first wait, and
at its end waits for the phase-1 grid to complete (``griddepcontrol.wait``: every claim made)
and counts its CTAs through ``PASSED_WORD``; the last one resets ``CLAIM_WORD`` and
``PASSED_WORD`` and advances ``GEN_WORD``. The next call's phase 1 starts its work only after
this GEMM completed (its own ``griddepcontrol.wait``), so it sees a claim counter at 0, and its
GEMM the new generation. Progress: the GEMM launches only after every phase-1 CTA started, and
phase-1 warps wait on nothing.



Clusters (``HopperConfig.cluster_x`` = 2): the argument holds. A cluster launch starts both CTAs
of a cluster together, and the cluster barriers (one after the barrier init, before any claim;
one at the end) and the shared Y ring wait only on that peer, never on another cluster; the
tensor map's boxes are then ``mma_n / 2`` rows (each CTA loads its half of every Y box).

Stream-K (``HopperConfig.stream_k``, the barrier prepass): after the data rows, STREAMK_STATE_BYTES
of u32 state words, word b for the boundary between CTA b - 1's range and CTA b's (kernel.plan:
STREAMK_IDLE, CLAIMED, PUBLISHED, TAKEN), then one partial per boundary, the fp32 accumulators
of the split tile's K prefix as the consumer threads hold them (16-byte chunk j of consumer
thread t at ``(j * threads + t) * 16``: each warp store covers 512 contiguous bytes). The words
are zeroed when the workspace is made and idle again at every launch's end: a word is last
written by the CTA after the boundary (PUBLISHED -> IDLE once it loaded the partial) or, when
that CTA took the whole tile (IDLE -> TAKEN), by the CTA before it (TAKEN -> IDLE at its claim).

Ownership (:class:`WorkspacePool`): one workspace per (device, stream, rows, pitch, box rows,
flag cells, stream-K partials),
allocated on that stream (so the allocator never hands its memory to another stream's work
while a launch may still read it), its header written by a copy on that stream. Launches on
one stream run one after the other, so they may share it; a launch on another stream gets its
own. The launch arguments (``kernel.host_pipeline.LaunchArgs``) hold their
workspace, so a fast-path hit replays with the workspace of its own stream.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

CLAIM_WORD = 0
DONE_WORD = 4
PASSED_WORD = 8
GEN_WORD = 12  # prepass_sync="flags": launches whose phase 1 completed (the flags' generation)
FLAG_CELL_BYTES = 8  # prepass_sync="flags": u32 counter, u32 flag per (Y block, level)
TENSOR_MAP_OFFSET = 128
DATA_OFFSET = 256
ITEM_K = 64  # K elements of one item (one 128-byte fp16 run, one wgmma sub-block)
ITEM_RAW_BYTES = ITEM_K // 2
ITEM_FP16_BYTES = ITEM_K * 2
ITEMS_PER_THREAD = 2  # items per thread and claimed chunk
# HopperConfig.stream_k: the state words of the boundaries (u32 each, kernel.plan STREAMK_IDLE ..
# STREAMK_TAKEN; idle between launches: the last to touch a word in a launch sets it idle), room
# for STREAMK_MAX_CTAS + 1 of them; the partials follow, each at a 1024-byte multiple
STREAMK_STATE_BYTES = 4096
STREAMK_MAX_CTAS = STREAMK_STATE_BYTES // 4 - 1
HEADER_SLOTS = 64  # page-locked header copies per arena (WorkspacePool)


@dataclass(frozen=True)
class Geometry:
    """The workspace of one problem (slot order, as the kernel's sizes table)."""

    rows: int
    pitch: int  # bytes per row: 2 x max K
    row_offsets: tuple[int, ...]  # per slot
    items: int  # phase 1's items
    flag_cells: int = 0  # prepass_sync="flags": Y blocks x levels (0: the grid barrier)
    streamk_partials: int = 0  # HopperConfig.stream_k: partial slots (the grid's CTAs + 1; 0: none)
    streamk_partial_bytes: int = 0  # one partial: the consumers' fp32 accumulators of a tile

    @property
    def data_bytes(self) -> int:
        return self.rows * self.pitch

    @property
    def flags_offset(self) -> int:
        """Byte offset of the flag cells (prepass_sync="flags"): right after the data rows."""
        return DATA_OFFSET + self.data_bytes

    @property
    def streamk_offset(self) -> int:
        """Byte offset of the stream-K region (``HopperConfig.stream_k``): after the flag cells;
        STREAMK_STATE_BYTES of u32 state words (one per boundary b, at 4 b), then the partials
        (boundary b's at ``STREAMK_STATE_BYTES + b * streamk_partial_bytes``)."""
        return self.flags_offset + FLAG_CELL_BYTES * self.flag_cells

    @property
    def nbytes(self) -> int:
        extra = STREAMK_STATE_BYTES + self.streamk_partials * self.streamk_partial_bytes if self.streamk_partials else 0
        return self.streamk_offset + extra

    def chunks(self, threads: int) -> int:
        per = threads * ITEMS_PER_THREAD
        return -(-self.items // per)


def geometry(sizes: Sequence[Sequence[int]], box_rows: int = 0, tile_k: int = 256, row_align: int = 1,
             streamk_ctas: int = 0, streamk_partial_bytes: int = 0) -> Geometry:
    """``sizes``: (m, n, k, l) per slot (``LaunchPlan.sizes``). ``box_rows`` > 0: the
    ``prepass_sync="flags"`` layout (the Y blocks of ``box_rows`` rows x ``tile_k`` levels of
    flag cells, and the K-chunk-major items: every row x the largest K). ``row_align`` > 1
    (``HopperConfig.y_row_pad``, not with flags): each slot's rows take a multiple of it, the rows
    past its M stay zero (:class:`WorkspacePool` zeroes such a workspace when it makes it).
    ``streamk_ctas`` > 0 (``HopperConfig.stream_k``, not with flags): the stream-K region for a
    grid of that many CTAs, partials of ``streamk_partial_bytes`` each."""
    if streamk_ctas > STREAMK_MAX_CTAS:
        raise ValueError(f"stream-K state words hold {STREAMK_MAX_CTAS} CTAs, not {streamk_ctas}")
    if streamk_ctas and box_rows:
        raise ValueError("stream-K is built on the barrier prepass, without flag cells")
    if row_align > 1 and box_rows:
        raise ValueError("row_align pads the barrier prepass's rows, not the flags layout")
    offsets, rows, items = [], 0, 0
    for m, n, _k, *_ in sizes:
        offsets.append(rows)
        rows += -(-m // row_align) * row_align
        if n > 0:
            items += m * (_k // ITEM_K)
    kmax = max((s[2] for s in sizes), default=0)
    pitch = 2 * kmax
    if not box_rows:
        if streamk_ctas:
            return Geometry(rows, pitch, tuple(offsets), items, 0, streamk_ctas + 1, streamk_partial_bytes)
        return Geometry(rows, pitch, tuple(offsets), items)
    blocks = sum(-(-m // box_rows) for m, *_ in sizes)
    return Geometry(rows, pitch, tuple(offsets), rows * (kmax // ITEM_K), blocks * (kmax // tile_k))


def flag_item_location(sizes: Sequence[Sequence[int]], item: int, tile_k: int = 256) -> tuple[int, int, int] | None:
    """``prepass_sync="flags"``: item -> (slot, row inside the group, sub-block), or None for an
    item that decodes nothing (past its group's K, or a row of a slot with N == 0); the
    device's mapping (kernel.hopper.kernel, prepass_decode_flags), on the host."""
    g = geometry(sizes, 1, tile_k)
    sbk = tile_k // ITEM_K
    per_level = g.rows * sbk
    level, rem = divmod(item, per_level)
    row, sub = divmod(rem, sbk)
    slot = max(s for s in range(len(sizes)) if g.row_offsets[s] <= row)
    m, n, k, *_ = sizes[slot]
    sb = level * sbk + sub
    if n == 0 or sb >= k // ITEM_K:
        return None
    return slot, row - g.row_offsets[slot], sb


def flag_cells_of_chunk(sizes: Sequence[Sequence[int]], box_rows: int, first: int, end: int,
                        tile_k: int = 256) -> dict[tuple[int, int], tuple[int, int]]:
    """``prepass_sync="flags"``, on the host (what each chunk publishes on the device):
    items ``first .. end - 1`` (K-chunk-major) -> {(block, level): (items of the chunk in that
    cell, the cell's target count)}."""
    g = geometry(sizes, box_rows, tile_k)
    sbk = tile_k // ITEM_K
    per_level = g.rows * sbk
    starts, b = [], 0
    for m, *_ in sizes:
        starts.append(b)
        b += -(-m // box_rows)
    out: dict[tuple[int, int], tuple[int, int]] = {}
    for item in range(first, end):
        level, row = item // per_level, (item % per_level) // sbk
        slot = max(s for s in range(len(sizes)) if g.row_offsets[s] <= row)
        m0 = (row - g.row_offsets[slot]) // box_rows * box_rows
        block = starts[slot] + m0 // box_rows
        target = (min(m0 + box_rows, sizes[slot][0]) - m0) * sbk
        n, _ = out.get((block, level), (0, target))
        out[(block, level)] = (n + 1, target)
    return out


def item_location(sizes: Sequence[Sequence[int]], item: int) -> tuple[int, int, int]:
    """Item -> (slot, row inside the group, sub-block): the device's search, on the host."""
    base = 0
    for slot, (m, n, k, *_) in enumerate(sizes):
        count = m * (k // ITEM_K) if n > 0 else 0
        if base <= item < base + count:
            local = item - base
            return slot, local // (k // ITEM_K), local % (k // ITEM_K)
        base += count
    raise IndexError(f"item {item} outside 0..{base - 1}")


def item_addresses(sizes, a_ptrs, sfa_ptrs, data: int, item: int, row_align: int = 1) -> tuple[int, int, int]:
    """(raw A bytes, scale word, workspace run) of one item: what phase 1 reads and writes.
    ``a_ptrs`` / ``sfa_ptrs``: per slot. The scale word is the blocked layout's: 128-row block
    ``row // 128``, 512 bytes per (block, 64-K column), row i of the block at
    ``(i % 32) * 16 + (i // 32) * 4`` (kernel.hopper.kernel, unit_addresses)."""
    g = geometry(sizes, row_align=row_align)
    slot, row, sb = item_location(sizes, item)
    k = sizes[slot][2]
    i = row % 128
    raw = a_ptrs[slot] + row * (k // 2) + sb * ITEM_RAW_BYTES
    sf = sfa_ptrs[slot] + ((row // 128) * (k // ITEM_K) + sb) * 512 + (i % 32) * 16 + (i // 32) * 4
    dst = data + (g.row_offsets[slot] + row) * g.pitch + sb * ITEM_FP16_BYTES
    return raw, sf, dst


def y_box(geom: Geometry, slot: int, m0: int, kt: int, sb: int, tile_k: int = 256) -> tuple[int, int]:
    """The (byte column, row) of the Y box of tile rows ``m0..``, stage ``kt``, sub-block ``sb``."""
    return (kt * (tile_k // ITEM_K) + sb) * ITEM_FP16_BYTES, geom.row_offsets[slot] + m0


def rows_map(workspace_address: int, geom: Geometry, box_rows: int):
    """The workspace's tensor map (kernel.tensor_maps.RowsMap): rows x pitch bytes, boxes of
    ``box_rows`` rows x 128 bytes (the 128-byte swizzle)."""
    from kernel.tensor_maps import RowsMap

    return RowsMap(workspace_address + DATA_OFFSET, max(1, geom.rows), geom.pitch, box_rows)


class WorkspacePool:
    """Workspaces keyed by (device, stream handle, rows, pitch, box rows, flag cells, stream-K
    partials and their size); see the module
    docstring. A workspace is allocated zeroed with its tensor map written in, once; evicted
    ones stay alive as long as some launch arguments hold them."""

    def __init__(self, capacity: int = 32, encoder: Callable | None = None):
        from kernel.tables import ImmutableLru

        self._lru = ImmutableLru(capacity)
        self._encoder = encoder
        self.stats = self._lru.stats
        self._arena, self._arena_next, self._arenas = None, 0, []

    def get(self, geom: Geometry, box_rows: int, stream: int, device, zero_pad: bool = False,
            counting: bool = False):
        """``zero_pad`` (``HopperConfig.y_row_pad``): the rows between each slot's M and its next
        slot's first row must be zero, so the workspace is zeroed when made and keyed by the row
        layout as well (another layout's rows never land in this one's padding). ``counting``:
        flag cells whose counters only grow (phase 1 in its own launch): a cell is ready at
        (generation + 1) x its items, which holds only if every launch on the workspace gave the
        cell the same items, so such a workspace is keyed by the row layout too, and apart from
        the cells that reset each launch."""
        key = (str(device), stream, geom.rows, geom.pitch, box_rows, geom.flag_cells, geom.streamk_partials,
               geom.streamk_partial_bytes)
        if zero_pad or counting:
            key += (geom.row_offsets,)
        if counting:
            key += ("counting",)
        return self._lru.get(key, lambda: self._allocate(geom, box_rows, stream, device, zero_pad))

    def _allocate(self, geom: Geometry, box_rows: int, stream: int, device, zero_pad: bool = False):
        """Allocate on ``stream`` itself and write the header there (the counters' zeros and the
        tensor map, one 256-byte copy from page-locked memory), so it is ordered before every
        launch on that stream without a host wait, and works inside a CUDA graph capture (the
        copy is then a graph node, replayed before the kernel; profiling.timing captures on a
        stream of its own, so its first launch there makes the workspace). The data rows are
        not initialized (phase 1 writes every row that a stored column reads) unless ``zero_pad``:
        then they are zeroed on the same stream. The flag cells (``prepass_sync="flags"``) are
        zeroed right after the header, on the same stream."""
        import numpy as np
        import torch

        from kernel.tensor_maps import TENSOR_MAP_BYTES, encode

        header = np.zeros(DATA_OFFSET, dtype=np.uint8)
        device = torch.device(device)
        if device.type != "cuda":  # the CPU tests
            ws = torch.empty(geom.nbytes, dtype=torch.uint8, device=device)
            tmap = (self._encoder or encode)(rows_map(ws.data_ptr(), geom, box_rows))
            header[TENSOR_MAP_OFFSET : TENSOR_MAP_OFFSET + TENSOR_MAP_BYTES] = np.frombuffer(tmap, dtype=np.uint8)
            ws[:DATA_OFFSET].copy_(torch.from_numpy(header))
            ws[geom.flags_offset:].zero_()
            if zero_pad:
                ws[DATA_OFFSET:geom.flags_offset].zero_()
            return ws
        target = torch.cuda.default_stream(device) if stream == 0 else torch.cuda.ExternalStream(stream, device=device)
        staged = self._header_slot()
        with torch.cuda.stream(target):
            ws = torch.empty(geom.nbytes, dtype=torch.uint8, device=device)
            tmap = (self._encoder or encode)(rows_map(ws.data_ptr(), geom, box_rows))
            header[TENSOR_MAP_OFFSET : TENSOR_MAP_OFFSET + TENSOR_MAP_BYTES] = np.frombuffer(tmap, dtype=np.uint8)
            staged.numpy()[:] = header
            ws[:DATA_OFFSET].copy_(staged, non_blocking=True)
            if geom.flag_cells or geom.streamk_partials:  # the flag cells, the stream-K state words
                ws[geom.flags_offset:].zero_()
            if zero_pad:
                ws[DATA_OFFSET:geom.flags_offset].zero_()
        return ws

    def _header_slot(self):
        """256 page-locked bytes, never reused: a copy captured into a CUDA graph reads them
        again at every replay. Taken from arenas of ``HEADER_SLOTS`` slots, so a workspace made
        while a graph is being captured needs no page-locked allocation (not allowed then)
        unless the arena of the first workspaces is used up."""
        import torch

        if self._arena is None or self._arena_next == HEADER_SLOTS:
            self._arena = torch.empty(HEADER_SLOTS * DATA_OFFSET, dtype=torch.uint8, pin_memory=True)
            self._arenas.append(self._arena)
            self._arena_next = 0
        slot = self._arena[self._arena_next * DATA_OFFSET : (self._arena_next + 1) * DATA_OFFSET]
        self._arena_next += 1
        return slot

    def clear(self) -> None:
        self._lru.clear()
