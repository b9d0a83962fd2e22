"""The fp16 Y workspace of ``y_source="prepass"`` (issue 14p), on a CPU: pure Python plus the
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

from kernel.hopper.config import HopperConfig
from kernel.hopper.variants import DECLARED_VARIANTS
from kernel.hopper import workspace as W  # noqa: E402
from kernel.plan import make_plan  # noqa: E402

PRE = next(c for c in DECLARED_VARIANTS if c.label.endswith("_rs_pre"))  # the first prepass variant (its smem_decode twin is valid)
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

    # the smem-decode twin of the prepass variant: what dequant_y_rs reads and writes today
    return HopperNvfp4GroupedGemm(HopperConfig(**{**PRE.__dict__, "y_source": "smem_decode", "fp16_buffers": 2}), 8)


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

    from kernel.hopper.variants import FASTEST_CONFIG

    launch = importlib.import_module("kernel.hopper.launch")  # kernel.hopper.launch is also a function

    hooks = launch.HopperHooks()
    monkeypatch.setattr(hooks.workspaces, "_encoder", lambda rm: bytes(128))
    plan = _plan()
    assert hooks.workspace(FASTEST_CONFIG, plan, 1, torch.device("cpu")) is None
    ws = hooks.workspace(PRE, plan, 1, torch.device("cpu"))
    assert ws is hooks.workspace(PRE, plan, 1, torch.device("cpu"))
    assert ws is not hooks.workspace(PRE, plan, 2, torch.device("cpu"))
    assert ws.numel() == W.geometry(plan.sizes).nbytes


# ---- prepass_sync="flags" (issue 14, session 4): per (Y block, K chunk) readiness flags ------
FLAGS = [c for c in DECLARED_VARIANTS if c.prepass_sync == "flags"]


def _device_publish(sizes, box_rows, first, end, tile_k=256):
    """The device's publish arithmetic (kernel.hopper.kernel, prepass_flag_order and
    prepass_flag_publish), line by line in Python: {(block, level): (count added, target)}."""
    sbk = tile_k // 64
    m = [s[0] for s in sizes]
    roffs = [sum(m[:s]) for s in range(len(m))]
    bstarts = [sum(-(-x // box_rows) for x in m[:s]) for s in range(len(m))]
    rows, nblocks = sum(m), sum(-(-x // box_rows) for x in m)
    per_level = rows * sbk

    def order(item):
        lvl = item // per_level
        row = (item - lvl * per_level) // sbk
        block = 0
        for s in range(len(m)):
            if row >= roffs[s]:
                block = bstarts[s] + (row - roffs[s]) // box_rows
        return lvl * nblocks + block

    out = {}
    for g in range(order(first), order(end - 1) + 1):  # threads t = 0, 1, ... of the chunk
        lvl, b = divmod(g, nblocks)
        sel = max(s for s in range(len(m)) if b >= bstarts[s])
        m0 = (b - bstarts[sel]) * box_rows
        lo = lvl * per_level + (roffs[sel] + m0) * sbk
        hi = lvl * per_level + (roffs[sel] + min(m0 + box_rows, m[sel])) * sbk
        out[(b, lvl)] = (min(end, hi) - max(first, lo), hi - lo)
    return out


@pytest.mark.parametrize("box_rows", [64, 128])
@pytest.mark.parametrize("chunk", [32, 249, 1152])
def test_flag_cells_complete_exactly_once_per_launch(box_rows, chunk):
    """Every (Y block, level) cell gets exactly its target count over the chunks of a launch
    (so exactly one add completes it, resets its counter and releases its flag), every chunk's
    adds are positive and the device's range arithmetic equals the brute-force count."""
    sizes = [tuple(s) for s in SIZES] + [(0, 128, 512, 1), (192, 128, 512, 1)]
    g = W.geometry(sizes, box_rows)
    kmax = max(s[2] for s in sizes)
    assert g.flag_cells == sum(-(-s[0] // box_rows) for s in sizes) * (kmax // 256)
    assert g.items == g.rows * kmax // 64
    total = {}
    for first in range(0, g.items, chunk):
        end = min(first + chunk, g.items)
        brute = W.flag_cells_of_chunk(sizes, box_rows, first, end)
        assert _device_publish(sizes, box_rows, first, end) == brute
        for cell, (n, target) in brute.items():
            assert n > 0
            done, t = total.get(cell, (0, target))
            assert t == target
            total[cell] = (done + n, target)
    assert len(total) == g.flag_cells
    assert all(done == target > 0 for done, target in total.values())
    blocks = g.flag_cells // (kmax // 256)
    assert {cell for cell in total} == {(b, lvl) for b in range(blocks) for lvl in range(kmax // 256)}


def test_flag_items_are_k_chunk_major_and_cover_every_item_once():
    """The K-chunk-major items decode each (slot with N > 0, row, sub-block) of the barrier
    order exactly once; every item of level 0 (the first 256 K of every row) comes before any
    item of level 1, so the first claimed chunks make every Y block's first K chunk ready."""
    sizes = [tuple(s) for s in SIZES]
    g = W.geometry(sizes, 128)
    decoded = [W.flag_item_location(sizes, i) for i in range(g.items)]
    valid = [d for d in decoded if d is not None]
    expect = [W.item_location(sizes, i) for i in range(W.geometry(sizes).items)]
    assert sorted(valid) == sorted(expect) and len(set(valid)) == len(valid)
    levels = [i // (g.rows * 4) for i in range(g.items)]
    assert all(d[2] // 4 == lvl for d, lvl in zip(decoded, levels) if d is not None)
    assert levels == sorted(levels)


def test_flags_workspace_layout_and_pool():
    """The flag cells sit right after the data rows (outside the TMA map), 8 bytes each, zeroed
    at allocation with the header (generation 0: no flag is ready); the pool keys the cell
    count, so the barrier and the flags layouts of one geometry are different workspaces."""
    assert W.CLAIM_WORD < W.DONE_WORD < W.PASSED_WORD < W.GEN_WORD < W.TENSOR_MAP_OFFSET
    assert W.FLAG_CELL_BYTES == 8
    sizes = _plan().sizes
    g, gf = W.geometry(sizes), W.geometry(sizes, 128)
    assert (gf.rows, gf.pitch, gf.row_offsets) == (g.rows, g.pitch, g.row_offsets) and g.flag_cells == 0
    assert gf.flags_offset == W.DATA_OFFSET + g.rows * g.pitch and gf.nbytes == gf.flags_offset + 8 * gf.flag_cells
    pool = W.WorkspacePool(encoder=lambda rm: bytes(128))
    a = pool.get(g, 128, stream=7, device=torch.device("cpu"))
    f = pool.get(gf, 128, stream=7, device=torch.device("cpu"))
    assert f is not a and f.numel() == gf.nbytes
    assert not f[:W.TENSOR_MAP_OFFSET].any() and not f[gf.flags_offset:].any()


def test_hook_gives_flags_variants_the_flags_layout(monkeypatch):
    import importlib

    launch = importlib.import_module("kernel.hopper.launch")
    hooks = launch.HopperHooks()
    monkeypatch.setattr(hooks.workspaces, "_encoder", lambda rm: bytes(128))
    for config in FLAGS:
        plan = make_plan(SIZES, tile_m=config.tile_m, tile_n=config.tile_n, tile_k=config.tile_k, max_ctas=132)
        ws = hooks.workspace(config, plan, 1, torch.device("cpu"))
        assert ws.numel() == W.geometry(plan.sizes, config.mma_n, config.tile_k).nbytes
        assert ws.numel() > W.geometry(plan.sizes).nbytes


def _launch_flags(mem, sizes, box_rows, grid, chunk, rng, log):
    """One launch of the flags protocol (kernel.hopper.workspace, "Readiness flags"), CTAs and
    producers interleaved at random: each CTA reads the generation, claims chunks until one is
    past the end (decoding and publishing each), counts itself through; its producer then waits
    on the cells of one random Y block. Every time a producer sees a flag ready, the cell's items
    must have been decoded in this launch (``log``: the cells that were)."""
    g = W.geometry(sizes, box_rows)
    levels = max(s[2] for s in sizes) // 256
    chunks = -(-g.items // chunk)
    done_cells = set()

    def cta():
        gen = mem["gen"]
        yield
        while True:
            c = mem["claim"]
            mem["claim"] += 1
            yield
            if c >= chunks:
                break
            first, end = c * chunk, min(c * chunk + chunk, g.items)
            for cell, (n, target) in W.flag_cells_of_chunk(sizes, box_rows, first, end).items():
                mem["decoded"][cell] = mem["decoded"].get(cell, 0) + n  # the chunk's stores
                yield
                old = mem["counter"].get(cell, 0)
                mem["counter"][cell] = old + n
                if old + n == target:
                    assert mem["decoded"][cell] == target
                    mem["counter"][cell] = 0
                    done_cells.add(cell)
                    mem["flag"][cell] = gen + 1
                yield
        passed = mem["passed"]
        mem["passed"] += 1
        if passed == grid - 1:
            mem["claim"], mem["passed"], mem["gen"] = 0, 0, gen + 1
        yield
        blocks = g.flag_cells // levels
        block = rng.randrange(blocks)
        for lvl in range(levels):
            while mem["flag"].get((block, lvl), 0) - (gen + 1) < 0:
                yield  # spin
            assert (block, lvl) in done_cells, "a flag of an earlier launch read as ready"
            log.append((block, lvl))

    running = [cta() for _ in range(grid)]
    while running:
        it = rng.choice(running)
        try:
            next(it)
        except StopIteration:
            running.remove(it)
    assert mem["claim"] == mem["passed"] == 0 and not any(mem["counter"].values())
    mem["decoded"].clear()  # the next launch decodes again


def test_flags_protocol_over_repeated_launches_and_geometries():
    """Repeated launches on one workspace, with two geometries sharing its flag cells (the cell
    of a (block, level) means another Y block in the other geometry): the generation advances once
    per launch, the counters are back to 0 after each, every flag a producer accepts was
    published by its own launch (never one of an earlier launch), and nothing hangs."""
    import random

    rng = random.Random(14)
    mem = {"claim": 0, "passed": 0, "gen": 0, "counter": {}, "flag": {}, "decoded": {}}
    a = [(100, 512, 512, 1), (130, 256, 1024, 1), (7, 0, 256, 1)]
    b = [(230, 512, 1024, 1), (7, 128, 256, 1)]  # same rows and pitch as a, other blocks
    assert (W.geometry(a, 64).rows, W.geometry(a, 64).pitch) == (W.geometry(b, 64).rows, W.geometry(b, 64).pitch)
    log = []
    for launch in range(12):
        sizes = a if launch % 2 == 0 else b
        _launch_flags(mem, sizes, 64, grid=rng.choice([3, 7, 16]), chunk=rng.choice([32, 97, 256]), rng=rng, log=log)
        assert mem["gen"] == launch + 1
    assert log


# ---- y_row_pad (issue 14, session 11): each group's rows at a multiple of the smallest Y tile ----
@pytest.mark.parametrize("align", [64, 128])
def test_padded_geometry_offsets_aligned_items_unchanged(align):
    plan = _plan()
    g0, g = W.geometry(plan.sizes), W.geometry(plan.sizes, row_align=align)
    m = [s[0] for s in plan.sizes]
    padded = [-(-x // align) * align for x in m]
    assert g.row_offsets == tuple(int(x) for x in np.cumsum([0] + padded[:-1]))
    assert all(o % align == 0 for o in g.row_offsets) and g.rows == sum(padded) >= g0.rows
    # each slot's rows fit before the next slot's first row
    assert all(g.row_offsets[s] + m[s] <= (g.row_offsets[s + 1] if s + 1 < len(m) else g.rows) for s in range(len(m)))
    assert (g.items, g.pitch) == (g0.items, g0.pitch)  # the same items, only their rows move
    a_ptrs = [0x10000000 * (s + 1) for s in range(len(m))]
    sf_ptrs = [0x80000000 + 0x1000000 * s for s in range(len(m))]
    for item in range(0, g.items, 7):
        slot, row, sb = W.item_location(plan.sizes, item)
        raw0, sf0, dst0 = W.item_addresses(plan.sizes, a_ptrs, sf_ptrs, 0, item)
        raw, sf, dst = W.item_addresses(plan.sizes, a_ptrs, sf_ptrs, 0, item, row_align=align)
        assert (raw, sf) == (raw0, sf0)  # what is read does not move
        assert dst - dst0 == (g.row_offsets[slot] - g0.row_offsets[slot]) * g.pitch
    with pytest.raises(ValueError):
        W.geometry(plan.sizes, 128, row_align=align)  # not with the flags layout


def test_padded_pool_zeroes_and_keys_by_layout():
    pool = W.WorkspacePool(encoder=lambda rm: bytes(128))
    cpu = torch.device("cpu")
    g = W.geometry([(100, 128, 256, 1), (30, 128, 256, 1)], row_align=64)
    h = W.geometry([(30, 128, 256, 1), (100, 128, 256, 1)], row_align=64)  # same rows and pitch, other layout
    assert (g.rows, g.pitch) == (h.rows, h.pitch) and g.row_offsets != h.row_offsets
    a = pool.get(g, 128, stream=3, device=cpu, zero_pad=True)
    assert not a[W.DATA_OFFSET:].any()  # the padding rows start zero
    a[W.DATA_OFFSET:].fill_(7)  # a launch writes its rows
    assert pool.get(g, 128, stream=3, device=cpu, zero_pad=True) is a
    b = pool.get(h, 128, stream=3, device=cpu, zero_pad=True)
    assert b is not a and not b[W.DATA_OFFSET:].any()  # another layout never sees a's rows
    # unpadded builds keep sharing one workspace per (rows, pitch)
    assert pool.get(g, 128, stream=3, device=cpu) is pool.get(h, 128, stream=3, device=cpu)


def test_hook_pads_the_workspace_of_a_padded_build():
    import importlib

    from kernel.hopper.config import ZERO_PAD_CONFIG

    launch = importlib.import_module("kernel.hopper.launch")
    hooks = launch.HopperHooks()
    hooks.workspaces._encoder = lambda rm: bytes(128)
    plan = make_plan(SIZES, tile_m=ZERO_PAD_CONFIG.tile_m, tile_n=ZERO_PAD_CONFIG.tile_n, tile_k=ZERO_PAD_CONFIG.tile_k,
                     max_ctas=132)
    ws = hooks.workspace(ZERO_PAD_CONFIG, plan, 1, torch.device("cpu"))
    assert ZERO_PAD_CONFIG.y_row_align == 64
    assert ws.numel() == W.geometry(plan.sizes, row_align=64).nbytes > W.geometry(plan.sizes).nbytes
    assert not ws[W.DATA_OFFSET:].any()


# ---- phase 1 in its own launch with flags (issue 14, session 17): counters that only grow ----
class _Stuck(RuntimeError):
    pass


def _launch_counting(mem, sizes, box_rows, warps, ctas, chunk, rng):
    """One launch of the own-launch flags protocol (kernel.hopper.workspace, "Phase 1 in a launch
    of its own"), phase-1 warps and GEMM CTAs interleaved at random: a warp claims chunks until
    one is past the end and adds each chunk's items of a cell to the cell's counter (after the
    chunk's stores); a GEMM CTA reads the generation, waits on the cells of one random Y block
    until counter - (generation + 1) x the cell's items >= 0, then (the phase-1 grid complete)
    counts itself through; the last one resets the claims and advances the generation. A cell
    seen ready must have every item of it decoded in this launch. Raises _Stuck when no step can
    make progress."""
    g = W.geometry(sizes, box_rows)
    levels = max(s[2] for s in sizes) // 256
    chunks = -(-g.items // chunk)
    items = {cell: target for cell, (_n, target) in W.flag_cells_of_chunk(sizes, box_rows, 0, g.items).items()}
    decoded = {}
    phase1_left = [warps]

    def warp():
        while True:
            c = mem["claim"]
            mem["claim"] += 1
            yield True
            if c >= chunks:
                break
            first, end = c * chunk, min(c * chunk + chunk, g.items)
            for cell, (n, _target) in W.flag_cells_of_chunk(sizes, box_rows, first, end).items():
                decoded[cell] = decoded.get(cell, 0) + n  # the chunk's stores
                yield True
                mem["counter"][cell] = (mem["counter"].get(cell, 0) + n) % 2**32  # the release add
                yield True
        phase1_left[0] -= 1

    def cta():
        gen = mem["gen"]
        yield True
        block = rng.randrange(g.flag_cells // levels)
        for lvl in range(levels):
            cell = (block, lvl)
            target = ((gen + 1) * items[cell]) % 2**32
            while (mem["counter"].get(cell, 0) - target) % 2**32 >= 2**31:  # signed difference < 0
                yield False  # spin
            assert decoded.get(cell, 0) == items[cell], f"cell {cell} read as ready before its items were decoded"
        while phase1_left[0]:
            yield False  # griddepcontrol.wait: the phase-1 grid complete
        passed = mem["passed"]
        mem["passed"] += 1
        if passed == ctas - 1:
            mem["claim"], mem["passed"], mem["gen"] = 0, 0, gen + 1
        yield True

    running = [warp() for _ in range(warps)] + [cta() for _ in range(ctas)]
    idle = 0
    while running:
        it = rng.choice(running)
        try:
            idle = 0 if next(it) else idle + 1
        except StopIteration:
            running.remove(it)
            idle = 0
        if idle > 50 * len(running) + 1000:
            raise _Stuck("no progress: every GEMM CTA spins on a counter no phase-1 warp will raise")
    assert mem["claim"] == mem["passed"] == 0


def _counting_mem():
    return {"claim": 0, "passed": 0, "gen": 0, "counter": {}}


# same rows, pitch and cell count, other groups (so other items per cell)
_COUNT_A = [(100, 512, 512, 1), (28, 256, 512, 1)]
_COUNT_B = [(70, 512, 512, 1), (58, 0, 512, 1)]


def test_counting_flags_over_repeated_launches_one_workspace_per_layout():
    """Repeated launches alternating two problems whose workspaces would share rows, pitch and
    cell count: with one workspace per row layout (the pool's key), every cell a GEMM CTA accepts
    was decoded in its own launch, the generation advances once per launch, nothing hangs."""
    import random

    rng = random.Random(17)
    assert (W.geometry(_COUNT_A, 64).rows, W.geometry(_COUNT_A, 64).pitch, W.geometry(_COUNT_A, 64).flag_cells) == \
        (W.geometry(_COUNT_B, 64).rows, W.geometry(_COUNT_B, 64).pitch, W.geometry(_COUNT_B, 64).flag_cells)
    mems = {"a": _counting_mem(), "b": _counting_mem()}
    for launch in range(16):
        name = "ab"[launch % 2]
        _launch_counting(mems[name], _COUNT_A if name == "a" else _COUNT_B, 64, warps=rng.choice([2, 5, 12]),
                         ctas=rng.choice([3, 7]), chunk=rng.choice([32, 64, 97]), rng=rng)
    assert mems["a"]["gen"] == mems["b"]["gen"] == 8


def test_counting_flags_break_when_two_layouts_share_a_workspace():
    """The model can fail: the same alternation on ONE workspace (what the pool's layout key
    prevents) reads a cell as ready before its items were decoded, or hangs."""
    import random

    failures = 0
    for seed in range(6):
        rng = random.Random(seed)
        mem = _counting_mem()
        try:
            for launch in range(6):
                _launch_counting(mem, _COUNT_A if launch % 2 == 0 else _COUNT_B, 64, warps=4, ctas=5, chunk=64, rng=rng)
        except (AssertionError, _Stuck):
            failures += 1
    assert failures == 6


def test_counting_pool_keys_the_layout():
    pool = W.WorkspacePool(encoder=lambda rm: bytes(128))
    ga, gb = W.geometry(_COUNT_A, 64), W.geometry(_COUNT_B, 64)
    cpu = torch.device("cpu")
    a, b = pool.get(ga, 64, 7, cpu, counting=True), pool.get(gb, 64, 7, cpu, counting=True)
    assert a is not b and pool.get(ga, 64, 7, cpu, counting=True) is a
    # and apart from the resetting protocol's workspace of the same geometry
    assert pool.get(ga, 64, 7, cpu) is not a
    # the resetting protocol shares one workspace between the two layouts (its cells reset)
    assert pool.get(ga, 64, 7, cpu) is pool.get(gb, 64, 7, cpu)
