"""The fp16 Y workspace of ``y_source="prepass"``: layout, geometry, ownership. Pure
Python except :class:`WorkspacePool` (torch tensors, and the driver to encode a tensor map).

One workspace is a device ``uint8`` tensor:

* bytes 0..11: three u32 counters of phase 1's completion barrier (``CLAIM_WORD``: chunks
  claimed, ``DONE_WORD``: chunks decoded, ``PASSED_WORD``: CTAs through the barrier). Zero
  between launches: the last CTA through the barrier of a launch sets all three back to 0, so
  repeated launches (fast path, graph replays) need no host reset;
* bytes 12..15: u32, the byte offset of the split area / 1024 (0: none);
* bytes 16..19: u32, the byte offset of the chunk-flag area / 1024 (0: none);
* bytes 128..255: the TMA tensor map over the data (encoded once per workspace, at its
  allocation: the map depends only on the data's address, its rows and its pitch);
* from byte 256: ``rows`` rows of ``pitch`` bytes (``pitch`` = 2 x the largest K of the problem):
  slot s's Y rows (the problem's A rows, swapped tiles) start at row ``row_offsets[s]`` = the
  prefix sum of M in slot order. 64 K of row r (sub-block q) is the 128-byte run at byte
  ``q * 128`` of the row, in the fragment K order of ``kernel.hopper.ptx.rs_physical_k``
  (chunk c, 16 bytes, holds what the shared-memory decode stores to chunk c of that row
  before the 128-byte swizzle). One TMA box of 128 bytes x ``tile_m`` rows at
  (``q * 128``, ``row_offsets[s] + m0``) with the 128-byte swizzle lands in shared memory exactly
  as the shared-memory decode lays out one fp16 Y buffer. Rows of a box past the group's M read
  the next slot's rows (or zero fill past the last row): they reach only accumulator columns that are never stored.
* ``schedule="split_last"`` only, the split area (1024-aligned, after the data): ``SPLIT_FLAGS``
  u32 flags (zeroed at allocation; the combining CTA sets its flag back to 0 after reading it),
  then one partial-sum slot per cut tile (``split_slots`` of ``split_slot_bytes``): the publishing
  half's fp32 accumulators, thread-major in 16-byte groups (group q of consumer thread t at
  ``(q * threads + t) * 16``), read back by the same thread index of the combining half.
* ``phase1_beside`` builds only, the chunk-flag area (1024-aligned, after the data and the split
  area): one u32 per chunk phase 1 can have (``chunk_flags``: its items over the smallest chunk,
  ``PREPASS_MIN_CHUNK``), zeroed at allocation. Its items run sub-block-major (``beside_item``:
  every row's first 64 K, then every row's second, ..), so the first K stages of every tile are
  decoded first, whatever the schedule. The helper warps that decoded chunk c release flag c
  (``fence.acq_rel`` + ``red.release``, add 1); a producer warp waits (``ld.acquire``) for the
  flags of the chunks that hold a K stage's Y boxes before it issues them. Each CTA's
  producer warp and its helper warps count themselves through ``PASSED_WORD`` when they are done
  with the flags (a release before the add); the last of the grid's 2 x CTAs (an acquire after
  it) sets the flags of this launch's chunks, the claim word and the count back to 0.

Phase 1 decodes ``items``: item i is (slot, row, sub-block) with the sub-block fastest, then the
row, then the slot (slots with N == 0 own none), so consecutive threads read consecutive 32-byte
runs of A and write consecutive 128-byte runs of the workspace. A CTA claims chunks of
``threads x ITEMS_PER_THREAD`` items with an atomic add, decodes them, and adds 1 to
``DONE_WORD``; every CTA then waits for ``DONE_WORD == chunks``. (The chunk size is chosen at
run time from the items and the grid, ``HopperConfig.prepass_chunk``, and each CTA claims its
next chunk while decoding the current one, so it makes one claim past the end; the argument
below is unchanged.) No CTA waits for a CTA that has
not started: a chunk is only counted by the CTA that claimed it, and only a running CTA claims.
So the barrier cannot deadlock even when the grid is not co-resident (another kernel on the
SMs, or a second launch on another stream); with the plan's grid (at most one CTA per SM, the
kernel takes most of the shared memory) all CTAs are normally resident anyway. The split area's
wait (``schedule="split_last"``, kernel/hopper/split.py) is weaker: CTA 2j + 1 waits for CTA 2j,
which CTA dispatch in index order has started before it.

Ownership (:class:`WorkspacePool`): one workspace per (device, stream, rows, pitch, box rows, split area,
chunk flags),
allocated on that stream (so the allocator never hands its memory to another stream's work
while a launch may still read it), its header written by a copy on that stream. Launches on
one stream run one after the other, so they may share it; a launch on another stream gets its
own. The launch arguments (``kernel.host_pipeline.LaunchArgs``) hold their
workspace, so a fast-path hit replays with the workspace of its own stream.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from kernel.plan import SPLIT_SLOTS

CLAIM_WORD = 0
DONE_WORD = 4
PASSED_WORD = 8
TENSOR_MAP_OFFSET = 128
DATA_OFFSET = 256
SPLIT_WORD = 12
FLAGS_WORD = 16
SPLIT_ALIGN = 1024
SPLIT_FLAGS = SPLIT_SLOTS  # u32 flags at the split area's start: one per cut tile a plan can have
ITEM_K = 64  # K elements of one item (one 128-byte fp16 run, one wgmma sub-block)
ITEM_RAW_BYTES = ITEM_K // 2
ITEM_FP16_BYTES = ITEM_K * 2
ITEMS_PER_THREAD = 2  # items per thread and claimed chunk
HEADER_SLOTS = 64  # page-locked header copies per arena (WorkspacePool)


@dataclass(frozen=True)
class Geometry:
    """The workspace of one problem (slot order, as the kernel's sizes table)."""

    rows: int
    pitch: int  # bytes per row: 2 x max K
    row_offsets: tuple[int, ...]  # per slot
    items: int  # phase 1's items
    split_slots: int = 0  # schedule="split_last": partial-sum slots (cut tiles at most)
    split_slot_bytes: int = 0  # fp32 accumulators of one tile
    chunk_flags: int = 0  # phase1_beside: one u32 flag per chunk phase 1 can have (0: no flag area)

    @property
    def data_bytes(self) -> int:
        return self.rows * self.pitch

    @property
    def split_offset(self) -> int:
        """Byte offset of the split area (0: none)."""
        if not self.split_slots:
            return 0
        return -(-(DATA_OFFSET + self.data_bytes) // SPLIT_ALIGN) * SPLIT_ALIGN

    @property
    def _before_flags(self) -> int:
        if not self.split_slots:
            return DATA_OFFSET + self.data_bytes
        return self.split_offset + 4 * SPLIT_FLAGS + self.split_slots * self.split_slot_bytes

    @property
    def flags_offset(self) -> int:
        """Byte offset of the chunk-flag area (0: none)."""
        if not self.chunk_flags:
            return 0
        return -(-self._before_flags // SPLIT_ALIGN) * SPLIT_ALIGN

    @property
    def nbytes(self) -> int:
        if not self.chunk_flags:
            return self._before_flags
        return self.flags_offset + 4 * self.chunk_flags

    def chunks(self, threads: int) -> int:
        per = threads * ITEMS_PER_THREAD
        return -(-self.items // per)


def max_chunks(items: int) -> int:
    """The most chunks phase 1 can cut ``items`` into: every chunk at least ``PREPASS_MIN_CHUNK``
    items (kernel.hopper.phase1.prepass_chunking)."""
    from kernel.hopper.config import PREPASS_MIN_CHUNK

    return -(-items // PREPASS_MIN_CHUNK)


def beside_items(rows: int, pitch: int) -> int:
    """``phase1_beside``: phase 1's item count, sub-block-major: every (64-K sub-block of the
    largest K, workspace row) pair, the pairs past a row's own K (or of a slot without columns)
    holes a decoding thread skips."""
    return (pitch // ITEM_FP16_BYTES) * rows


def beside_item(item, rows_total):
    """``phase1_beside``: item -> (sub-block, workspace row): sub-block-major, so every tile's
    first sub-blocks come first. One function for the host and the helper warps, which trace it."""
    sub_block = item // rows_total
    return sub_block, item - sub_block * rows_total


def box_chunk_range(sub_block, rows_total, y_row, rows, chunk):
    """``phase1_beside``: the first and the last chunk (of ``chunk`` items) holding the items of
    one Y box, sub-block ``sub_block`` of ``rows`` workspace rows from ``y_row`` (the tile's rows
    inside its group). One function for the host and the producer warp, which traces it."""
    lo = sub_block * rows_total + y_row
    return lo // chunk, (lo + rows - 1) // chunk


def beside_item_location(sizes: Sequence[Sequence[int]], item: int) -> tuple[int, int, int] | None:
    """``phase1_beside``: item -> (slot, row inside the group, sub-block), or None for a hole."""
    g = geometry(sizes)
    sub_block, r = beside_item(item, g.rows)
    for slot, (m, n, k, *_) in enumerate(sizes):
        if g.row_offsets[slot] <= r < g.row_offsets[slot] + m:
            if n > 0 and sub_block < k // ITEM_K:
                return slot, r - g.row_offsets[slot], sub_block
            return None
    raise IndexError(f"item {item} outside 0..{beside_items(g.rows, g.pitch) - 1}")


def geometry(sizes: Sequence[Sequence[int]], split_slots: int = 0, split_slot_bytes: int = 0,
             chunk_flags: bool = False) -> Geometry:
    """``sizes``: (m, n, k, l) per slot (``LaunchPlan.sizes``); ``split_slots`` partial-sum slots
    of ``split_slot_bytes`` each (``schedule="split_last"``; at most ``SPLIT_FLAGS``);
    ``chunk_flags``: a flag per chunk phase 1 can have (``phase1_beside``)."""
    if not 0 <= split_slots <= SPLIT_FLAGS:
        raise ValueError(f"split_slots must be in 0..{SPLIT_FLAGS}, got {split_slots}")
    offsets, rows, items = [], 0, 0
    for m, n, _k, *_ in sizes:
        offsets.append(rows)
        rows += m
        if n > 0:
            items += m * (_k // ITEM_K)
    kmax = max((s[2] for s in sizes), default=0)
    return Geometry(rows, 2 * kmax, tuple(offsets), items, split_slots, split_slot_bytes if split_slots else 0,
                    max(1, max_chunks(beside_items(rows, 2 * kmax))) if chunk_flags else 0)


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


def item_addresses(sizes, a_ptrs, sfa_ptrs, data: int, item: int) -> tuple[int, int, int]:
    """(raw A bytes, scale word, workspace run) of one item: what phase 1 reads and writes.
    ``a_ptrs`` / ``sfa_ptrs``: per slot. The scale word is the blocked layout's: 128-row block
    ``row // 128``, 512 bytes per (block, 64-K column), row i of the block at
    ``(i % 32) * 16 + (i // 32) * 4`` (kernel.hopper.kernel, unit_addresses)."""
    g = geometry(sizes)
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
    """Workspaces keyed by (device, stream handle, rows, pitch, box rows, split area, chunk flags); see the module
    docstring. A workspace is allocated zeroed with its tensor map written in, once; evicted
    ones stay alive as long as some launch arguments hold them."""

    def __init__(self, capacity: int = 32, encoder: Callable | None = None):
        from kernel.tables import ImmutableLru

        self._lru = ImmutableLru(capacity)
        self._encoder = encoder
        self.stats = self._lru.stats
        self._arena, self._arena_next, self._arenas = None, 0, []

    def get(self, geom: Geometry, box_rows: int, stream: int, device):
        key = (str(device), stream, geom.rows, geom.pitch, box_rows, geom.split_slots, geom.split_slot_bytes,
               geom.chunk_flags)
        return self._lru.get(key, lambda: self._allocate(geom, box_rows, stream, device))

    def _allocate(self, geom: Geometry, box_rows: int, stream: int, device):
        """Allocate on ``stream`` itself and write the header there (the counters' zeros and the
        tensor map, one 256-byte copy from page-locked memory), so it is ordered before every
        launch on that stream without a host wait, and works inside a CUDA graph capture (the
        copy is then a graph node, replayed before the kernel; profiling.timing captures on a
        stream of its own, so its first launch there makes the workspace). The data rows are
        not initialized (phase 1 writes every row that a stored column reads)."""
        import numpy as np
        import torch

        from kernel.tensor_maps import TENSOR_MAP_BYTES, encode

        header = np.zeros(DATA_OFFSET, dtype=np.uint8)
        header[SPLIT_WORD : SPLIT_WORD + 4] = np.frombuffer(
            np.array([geom.split_offset // SPLIT_ALIGN], dtype="<u4").tobytes(), dtype=np.uint8)
        header[FLAGS_WORD : FLAGS_WORD + 4] = np.frombuffer(
            np.array([geom.flags_offset // SPLIT_ALIGN], dtype="<u4").tobytes(), dtype=np.uint8)
        flags = slice(geom.split_offset, geom.split_offset + 4 * SPLIT_FLAGS)
        chunk_flags = slice(geom.flags_offset, geom.flags_offset + 4 * geom.chunk_flags)
        device = torch.device(device)
        if device.type != "cuda":  # the CPU tests
            ws = torch.empty(geom.nbytes, dtype=torch.uint8, device=device)
            tmap = (self._encoder or encode)(rows_map(ws.data_ptr(), geom, box_rows))
            header[TENSOR_MAP_OFFSET : TENSOR_MAP_OFFSET + TENSOR_MAP_BYTES] = np.frombuffer(tmap, dtype=np.uint8)
            ws[:DATA_OFFSET].copy_(torch.from_numpy(header))
            if geom.split_slots:
                ws[flags].zero_()
            if geom.chunk_flags:
                ws[chunk_flags].zero_()
            return ws
        target = torch.cuda.default_stream(device) if stream == 0 else torch.cuda.ExternalStream(stream, device=device)
        staged = self._header_slot()
        with torch.cuda.stream(target):
            ws = torch.empty(geom.nbytes, dtype=torch.uint8, device=device)
            tmap = (self._encoder or encode)(rows_map(ws.data_ptr(), geom, box_rows))
            header[TENSOR_MAP_OFFSET : TENSOR_MAP_OFFSET + TENSOR_MAP_BYTES] = np.frombuffer(tmap, dtype=np.uint8)
            staged.numpy()[:] = header
            ws[:DATA_OFFSET].copy_(staged, non_blocking=True)
            if geom.split_slots:
                ws[flags].zero_()
            if geom.chunk_flags:
                ws[chunk_flags].zero_()
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
