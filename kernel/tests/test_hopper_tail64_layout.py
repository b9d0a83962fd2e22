"""y_tail64: the 64-row tile's wgmma views, checked with CuTe's own layout algebra on
the CPU (CuTe DSL's host JIT, no GPU).

* the m64n64k16 accumulator fragment of every consumer thread is the first half of the
  m64n128k16 one: value i < 32 has the same (row, column) in both (columns 0..63), so ``acc64``
  (a view on the first 32 registers of ``acc``) accumulates exactly the tile's first 64 Y rows;
* the Y ring seen as 64-row buffers (``2 x fp16_buffers`` of 64 x 64 fp16, K_SW128): buffer 2b,
  rows 0..63, is byte for byte rows 0..63 of 128-row buffer b (same offsets, same swizzle).
"""

import os

import pytest
import torch

pytestmark = pytest.mark.compile


def test_64_wide_views_are_the_first_half_of_the_128_wide_ones():
    os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
    cutlass = pytest.importorskip("cutlass")
    import cutlass.cute as cute
    import cutlass.utils.hopper_helpers as sm90_utils
    from cutlass.cute.nvgpu import OperandMajorMode, warpgroup
    from cutlass.cute.runtime import from_dlpack

    from kernel.hopper.config import DEQUANT_SUB_K
    from kernel.hopper.variants import DECLARED_VARIANTS

    config = next(c for c in DECLARED_VARIANTS if c.y_tail64)
    bufs, wgs = config.fp16_buffers, config.consumer_warpgroups

    def mma(n):
        return sm90_utils.make_trivial_tiled_mma(
            cutlass.Float16, cutlass.Float16, OperandMajorMode.K, OperandMajorMode.K, cutlass.Float32,
            (wgs, 1, 1), tiler_mn=(64, n), a_source=warpgroup.OperandSource.RMEM)

    @cute.jit
    def views(acc_out: cute.Tensor, smem_out: cute.Tensor):
        m128, m64 = mma(128), mma(64)
        for t in cutlass.range_constexpr(128 * wgs):
            c128 = m128.get_slice(t).partition_C(cute.make_identity_tensor((128, 128)))
            c64 = m64.get_slice(t).partition_C(cute.make_identity_tensor((128, 64)))
            for i in cutlass.range_constexpr(32):
                a, b = c128[i], c64[i]
                acc_out[t, i, 0] = a[0]
                acc_out[t, i, 1] = a[1]
                acc_out[t, i, 2] = b[0]
                acc_out[t, i, 3] = b[1]
        atom = warpgroup.make_smem_layout_atom(warpgroup.SmemLayoutAtomKind.K_SW128, cutlass.Float16)
        y128 = cute.tile_to_shape(atom, (128, DEQUANT_SUB_K, bufs), order=(0, 1, 2))
        y64 = cute.tile_to_shape(atom, (64, DEQUANT_SUB_K, 2 * bufs), order=(0, 1, 2))
        for b in cutlass.range_constexpr(bufs):
            for r in cutlass.range_constexpr(0, 64, 7):
                for k in cutlass.range_constexpr(0, DEQUANT_SUB_K, 9):
                    smem_out[b, r, k, 0] = y128((r, k, b))
                    smem_out[b, r, k, 1] = y64((r, k, 2 * b))

    acc = torch.zeros(128 * wgs, 32, 4, dtype=torch.int32)
    smem = torch.zeros(bufs, 64, DEQUANT_SUB_K, 2, dtype=torch.int32)
    # the arch named explicitly: a process that compiled another family first has another default
    args = (from_dlpack(acc), from_dlpack(smem))
    cute.compile(views, *args, options="--gpu-arch sm_90a")(*args)
    assert torch.equal(acc[..., :2], acc[..., 2:]), "the 64-wide fragment is not the 128-wide one's first half"
    assert int(acc[..., 1].max()) == 63 and int(acc[..., 0].max()) == 127
    sampled = smem[:, ::7, ::9]
    assert torch.equal(sampled[..., 0], sampled[..., 1]), "64-row buffer 2b is not the first half of buffer b"
    assert int(sampled[..., 0].max()) > 0
