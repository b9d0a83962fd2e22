"""y_tail64: a narrow tile's wgmma views, checked with CuTe's own layout algebra on the CPU
(CuTe DSL's host JIT, no GPU), for every narrow width a declared build issues (N = 64):

* the m64nNk16 accumulator fragment of every consumer thread is the first N / 2 values of the
  m64n128k16 one: value i < N / 2 has the same (row, column) in both (columns 0..N-1), so the
  kernel's view on the first N / 2 registers of ``acc`` accumulates exactly the tile's first N
  Y rows;
* the Y ring restricted to N rows (``kernel.hopper.consumer.narrow_rows_tiler``, the kernel's
  own tiler): row r < N, column k of buffer b is byte for byte row r, column k of 128-row
  buffer b (same offsets, same swizzle).
"""

import os

import pytest
import torch

pytestmark = pytest.mark.compile


def test_narrow_views_are_prefixes_of_the_128_wide_ones():
    os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
    cutlass = pytest.importorskip("cutlass")
    import cutlass.cute as cute
    import cutlass.utils.hopper_helpers as sm90_utils
    from cutlass.cute.nvgpu import OperandMajorMode, warpgroup
    from cutlass.cute.runtime import from_dlpack

    from kernel.hopper.config import DEQUANT_SUB_K
    from kernel.hopper.consumer import narrow_rows_tiler
    from kernel.hopper.variants import DECLARED_VARIANTS

    tail_builds = [c for c in DECLARED_VARIANTS if c.y_tail64]
    widths = sorted({w for c in tail_builds for w in c.narrow_widths})
    assert widths == [64], widths
    config = tail_builds[0]
    bufs, wgs = config.fp16_buffers, config.consumer_warpgroups

    def mma(n):
        return sm90_utils.make_trivial_tiled_mma(
            cutlass.Float16, cutlass.Float16, OperandMajorMode.K, OperandMajorMode.K, cutlass.Float32,
            (wgs, 1, 1), tiler_mn=(64, n), a_source=warpgroup.OperandSource.RMEM)

    @cute.jit
    def views(acc_out: cute.Tensor, smem_out: cute.Tensor):
        m128 = mma(128)
        atom = warpgroup.make_smem_layout_atom(warpgroup.SmemLayoutAtomKind.K_SW128, cutlass.Float16)
        y128 = cute.tile_to_shape(atom, (128, DEQUANT_SUB_K, bufs), order=(0, 1, 2))
        for j in cutlass.range_constexpr(len(widths)):
            n = widths[j]
            mn = mma(n)
            yn = cute.composition(y128.outer, narrow_rows_tiler(n, bufs))
            for t in cutlass.range_constexpr(0, 128 * wgs, 5):
                c128 = m128.get_slice(t).partition_C(cute.make_identity_tensor((128, 128)))
                cn = mn.get_slice(t).partition_C(cute.make_identity_tensor((128, n)))
                for i in cutlass.range_constexpr(n // 2):
                    a, b = c128[i], cn[i]
                    acc_out[j, t // 5, i, 0] = a[0]
                    acc_out[j, t // 5, i, 1] = a[1]
                    acc_out[j, t // 5, i, 2] = b[0]
                    acc_out[j, t // 5, i, 3] = b[1]
            # the kernel's view: the ring's swizzle over the restricted layout (get_tensor(rows, swizzle=...))
            yn_swizzled = cute.make_composed_layout(y128.inner, 0, yn)
            for b in cutlass.range_constexpr(bufs):
                for r in cutlass.range_constexpr(0, n, 7):
                    for k in cutlass.range_constexpr(0, DEQUANT_SUB_K, 9):
                        smem_out[j, b, r // 7, k // 9, 0] = y128((r, k, b))
                        smem_out[j, b, r // 7, k // 9, 1] = yn_swizzled((r, k, b))

    threads = len(range(0, 128 * wgs, 5))
    acc = torch.full((len(widths), threads, 64, 4), -1, dtype=torch.int32)
    smem = torch.full((len(widths), bufs, 16, 8, 2), -1, dtype=torch.int32)
    args = (from_dlpack(acc), from_dlpack(smem))
    # the arch named explicitly: a process that compiled another family first has another default
    cute.compile(views, *args, options="--gpu-arch sm_90a")(*args)
    for j, n in enumerate(widths):
        written = acc[j, :, : n // 2]
        assert torch.equal(written[..., :2], written[..., 2:]), f"the {n}-wide fragment is not a prefix of the 128-wide one"
        assert int(written[..., 1].max()) == n - 1 and int(written[..., 0].max()) == 127
        assert int(acc[j, :, n // 2:].max()) == -1  # nothing past N / 2 values was compared
        rows = len(range(0, n, 7))
        sampled = smem[j, :, :rows]
        assert int(sampled.min()) >= 0, "a sampled offset was not written"
        assert torch.equal(sampled[..., 0], sampled[..., 1]), f"{n}-row buffer b is not the first {n} rows of buffer b"
        assert int(sampled[..., 0].max()) > 0
