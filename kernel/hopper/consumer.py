"""The consumer warpgroups' side of the Hopper kernel: the dequantize of the raw stages (shift
and prmt decodes, X fragments in registers, Y units), the register-X mainloop over a Y ring
(prepass and split roles), and the wgmma helpers.
"""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass.cute.nvgpu import OperandMajorMode, warpgroup

from kernel.hopper import config as cfgmod
from kernel.hopper.ptx import (
    st_shared_u32,
    dequant_unit,
    dequant_units_prmt,
    dequant_x_fragment_rs,
    dequant_y_units_rs,
    opaque_zeros_u32,
)

SUB_K = cfgmod.DEQUANT_SUB_K


from kernel.hopper.harness import HB_DIRTY, HB_ISSUED, HB_PUBLISHED, HB_READER, HB_RETIRED  # noqa: E402


def narrow_rows_tiler(width: int, buffers: int):
    """The by-mode tiler that restricts the Y ring's (128 rows, SUB_K, buffers) layout to the
    first ``width`` rows of every buffer (``cute.composition``; kernel/tests/test_hopper_tail64_layout.py)."""
    return (cute.make_layout(width), cute.make_layout(SUB_K), cute.make_layout(buffers))


class ConsumerMixin:
    """Methods of :class:`kernel.hopper.kernel.HopperNvfp4GroupedGemm` (its state is set by its ``__init__``)."""

    def unit_addresses(self, unit, raw_rows_addr, raw_sf_addr, dst_addr, sf_row0, sb: int):
        """Shared addresses of one unit (32 K of one row): raw bytes, 2 scale bytes, 4 fp16 chunks.

        Eight consecutive units take eight consecutive rows of the same half so their 16-byte
        chunk stores hit eight different swizzled bank groups and their raw reads (row pitch =
        16 mod 128) do too. Plain Python on DSL values (traced inline, no control flow).
        """
        r = (unit // 16) * 8 + unit % 8
        h = (unit // 8) % 2
        if self.config.loader == "tma":
            # 128-byte swizzle: chunk c of row r sits at chunk c ^ (r % 8)
            src = raw_rows_addr + r * self.pitch + (((sb * 2 + h) ^ (unit % 8)) << 4)
        else:
            src = raw_rows_addr + r * self.pitch + sb * 32 + h * 16
        i_full = sf_row0 + r
        blk = i_full // cfgmod.SF_BLOCK_ROWS
        i = i_full % cfgmod.SF_BLOCK_ROWS
        sf = raw_sf_addr + blk * self.sf_block_bytes + sb * 512 + (i % 32) * 16 + (i // 32) * 4 + h * 2
        r8 = r % 8
        row_base = dst_addr + (r // 8) * 1024 + r8 * 128
        c0 = h * 4
        return (
            src,
            sf,
            row_base + (((c0 + 0) ^ r8) << 4),
            row_base + (((c0 + 1) ^ r8) << 4),
            row_base + (((c0 + 2) ^ r8) << 4),
            row_base + (((c0 + 3) ^ r8) << 4),
        )

    def batched_dequant(self) -> bool:
        """dequant="prmt" with every consumer thread owning whole units of both operands: one
        inline-asm block per sub-block (all shared loads first)."""
        ct = self.dequant_threads
        return self.config.dequant == "prmt" and (2 * self.mma_m) % ct == 0 and (2 * self.mma_n) % ct == 0

    def max_batch_units(self) -> int:
        """Units per inline-asm block: each holds 5 registers from its loads to its stores.
        Two warpgroups with 128 accumulator registers each run at a 168-register cap (288
        threads): 3 units in one block spilled there (8-byte stack), 2 do not."""
        if self.config.roles == "split":
            return 4  # the dequant warps hold no accumulators
        if self.config.consumer_warpgroups == 2 and self.config.acc_regs_per_thread >= 128:
            return 2
        return 4

    def operand_units(self, tidx, rows: int, raw_rows_addr, raw_sf_addr, dst_addr, sf_row0, sb: int) -> list:
        """This thread's units of one operand (only when ``batched_dequant``)."""
        per_thread = rows * 2 // self.dequant_threads
        return [
            self.unit_addresses(tidx + u * self.dequant_threads, raw_rows_addr, raw_sf_addr, dst_addr, sf_row0, sb)
            for u in range(per_thread)
        ]

    @cute.jit
    def dequant_operand(
        self,
        tidx: cutlass.Int32,
        rows: cutlass.Constexpr,
        raw_rows_addr: cutlass.Int32,
        raw_sf_addr: cutlass.Int32,
        dst_addr: cutlass.Int32,
        sf_row0: cutlass.Int32,
        sb: cutlass.Constexpr,
    ):
        """All consumer threads together: ``rows`` x 64 K of one operand, one sub-block."""
        units = rows * 2
        per_thread = (units + self.dequant_threads - 1) // self.dequant_threads
        for u in cutlass.range_constexpr(per_thread):
            unit = tidx + u * self.dequant_threads
            if cutlass.const_expr(units % self.dequant_threads == 0) or unit < units:
                addrs = self.unit_addresses(unit, raw_rows_addr, raw_sf_addr, dst_addr, sf_row0, sb)
                if cutlass.const_expr(self.config.dequant == "prmt"):
                    dequant_units_prmt([addrs], self.config.operand_exp_shift)
                else:
                    dequant_unit(*addrs, self.config.operand_exp_shift)

    @cute.jit
    def consume_x_regs_y_ring(self, tiled_mma, sY, m_prefix, m_sizes, m_ptrs, pipe, y_pipe, raw_base, tidx,
                        t_begin, t_end, t_step, sy_iter=None, ws=None):
        """The consumer warpgroups of phase 2 (prepass; ``y_pipe`` the TMA-filled Y ring) and of
        ``roles="split"`` with X in registers (``y_pipe`` the dequant warpgroups' fp16 ring): per
        64-K sub-block decode the X fragment from the raw stage (releasing the stage after the
        last one), wait for Y's fp16 box, issue the wgmmas, and release the previous sub-block's
        Y buffer once its wgmmas retired (one group in flight; ``wgmma_in_flight=2``: the buffer
        two sub-blocks back, two groups). No named barrier: each warp arrives on the empty
        mbarriers itself.

        ``y_tail64`` (``sy_iter``: the Y ring's storage): a tile with r <= 64 Y rows issues
        m64nNk16 wgmmas (:meth:`narrow_mmas`, N = 64) on the first N rows of the same 128-row Y buffer into the first N / 2
        accumulators (the m64nNk16 accumulator fragment's first N/2 values are columns
        0 .. N - 1, in the same order); the epilogue is unchanged (columns N.. are zero and
        never stored: their rows are past the group's M). Per element the same m64nNk16 chain,
        one per 16 K in K order."""
        cfg = self.config
        thr_mma = tiled_mma.get_slice(tidx)
        tCrY = tiled_mma.make_fragment_B(thr_mma.partition_B(sY))
        acc = thr_mma.make_fragment_C(thr_mma.partition_shape_C((self.mma_m, self.mma_n)))
        if cutlass.const_expr(self.tail64):
            (narrow,) = self.narrow_mmas(tidx, sy_iter, acc)
        tCcC = thr_mma.partition_C(cute.make_identity_tensor((self.mma_m, self.mma_n)))
        filler = self.wgmma_filler(tidx)
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
        ystate = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.fp16_buffers)
        retire_state = ystate.clone()
        in_flight = cfg.wgmma_in_flight
        for unit in range(t_begin, self.unit_end(m_prefix, m_sizes, t_end), t_step):
            slot, m, n, k, m0, n0 = self.tile_origin(m_prefix, m_sizes, self.unit_tile(unit, t_end))
            x_sf_row0, _y_sf_row0 = self.sf_rows(m0, n0)
            if cutlass.const_expr(self.tail64):
                narrow_tile = m - m0 <= cfg.narrow_widths[-1]  # a narrow width covers the rows (run-time, per tile)
            k_begin, k_tiles = self.unit_k_range(unit, t_end, cutlass.Int32(0), k // cfg.tile_k)
            self.reset_accumulator(acc)
            tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
            self.wgmma_fence()
            for kt in range(k_begin, k_tiles):
                self.x_stage_wait(pipe, state)
                stage = raw_base + state.index * self.raw_stage_bytes
                for sb in cutlass.range_constexpr(self.n_sub):
                    x_frag = self.x_fragment(thr_mma, tidx, stage, x_sf_row0, sb)
                    if cutlass.const_expr(sb == self.n_sub - 1):
                        # every X read of this stage is done (its values are in registers)
                        cute.arch.sync_warp()  # one elected lane arrives for its warp
                        self.delay("consumer", "release", "before")
                        pipe.consumer_release(state)
                        self.delay("consumer", "release", "after")
                    self.y_ring_wait(y_pipe, ystate)
                    self.wgmma_fence()  # the fragment registers were just written
                    self.check_wgmma(None)
                    self.fill_wgmma(filler, acc, tCrY, ystate.index, sb)
                    if cutlass.const_expr(self.tail64):
                        # each branch commits its own group (a commit after the join made ptxas add
                        # a null HGMMA carrying it: a second group per sub-block)
                        if narrow_tile:
                            self.narrow_gemm(narrow, x_frag, ystate.index)
                        else:
                            for kb in cutlass.range_constexpr(SUB_K // 16):
                                cute.gemm(tiled_mma, acc, x_frag[(None, None, kb)],
                                          tCrY[(None, None, kb, ystate.index)], acc)
                            self.commit_group(ystate.index)
                    else:
                        for kb in cutlass.range_constexpr(SUB_K // 16):
                            cute.gemm(tiled_mma, acc, x_frag[(None, None, kb)], tCrY[(None, None, kb, ystate.index)], acc)
                        self.commit_group(ystate.index)
                    ystate.advance()
                    # (traces nothing: CuTe DSL carries the objects a loop mutates in the order of
                    # their first method call in the loop's source, and this call puts ``state``
                    # before ``retire_state``, the order the production SASS was measured with)
                    state.clone()
                    # the wgmma group in_flight sub-blocks back has retired: its Y buffer is free
                    self.delay("consumer", "wgmma_wait", "before")
                    self.wait_group(in_flight)
                    self.delay("consumer", "wgmma_wait", "after")
                    if cutlass.const_expr(sb >= in_flight):
                        self.warp_release(y_pipe, retire_state)
                        retire_state.advance()
                    elif kt > k_begin:
                        self.warp_release(y_pipe, retire_state)
                        retire_state.advance()
                state.advance()
            self.delay("consumer", "wgmma_wait", "before")
            self.wait_group(0)
            for _r in cutlass.range_constexpr(in_flight):  # a tile's last in_flight boxes (it has >= n_sub of them)
                self.warp_release(y_pipe, retire_state)
                retire_state.advance()
            if cutlass.const_expr(self.split_last):
                if unit >= t_end and self.split_half == 0:
                    self.split_publish(acc, tidx, ws)  # half 0 of a cut tile: no C
                else:
                    if unit >= t_end and k_begin > 0:
                        self.split_combine(acc, tidx, ws)  # half 1: half 0's sums added first
                    self.epilogue(acc, tCcC, m_ptrs[slot, 2], m, n, m0, n0)
            else:
                self.epilogue(acc, tCcC, m_ptrs[slot, 2], m, n, m0, n0)
            self.poison_accumulator(acc)

    # ------------------------------------------------------------- consumer helpers
    def narrow_mmas(self, tidx, sy_iter, acc):
        """``y_tail64``: per narrow width N (``HopperConfig.narrow_widths``), the
        m64nNk16 tiled MMA, its B fragments on the first N rows of every 128-row Y buffer (the
        ring's layout restricted mode by mode: same offsets, same swizzle) and the view of the
        first N / 2 accumulators of ``acc`` (traced once, at the kernel's start)."""
        cfg = self.config
        atom = warpgroup.make_smem_layout_atom(warpgroup.SmemLayoutAtomKind.K_SW128, cutlass.Float16)
        y_layout = cute.tile_to_shape(atom, (self.mma_n, SUB_K, self.fp16_buffers), order=(0, 1, 2))
        out = []
        for width in cfg.narrow_widths:
            mma = sm90_utils.make_trivial_tiled_mma(
                cutlass.Float16, cutlass.Float16, OperandMajorMode.K, OperandMajorMode.K, cutlass.Float32,
                (cfg.consumer_warpgroups, 1, 1), tiler_mn=(64, width), a_source=warpgroup.OperandSource.RMEM,
            )
            rows = cute.composition(y_layout.outer, narrow_rows_tiler(width, self.fp16_buffers))
            thr = mma.get_slice(tidx)
            tCrY = mma.make_fragment_B(thr.partition_B(sy_iter.get_tensor(rows, swizzle=y_layout.inner)))
            acc_view = cute.make_tensor(acc.iterator, cute.make_layout(thr.partition_shape_C((self.mma_m, width))))
            mma.set(warpgroup.Field.ACCUMULATE, True)
            out.append((mma, tCrY, acc_view))
        return out

    @cute.jit
    def narrow_gemm(self, narrow, x_frag, buf):
        """One sub-block's m64nNk16 wgmmas of a narrow tile on Y buffer ``buf``, committed as
        its own group (a commit after the branches join made ptxas add a null HGMMA carrying
        it: a second group per sub-block)."""
        mma, tCrY, acc_view = narrow
        for kb in cutlass.range_constexpr(SUB_K // 16):
            cute.gemm(mma, acc_view, x_frag[(None, None, kb)], tCrY[(None, None, kb, buf)], acc_view)
        self.commit_group(buf)

    @cute.jit
    def warp_release(self, fp16_pipe, state):
        """Release ``state``'s fp16 buffer once per warp (the empty barrier counts warps).
        The ``no_y_ring`` ablation (prepass builds, whose only fp16 ring is Y's) releases none."""
        if cutlass.const_expr(self.ablates("y_ring")):
            return
        self.check_reuse(state.index, None, 0)
        cute.arch.sync_warp()
        self.delay("consumer", "fp16_release", "before")
        if cute.arch.lane_idx() == 0:
            fp16_pipe.consumer_release(state)
        self.delay("consumer", "fp16_release", "after")

    # ------------------------------------------ synchronization primitives (checker hooks)
    # Production builds: exactly the primitive (nothing else is traced). Harness builds with the
    # checker (Perturbation.checks): the primitive, then this warp's shadow state updated, or the
    # protocol's rule checked against the shadow state other warps published before the barrier
    # this one passed (kernel.perturbation CHECK_RULES).
    def reset_accumulator(self, acc):
        acc.fill(0.0)
        self.hb_store(HB_DIRTY, 1)  # accumulator registers written: a wgmma fence must follow

    def wgmma_fence(self):
        warpgroup.fence()
        self.hb_store(HB_DIRTY, 0)

    def commit_group(self, buf):
        """Commit this warp's wgmma group, which reads fp16 (or Y ring) buffer ``buf``."""
        warpgroup.commit_group()
        if self.checks:
            issued = self.hb_load(HB_ISSUED) + 1
            self.hb_store(HB_ISSUED, issued)
            st_shared_u32(self.hb_addr(HB_READER) + buf * 4, issued)

    def wait_group(self, n: int):
        """Wait until at most ``n`` of this warp's wgmma groups are in flight."""
        warpgroup.wait_group(n)
        if self.checks:
            self.hb_store(HB_RETIRED, cutlass.max(self.hb_load(HB_ISSUED) - n, self.hb_load(HB_RETIRED)))

    def fence_fp16_stores(self, buf):
        """The consumers' generic-proxy stores into fp16 buffer ``buf`` -> wgmma's async proxy;
        the checker marks the buffer published by this warp for the group about to be issued."""
        cute.arch.fence_proxy("async.shared", space="cta")
        if self.checks:
            st_shared_u32(self.hb_addr(HB_PUBLISHED) + buf * 4, self.hb_load(HB_ISSUED) + 1)

    def sf_rows(self, m0, n0):
        """Row of the tile's first X and Y row inside its 128-row scale block."""
        if self.config.swapped:
            return n0 % 128, m0 % 128
        return m0 % 128, n0 % 128

    def dequant_sub_block(self, tidx, stage, x_dst, y_dst, x_sf_row0, y_sf_row0, sb: int):
        """This thread's share of one 64-K sub-block of both operands: raw stage -> fp16 buffers."""
        if self.batched_dequant():
            units = self.operand_units(
                tidx, self.mma_m, stage + self.off_x, stage + self.off_sfx, x_dst, x_sf_row0, sb
            ) + self.operand_units(tidx, self.mma_n, stage + self.off_y, stage + self.off_sfy, y_dst, y_sf_row0, sb)
            for b0 in range(0, len(units), self.max_batch_units()):  # traced inline: a Python loop
                dequant_units_prmt(units[b0 : b0 + self.max_batch_units()], self.config.operand_exp_shift)
        else:
            self.dequant_operand(tidx, self.mma_m, stage + self.off_x, stage + self.off_sfx, x_dst, x_sf_row0, sb)
            self.dequant_operand(tidx, self.mma_n, stage + self.off_y, stage + self.off_sfy, y_dst, y_sf_row0, sb)

    def x_fragment(self, thr_mma, tidx, stage, x_sf_row0, sb: int):
        """x_operand="regs": this thread's wgmma A fragment of sub-block ``sb`` (64 K), decoded
        from the raw stage: rows g and g+8 of its warp's 16, bytes 8t..8t+7 of each (t = lane
        % 4; 128-byte swizzled TMA rows), scale t of each."""
        if self.ablates("x_dequant"):
            # profiling only: a fixed fragment ptxas cannot fold (one opaque word per register)
            frag = cute.make_rmem_tensor(thr_mma.partition_shape_A((self.mma_m, SUB_K)), cutlass.Float16)
            frag32 = cute.recast_tensor(frag, cutlass.Uint32)
            for idx, word in enumerate(opaque_zeros_u32(16)):
                frag32[idx] = cutlass.Uint32(word)
            return frag
        raws, sfs = self.x_raw_addresses(tidx, stage, x_sf_row0, sb)
        words = dequant_x_fragment_rs(raws[0], raws[1], sfs[0], sfs[1], self.config.operand_exp_shift)
        return self.x_fragment_from_words(thr_mma, words)

    def x_raw_addresses(self, tidx, stage, x_sf_row0, sb: int):
        """The shared addresses of this thread's raw X bytes for sub-block ``sb``: its two
        8-byte runs (rows g and g+8 of its warp's 16, bytes 8t..8t+7; 128-byte swizzled TMA
        rows) and their scale bytes (scale t)."""
        lane = tidx % 32
        g = lane // 4
        t = lane % 4
        row0 = (tidx // 32) * 16 + g  # warpgroup w covers X rows 64w.., its warp v rows 16v..
        raws, sfs = [], []
        for rh in range(2):
            r = row0 + 8 * rh
            raws.append(stage + self.off_x + r * self.pitch + ((((sb * 2) + t // 2) ^ g) << 4) + 8 * (t % 2))
            i_full = x_sf_row0 + r
            i = i_full % cfgmod.SF_BLOCK_ROWS
            sfs.append(
                stage + self.off_sfx + (i_full // cfgmod.SF_BLOCK_ROWS) * self.sf_block_bytes + sb * 512
                + (i % 32) * 16 + (i // 32) * 4 + t
            )
        return raws, sfs

    def x_fragment_from_words(self, thr_mma, words):
        frag = cute.make_rmem_tensor(thr_mma.partition_shape_A((self.mma_m, SUB_K)), cutlass.Float16)
        frag32 = cute.recast_tensor(frag, cutlass.Uint32)
        for idx in range(16):  # u32 index rh + 2*jp + 4*s, as the asm's outputs
            frag32[idx] = cutlass.Uint32(words[idx])
        self.hb_store(HB_DIRTY, 1)  # wgmma operand registers written: a wgmma fence must follow
        return frag

    def x_stage_wait(self, pipe, state):
        """Wait for ``state``'s raw X stage (the prepass consumers)."""
        self.delay("consumer", "wait", "before")
        pipe.consumer_wait(state)
        self.delay("consumer", "wait", "after")

    def y_ring_wait(self, y_pipe, ystate):
        """Wait for ``ystate``'s Y box (the prepass consumers; none in the ``no_y_ring`` ablation)."""
        self.delay("consumer", "fp16_wait", "before")
        if cutlass.const_expr(not self.ablates("y_ring")):
            y_pipe.consumer_wait(ystate)
        self.delay("consumer", "fp16_wait", "after")

    def y_rs_unit(self, unit, stage, y_dst, y_sf_row0, sb: int):
        """The 7 shared addresses of Y unit ``unit`` (row r, K half a) for dequant_y_units_rs."""
        r = (unit // 16) * 8 + unit % 8
        a = (unit // 8) % 2
        r8 = r % 8
        row = stage + self.off_y + r * self.pitch
        i_full = y_sf_row0 + r
        i = i_full % cfgmod.SF_BLOCK_ROWS
        sf = (
            stage + self.off_sfy + (i_full // cfgmod.SF_BLOCK_ROWS) * self.sf_block_bytes + sb * 512
            + (i % 32) * 16 + (i // 32) * 4
        )
        dst = y_dst + (r // 8) * 1024 + r8 * 128
        return (
            row + (((sb * 2) ^ r8) << 4) + 4 * a,
            row + (((sb * 2 + 1) ^ r8) << 4) + 4 * a,
            sf,
            *(dst + (((4 * a + j) ^ r8) << 4) for j in range(4)),
        )

    def y_rs_units(self, tidx, stage, y_dst, y_sf_row0, sb: int) -> list:
        """x_operand="regs": this thread's (row, a) units of Y for one sub-block, Y's units shared
        by every dequantizing thread."""
        threads = self.dequant_threads
        return [self.y_rs_unit(tidx + u * threads, stage, y_dst, y_sf_row0, sb)
                for u in range(self.mma_n * 2 // threads)]

    def dequant_y_rs(self, tidx, stage, y_dst, y_sf_row0, sb: int):
        """x_operand="regs": this thread's units of Y (:meth:`y_rs_units`), in the fragment's K
        order, two units per inline-asm block (the accumulators share the register budget)."""
        units = self.y_rs_units(tidx, stage, y_dst, y_sf_row0, sb)
        for b0 in range(0, len(units), 2):
            dequant_y_units_rs(units[b0 : b0 + 2], self.config.operand_exp_shift)

    def mma_sub_block(self, tiled_mma, acc, tCrX, tCrY, buf, filler=None, sb=None, writers=None):
        """Issue the wgmmas of one 64-K sub-block from fp16 buffer ``buf`` and commit them
        (``writers``: the cooperative warps (first, count) that filled it, for the checker)."""
        self.check_wgmma(None if writers is None else buf, *(writers or ()))
        self.fill_wgmma(filler, acc, tCrY, buf, sb)
        for kb in range(SUB_K // 16):  # traced inline: a Python loop
            cute.gemm(tiled_mma, acc, tCrX[(None, None, kb, buf)], tCrY[(None, None, kb, buf)], acc)
        self.commit_group(buf)
