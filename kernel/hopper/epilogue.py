"""The Hopper kernel's epilogue: fp16 C from the accumulators, stored directly (predicated
2-byte stores) or staged through shared memory (kernel/hopper/staging.py states the layout).
"""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline

from kernel.hopper import config as cfgmod
from kernel.hopper import staging
from kernel.hopper.ptx import (
    store_f16,
    ld_shared_v4_b32,
    st_global_f16x8_tail,
    st_global_v4_b32,
    stmatrix_x4_trans_f16,
    hb_check,
)

SUB_K = cfgmod.DEQUANT_SUB_K
from kernel.perturbation import CHECK_RULE_INDEX  # noqa: E402


from kernel.hopper.harness import HB_ISSUED, HB_RETIRED  # noqa: E402


class EpilogueMixin:
    """Methods of :class:`kernel.hopper.kernel.HopperNvfp4GroupedGemm` (its state is set by its ``__init__``)."""

    def epilogue(self, acc, tCcC, c_ptr, m, n, m0, n0):
        """C of one tile from the accumulators (after ``wait_group(0)``): ``epilogue="direct"``
        :meth:`epilogue_direct`, ``"smem"`` :meth:`epilogue_staged`; the ``no_epilogue``
        ablation (profiling only) stores nothing (:meth:`epilogue_sink`). Traced inline."""
        if self.ablates("epilogue"):
            self.epilogue_sink(acc, c_ptr, m)
            return
        self.delay("consumer", "epilogue", "before")
        self.timeline_first_consumer("epilogue_first")
        self.timeline_first_consumer("epilogue_last")
        if self.checks:  # every wgmma group writing the accumulators retired
            hb_check(self.delay_table, "ne.u32", self.hb_load(HB_RETIRED), self.hb_load(HB_ISSUED),
                     CHECK_RULE_INDEX["accumulator_read_in_flight"], self.hb_warp, self.hb_warp, self.hb_cta,
                     self.hb_lane)
        if self.staged_epilogue:
            self.epilogue_staged(acc, c_ptr, m, n, m0, n0)
        else:
            self.epilogue_direct(acc, tCcC, c_ptr, m, n, m0, n0)
        self.timeline_first_consumer("epilogue_last_end")

    @cute.jit
    def epilogue_sink(self, acc, c_ptr, m):
        """The ``no_epilogue`` ablation (profiling only): no C at all. One store that never runs
        (a group's M is never negative) keeps the accumulators used: without any use the
        compiler drops the wgmmas, and the X decode that feeds them, as dead code."""
        if m < 0:
            store_f16(c_ptr, acc[0], cutlass.Float32(self.out_multiplier))

    @cute.jit
    def epilogue_direct(self, acc, tCcC, c_ptr, m, n, m0, n0):
        """Predicated fp16 stores straight from the accumulators (ragged M and N)."""
        mult = cutlass.Float32(self.out_multiplier)
        # fully unrolled on purpose: the accumulator fragment is indexed by compile-time constants
        # (cutlass.range(..., unroll_full=True) indexes it at run time and grew the SASS by up to
        # 2.5x); CuTe DSL's note about the long unroll is silenced where the kernel is compiled
        for i in cutlass.range_constexpr(cute.size(acc)):
            crd = tCcC[i]
            row = m0 + crd[0]
            col = n0 + crd[1]
            if cutlass.const_expr(self.config.swapped):
                row = m0 + crd[1]
                col = n0 + crd[0]
            if row < m and col < n:
                store_f16(c_ptr + (cutlass.Int64(row) * cutlass.Int64(n) + cutlass.Int64(col)) * 2, acc[i], mult)

    @cute.jit
    def epilogue_staged(self, acc, c_ptr, m, n, m0, n0):
        """``epilogue="smem"`` (swapped tiles, X in registers): each consumer warpgroup stages its
        64 columns of C through its own shared buffer (kernel/hopper/staging.py: layout, bank
        groups) in ``epi_passes`` passes of ``epi_rows`` rows of C, each pass: named barrier
        (this warpgroup's 128 threads: every read of the previous pass or tile is done), the
        fp16 accumulators by stmatrix.trans (rounded as ``store_f16`` rounds them), named
        barrier (the pass is in the buffer), then per thread and 16-row step one 16-byte chunk
        of a row of C: one 16-byte store where n is a multiple of 8 (rows 16-byte aligned, the
        chunk then inside N or wholly past it), else 2-byte stores of its columns below n; rows
        at or past m store nothing. A pass wholly past the tile's rows (m - m0 <= p x epi_rows,
        e.g. y_tail64's light tiles) is skipped: the decision is the same for the warpgroup's
        128 threads, so none waits alone at a barrier."""
        mult = cutlass.Float32(self.out_multiplier)
        # the plain thread index: an opaque read (ptx.tid_x_opaque) made ptxas treat the run-time
        # perturbed build's wgmmas as divergent and drain every group (wait 0 after each)
        tid, _, _ = cute.arch.thread_idx()
        wtid = cutlass.Int32(tid) % 128
        wg = cute.arch.make_warp_uniform(cute.arch.warp_idx()) // 4  # the barrier id: warp-uniform
        buf = self.smem_storage.sC.data_ptr().toint() + wg * self.epi_wg_bytes
        bar = pipeline.NamedBarrier(barrier_id=cfgmod.EPILOGUE_BARRIER_ID0 + wg, num_threads=128)
        st_addr = buf + staging.stmatrix_lane_offset(wtid)
        ld_addr = buf + staging.read_lane_offset(wtid)
        prow, pcol = staging.read_row_col(wtid, 0)
        col = n0 + wg * cfgmod.EPILOGUE_WG_COLS + pcol
        row0 = m0 + prow
        aligned = n % 8 == 0
        for p in cutlass.range_constexpr(self.epi_passes):
            if cutlass.const_expr(p == 0):
                self.epilogue_pass(acc, p, mult, bar, st_addr, ld_addr, c_ptr, row0, col, m, n, aligned)
            else:
                if m - m0 > p * self.epi_rows:
                    self.epilogue_pass(acc, p, mult, bar, st_addr, ld_addr, c_ptr, row0 + p * self.epi_rows, col, m, n,
                                       aligned)

    @cute.jit
    def epilogue_pass(self, acc, p: cutlass.Constexpr, mult, bar, st_addr, ld_addr, c_ptr, row0, col, m, n, aligned):
        """One staging pass of :meth:`epilogue_staged`: rows ``row0 + 16 it`` of C (this thread's)."""
        steps = staging.calls_per_pass(self.epi_rows)
        bar.arrive_and_wait()  # the warpgroup's reads of the buffer (previous pass or tile) are done
        for q in cutlass.range_constexpr(steps):
            idx = staging.stmatrix_values(p, q, self.epi_rows)
            stmatrix_x4_trans_f16(st_addr + q * staging.STEP_BYTES, [acc[i] for i in idx], mult)
        bar.arrive_and_wait()  # the whole pass is in the buffer
        self.delay("consumer", "epilogue_read", "before")
        chunks = [ld_shared_v4_b32(ld_addr + it * staging.STEP_BYTES) for it in range(steps)]
        for it in cutlass.range_constexpr(steps):
            row = row0 + staging.ROWS_PER_STEP * it
            if row < m:
                addr = c_ptr + (cutlass.Int64(row) * cutlass.Int64(n) + cutlass.Int64(col)) * 2
                if aligned:
                    if col < n:
                        st_global_v4_b32(addr, chunks[it])
                else:
                    st_global_f16x8_tail(addr, chunks[it], n - col)
