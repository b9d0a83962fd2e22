"""The sm_90a kernel: persistent grouped NVFP4 GEMM, dequantized on chip, wgmma fp16, fp32 acc.

Warp roles, in warp order (``HopperConfig.threads``):

* consumer warpgroups (1 or 2, warpgroup-aligned for wgmma): hold the fp32 accumulators, issue
  wgmma per 64-K sub-block and store fp16 C with per-element predicates (ragged M and N), or
  (``epilogue="smem"``) stage it through a shared buffer per warpgroup
  (kernel/hopper/staging.py) and store it with coalesced 16-byte stores.
  ``roles="cooperative"``: they also dequantize each sub-block of the raw stage into swizzled
  fp16 operand buffers (two ping-pong buffers with two named barriers per sub-block, or four
  with one and two wgmma groups in flight), so their dequant of sub-block s+1 overlaps the
  wgmma of s. With ``x_operand="regs"`` each thread decodes its own wgmma A fragment straight
  into registers and only Y goes through shared memory (kernel/hopper/ptx.py states the shared
  K order);
* dequant warpgroups (``roles="split"`` only): dequantize Y into a ring of ``fp16_buffers``
  buffers (full/empty mbarriers, one arrive per warp); the consumers decode their X fragments
  and run wgmma;
* producer warps (1..4): per tile and K stage, wait for a free raw stage and load it:
  ``loader="cp_async"`` 16-byte cp.async per lane (rows split over the producer warps, rows past
  M/N copy the last valid row), ``"tma"`` one 2-D
  TMA box per operand from per-group tensor maps (kernel/tensor_maps.py; rows past M/N
  zero-filled, raw rows 128-byte swizzled) plus one cp.async.bulk per 128-row scale block.

``y_source="prepass"``: before the tile loop the consumer warps of every CTA decode the groups' Y
rows (A, swapped) once into a global fp16 workspace, while the producer warp issues its first
tile's X stages (phase 1, kernel/hopper/phase1.py;
kernel/hopper/workspace.py: layout, and why its completion barrier cannot deadlock); the tile
loop then has a ring of raw X (+ scales) and a ring of fp16 Y boxes loaded by TMA, and the
consumers decode only X (``produce_prepass_q`` / ``consume_x_regs_y_ring``). ``y_tail64`` runs a
group's last Y block of at most 64 rows as a 64-row tile, tiles from the balanced schedule
(``locate`` / ``tile_range``; kernel.plan).

The methods live by role: kernel/hopper/producer.py (loaders, rings, schedule), phase1.py,
consumer.py (dequantize, mainloop, wgmma helpers), epilogue.py and harness.py (delay sites,
poison, checker, timeline; tests and profiling only); this module holds the class that composes
them, its shared-memory layout, the host-side launch and the kernel body.

Every copy's global address comes from the device tables (pointer table or tensor-map table),
so changing group costs nothing. Rows past M (or N) only reach accumulator rows or columns that
are never stored.

Perturbed builds (``perturbation``, kernel/perturbation.py; tests only): ``self.delay(role,
site, when)`` at every synchronization site and ``poison_*`` where a shared-memory region is
handed back; with ``perturbation=None`` (production) these helpers trace nothing at all.

Scheduling mirrors ``kernel.plan``: CTA ``b`` of ``num_ctas`` runs tiles ``[b*per, (b+1)*per)``
(contiguous) or ``b, b+num_ctas, ...`` (strided); ``tile -> slot`` is the lower-bound search of
``kernel.plan.device_group_search`` and tiles are M-block-fastest inside a slot.
"""

# no `from __future__ import annotations`: cute.struct reads real annotation objects

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass.cute.nvgpu import OperandMajorMode, warpgroup

from kernel.hopper import config as cfgmod
from kernel.hopper import staging
from kernel.hopper.config import HopperConfig
from kernel.perturbation import JITTER_MODE_WORD, JITTER_NS_WORD, SEED_WORD, SKEW_NS_WORD, SKEW_WARP_WORD, Perturbation
from kernel.hopper.ablation import Ablation, check_ablation
from kernel.hopper.consumer import ConsumerMixin
from kernel.hopper.epilogue import EpilogueMixin
from kernel.hopper.harness import HarnessMixin
from kernel.hopper.phase1 import Phase1Mixin
from kernel.hopper.producer import ProducerMixin
from kernel.hopper.split import SplitMixin
from kernel.hopper.ptx import st_shared_u32, dequant_y_units_rs, delay_jitter_from_table, warp_skew_from_table

SUB_K = cfgmod.DEQUANT_SUB_K


from kernel.hopper.harness import HB_WARP_WORDS  # noqa: E402


class HopperNvfp4GroupedGemm(ProducerMixin, Phase1Mixin, SplitMixin, ConsumerMixin, EpilogueMixin, HarnessMixin):
    """One compiled variant: ``(config, num_groups)`` fixed, everything else run-time."""

    def __init__(self, config: HopperConfig, num_groups: int, perturbation: Perturbation | None = None,
                 ablation: Ablation | None = None):
        cfgmod.check_config(config)
        check_ablation(config, ablation)
        self.config = config
        self.perturbation = perturbation  # None: the production build
        # run-time perturbed builds (HarnessHopperGemm): the delay table's global address, set
        # while the kernel is traced
        self.delay_table = None
        self.delay_jitter = None  # and this thread's jitter share, computed once at the kernel's start
        self.delay_skew = None  # and its warp skew at the consumers' decode site (Perturbation.skew)
        self.ablation = ablation  # profiling only (kernel/hopper/ablation.py); None: the production build
        # the happens-before checker (harness builds only; kernel.perturbation Perturbation.checks)
        self.checks = perturbation is not None and perturbation.checks
        self.hb_base = self.hb_warp = self.hb_cta = self.hb_lane = None  # set while the kernel is traced
        self.p1_chunks = None  # (prepass builds) phase 1's chunk count, set while the kernel is traced
        # schedule="split_last": this CTA's cut tile and its half (-1: none), set while the kernel is traced
        self.split_cut = self.split_half = None
        self.num_groups = num_groups
        self.mma_m = config.mma_m
        self.mma_n = config.mma_n
        self.stages = config.num_ab_stages
        raw = cfgmod.raw_stage_layout(config)
        self.off_x, self.off_y, self.off_sfx, self.off_sfy = raw["x"], raw["y"], raw["sfx"], raw["sfy"]
        self.raw_stage_bytes = raw["bytes"]
        self.pitch = cfgmod.raw_row_pitch(config)
        self.tx_bytes = cfgmod.stage_tx_bytes(config)
        self.sf_block_bytes = cfgmod.sf_block_bytes(config)
        self.n_sub = config.tile_k // SUB_K
        self.consumer_threads = config.consumer_threads
        self.dequant_threads = config.dequant_threads
        self.consumer_warps = config.consumer_threads // 32
        self.dequant_warps = config.dequant_threads // 32
        self.split = config.roles == "split"
        self.y_pairs_sub_blocks = config.y_pairs_sub_blocks  # split, X in registers (config.py)
        # warps that release a raw stage (lane 0 each): whoever reads it. split with X in
        # registers: the dequant warps read Y, the consumer warps read X
        self.raw_release_warps = self.dequant_warps
        if self.split and config.x_operand == "regs":
            self.raw_release_warps += self.consumer_warps
        # warps: consumers first (warpgroup-aligned for wgmma), then the dequant warpgroups
        # ("split"), then the producer warp
        self.dequant_warp0 = 4 * config.consumer_warpgroups
        self.producer_warp = self.dequant_warp0 + (self.dequant_warps if self.split else 0)
        self.fp16_buffers = config.fp16_buffers
        self.threads = config.threads
        self.out_multiplier = float(2.0 ** (-2 * config.operand_exp_shift))
        self.x_buf_bytes = self.mma_m * SUB_K * 2
        self.y_buf_bytes = self.mma_n * SUB_K * 2
        stages, raw_bytes = self.stages, self.stages * self.raw_stage_bytes
        self.x_in_regs = config.x_operand == "regs"
        # x_operand="regs": X never goes through shared memory (a token allocation)
        x_elems = 8 if self.x_in_regs else config.fp16_buffers * self.mma_m * SUB_K
        y_elems = config.fp16_buffers * self.mma_n * SUB_K
        # y_source="prepass": Y arrives as fp16 TMA boxes in a ring of fp16_buffers (its own
        # full/empty mbarriers); one more 8-byte cell holds phase 1's two claim slots
        self.prepass = config.y_source == "prepass"
        self.y_tx_bytes = cfgmod.y_box_tx_bytes(config)
        fp16_bar_count = 2 * config.fp16_buffers if self.split else 1
        if self.prepass:
            fp16_bar_count = 2 * config.fp16_buffers + 1
        # y_tail64: a tile whose Y rows are at most 64 (m - m0 <= 64, a group's last Y block)
        # runs wgmma N = 64 on the first half of the 128-row Y buffer and of the accumulators;
        # tiles come from the balanced schedule (kernel.plan): this CTA's (first full, full
        # count, first light, light count), set while the kernel is traced
        self.tail64 = config.y_tail64
        self.share = None
        if self.tail64:
            # the share's four int32 after the claim slots (the producer warp computes it during
            # phase 1's completion wait, the consumers read it after the barrier)
            fp16_bar_count += cfgmod.TAIL64_SHARE_BYTES // 8

        hb_words = (config.threads // 32) * HB_WARP_WORDS
        # epilogue="smem": C staged through one shared buffer per
        # consumer warpgroup (kernel/hopper/staging.py), ``epi_rows`` rows of C per pass, in a
        # region of its own after the fp16 buffers: nothing else reads or writes it (the
        # producer's TMA writes only the raw stages and the Y ring), so only the consumer
        # warpgroup's own named barrier guards it
        self.staged_epilogue = config.epilogue == "smem"
        self.epi_rows = cfgmod.epilogue_stage_rows(config)
        self.epi_passes = self.mma_n // self.epi_rows if self.staged_epilogue else 0
        self.epi_wg_bytes = self.epi_rows * staging.ROW_BYTES
        self.smem_storage = None  # the kernel's SharedStorage, set while the kernel is traced

        epi_bytes = cfgmod.epilogue_stage_bytes_for(config, self.epi_rows) if self.staged_epilogue else 0
        p1s_bytes = cfgmod.PHASE1_HELPER_WARPS * cfgmod.PREPASS_STAGED_WARP_BYTES

        @cute.struct
        class SharedStorage:
            bars: cute.struct.MemRange[cutlass.Int64, stages * 2]
            fp16_bars: cute.struct.MemRange[cutlass.Int64, fp16_bar_count]
            raw: cute.struct.Align[cute.struct.MemRange[cutlass.Uint8, raw_bytes], cfgmod.SMEM_ALIGN]
            sX: cute.struct.Align[cute.struct.MemRange[cutlass.Float16, x_elems], cfgmod.SMEM_ALIGN]
            sY: cute.struct.Align[cute.struct.MemRange[cutlass.Float16, y_elems], cfgmod.SMEM_ALIGN]
            if self.staged_epilogue:  # epilogue="smem": the staging buffers of C
                sC: cute.struct.Align[cute.struct.MemRange[cutlass.Uint8, epi_bytes], cfgmod.SMEM_ALIGN]
            if config.phase1_beside:  # the helper warps' staged stores (phase 1 beside the tiles)
                p1s: cute.struct.Align[cute.struct.MemRange[cutlass.Uint8, p1s_bytes], cfgmod.SMEM_ALIGN]
            if self.checks:  # harness builds only: the checker's shadow state
                hb: cute.struct.MemRange[cutlass.Int32, hb_words]

        self.shared_storage = SharedStorage

    # ------------------------------------------------------------------------ host side
    @cute.jit
    def __call__(
        self,
        sizes_ptr: cute.Pointer,
        prefix_ptr: cute.Pointer,
        ptrs_ptr: cute.Pointer,
        tmaps_ptr: cute.Pointer,
        num_ctas: cutlass.Int32,
        stream: cuda.CUstream,
    ):
        self.launch_kernel(num_ctas, stream, sizes_ptr, prefix_ptr, ptrs_ptr, tmaps_ptr)

    def launch_kernel(self, num_ctas, stream, *pointers):
        """The host side of every build (traced inside ``__call__``): the wgmma atom, the fp16
        operand layouts, and the launch of the persistent grid with ``pointers`` (the four
        tables, and a harness build's delay table)."""
        tiled_mma = sm90_utils.make_trivial_tiled_mma(
            cutlass.Float16,
            cutlass.Float16,
            OperandMajorMode.K,
            OperandMajorMode.K,
            cutlass.Float32,
            (self.config.consumer_warpgroups, 1, 1),
            tiler_mn=(64, self.mma_n),
            a_source=warpgroup.OperandSource.RMEM if self.x_in_regs else warpgroup.OperandSource.SMEM,
        )
        atom = warpgroup.make_smem_layout_atom(warpgroup.SmemLayoutAtomKind.K_SW128, cutlass.Float16)
        x_rows = 64 if self.x_in_regs else self.mma_m
        x_layout = cute.tile_to_shape(atom, (x_rows, SUB_K, self.fp16_buffers), order=(0, 1, 2))
        y_layout = cute.tile_to_shape(atom, (self.mma_n, SUB_K, self.fp16_buffers), order=(0, 1, 2))
        launch = dict(grid=(num_ctas, 1, 1), block=(self.threads, 1, 1), min_blocks_per_mp=1, stream=stream)
        if self.config.pdl:
            launch["use_pdl"] = True  # griddepcontrol in the kernel (HopperConfig.pdl)
        self.kernel(tiled_mma, x_layout, y_layout, *pointers).launch(**launch)

    @cute.kernel
    def kernel(
        self,
        tiled_mma: cute.TiledMma,
        x_layout: cute.ComposedLayout,
        y_layout: cute.ComposedLayout,
        sizes_ptr: cute.Pointer,
        prefix_ptr: cute.Pointer,
        ptrs_ptr: cute.Pointer,
        tmaps_ptr: cute.Pointer,
        delays_ptr: cute.Pointer = None,
        ws_ptr: cute.Pointer = None,
    ):
        # delays_ptr: run-time perturbed builds only (HarnessHopperGemm); None, a compile-time
        # constant, in every other build: no kernel parameter, nothing traced. ws_ptr: the
        # y_source="prepass" builds' workspace (kernel.hopper.workspace); None otherwise
        if cutlass.const_expr(delays_ptr is not None):
            self.delay_table = delays_ptr.toint()
        cfg = self.config
        G = self.num_groups
        if cutlass.const_expr(cfg.pdl):
            # programmatic dependent launch: the previous grid on the stream complete and its
            # writes visible before any global access (the tables too: a kernel may have written
            # them); then the next launch may start its CTAs on the SMs this grid leaves free or
            # frees (they wait here in turn). What overlaps: the launch and the CTAs' dispatch
            cute.arch.griddepcontrol_wait()
            cute.arch.griddepcontrol_launch_dependents()
        tidx, _, _ = cute.arch.thread_idx()
        tidx = cutlass.Int32(tidx)
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if cutlass.const_expr(self.timeline):
            if tidx == 0:
                self.timeline_point("start")
        if cutlass.const_expr(delays_ptr is not None and self.perturbation.delays):
            # this thread's jitter share, once: every delay site adds it (ptx.sleep_ns_from_table)
            self.delay_jitter = delay_jitter_from_table(self.delay_table, warp_idx, JITTER_NS_WORD, JITTER_MODE_WORD,
                                                        SEED_WORD)
            self.delay_skew = warp_skew_from_table(self.delay_table, warp_idx, SKEW_NS_WORD, SKEW_WARP_WORD)

        smem = cutlass.memory.SmemAllocator()
        storage = smem.allocate(self.shared_storage)
        self.smem_storage = storage
        if cutlass.const_expr(cfg.loader != "cp_async"):
            # full: one elected arrive + transaction bytes; empty: lane 0 of each dequant warp
            pipe = pipeline.PipelineTmaAsync.create(
                barrier_storage=storage.bars.data_ptr(),
                num_stages=self.stages,
                producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
                consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.raw_release_warps),
                tx_count=self.tx_bytes,
                cta_layout_vmnk=cute.make_layout((1, 1, 1, 1)),
            )
        else:
            # full: each producer lane's cp.async.mbarrier.arrive.noinc; empty: every consumer thread
            pipe = pipeline.PipelineCpAsync.create(
                barrier_storage=storage.bars.data_ptr(),
                num_stages=self.stages,
                producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32 * cfg.producer_warps),
                consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.dequant_threads),
            )
        if cutlass.const_expr(self.split):
            # fp16 sub-block ring, one arrive per warp (lane 0 after a warp sync): full = each
            # dequant warp once all its lanes fenced their stores; empty = each consumer warp once
            # the wgmma that read the buffer has retired
            fp16_pipe = pipeline.PipelineAsync.create(
                barrier_storage=storage.fp16_bars.data_ptr(),
                num_stages=self.fp16_buffers,
                producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.dequant_warps),
                consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.consumer_warps),
            )


        sX = None if self.x_in_regs else storage.sX.get_tensor(x_layout.outer, swizzle=x_layout.inner)
        sY = storage.sY.get_tensor(y_layout.outer, swizzle=y_layout.inner)
        raw_base = storage.raw.data_ptr().toint()
        sx_base = storage.sX.data_ptr().toint()
        sy_base = storage.sY.data_ptr().toint()
        if cutlass.const_expr(self.checks):
            # every warp zeroes its own checker slot; one CTA barrier before any role runs
            self.hb_base = storage.hb.data_ptr().toint()
            self.hb_warp = warp_idx
            self.hb_cta = cutlass.Int32(cute.arch.block_idx()[0])
            self.hb_lane = cute.arch.lane_idx()  # read once (ptx.hb_check)
            st_shared_u32(self.hb_base + (warp_idx * HB_WARP_WORDS + self.hb_lane) * 4, cutlass.Int32(0))
            cute.arch.barrier()

        first_claim = cutlass.Int32(0)
        if cutlass.const_expr(self.prepass and not self.ablates("prepass")):
            # phase 1's first claim, in flight while the tables are read, by the thread that
            # claims (thread 0; phase1_beside: the first helper thread)
            if tidx == (self.consumer_threads + 32 if cfg.phase1_beside else 0):
                first_claim = self.claim_chunk(ws_ptr.toint(), check=False)
        m_sizes = cute.make_tensor(sizes_ptr, cute.make_layout((G, 4), stride=(4, 1)))
        m_prefix = cute.make_tensor(prefix_ptr, cute.make_layout(G + 1))
        m_ptrs = cute.make_tensor(ptrs_ptr, cute.make_layout((G, 5), stride=(5, 1)))
        total = m_prefix[G]
        if cutlass.const_expr(self.timeline):
            if tidx == 0:
                if total >= 0:  # (a use of the value: the stamp comes after the load returned)
                    self.timeline_point("tables_read")
        if cutlass.const_expr(not self.tail64):
            t_begin, t_end, t_step = self.tile_range(total)
        # (y_tail64: the CTA's tiles are known after phase 1: balanced_setup, producer warp)

        if cutlass.const_expr(self.prepass):
            # ------------------------- phase 1 with run-time chunks, then phase 2
            ws = ws_ptr.toint()
            claim_slots = storage.fp16_bars.data_ptr().toint() + 16 * self.fp16_buffers
            y_pipe = self.y_ring(storage, self.consumer_warps, (1, 1, 1, 1))
            share_slots = claim_slots + 8  # y_tail64: the CTA's balanced share (4 x int32)
            if cutlass.const_expr(self.checks):
                self.p1_chunks = self.prepass_chunk_count(m_sizes)  # the checker's phase-1 rules
            chunks = cutlass.Int32(0)
            if cutlass.const_expr(cfg.phase1_beside):
                # ------------------- phase 1 beside the tiles: three roles from the start, no join
                # (setmaxnreg at each role's start: the roles never meet again)
                if warp_idx >= self.producer_warp:
                    self.give_registers(False)
                    if self.is_producer(warp_idx):
                        p_begin, p_end, p_step = self.tile_range(total)
                        self.produce_prepass_q(m_prefix, m_sizes, m_ptrs, tmaps_ptr, ws, pipe, y_pipe, raw_base,
                                               sy_base, p_begin, p_end, p_step, total)
                    else:
                        # the helper warps: every chunk of phase 1, claimed until none is left;
                        # then their first warp counts them through (done with the chunk flags)
                        # (names of this branch's own: a value carried out of a role's branch
                        # makes ptxas drop the consumers' setmaxnreg)
                        if cutlass.const_expr(not self.ablates("prepass")):
                            helper_chunks = self.prepass_decode_scaled(tidx, m_sizes, m_ptrs, ws, claim_slots,
                                                                       storage.p1s.data_ptr().toint(), first_claim)
                        else:
                            helper_chunks = self.prepass_chunk_count(m_sizes)
                        if cutlass.const_expr(self.timeline):
                            if tidx == self.consumer_threads + 32:
                                if helper_chunks >= 0:  # its chunks' stores issued
                                    self.timeline_point("phase1_decoded")
                        if warp_idx == self.producer_warp + 1:
                            self.beside_count_through(ws, helper_chunks)
                else:
                    self.give_registers(True)
                    c_begin, c_end, c_step = self.tile_range(total)
                    self.consume_x_regs_y_ring(tiled_mma, sY, m_prefix, m_sizes, m_ptrs, pipe, y_pipe, raw_base, tidx,
                                               c_begin, c_end, c_step, ws=ws)
            elif cutlass.const_expr(self.ablates("phase2")):
                # profiling only (phase1_only): phase 1 and its completion barrier, nothing after
                if self.decodes_phase1(warp_idx):
                    chunks = self.prepass_decode_scaled(tidx, m_sizes, m_ptrs, ws, claim_slots, sy_base, first_claim)
                    if tidx == 0:
                        self.prepass_reset_if_last(ws, self.prepass_wait(ws, chunks))
                cute.arch.barrier()
            else:
                # thread 0's count through phase 1 (prepass_wait; the reset it may call for
                # comes after the CTA's tiles)
                passed = cutlass.Int32(0)
                if self.skips_phase1(warp_idx):
                    # the producer warp decodes no chunk: from the kernel's start, the split
                    # (y_tail64, searched over the warp's lanes), the maps and the first tile's X
                    # stages, while the consumer warps (phase1_helpers: and the producer
                    # warpgroup's other three) decode phase 1's chunks
                    if self.is_producer(warp_idx):
                        self.producer_x_first(m_prefix, m_sizes, m_ptrs, tmaps_ptr, ws, pipe, raw_base, total,
                                              cutlass.Int32(0) if self.tail64 else t_begin, share_slots)
                else:
                    if cutlass.const_expr(not self.ablates("prepass")):
                        # (the ablation, profiling only: no item decoded, the Y boxes read stale rows)
                        chunks = self.prepass_decode_scaled(tidx, m_sizes, m_ptrs, ws, claim_slots, sy_base,
                                                            first_claim)
                    if cutlass.const_expr(self.timeline):
                        if tidx == 0:
                            if chunks >= 0:  # its chunks' stores issued
                                self.timeline_point("phase1_decoded")
                    if tidx == 0:
                        passed = self.prepass_wait(ws, chunks)
                        if cutlass.const_expr(self.timeline):
                            self.timeline_point("phase1_passed")  # the grid barrier's spin ended
                # phase 1's completion barrier: one instruction that every thread executes
                # (bar.sync is barrier.sync.aligned: reached from the two roles' own code it is
                # undefined in PTX, and compute-sanitizer synccheck aborts the launch on it)
                self.completion_barrier(tidx)
                if cutlass.const_expr(self.timeline):
                    if tidx == 0:
                        self.timeline_point("phase1_done")
                # the tile total read again (after phase 1's memory-clobbering asm: a fresh load), so
                # no schedule value stays live across phase 1 (the 3-warpgroup tile at its 128-register
                # cap spilled one)
                total = m_prefix[G]
                if warp_idx >= self.producer_warp:
                    # (producer_warpgroup: setmaxnreg at the start of each role's last branch, which
                    # no other role's code joins again: ptxas ignores it before a join)
                    self.give_registers(False)
                    if self.is_producer(warp_idx):
                        if cutlass.const_expr(self.tail64):
                            p_begin, p_end, p_step = self.balanced_read(total, share_slots)  # producer_x_first's
                        else:
                            p_begin, p_end, p_step = self.tile_range(total)
                        self.produce_prepass_q(m_prefix, m_sizes, m_ptrs, tmaps_ptr, ws, pipe, y_pipe, raw_base,
                                               sy_base, p_begin, p_end, p_step, total)
                else:
                    self.give_registers(True)
                    if cutlass.const_expr(self.tail64):
                        c_begin, c_end, c_step = self.balanced_read(total, share_slots)
                    else:
                        c_begin, c_end, c_step = self.tile_range(total)
                    self.consume_x_regs_y_ring(tiled_mma, sY, m_prefix, m_sizes, m_ptrs, pipe, y_pipe, raw_base, tidx,
                                               c_begin, c_end, c_step, sy_iter=storage.sY if self.tail64 else None, ws=ws)
                    if tidx == 0:
                        # the last CTA through phase 1 resets its counters (off phase 1's path:
                        # the count's round trip overlapped the CTA's tiles)
                        self.prepass_reset_if_last(ws, passed)
        elif warp_idx >= self.producer_warp:
            # ------------------------------------------------------------ producer warp
            lane = cute.arch.lane_idx()
            pw = warp_idx - self.producer_warp
            p_end = t_end
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
            for tile in range(t_begin, p_end, t_step):
                slot, m, n, k, m0, n0 = self.tile_origin(m_prefix, m_sizes, tile)
                a_ptr = m_ptrs[slot, 0]
                b_ptr = m_ptrs[slot, 1]
                sfa_ptr = m_ptrs[slot, 3]
                sfb_ptr = m_ptrs[slot, 4]
                x_ptr, x_row0, x_lim, sfx_ptr = a_ptr, m0, m, sfa_ptr
                y_ptr, y_row0, y_lim, sfy_ptr = b_ptr, n0, n, sfb_ptr
                if cutlass.const_expr(cfg.swapped):
                    x_ptr, x_row0, x_lim, sfx_ptr = b_ptr, n0, n, sfb_ptr
                    y_ptr, y_row0, y_lim, sfy_ptr = a_ptr, m0, m, sfa_ptr
                if cutlass.const_expr(cfg.loader == "tma"):
                    # per slot: A's tensor map, then B's (kernel.tensor_maps)
                    tm_a = tmaps_ptr.toint() + cutlass.Int64(slot) * 256
                    tm_x, tm_y = tm_a, tm_a + 128
                    if cutlass.const_expr(cfg.swapped):
                        tm_x, tm_y = tm_a + 128, tm_a
                    self.delay("producer", "tensormap", "before")
                    if lane == 0:
                        self.acquire_map(tm_x)
                    if lane == 1:
                        self.acquire_map(tm_y)
                    self.delay("producer", "tensormap", "after")
                row_bytes = cutlass.Int64(k // 2)
                rest_k = cutlass.Int64(k // 64)
                x_blocks = (x_lim + 127) // 128
                y_blocks = (y_lim + 127) // 128
                k_tiles = k // cfg.tile_k
                for kt in range(k_tiles):
                    stage, mbar = self.open_raw_stage(lane, pipe, state, raw_base)
                    kbyte = cutlass.Int64(kt * (cfg.tile_k // 2))
                    sf_k = cutlass.Int64(kt * (cfg.tile_k // 64))
                    if cutlass.const_expr(cfg.loader == "tma"):
                        # rows past the operand's end are zero-filled (never stored)
                        if lane == 0:
                            self.tma_rows(stage + self.off_x, tm_x, kt * (cfg.tile_k // 2), x_row0, mbar)
                        if lane == 1:
                            self.tma_rows(stage + self.off_y, tm_y, kt * (cfg.tile_k // 2), y_row0, mbar)
                        self.load_sf_bulk(lane, 0, stage + self.off_sfx, sfx_ptr, x_row0, x_blocks, rest_k, sf_k, mbar, self.mma_m)
                        self.load_sf_bulk(lane, 16, stage + self.off_sfy, sfy_ptr, y_row0, y_blocks, rest_k, sf_k, mbar, self.mma_n)
                    else:
                        self.load_rows_cp_async(pw, lane, stage + self.off_x, x_ptr, x_row0, x_lim, row_bytes, kbyte, self.mma_m)
                        self.load_rows_cp_async(pw, lane, stage + self.off_y, y_ptr, y_row0, y_lim, row_bytes, kbyte, self.mma_n)
                        self.load_sf_cp_async(pw, lane, stage + self.off_sfx, sfx_ptr, x_row0, x_blocks, rest_k, sf_k, self.mma_m)
                        self.load_sf_cp_async(pw, lane, stage + self.off_sfy, sfy_ptr, y_row0, y_blocks, rest_k, sf_k, self.mma_n)
                    self.close_raw_stage(pipe, state)
                    state.advance()
            self.delay("producer", "tail", "before")
            self.producer_tail(pipe, state)
            self.check_producer_exit()
        elif warp_idx < self.dequant_warp0:
            # ------------------------------------------------------- consumer warpgroups
            thr_mma = tiled_mma.get_slice(tidx)
            tCsY = thr_mma.partition_B(sY)
            tCrY = tiled_mma.make_fragment_B(tCsY)
            if cutlass.const_expr(self.x_in_regs):
                tCrX = None  # built per sub-block from registers (x_fragment)
            else:
                tCrX = tiled_mma.make_fragment_A(thr_mma.partition_A(sX))
            acc = thr_mma.make_fragment_C(thr_mma.partition_shape_C((self.mma_m, self.mma_n)))
            tCcC = thr_mma.partition_C(cute.make_identity_tensor((self.mma_m, self.mma_n)))
            filler = self.wgmma_filler(tidx)
            if cutlass.const_expr(self.split and self.x_in_regs):
                # split, X in registers: the dequant warpgroups fill the fp16 Y ring; these
                # warpgroups decode their own X fragment (the prepass consumers' loop, the Y ring
                # being the fp16 ring; the fragments above go unused)
                self.consume_x_regs_y_ring(tiled_mma, sY, m_prefix, m_sizes, m_ptrs, pipe, fp16_pipe, raw_base, tidx,
                                           t_begin, t_end, t_step)
            else:
                # checker: the warps that write and read this warp's fp16 buffers (all consumer warps)
                hb_warp0, hb_warps = 0, self.consumer_warps
                consumers = pipeline.NamedBarrier(barrier_id=1, num_threads=self.consumer_threads)
                state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
                for tile in range(t_begin, t_end, t_step):
                    slot, m, n, k, m0, n0 = self.tile_origin(m_prefix, m_sizes, tile)
                    x_sf_row0, y_sf_row0 = self.sf_rows(m0, n0)
                    k_tiles = k // cfg.tile_k

                    self.reset_accumulator(acc)
                    tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
                    self.wgmma_fence()
                    for kt in range(k_tiles):
                        self.delay("consumer", "wait", "before")
                        pipe.consumer_wait(state)
                        self.delay("consumer", "wait", "after")
                        stage = raw_base + state.index * self.raw_stage_bytes
                        for sb in cutlass.range_constexpr(self.n_sub):
                            # 2 or 4 buffers divide the K tile's sub-blocks: the buffer is static
                            buf = sb % self.fp16_buffers
                            self.delay("consumer", "decode", "before")
                            self.check_reuse(buf, hb_warp0, hb_warps)
                            if cutlass.const_expr(self.x_in_regs):
                                x_frag = self.x_fragment(thr_mma, tidx, stage, x_sf_row0, sb)
                                if cutlass.const_expr(self.ablates("y_dequant")):
                                    pass  # profiling only: Y's buffers keep what they hold
                                else:
                                    self.dequant_y_rs(tidx, stage, sy_base + buf * self.y_buf_bytes, y_sf_row0, sb)
                            else:
                                self.dequant_sub_block(
                                    tidx, stage, sx_base + buf * self.x_buf_bytes, sy_base + buf * self.y_buf_bytes,
                                    x_sf_row0, y_sf_row0, sb,
                                )
                            # generic-proxy stores -> visible to wgmma's async proxy
                            if cutlass.const_expr(not self.ablates("y_sync")):
                                self.delay("consumer", "fence", "before")
                                self.fence_fp16_stores(buf)
                                self.delay("consumer", "fence", "after")
                                consumers.arrive_and_wait()
                                self.delay("consumer", "bar_dequant", "after")
                            if cutlass.const_expr(sb == self.n_sub - 1):
                                self.poison_released_stage(tidx, stage)
                                self.delay("consumer", "release", "before")
                                pipe.consumer_release(state)
                                self.delay("consumer", "release", "after")
                            if cutlass.const_expr(self.x_in_regs):
                                self.wgmma_fence()  # the fragment registers were just written
                                self.check_wgmma(buf, hb_warp0, hb_warps)
                                self.fill_wgmma(filler, acc, tCrY, buf, sb)
                                for kb in cutlass.range_constexpr(SUB_K // 16):
                                    cute.gemm(tiled_mma, acc, x_frag[(None, None, kb)], tCrY[(None, None, kb, buf)], acc)
                                self.commit_group(buf)
                            else:
                                self.mma_sub_block(tiled_mma, acc, tCrX, tCrY, buf, filler, sb, (hb_warp0, hb_warps))
                            self.delay("consumer", "wgmma_wait", "before")
                            self.wait_group(cfg.wgmma_in_flight)
                            self.delay("consumer", "wgmma_wait", "after")
                            # 4 buffers (wgmma_in_flight=2): no second barrier, the buffer written next
                            # was last read by the wgmma four sub-blocks back, which every warp
                            # retired (its wait_group(2)) before the barrier this warp passed last
                            if cutlass.const_expr(self.fp16_buffers == 2 and not self.ablates("y_sync")):
                                self.delay("consumer", "bar_reuse", "before")
                                # every warp has retired the wgmma that read the other buffer
                                consumers.arrive_and_wait()
                                self.delay("consumer", "bar_reuse", "after")
                                self.poison_free_fp16_buffer(tidx, consumers, sx_base, sy_base, (sb + 1) % 2)
                        state.advance()
                    self.wait_group(0)
                    self.epilogue(acc, tCcC, m_ptrs[slot, 2], m, n, m0, n0)
                    self.poison_accumulator(acc)
        elif cutlass.const_expr(self.split):
            # ---------------------------------------- dequant warpgroups (roles="split")
            dq_tidx = tidx - self.consumer_threads
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
            fp16_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.fp16_buffers)
            for tile in range(t_begin, t_end, t_step):
                slot, m, n, k, m0, n0 = self.tile_origin(m_prefix, m_sizes, tile)
                x_sf_row0, y_sf_row0 = self.sf_rows(m0, n0)
                for kt in range(k // cfg.tile_k):
                    self.delay("dequant", "wait", "before")
                    pipe.consumer_wait(state)
                    self.delay("dequant", "wait", "after")
                    stage = raw_base + state.index * self.raw_stage_bytes
                    if cutlass.const_expr(self.x_in_regs and self.y_pairs_sub_blocks):
                        # Y only, in the fragment's K order (the consumers decode X), two
                        # sub-blocks (two ring buffers) per asm block: twice the shared loads in
                        # flight per thread before the first decode
                        for sp in cutlass.range_constexpr(self.n_sub // 2):
                            self.delay("dequant", "fp16_acquire", "before")
                            fp16_pipe.producer_acquire(fp16_state)
                            second = fp16_state.clone()
                            second.advance()
                            fp16_pipe.producer_acquire(second)
                            self.delay("dequant", "fp16_acquire", "after")
                            units = self.y_rs_units(dq_tidx, stage, sy_base + fp16_state.index * self.y_buf_bytes,
                                                    y_sf_row0, 2 * sp)
                            units += self.y_rs_units(dq_tidx, stage, sy_base + second.index * self.y_buf_bytes,
                                                     y_sf_row0, 2 * sp + 1)
                            dequant_y_units_rs(units, self.config.operand_exp_shift)
                            self.delay("dequant", "fence", "before")
                            cute.arch.fence_proxy("async.shared", space="cta")
                            self.delay("dequant", "fence", "after")
                            cute.arch.sync_warp()
                            self.delay("dequant", "fp16_commit", "before")
                            if cute.arch.lane_idx() == 0:
                                fp16_pipe.producer_commit(fp16_state)
                                fp16_pipe.producer_commit(second)
                            self.delay("dequant", "fp16_commit", "after")
                            fp16_state.advance()
                            fp16_state.advance()
                    for sb in cutlass.range_constexpr(0 if self.x_in_regs and self.y_pairs_sub_blocks else self.n_sub):
                        self.delay("dequant", "fp16_acquire", "before")
                        fp16_pipe.producer_acquire(fp16_state)
                        self.delay("dequant", "fp16_acquire", "after")
                        buf = fp16_state.index
                        if cutlass.const_expr(self.x_in_regs):
                            # Y only, in the fragment's K order (the consumers decode X)
                            self.dequant_y_rs(dq_tidx, stage, sy_base + buf * self.y_buf_bytes, y_sf_row0, sb)
                        else:
                            self.dequant_sub_block(
                                dq_tidx, stage, sx_base + buf * self.x_buf_bytes, sy_base + buf * self.y_buf_bytes,
                                x_sf_row0, y_sf_row0, sb,
                            )
                        # generic-proxy stores -> visible to wgmma's async proxy, then publish
                        self.delay("dequant", "fence", "before")
                        if cutlass.const_expr(not self.ablates("fence")):
                            cute.arch.fence_proxy("async.shared", space="cta")
                        self.delay("dequant", "fence", "after")
                        cute.arch.sync_warp()
                        self.delay("dequant", "fp16_commit", "before")
                        if cute.arch.lane_idx() == 0:
                            fp16_pipe.producer_commit(fp16_state)
                        self.delay("dequant", "fp16_commit", "after")
                        fp16_state.advance()
                    if cutlass.const_expr(cfg.loader != "cp_async"):
                        cute.arch.sync_warp()  # lane 0 releases for its whole warp
                    self.delay("dequant", "release", "before")
                    pipe.consumer_release(state)
                    self.delay("dequant", "release", "after")
                    state.advance()


class HarnessHopperGemm(HopperNvfp4GroupedGemm):
    """The run-time perturbed build (``Perturbation.runtime``; tests only): the production
    kernel with one more argument, the device table of delays (and jitter) that every delay site
    reads (kernel/perturbation.py ``device_words``), so one build serves every seed. Production
    builds use :class:`HopperNvfp4GroupedGemm`, whose signature and code this leaves alone."""

    def __init__(self, config: HopperConfig, num_groups: int, perturbation: Perturbation, ablation: Ablation | None = None):
        if perturbation is None or not perturbation.runtime:
            raise ValueError("HarnessHopperGemm is the build of a run-time perturbation")
        super().__init__(config, num_groups, perturbation, ablation)

    @cute.jit
    def __call__(
        self,
        sizes_ptr: cute.Pointer,
        prefix_ptr: cute.Pointer,
        ptrs_ptr: cute.Pointer,
        tmaps_ptr: cute.Pointer,
        delays_ptr: cute.Pointer,
        num_ctas: cutlass.Int32,
        stream: cuda.CUstream,
    ):
        self.launch_kernel(num_ctas, stream, sizes_ptr, prefix_ptr, ptrs_ptr, tmaps_ptr, delays_ptr)


class PrepassHopperGemm(HopperNvfp4GroupedGemm):
    """``y_source="prepass"``: the production kernel with one more argument, the workspace
    (kernel.hopper.workspace), after the four tables."""

    @cute.jit
    def __call__(
        self,
        sizes_ptr: cute.Pointer,
        prefix_ptr: cute.Pointer,
        ptrs_ptr: cute.Pointer,
        tmaps_ptr: cute.Pointer,
        ws_ptr: cute.Pointer,
        num_ctas: cutlass.Int32,
        stream: cuda.CUstream,
    ):
        self.launch_kernel(num_ctas, stream, sizes_ptr, prefix_ptr, ptrs_ptr, tmaps_ptr, None, ws_ptr)


class HarnessPrepassGemm(HarnessHopperGemm):
    """The run-time perturbed build of a ``y_source="prepass"`` variant: delay table, then workspace."""

    @cute.jit
    def __call__(
        self,
        sizes_ptr: cute.Pointer,
        prefix_ptr: cute.Pointer,
        ptrs_ptr: cute.Pointer,
        tmaps_ptr: cute.Pointer,
        delays_ptr: cute.Pointer,
        ws_ptr: cute.Pointer,
        num_ctas: cutlass.Int32,
        stream: cuda.CUstream,
    ):
        self.launch_kernel(num_ctas, stream, sizes_ptr, prefix_ptr, ptrs_ptr, tmaps_ptr, delays_ptr, ws_ptr)
