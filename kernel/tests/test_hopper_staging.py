"""``epilogue="smem"``: the staged epilogue's layout, modelled on the CPU.

Plain Python over kernel.hopper.staging (the functions the kernel computes its addresses with):
``stmatrix.trans`` and the coalesced reads are simulated byte by byte, and every accumulator
value of every consumer thread must reach exactly the element of C the direct epilogue stores
it to (swapped: C row ``m0 + acc_coord[1]``, column ``n0 + acc_coord[0]``), once, for both
declared staged variants (one pass of 128 rows; two passes of 64). ``acc_coord`` itself is
checked against the tiled MMA's ``partition_C`` by ``test_acc_model_is_the_tiled_mma_fragment``
(CuTe DSL's host JIT, compile-marked). No GPU.
"""

import dataclasses
import os

import pytest

from kernel.hopper import staging
from kernel.hopper.config import (
    EPILOGUE_WG_COLS, PREPASS_BATCH, SMEM_CAPACITY_BYTES, epilogue_stage_rows, smem_bytes,
)
from kernel.hopper.variants import DECLARED_VARIANTS

# the three staging geometries (the fastest tile's, the prepass tile's, the 256-row Y tile's); the
# other staged variants are these tiles with other options, the same epilogue (test below; a pdl
# build stages exactly as its twin without it)
STAGED = [c for c in DECLARED_VARIANTS if c.epilogue == "smem" and c.wgmma_in_flight == 1 and not c.pdl
          and not c.prepass_split_warp and not c.chunk_done_skip]


def _stmatrix_trans(lane_addr, lane_regs):
    """PTX ``stmatrix.sync.aligned.m8n8.x4.trans.shared.b16``: lane_addr[l] = the row address lane
    l gives; lane_regs[l][j] = (low, high) fp16 of lane l's register j. Returns byte address ->
    element. Matrix j's fragment: lane l holds row l // 4, columns 2 (l % 4) (low) and +1 (high);
    .trans writes fragment column k as memory row k at lane (8 j + k)'s address."""
    out = {}
    for j in range(4):
        for k in range(8):
            base = lane_addr[8 * j + k]
            for r in range(8):  # memory row k, element r = fragment (row r, column k)
                src_lane = 4 * r + k // 2
                out[base + 2 * r] = lane_regs[src_lane][j][k % 2]
    return out


def _simulate(config):
    """{(C row, C column) in the tile: (tid, accumulator index)} through the staged epilogue."""
    rows = epilogue_stage_rows(config)
    passes = config.mma_n // rows
    wgs = config.consumer_warpgroups
    n_acc = config.acc_regs_per_thread
    placed = {}
    for w in range(wgs):
        for p in range(passes):
            buf = {}
            for q in range(staging.calls_per_pass(rows)):
                idx = staging.stmatrix_values(p, q, rows)
                assert all(0 <= i < n_acc for i in idx)
                for v in range(4):
                    lanes = range(128 * w + 32 * v, 128 * w + 32 * v + 32)
                    addr = [staging.stmatrix_lane_offset(t % 128) + q * staging.STEP_BYTES for t in lanes]
                    regs = [[((t, idx[2 * j]), (t, idx[2 * j + 1])) for j in range(4)] for t in lanes]
                    # conflict-free: the 8 rows of each matrix in 8 different 16-byte bank groups
                    for j in range(4):
                        assert len({a // 16 % 8 for a in addr[8 * j: 8 * j + 8]}) == 8
                    for a, val in _stmatrix_trans(addr, regs).items():
                        assert a not in buf, f"two writes to staging byte {a}"
                        assert 0 <= a < rows * staging.ROW_BYTES
                        buf[a] = val
            assert len(buf) == rows * EPILOGUE_WG_COLS, "the pass does not fill its buffer exactly"
            for it in range(staging.calls_per_pass(rows)):
                for v in range(4):
                    offs = [staging.read_lane_offset(wt) + it * staging.STEP_BYTES for wt in range(32 * v, 32 * v + 32)]
                    for quarter in range(4):  # one 128-byte wavefront per quarter warp
                        assert len({a // 16 % 8 for a in offs[8 * quarter: 8 * quarter + 8]}) == 8
                for wt in range(128):
                    off = staging.read_lane_offset(wt) + it * staging.STEP_BYTES
                    prow, pcol = staging.read_row_col(wt, it)
                    for e in range(8):
                        crd = (p * rows + prow, w * EPILOGUE_WG_COLS + pcol + e)
                        assert crd not in placed
                        placed[crd] = buf.pop(off + 2 * e)
            assert not buf, "staged values nobody reads"
    return placed


@pytest.mark.parametrize("config", STAGED, ids=lambda c: c.label)
def test_staged_layout_is_the_direct_epilogues_bijection(config):
    placed = _simulate(config)
    wanted = {}
    for t in range(config.consumer_threads):
        for i in range(config.acc_regs_per_thread):
            wrow, wcol = staging.acc_coord(t, i)
            wanted[(wcol, wrow)] = (t, i)  # swapped: C row = wgmma column, C column = wgmma row
    assert len(wanted) == config.mma_m * config.mma_n
    assert placed == wanted


def test_staging_rows_and_bytes():
    assert sorted(c.label for c in STAGED) == [
        "h90_m128n128k256_s4_wg2_b8_swap_fp16_tma_prmt_rs_prec1xs_t64_es",
        "h90_m128n128k256_s4_wg2_swap_fp16_tma_prmt_rs_es",
        "h90_m240n128k256_s3_wg2_b4_swap_fp16_tma_prmt_rs_prec1xsb2ho_es_pwg_sk",
        "h90_m256n128k256_s3_wg2_b4_swap_fp16_tma_prmt_rs_prec1xsb2ho_es_pwg_sk",
        "h90_m256n128k256_s3_wg2_b4_swap_fp16_tma_prmt_rs_prec1xsb8h_es_pwg_sk",
    ]
    t64, fast, beside240, beside, wide = sorted(STAGED, key=lambda c: c.label)
    assert epilogue_stage_rows(fast) == 128 and smem_bytes(fast)["epilogue_staging"] == 32768
    assert epilogue_stage_rows(t64) == 64 and smem_bytes(t64)["epilogue_staging"] == 16384
    # the 256-row Y tile: half of its 256 rows of C per pass (two passes); with phase 1 beside the
    # tiles a quarter (the helpers' 12 KB staging region takes the difference)
    assert epilogue_stage_rows(wide) == 128 and smem_bytes(wide)["epilogue_staging"] == 32768
    assert epilogue_stage_rows(beside) == 64 and smem_bytes(beside)["epilogue_staging"] == 16384
    # 240 rows: three passes of 80 (120 is no whole number of 16-row steps; 240 does not fit)
    assert epilogue_stage_rows(beside240) == 80 and smem_bytes(beside240)["epilogue_staging"] == 20480
    for c in STAGED:
        assert smem_bytes(c)["total"] <= SMEM_CAPACITY_BYTES
    # a pdl build stages as its twin without pdl; the split-warp build as its one-lane twin; a
    # build with phase-1 helpers as its twin without them (phase 1 changes no epilogue byte); the
    # done-count skip as its twin without it
    for c in DECLARED_VARIANTS:
        if c.phase1_helpers:
            twin = dataclasses.replace(c, phase1_helpers=False, prepass_batch=PREPASS_BATCH)
            assert smem_bytes(c) == smem_bytes(twin) and epilogue_stage_rows(c) == epilogue_stage_rows(twin)
        if c.pdl:
            twin = dataclasses.replace(c, pdl=False)
            assert epilogue_stage_rows(c) == epilogue_stage_rows(twin) and smem_bytes(c) == smem_bytes(twin)
        if c.prepass_split_warp:
            twin = dataclasses.replace(c, prepass_split_warp=False)
            assert twin in STAGED and smem_bytes(c) == smem_bytes(twin)
        if c.chunk_done_skip:
            twin = dataclasses.replace(c, chunk_done_skip=False)
            assert twin in STAGED and smem_bytes(c) == smem_bytes(twin)
    # two wgmma groups in flight with 4 fp16 buffers and 3 stages: the whole tile in one pass, 64
    # columns of C (16 KB) per consumer warpgroup: two on 128-row X tiles, one on 64-row ones
    w2s = [c for c in DECLARED_VARIANTS if c.wgmma_in_flight == 2]
    assert sorted(c.mma_m for c in w2s) == [64, 128]
    for w2 in w2s:
        assert epilogue_stage_rows(w2) == 128 and smem_bytes(w2)["total"] <= SMEM_CAPACITY_BYTES
        assert smem_bytes(w2)["epilogue_staging"] == 128 * 64 * 2 * w2.consumer_warpgroups


def test_a_swapped_layout_slip_is_caught():
    """The model is not vacuous: reading without the swizzle places values wrongly."""
    orig = staging.read_lane_offset
    try:
        staging.read_lane_offset = lambda wtid: (wtid // 8) * staging.ROW_BYTES + (wtid % 8) * 16
        with pytest.raises(AssertionError):
            test_staged_layout_is_the_direct_epilogues_bijection(STAGED[0])
    finally:
        staging.read_lane_offset = orig


@pytest.mark.compile
@pytest.mark.filterwarnings("ignore:This static loop")
def test_acc_model_is_the_tiled_mma_fragment():
    """acc_coord (the staged layout's model of the accumulator) is what the kernel's tiled MMA
    (2 warpgroups, m64n128k16, A from registers) gives every thread in ``partition_C``, the
    direct epilogue's ``tCcC``; checked with CuTe DSL's host JIT on the CPU."""
    os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
    cutlass = pytest.importorskip("cutlass")
    import cutlass.cute as cute
    import cutlass.utils.hopper_helpers as sm90_utils
    import torch
    from cutlass.cute.nvgpu import OperandMajorMode, warpgroup
    from cutlass.cute.runtime import from_dlpack

    (config,) = [c for c in STAGED if c.tile_m == 128 and not c.y_tail64]  # the 128 x 128 tile, two warpgroups
    assert config.consumer_warpgroups == 2 and config.mma_n == 128
    wgs, n_acc = config.consumer_warpgroups, config.acc_regs_per_thread

    @cute.jit
    def coords(out: cute.Tensor):
        mma = sm90_utils.make_trivial_tiled_mma(
            cutlass.Float16, cutlass.Float16, OperandMajorMode.K, OperandMajorMode.K, cutlass.Float32,
            (wgs, 1, 1), tiler_mn=(64, config.mma_n), a_source=warpgroup.OperandSource.RMEM)
        for t in cutlass.range_constexpr(128 * wgs):
            thr = mma.get_slice(t)
            c = thr.partition_C(cute.make_identity_tensor((config.mma_m, config.mma_n)))
            assert cute.size(c) == n_acc
            for i in cutlass.range_constexpr(n_acc):
                crd = c[i]
                out[t, i, 0] = crd[0]
                out[t, i, 1] = crd[1]

    got = torch.zeros(128 * wgs, n_acc, 2, dtype=torch.int32)
    args = (from_dlpack(got),)
    cute.compile(coords, *args, options="--gpu-arch sm_90a")(*args)
    model = torch.tensor([[staging.acc_coord(t, i) for i in range(n_acc)] for t in range(128 * wgs)], dtype=torch.int32)
    assert torch.equal(got, model)


def _f16_bits(x):
    import numpy as np

    with np.errstate(over="ignore"):  # past the fp16 range: inf, as cvt.rn.f16.f32 gives
        return int(np.array([x], dtype=np.float32).astype(np.float16).view(np.uint16)[0])  # round to nearest even


def test_stmatrix_asm_packs_the_values_as_the_model_says_and_rounds_like_store_f16():
    """The emitted PTX of ptx.stmatrix_f16_asm, interpreted (mul.rn.f32, cvt.rn.f16x2.f32 d, hi, lo,
    the stmatrix operand list): register j holds fp16(values[2j] * mult) low and
    fp16(values[2j+1] * mult) high, each the bits ptx.store_f16 (mul.rn.f32, cvt.rn.f16.f32)
    writes for that value: what staging.stmatrix_values and the layout test assume."""
    import inspect
    import re

    import numpy as np

    from kernel.hopper import ptx

    rng = np.random.default_rng(7)
    mult = np.float32(2.0 ** 28)
    # exact-harness magnitudes: integers times 2^-48 (subnormal and normal fp16 after the multiply),
    # halfway cases, and values past the fp16 range
    samples = [np.float32(v) for v in rng.integers(-2**20, 2**20, 64) * 2.0 ** -48]
    samples += [np.float32(2.0 ** -52 * 3), np.float32(-(2.0 ** -38) * 1.5), np.float32(1.0), np.float32(-2.0 ** -10),
                np.float32(0.0), np.float32(-0.0), np.float32(65504 * 2.0 ** -28), np.float32(70000 * 2.0 ** -28)]
    assert len(samples) % 8 == 0
    for k in range(0, len(samples), 8):
        f, h, stored = {}, {}, None
        values = samples[k: k + 8]
        for line in ptx.stmatrix_f16_asm().splitlines():
            if m := re.fullmatch(r"mul\.rn\.f32 f(\d), \$(\d), \$9;", line):
                f[int(m[1])] = np.float32(values[int(m[2]) - 1] * mult)
            elif m := re.fullmatch(r"cvt\.rn\.f16x2\.f32 h(\d), f(\d), f(\d);", line):
                h[int(m[1])] = _f16_bits(f[int(m[2])]) << 16 | _f16_bits(f[int(m[3])])
            elif m := re.fullmatch(r"stmatrix\.sync\.aligned\.m8n8\.x4\.trans\.shared\.b16 \[\$0\], \{(.*)\};", line):
                stored = [h[int(r.strip()[1:])] for r in m[1].split(",")]
        # the direct epilogue's rounding (store_f16's asm text): mul.rn.f32, then cvt.rn.f16.f32
        assert "mul.rn.f32 f, $1, $2;\\ncvt.rn.f16.f32 h, f;" in inspect.getsource(ptx.store_f16)
        direct = [_f16_bits(np.float32(v * mult)) for v in values]
        assert stored == [direct[2 * j + 1] << 16 | direct[2 * j] for j in range(4)]


def test_tail_store_asm_writes_element_e_at_2e_below_the_count():
    """ptx.st_global_f16x8_tail_asm, interpreted: fp16 e (word e // 2, low half first) goes to
    byte offset 2e, and only while e < count."""
    import re

    from kernel.hopper import ptx

    words = [0x11110000, 0x33332222, 0x55554444, 0x77776666]
    for count in (-1, 0, 1, 5, 7, 8, 100):
        e, pred, out = {}, False, {}
        for line in ptx.st_global_f16x8_tail_asm().splitlines():
            if m := re.fullmatch(r"mov\.b32 \{e(\d), e(\d)\}, \$(\d);", line):
                w = words[int(m[3]) - 1]
                e[int(m[1])], e[int(m[2])] = w & 0xFFFF, w >> 16
            elif m := re.fullmatch(r"setp\.gt\.s32 p, \$5, (\d);", line):
                pred = count > int(m[1])
            elif m := re.fullmatch(r"@p st\.global\.b16 \[\$0\+(\d+)\], e(\d);", line):
                if pred:
                    out[int(m[1])] = e[int(m[2])]
        assert out == {2 * k: (0x1111 * k) & 0xFFFF for k in range(max(0, min(count, 8)))}, count
