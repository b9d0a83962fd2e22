"""The fp16 Y workspace of ``y_source="prepass"``, on a CPU: pure Python plus the
kernel object's own address helpers (no compile, no GPU).

* geometry: row offsets are the prefix of M in slot order, the pitch is 2 x the largest K, the
  items cover every (slot with N > 0, row, 64-K sub-block) once, sub-block fastest (coalesced);
* what phase 1 reads is what the shared-memory decode reads: for every Y unit of a stage, the
  raw bytes and the scale word behind its shared addresses (TMA 128-byte swizzle of A's rows,
  the producer's bulk copy of the 512-byte blocked scales) are the global bytes of the item;
* where a TMA box of the workspace lands is where the shared-memory decode stores: box row r,
  chunk c at r * 128 + (c ^ r % 8) * 16, the chunk addresses ``y_rs_unit`` writes;
* the tensor map geometry and the pool: one workspace per (stream, geometry), its map bytes
  at byte 128, its barrier counters zero.
"""

import os

import numpy as np
import pytest
import torch

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

from kernel.hopper.variants import FASTEST_CONFIG, PHASE1_STAGED_CONFIG
from kernel.hopper import workspace as W  # noqa: E402
from kernel.plan import make_plan  # noqa: E402

PRE = PHASE1_STAGED_CONFIG
# the prepass build's tile with Y decoded in shared memory: what dequant_y_rs reads and writes
TWIN = FASTEST_CONFIG
assert (TWIN.tile_m, TWIN.tile_n, TWIN.tile_k, TWIN.swapped, TWIN.loader) == (PRE.tile_m, PRE.tile_n, PRE.tile_k,
                                                                            PRE.swapped, PRE.loader)
# ragged M, an N == 0 group (rows reserved, no items), different K per group
SIZES = [(100, 512, 512, 1), (130, 256, 1024, 1), (7, 0, 256, 1), (256, 384, 256, 1)]


def _plan(sizes=SIZES):
    return make_plan(sizes, tile_m=PRE.tile_m, tile_n=PRE.tile_n, tile_k=PRE.tile_k, max_ctas=132)


def test_geometry_rows_pitch_offsets_items():
    plan = _plan()
    g = W.geometry(plan.sizes)
    m = [s[0] for s in plan.sizes]
    assert g.row_offsets == tuple(int(x) for x in np.cumsum([0] + m[:-1]))
    assert g.rows == sum(m) and g.pitch == 2 * max(s[2] for s in plan.sizes)
    assert g.items == sum(s[0] * s[2] // 64 for s in plan.sizes if s[1] > 0)
    assert g.nbytes == W.DATA_OFFSET + g.rows * g.pitch
    assert g.chunks(288) == -(-g.items // (288 * W.ITEMS_PER_THREAD))
    # the header: counters, then the 64-byte aligned tensor map, then the 16-byte aligned data
    assert W.CLAIM_WORD < W.DONE_WORD < W.PASSED_WORD < W.TENSOR_MAP_OFFSET
    assert W.TENSOR_MAP_OFFSET % 64 == 0 and W.TENSOR_MAP_OFFSET + 128 <= W.DATA_OFFSET and W.DATA_OFFSET % 128 == 0


def test_items_cover_every_row_and_sub_block_once_sub_block_fastest():
    plan = _plan()
    g = W.geometry(plan.sizes)
    a_ptrs = [0x10000000 * (s + 1) for s in range(len(plan.sizes))]
    sf_ptrs = [0x80000000 + 0x1000000 * s for s in range(len(plan.sizes))]
    seen, prev = set(), None
    for item in range(g.items):
        slot, row, sb = W.item_location(plan.sizes, item)
        m, n, k, _ = plan.sizes[slot]
        assert n > 0 and 0 <= row < m and 0 <= sb < k // 64
        seen.add((slot, row, sb))
        raw, _sf, dst = W.item_addresses(plan.sizes, a_ptrs, sf_ptrs, 0, item)
        assert dst % 128 == 0 and raw % 32 == 0
        if prev is not None and prev[0] == slot:  # consecutive items: consecutive runs (coalesced)
            assert raw == prev[1] + 32 and dst == prev[2] + 128 or sb == 0
        prev = (slot, raw, dst)
    assert len(seen) == g.items
    with pytest.raises(IndexError):
        W.item_location(plan.sizes, g.items)


def _gemm():
    from kernel.hopper.kernel import HopperNvfp4GroupedGemm

    return HopperNvfp4GroupedGemm(TWIN, 8)


@pytest.mark.parametrize("m0, kt", [(0, 0), (128, 3), (256, 1)])
def test_phase1_reads_what_the_shared_decode_reads(m0, kt):
    """Unit (row r, half a) of sub-block sb reads raw words W[a], W[a+2] (first 16-byte chunk)
    and W[a+4], W[a+6] (second) and the 4-byte scale word; through the TMA swizzle of A's rows
    and the bulk copy of the scale blocks these are the item's 32 raw bytes and scale word."""
    gemm = _gemm()
    k, m = 1024, 400
    sizes = [(m, 256, k, 1)]
    a_ptr, sf_ptr = 1 << 20, 1 << 30
    rest_k = k // 64
    for unit in range(2 * gemm.mma_n):
        for sb in range(4):
            src0, src1, sf, *_ = gemm.y_rs_unit(unit, 0, 0, m0 % 128, sb)
            r = (unit // 16) * 8 + unit % 8
            a = (unit // 8) % 2
            row = m0 + r
            if row >= m:
                continue
            # shared raw row r, byte offset o -> global byte (swizzle: chunk c holds c ^ (r % 8))
            def glob_raw(addr):
                o = addr - gemm.off_y - r * gemm.pitch
                return a_ptr + row * (k // 2) + kt * 128 + (((o >> 4) ^ (r % 8)) << 4) + (o & 15)
            # shared scale byte -> global: block b of the stage is scale block m0 // 128 + b
            def glob_sf(addr):
                o = addr - gemm.off_sfy
                b, o = divmod(o, gemm.sf_block_bytes)
                return sf_ptr + ((m0 // 128 + b) * rest_k + kt * 4) * 512 + o
            item = row * rest_k + kt * 4 + sb
            assert W.item_location(sizes, item) == (0, row, kt * 4 + sb)
            raw, gsf, _dst = W.item_addresses(sizes, [a_ptr], [sf_ptr], 0, item)
            assert [glob_raw(src0), glob_raw(src0 + 8), glob_raw(src1), glob_raw(src1 + 8)] == [
                raw + 4 * a, raw + 4 * (a + 2), raw + 4 * (a + 4), raw + 4 * (a + 6)]
            assert glob_sf(sf) == gsf


def _tma_box(ws: np.ndarray, rows: int, pitch: int, col: int, row0: int, box_rows: int) -> np.ndarray:
    """A 2-D TMA box (box_rows x 128 bytes, 128-byte swizzle, zero fill past the last row)."""
    out = np.zeros(box_rows * 128, dtype=np.uint8)
    for r in range(box_rows):
        if row0 + r >= rows:
            continue
        line = ws[(row0 + r) * pitch + col: (row0 + r) * pitch + col + 128]
        for c in range(8):
            out[r * 128 + ((c ^ (r % 8)) << 4): r * 128 + ((c ^ (r % 8)) << 4) + 16] = line[c * 16:(c + 1) * 16]
    return out


def test_a_tma_box_of_the_workspace_lands_as_the_shared_decode_stores():
    gemm = _gemm()
    plan = _plan()
    g = W.geometry(plan.sizes)
    rng = np.random.default_rng(3)
    ws = rng.integers(0, 256, size=g.rows * g.pitch, dtype=np.uint8)
    slot, m0, kt, sb = 1, 128, 2, 3
    col, row0 = W.y_box(g, slot, m0, kt, sb)
    assert col == (kt * 4 + sb) * 128 and row0 == g.row_offsets[slot] + m0
    box = _tma_box(ws, g.rows, g.pitch, col, row0, PRE.tile_m)
    for unit in range(2 * gemm.mma_n):
        r = (unit // 16) * 8 + unit % 8
        a = (unit // 8) % 2
        dsts = gemm.y_rs_unit(unit, 0, 0, 0, sb)[3:]
        for j, dst in enumerate(dsts):  # shared chunk 4a + j of row r <- workspace chunk 4a + j
            c = 4 * a + j
            want = ws[(row0 + r) * g.pitch + col + 16 * c: (row0 + r) * g.pitch + col + 16 * c + 16] \
                if row0 + r < g.rows else np.zeros(16, np.uint8)
            assert np.array_equal(box[dst: dst + 16], want), (unit, j)
    # the last slot's rows past the end are zero-filled
    last = len(plan.sizes) - 1
    _, row0 = W.y_box(g, last, 128, 0, 0)
    assert row0 + PRE.tile_m > g.rows and not _tma_box(ws, g.rows, g.pitch, 0, row0, PRE.tile_m)[-128:].any()


def test_workspace_tensor_map_geometry():
    g = W.geometry(_plan().sizes)
    rm = W.rows_map(0x7F0000000000, g, PRE.mma_n)
    assert rm.problems() == []
    assert (rm.address, rm.rows, rm.row_bytes, rm.box_rows, rm.box_bytes) == (
        0x7F0000000000 + W.DATA_OFFSET, g.rows, g.pitch, 128, 128)
    # every Y box starts inside the map: column a multiple of 128 below the pitch, row below rows
    for slot, (m, n, k, _) in enumerate(_plan().sizes):
        for m0 in range(0, m, 128):
            for kt in range(k // 256):
                for sb in range(4):
                    col, row = W.y_box(g, slot, m0, kt, sb)
                    assert col % 128 == 0 and col + 128 <= 2 * k <= g.pitch and row < g.rows


def test_pool_one_workspace_per_stream_and_geometry():
    encoded = []

    def fake_encode(rm):
        encoded.append(rm)
        return bytes(range(128))

    pool = W.WorkspacePool(encoder=fake_encode)
    g = W.geometry(_plan().sizes)
    a = pool.get(g, 128, stream=7, device=torch.device("cpu"))
    assert a.dtype == torch.uint8 and a.numel() == g.nbytes
    assert not a[:W.TENSOR_MAP_OFFSET].any()  # barrier counters start at zero
    assert bytes(a[W.TENSOR_MAP_OFFSET:W.TENSOR_MAP_OFFSET + 128].tolist()) == bytes(range(128))
    assert encoded[0].address == a.data_ptr() + W.DATA_OFFSET
    assert pool.get(g, 128, stream=7, device=torch.device("cpu")) is a  # same stream: shared, encoded once
    assert len(encoded) == 1
    b = pool.get(g, 128, stream=8, device=torch.device("cpu"))  # another stream: its own
    assert b is not a and b.data_ptr() != a.data_ptr() and len(encoded) == 2
    g2 = W.geometry([(5, 128, 256, 1)])
    assert pool.get(g2, 128, stream=7, device=torch.device("cpu")) is not a


def test_hook_gives_a_workspace_to_prepass_variants_only(monkeypatch):
    import importlib

    launch = importlib.import_module("kernel.hopper.launch")  # kernel.hopper.launch is also a function

    hooks = launch.HopperHooks()
    monkeypatch.setattr(hooks.workspaces, "_encoder", lambda rm: bytes(128))
    plan = _plan()
    assert hooks.workspace(FASTEST_CONFIG, plan, 1, torch.device("cpu")) is None
    ws = hooks.workspace(PRE, plan, 1, torch.device("cpu"))
    assert ws is hooks.workspace(PRE, plan, 1, torch.device("cpu"))
    assert ws is not hooks.workspace(PRE, plan, 2, torch.device("cpu"))
    assert ws.numel() == W.geometry(plan.sizes).nbytes


@pytest.mark.parametrize("rows, cut", [(2320, 56), (4096, 0)])
def test_a_cut_grid_gets_a_split_area_of_one_slot_per_cut_tile(monkeypatch, rows, cut):
    """schedule="split_last": the workspace holds one partial-sum slot (the tile's fp32
    accumulators) per tile the grid cuts, after the data, 1024-aligned, its flags zeroed and its
    offset in header word SPLIT_WORD; a grid that cuts nothing gets no split area (word 0)."""
    import importlib

    from kernel.hopper.variants import WIDE_Y_CONFIG as WIDE

    launch = importlib.import_module("kernel.hopper.launch")
    hooks = launch.HopperHooks()
    monkeypatch.setattr(hooks.workspaces, "_encoder", lambda rm: bytes(128))
    plan = make_plan([(rows, 4096, 512, 1)], tile_m=WIDE.tile_m, tile_n=WIDE.tile_n, tile_k=WIDE.tile_k,
                     max_ctas=132, schedule=WIDE.schedule)
    assert sum(plan.split_index(t) is not None for t in range(plan.total_tiles)) == cut
    ws = hooks.workspace(WIDE, plan, 1, torch.device("cpu"))
    data_end = W.DATA_OFFSET + rows * 2 * 512
    offset = int(np.frombuffer(ws[W.SPLIT_WORD:W.SPLIT_WORD + 4].numpy().tobytes(), dtype="<u4")[0]) * W.SPLIT_ALIGN
    if not cut:
        assert offset == 0 and ws.numel() == data_end
        return
    assert offset >= data_end and offset % W.SPLIT_ALIGN == 0 and offset - data_end < W.SPLIT_ALIGN
    assert ws.numel() == offset + 4 * W.SPLIT_FLAGS + cut * 4 * WIDE.tile_m * WIDE.tile_n
    assert not ws[offset:offset + 4 * W.SPLIT_FLAGS].any()


def test_a_beside_build_gets_a_zeroed_flag_per_chunk_phase1_can_have(monkeypatch):
    """phase1_beside: the workspace ends in a chunk-flag area, 1024-aligned after the data and the
    split area, its offset in header word FLAGS_WORD, one zeroed u32 per chunk phase 1 can cut its
    items into (chunks of at least PREPASS_MIN_CHUNK items, whatever the grid); builds without it
    get none (word 0)."""
    import importlib

    from kernel.hopper.config import PREPASS_MIN_CHUNK
    from kernel.hopper.variants import WIDE_BESIDE_CONFIG as BESIDE, WIDE_Y_CONFIG as WIDE

    launch = importlib.import_module("kernel.hopper.launch")
    hooks = launch.HopperHooks()
    monkeypatch.setattr(hooks.workspaces, "_encoder", lambda rm: bytes(128))
    sizes = [(2320, 4096, 512, 1)]
    plan = make_plan(sizes, tile_m=BESIDE.tile_m, tile_n=BESIDE.tile_n, tile_k=BESIDE.tile_k, max_ctas=132,
                     schedule=BESIDE.schedule)

    def word(ws, at):
        return int(np.frombuffer(ws[at:at + 4].numpy().tobytes(), dtype="<u4")[0])

    ws = hooks.workspace(BESIDE, plan, 1, torch.device("cpu"))
    split = word(ws, W.SPLIT_WORD) * W.SPLIT_ALIGN
    flags = word(ws, W.FLAGS_WORD) * W.SPLIT_ALIGN
    items = W.beside_items(2320, 2 * 512)
    assert items == 2320 * (512 // W.ITEM_K)
    count = -(-items // PREPASS_MIN_CHUNK)
    assert split and flags % W.SPLIT_ALIGN == 0 and flags > split
    assert ws.numel() == flags + 4 * count and not ws[flags:].any()
    # every chunking the device may choose (any grid) fits the area
    for grid in (1, 7, 132, 264):
        for split_by in (1, 2, 4):
            chunk = min(max(-(-items // (split_by * grid)), PREPASS_MIN_CHUNK), BESIDE.phase1_threads * BESIDE.prepass_batch)
            assert -(-items // chunk) <= count
    plain = hooks.workspace(WIDE, plan, 2, torch.device("cpu"))
    assert word(plain, W.FLAGS_WORD) == 0 and plain.numel() < ws.numel()


def test_beside_items_run_sub_block_major_and_cover_every_run_once():
    """phase1_beside: every (slot with columns, row, 64-K sub-block of its K) is exactly one item
    that is no hole, and the items run sub-block-major: all rows' sub-block 0, then sub-block 1
    (a row of a smaller K leaves holes in the later sub-blocks)."""
    g = W.geometry(SIZES)
    total = W.beside_items(g.rows, g.pitch)
    runs = [W.beside_item_location(SIZES, i) for i in range(total)]
    want = {(slot, row, sb) for slot, (m, n, k, _) in enumerate(SIZES) if n > 0
            for row in range(m) for sb in range(k // W.ITEM_K)}
    found = [r for r in runs if r is not None]
    assert len(found) == len(set(found)) and set(found) == want
    assert [r[2] for r in found] == sorted(r[2] for r in found)


@pytest.mark.parametrize("chunk", [32, 96, 100, 192])
def test_a_stage_waits_for_exactly_the_chunks_of_its_boxes(chunk):
    """phase1_beside: the chunk range a producer waits for before a Y box (box_chunk_range, the
    function the producer warp traces) holds every item of the box (its tile's rows inside the
    group, one sub-block) and no chunk without one."""
    sizes = [(300, 256, 512, 1), (7, 0, 256, 1), (513, 384, 1024, 1), (1, 128, 256, 1), (256, 128, 768, 1)]
    tile_m = 256
    g = W.geometry(sizes)
    total = W.beside_items(g.rows, g.pitch)
    where: dict = {}
    for i in range(total):
        loc = W.beside_item_location(sizes, i)
        if loc is not None:
            where[loc] = i
    for slot, (m, n, k, _) in enumerate(sizes):
        if not n:
            continue
        for m0 in range(0, m, tile_m):
            rows = min(m - m0, tile_m)
            for sb in range(k // W.ITEM_K):
                c_lo, c_hi = W.box_chunk_range(sb, g.rows, g.row_offsets[slot] + m0, rows, chunk)
                items = [where[slot, row, sb] for row in range(m0, m0 + rows)]
                assert {i // chunk for i in items} == set(range(c_lo, c_hi + 1)), (slot, m0, sb)
