"""The sm_90a kernel: persistent grouped NVFP4 GEMM, dequantized on chip, wgmma fp16, fp32 acc.

Warp roles, in warp order (``HopperConfig.threads``):

* consumer warpgroups (1 or 2, warpgroup-aligned for wgmma): hold the fp32 accumulators, issue
  wgmma per 64-K sub-block and store fp16 C with per-element predicates (ragged M and N), or
  (``epilogue="smem"``, experimental) stage it through a shared buffer per warpgroup
  (kernel/hopper/staging.py) and store it with coalesced 16-byte stores.
  ``roles="cooperative"``: they also dequantize each sub-block of the raw stage into swizzled
  fp16 operand buffers (two ping-pong buffers with two named barriers per sub-block, or three
  with one), so their dequant of sub-block s+1 overlaps the wgmma of s. With
  ``x_operand="regs"`` each thread decodes its own wgmma A fragment straight into registers and
  only Y goes through shared memory (kernel/hopper/ptx.py states the shared K order); with
  ``y_per_warpgroup`` (experimental) each warpgroup decodes the whole Y into its own ring and
  syncs only its own 128 threads (barrier id 1 + warpgroup), so the warpgroups drift apart;
* dequant warpgroups (``roles="split"`` only): dequantize into a ring of ``fp16_buffers``
  buffers (full/empty mbarriers, one arrive per warp); the consumers then only run wgmma;
* producer warps (1..4): per tile and K stage, wait for a free raw stage and load it:
  ``loader="cp_async"`` 16-byte cp.async per lane (rows split over the producer warps, rows past
  M/N copy the last valid row), ``"bulk_rows"`` one cp.async.bulk per row, ``"tma"`` one 2-D
  TMA box per operand from per-group tensor maps (kernel/tensor_maps.py; rows past M/N
  zero-filled, raw rows 128-byte swizzled) plus one cp.async.bulk per 128-row scale block.

``y_source="prepass"`` (issue 14p, experimental): before the tile loop every thread of every
CTA decodes the groups' Y rows (A, swapped) once into a global fp16 workspace
(kernel/hopper/workspace.py: layout, and why its completion barrier cannot deadlock); the tile
loop then has a 4-stage ring of raw X (+ scales) and a ring of fp16 Y boxes loaded by TMA, and
the consumers decode only X (``produce_prepass`` / ``consume_x_regs_y_ring``). With
``prepass_sync="flags"`` (experimental) there is no completion barrier: phase 1 runs
K-chunk-major and publishes a flag per (Y block, K chunk), and the producer acquire-waits on the
flag of each K chunk before its Y boxes (``prepass_decode_flags`` / ``produce_prepass_q``); with
``prepass_decoders`` (experimental) that phase 1 runs on warps of its own after the producer warp
while the other roles start phase 2 at once (``prepass_decode_background``). ``y_tail16``
(experimental) runs every tile with wgmma N = its Y rows rounded up to 16, tiles from the snake
schedule (``locate`` / ``tile_range``; kernel.plan).

``cluster_x=2`` (issue 14, experimental; prepass with ``prepass_chunk`` only): a grid of 2-CTA
clusters. A cluster runs *cluster tiles* (kernel.plan ``cluster_n``): N blocks 2j and 2j+1 of one
group and one M block, rank r taking 2j+r (a ghost past the group's last N block computes on
zero-filled X and stores nothing), so both CTAs walk the same Y boxes; each producer loads its
rank's half of every Y box multicast into both CTAs' Y rings (``produce_y_box``), each consumer
warp releases a Y buffer on both CTAs' empty barriers (``warp_release``). The Y ring's creation
syncs the cluster (barrier init visible before phase 1), and the kernel ends with a cluster
barrier. Phase 1 and its grid barrier are unchanged: cluster barriers wait only on the peer CTA,
which a cluster launch starts together with this one.

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
from kernel.device_schedule import (
    balanced_counts,
    balanced_locate,
    balanced_share,
    balanced_share_warp,
    cta_tile_range,
    group_search,
    uniform_share,
)
from kernel.hopper import staging
from kernel.hopper.config import HopperConfig
from kernel.perturbation import (JITTER_MODE_WORD, JITTER_NS_WORD, SEED_WORD, SKEW_NS_WORD, SKEW_WARP_WORD, SLOT_INDEX,
                                 TIMELINE_CTAS, TIMELINE_INDEX, TIMELINE_POINTS, TIMELINE_WORD0, Perturbation)
from kernel.hopper.ablation import Ablation, check_ablation
from kernel.hopper.ptx import (
    timeline_stamp,
    arrive_release_gpu,
    copy_y_staged_items,
    store_y_staged_item,
    mbarrier_complete_tx,
    atom_add_relaxed_gpu,
    load_y_global_items,
    fence_proxy_async_global,
    ld_shared_u32,
    st_shared_u32,
    store_relaxed_gpu,
    wait_geq_acquire_gpu,
    bulk_copy_g2s,
    cp_async_16,
    dequant_unit,
    dequant_units_prmt,
    dequant_x_fragment_rs,
    dequant_y_units_rs,
    poison_shared_16,
    sleep_ns,
    opaque_zeros_u32,
    delay_jitter_from_table,
    sleep_ns_from_table_skewed,
    warp_skew_from_table,
    sleep_ns_from_table,
    sleep_ns_jittered,
    store_f16,
    ld_shared_v4_b32,
    st_global_f16x8_tail,
    st_global_v4_b32,
    stmatrix_x4_trans_f16,
    tensormap_acquire,
    tma_load_rows,
    hb_check,
    hb_check_map,
    hb_check_reuse,
    hb_mask_update,
    low_word,
)

SUB_K = cfgmod.DEQUANT_SUB_K
# y_source="prepass": the workspace's layout (kernel.hopper.workspace states it for the host)
from kernel.hopper.workspace import CLAIM_WORD, DATA_OFFSET, DONE_WORD, PASSED_WORD, TENSOR_MAP_OFFSET  # noqa: E402
from kernel.perturbation import CHECK_RULE_INDEX, SKEWED_SITES  # noqa: E402


# the happens-before checker's shadow state (harness builds with Perturbation.checks): one slot of
# HB_WARP_WORDS int32 per warp of the CTA, in shared memory. Consumer warps: the wgmma groups
# committed and waited for, the accumulator/fragment "written since the last wgmma fence" flag,
# which group read each fp16 or Y buffer last, which sub-block each fp16 buffer was fenced and
# published for. Producer warps: the stages filled and not yet seen released (raw ring, Y ring)
# and the tensor maps each issuing lane acquired (a ring of 4 low words)
HB_WARP_WORDS = 32
HB_ISSUED, HB_RETIRED, HB_DIRTY = 0, 1, 2
HB_READER = 4  # + buffer (16)
HB_PUBLISHED = 20  # + fp16 buffer (4)
HB_OUT_RAW, HB_OUT_Y = 0, 1  # producer warps: stages filled and not seen released (bit masks)
HB_MAPS = 8  # producer warps: per issuing lane 0 / 1, a count then 4 entries (words 8-17)
HB_MAP_WS = 18  # producer warps: per issuing lane 0 / 1, the prepass workspace's map (words 18-19)


@cute.jit
def if_lane0_store_share(slots: cutlass.Int32, share):
    """Lane 0 stores the int32 of a balanced share (y_tail64: four; stream_k: six) at shared
    address ``slots``."""
    if cute.arch.lane_idx() == 0:
        for i in cutlass.range_constexpr(len(share)):
            st_shared_u32(slots + 4 * i, share[i])


class HopperNvfp4GroupedGemm:
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
        self.half_n = self.mma_n // 2
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

        @cute.struct
        class SharedStorage:
            bars: cute.struct.MemRange[cutlass.Int64, stages * 2]
            fp16_bars: cute.struct.MemRange[cutlass.Int64, fp16_bar_count]
            raw: cute.struct.Align[cute.struct.MemRange[cutlass.Uint8, raw_bytes], cfgmod.SMEM_ALIGN]
            sX: cute.struct.Align[cute.struct.MemRange[cutlass.Float16, x_elems], cfgmod.SMEM_ALIGN]
            sY: cute.struct.Align[cute.struct.MemRange[cutlass.Float16, y_elems], cfgmod.SMEM_ALIGN]
            if self.staged_epilogue:  # epilogue="smem": the staging buffers of C
                sC: cute.struct.Align[cute.struct.MemRange[cutlass.Uint8, epi_bytes], cfgmod.SMEM_ALIGN]
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

    # ---------------------------------------------------------------------- device side
    def y_ring(self, storage, release_warps: int, cta_layout_vmnk: tuple):
        """y_source="prepass": the TMA-filled Y ring (its full barrier: one elected arrive and the
        box's bytes; its empty barrier: one arrive per releasing warp). Traced inline; every
        thread of the CTA (of the cluster, with cluster_x) creates it before the roles part."""
        return pipeline.PipelineTmaAsync.create(
            barrier_storage=storage.fp16_bars.data_ptr(),
            num_stages=self.fp16_buffers,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, release_warps),
            tx_count=self.y_tx_bytes,
            cta_layout_vmnk=cute.make_layout(cta_layout_vmnk),
        )

    @cute.jit
    def locate(self, m_prefix: cute.Tensor, m_sizes: cute.Tensor, tile: cutlass.Int32):
        """tile -> (slot, m_block, n_block); the loop of kernel.plan.device_group_search.
        ``y_tail64``: ``tile`` is the index into this CTA's balanced list (its full tiles, then
        its light tiles; kernel.plan.LaunchPlan.cta_tiles)."""
        if cutlass.const_expr(self.tail64):
            fs, fc, ts, _tc = self.share
            light_list = cutlass.Int32(tile >= fc)
            idx = fs + tile
            if tile >= fc:
                idx = ts + (tile - fc)
            slot, m_block, n_block = balanced_locate(m_sizes, self.num_groups, self.config.tile_m,
                                                     self.config.tile_n, light_list, idx)
        else:
            slot = group_search(m_prefix, tile, self.num_groups)
            rest = tile - m_prefix[slot]
            tiles_m = (m_sizes[slot, 0] + (self.config.tile_m - 1)) // self.config.tile_m
            n_block = rest // tiles_m
            m_block = rest - n_block * tiles_m
        return slot, m_block, n_block

    @cute.jit
    def tile_origin(self, m_prefix: cute.Tensor, m_sizes: cute.Tensor, tile: cutlass.Int32):
        """(slot, m, n, k, m0, n0): the group of ``tile``, its sizes and the tile's first row and
        column of C; what the producer and the consumers both need for every tile."""
        slot, m_block, n_block = self.locate(m_prefix, m_sizes, tile)
        return (
            slot,
            m_sizes[slot, 0],
            m_sizes[slot, 1],
            m_sizes[slot, 2],
            m_block * self.config.tile_m,
            n_block * self.config.tile_n,
        )

    def balanced_setup(self, m_sizes: cute.Tensor, total, slots):
        """y_tail64, the producer warp: this CTA's share of the balanced split
        (kernel.plan.balanced_share), kept on ``self`` while the warp's code is traced (``locate``
        and ``tile_range`` read it) and stored at ``slots`` (4 x int32, lane 0) for the consumers
        (``balanced_read``, after phase 1's completion barrier). Returns the tile range. Traced
        inline (a plain method: an attribute set in a run-time branch's own body would be carried
        out of it)."""
        nf, nt = balanced_counts(m_sizes, self.num_groups, self.config.tile_m, self.config.tile_n)
        cta, _, _ = cute.arch.block_idx()
        ctas, _, _ = cute.arch.grid_dim()
        if cutlass.const_expr(self.ablates("balanced_split")):
            self.share = uniform_share(nf, nt, cutlass.Int32(ctas), cutlass.Int32(cta))  # profiling only
        elif cutlass.const_expr(self.config.prepass_split_warp):
            self.share = balanced_share_warp(nf, nt, cutlass.Int32(ctas), cutlass.Int32(cta), cute.arch.lane_idx())
        else:
            self.share = balanced_share(nf, nt, cutlass.Int32(ctas), cutlass.Int32(cta))
        if_lane0_store_share(slots, self.share)
        return self.tile_range(total)

    def balanced_read(self, total, slots):
        """y_tail64, the consumer warps after phase 1's completion barrier: the share the producer
        warp stored (``balanced_setup``), and the tile range. Traced inline."""
        self.share = tuple(ld_shared_u32(slots + 4 * i) for i in range(4))
        return self.tile_range(total)

    @cute.jit
    def tile_range(self, total: cutlass.Int32):
        if cutlass.const_expr(self.tail64):
            # the balanced schedule: entries 0 .. full + light - 1 of this CTA's list (locate)
            first, end, step = cutlass.Int32(0), self.share[1] + self.share[3], cutlass.Int32(1)
        else:
            first, end, step = cta_tile_range(total, self.config.schedule)
        return first, end, step

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
    def load_rows_bulk(self, lane, dst, src_ptr, row0, lim, row_bytes, kbyte, mbar, rows: cutlass.Constexpr):
        for i in cutlass.range_constexpr(rows // 32):
            r = lane + 32 * i
            grow = cutlass.min(row0 + r, lim - 1)
            bulk_copy_g2s(dst + r * self.pitch, src_ptr + cutlass.Int64(grow) * row_bytes + kbyte, self.config.tile_k // 2, mbar)

    @cute.jit
    def load_sf_bulk(self, lane, lane0: cutlass.Constexpr, dst, sf_ptr, row0, blocks, rest_k, sf_k, mbar,
                     rows: cutlass.Constexpr):
        """One cp.async.bulk per 128-row scale block (lane ``lane0 + b`` copies block b)."""
        for b in cutlass.range_constexpr(cfgmod.sf_blocks(rows)):
            if lane == lane0 + b:
                blk = cutlass.min(row0 // 128 + b, blocks - 1)
                bulk_copy_g2s(
                    dst + b * self.sf_block_bytes,
                    sf_ptr + (cutlass.Int64(blk) * rest_k + sf_k) * 512,
                    self.sf_block_bytes,
                    mbar,
                )

    @cute.jit
    def load_rows_cp_async(self, pw, lane, dst, src_ptr, row0, lim, row_bytes, kbyte, rows: cutlass.Constexpr):
        """Producer warp ``pw`` of P copies steps pw, pw+P, ...; in a step lane l copies 16-byte
        chunk l of a run of whole rows (one warp instruction covers 32 / chunks_per_row rows)."""
        chunks_per_row = self.config.tile_k // 32
        rows_per_step = 32 // chunks_per_row
        P = self.config.producer_warps
        q = lane % chunks_per_row
        r0 = lane // chunks_per_row + rows_per_step * pw
        src0 = src_ptr + kbyte + q * 16
        dst0 = dst + r0 * self.pitch + q * 16
        last = lim - 1 - row0  # rows past the operand's end copy its last row
        # rolled by default: unrolled, the hoisted row addresses spill (the producer shares the
        # consumers' register budget)
        for i in range(rows // rows_per_step // P, unroll=self.config.load_unroll):
            r = r0 + (rows_per_step * P) * i
            cp_async_16(
                dst0 + (rows_per_step * P * self.pitch) * i,
                src0 + cutlass.Int64(row0 + cutlass.min(r, last)) * row_bytes,
            )

    @cute.jit
    def load_sf_cp_async(self, pw, lane, dst, sf_ptr, row0, blocks, rest_k, sf_k, rows: cutlass.Constexpr):
        """Copy step i of scale block b goes to producer warp (b * steps + i) % P."""
        chunks = self.sf_block_bytes // 16
        steps = chunks // 32
        for b in cutlass.range_constexpr(cfgmod.sf_blocks(rows)):
            blk = cutlass.min(row0 // 128 + b, blocks - 1)
            base = sf_ptr + (cutlass.Int64(blk) * rest_k + sf_k) * 512
            for i in cutlass.range_constexpr(steps):
                if pw == (b * steps + i) % self.config.producer_warps:
                    c = lane + 32 * i
                    cp_async_16(dst + b * self.sf_block_bytes + c * 16, base + c * 16)

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
            if cutlass.const_expr(self.ablates("prepass")):
                # (ablation, profiling only: no item decoded, the Y boxes read stale rows)
                chunks = cutlass.Int32(0)
            else:
                chunks = self.prepass_decode_scaled(tidx, m_sizes, m_ptrs, ws, claim_slots, sy_base)
            if cutlass.const_expr(self.timeline):
                if tidx == 0:
                    if chunks >= 0:  # its chunks' stores issued
                        self.timeline_point("phase1_decoded")
            if cutlass.const_expr(self.ablates("phase2")):
                # profiling only (phase1_only): phase 1 and its completion barrier, nothing after
                if warp_idx < self.producer_warp:
                    if tidx == 0:
                        self.prepass_wait(ws, chunks)
                cute.arch.barrier()
            else:
                if warp_idx >= self.producer_warp:
                    # the split (y_tail64: ~1200 instructions on one lane, ~150 over the
                    # lanes with exit_split_warp) and (prepass_x_early) the first tile's X
                    # stages, after the warp's phase-1 chunks
                    self.producer_x_first(m_prefix, m_sizes, m_ptrs, tmaps_ptr, ws, pipe, raw_base, total,
                                          cutlass.Int32(0) if self.tail64 else t_begin, share_slots)
                else:
                    if tidx == 0:
                        self.prepass_wait(ws, chunks)
                        if cutlass.const_expr(self.timeline):
                            self.timeline_point("phase1_passed")  # the grid barrier's spin ended
                # phase 1's completion barrier: one instruction that every thread executes
                # (bar.sync is barrier.sync.aligned: reached from the two roles' own code it is
                # undefined in PTX, and compute-sanitizer synccheck aborts the launch on it)
                cute.arch.barrier()
                if cutlass.const_expr(self.timeline):
                    if tidx == 0:
                        self.timeline_point("phase1_done")
                # the tile total read again (after phase 1's memory-clobbering asm: a fresh load), so
                # no schedule value stays live across phase 1 (the 3-warpgroup tile at its 128-register
                # cap spilled one)
                total = m_prefix[G]
                if warp_idx >= self.producer_warp:
                    if cutlass.const_expr(self.tail64):
                        p_begin, p_end, p_step = self.balanced_read(total, share_slots)  # producer_x_first's
                    else:
                        p_begin, p_end, p_step = self.tile_range(total)
                    self.produce_prepass_q(m_prefix, m_sizes, m_ptrs, tmaps_ptr, ws, pipe, y_pipe, raw_base, sy_base,
                                           p_begin, p_end, p_step, total)
                else:
                    if cutlass.const_expr(self.tail64):
                        c_begin, c_end, c_step = self.balanced_read(total, share_slots)
                    else:
                        c_begin, c_end, c_step = self.tile_range(total)
                    self.consume_x_regs_y_ring(tiled_mma, sY, m_prefix, m_sizes, m_ptrs, pipe, y_pipe, raw_base, tidx,
                                               c_begin, c_end, c_step, sy_iter=storage.sY if self.tail64 else None)
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
                    self.delay("producer", "acquire", "before")
                    self.producer_acquire(pipe, state)
                    self.delay("producer", "acquire", "after")
                    stage = raw_base + state.index * self.raw_stage_bytes
                    self.poison_stage_before_fill(lane, stage)
                    kbyte = cutlass.Int64(kt * (cfg.tile_k // 2))
                    sf_k = cutlass.Int64(kt * (cfg.tile_k // 64))
                    if cutlass.const_expr(cfg.loader != "cp_async"):
                        mbar = pipe.producer_get_barrier(state).toint()
                        if cutlass.const_expr(cfg.loader == "tma"):
                            # rows past the operand's end are zero-filled (never stored)
                            if lane == 0:
                                self.tma_rows(stage + self.off_x, tm_x, kt * (cfg.tile_k // 2), x_row0, mbar)
                            if lane == 1:
                                self.tma_rows(stage + self.off_y, tm_y, kt * (cfg.tile_k // 2), y_row0, mbar)
                        else:
                            self.load_rows_bulk(lane, stage + self.off_x, x_ptr, x_row0, x_lim, row_bytes, kbyte, mbar, self.mma_m)
                            self.load_rows_bulk(lane, stage + self.off_y, y_ptr, y_row0, y_lim, row_bytes, kbyte, mbar, self.mma_n)
                        self.load_sf_bulk(lane, 0, stage + self.off_sfx, sfx_ptr, x_row0, x_blocks, rest_k, sf_k, mbar, self.mma_m)
                        self.load_sf_bulk(lane, 16, stage + self.off_sfy, sfy_ptr, y_row0, y_blocks, rest_k, sf_k, mbar, self.mma_n)
                    else:
                        self.load_rows_cp_async(pw, lane, stage + self.off_x, x_ptr, x_row0, x_lim, row_bytes, kbyte, self.mma_m)
                        self.load_rows_cp_async(pw, lane, stage + self.off_y, y_ptr, y_row0, y_lim, row_bytes, kbyte, self.mma_n)
                        self.load_sf_cp_async(pw, lane, stage + self.off_sfx, sfx_ptr, x_row0, x_blocks, rest_k, sf_k, self.mma_m)
                        self.load_sf_cp_async(pw, lane, stage + self.off_sfy, sfy_ptr, y_row0, y_blocks, rest_k, sf_k, self.mma_n)
                    self.delay("producer", "issue", "before")
                    self.producer_commit(pipe, state)
                    self.delay("producer", "issue", "after")
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
                wtid, ybuf0 = tidx, 0
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
                                self.poison_released_stage(tidx, stage, wtid)
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
                                self.poison_free_fp16_buffer(tidx, consumers, sx_base, sy_base, (sb + 1) % 2, wtid, ybuf0)
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


    # ------------------------------------------------ y_source="prepass" (issue 14p)
    @cute.jit
    def prepass_claim(self, tidx: cutlass.Int32, ws: cutlass.Int64, slots: cutlass.Int32, it: cutlass.Int32):
        """Thread 0 claims the CTA's next chunk (atomic add on the claim word) and broadcasts it
        through shared slot ``it % 2`` (the other slot may still be read by a slow thread of
        the previous round, which has not yet reached this round's barrier)."""
        slot_addr = slots + (it % 2) * 4
        if tidx == 0:
            st_shared_u32(slot_addr, atom_add_relaxed_gpu(ws + CLAIM_WORD, cutlass.Int32(1)))
        cute.arch.barrier()
        return ld_shared_u32(slot_addr)

    def prepass_chunking(self, items, threads=None, batch: int = cfgmod.PREPASS_BATCH):
        """Phase 1's run-time chunk (``prepass_chunk`` = F > 0): clamp(ceil(items / (F x grid)),
        PREPASS_MIN_CHUNK, threads x ``batch``) items, and the number of chunks. Traced inline."""
        num_ctas, _, _ = cute.arch.grid_dim()
        div = cutlass.Int32(num_ctas) * self.config.prepass_chunk
        chunk = (items + (div - 1)) // div
        chunk = cutlass.max(chunk, cutlass.Int32(cfgmod.PREPASS_MIN_CHUNK))
        chunk = cutlass.min(chunk, cutlass.Int32((threads or self.threads) * batch))
        return chunk, (items + (chunk - 1)) // chunk

    @cute.jit
    def prepass_decode_scaled(self, tidx: cutlass.Int32, m_sizes: cute.Tensor, m_ptrs: cute.Tensor,
                              ws: cutlass.Int64, slots: cutlass.Int32, scratch: cutlass.Int32):
        """Issue 14q (``prepass_chunk`` = F > 0), every thread of every CTA: phase 1 with a chunk
        of clamp(ceil(items / (F x grid)), PREPASS_MIN_CHUNK, threads x PREPASS_BATCH) items,
        chosen at run time; thread t of a chunk takes items t, t + threads, ... and issues the
        loads of all of them before decoding any (one asm block). Thread 0 claims the next
        chunk while the current one is decoded and publishes it with the chunk's end barrier
        (one CTA barrier per chunk, two shared slots alternating as in ``prepass_claim``).
        Returns the number of chunks; the completion wait is ``prepass_wait`` (thread 0), then
        a CTA barrier. The deadlock argument of kernel.hopper.workspace is unchanged: a CTA
        claims only while running, and decodes every chunk it claimed before it waits."""
        threads = self.threads
        batch = cfgmod.PREPASS_BATCH
        # per group: first item, first workspace row (registers for the whole loop)
        bases, roffs, counts, items, kmax = self.prepass_groups(m_sizes)
        chunk, chunks = self.prepass_chunking(items)
        pitch = cutlass.Int64(kmax * 2)
        data = ws + DATA_OFFSET
        # each warp's 32 item slots in the Y ring (unused until phase 1
        # ends; its TMA writes come after the proxy fence below and the completion barrier)
        warp_slots = scratch + (tidx // 32) * cfgmod.PREPASS_STAGED_WARP_BYTES
        it = cutlass.Int32(0)
        c = self.prepass_claim(tidx, ws, slots, it)
        while c < chunks:
            nxt = cutlass.Int32(0)
            if tidx == 0:
                # the next claim, in flight while this chunk is loaded and decoded
                nxt = atom_add_relaxed_gpu(ws + CLAIM_WORD, cutlass.Int32(1))
            first = c * chunk
            end = cutlass.min(first + chunk, items)
            self.decode_chunk_items(tidx, threads, batch, first, end, bases, roffs, counts, m_sizes, m_ptrs, data,
                                    pitch, warp_slots)
            # this thread's generic stores -> ordered before the async proxy (other CTAs' TMA)
            fence_proxy_async_global()
            if tidx == 0:
                st_shared_u32(slots + ((it + 1) % 2) * 4, nxt)
            cute.arch.barrier()
            if tidx == 0:
                arrive_release_gpu(ws + DONE_WORD, cutlass.Int32(1))
            it = it + 1
            c = ld_shared_u32(slots + (it % 2) * 4)
        # the slots' generic writes before the Y ring's TMA (async proxy) writes to them
        cute.arch.fence_proxy("async.shared", space="cta")
        return chunks

    @cute.jit
    def decode_chunk_items(self, tidx: cutlass.Int32, threads: cutlass.Constexpr[int], batch: cutlass.Constexpr[int],
                           first: cutlass.Int32, end: cutlass.Int32, bases: list, roffs: list, counts: list,
                           m_sizes: cute.Tensor, m_ptrs: cute.Tensor, data: cutlass.Int64, pitch: cutlass.Int64,
                           warp_slots: cutlass.Int32):
        """Phase 1 (item order of ``prepass_item_addresses``), one thread of ``threads``: its items
        ``first + tidx + j x threads`` < ``end`` of a chunk, ``batch`` at once: every item's loads
        in one asm block, then each item decoded into its lane's slot of the warp's 32 at
        ``warp_slots`` and stored by the warp's whole-run stores."""
        lane = tidx % 32
        loads = []
        dsts = []
        oks = []
        for j in cutlass.range_constexpr(batch):
            item = first + tidx + j * threads
            ok = item < end
            raw, sf, dst = self.prepass_item_addresses(item, bases, roffs, counts, m_sizes, m_ptrs, data, pitch)
            loads.append((raw, sf, cutlass.Int32(ok)))
            dsts.append(dst)
            oks.append(ok)
        words = load_y_global_items(loads)
        for j in cutlass.range_constexpr(batch):
            # the item into this lane's shared slot, then the warp's whole-run stores
            if oks[j]:
                store_y_staged_item(words[j], warp_slots + lane * 128, (lane % 8) * 16,
                                    self.config.operand_exp_shift)
            copy_y_staged_items(warp_slots, dsts[j], cutlass.Int32(oks[j]), lane)

    @cute.jit
    def prepass_groups(self, m_sizes: cute.Tensor):
        """Per group (slot order): its first item, first workspace row and item count (0 for a
        group without columns); then the items in all and the largest K."""
        bases = []
        roffs = []
        counts = []
        items = cutlass.Int32(0)
        roff = cutlass.Int32(0)
        kmax = cutlass.Int32(0)
        for s in cutlass.range_constexpr(self.num_groups):
            bases.append(items)
            roffs.append(roff)
            m = m_sizes[s, 0]
            count = m * (m_sizes[s, 2] // SUB_K)
            if m_sizes[s, 1] == 0:
                count = cutlass.Int32(0)
            counts.append(count)
            items = items + count
            roff = roff + self.slot_rows(m)
            kmax = cutlass.max(kmax, m_sizes[s, 2])
        return bases, roffs, counts, items, kmax

    @cute.jit
    def prepass_item_addresses(self, item: cutlass.Int32, bases: list, roffs: list, counts: list, m_sizes: cute.Tensor,
                               m_ptrs: cute.Tensor, data: cutlass.Int64, pitch: cutlass.Int64):
        """(raw A, scale word, workspace run) of ``item`` (kernel.hopper.workspace.item_addresses),
        from the per-group first items ``bases``, item ``counts`` and rows ``roffs``: the last group
        that owns items and whose first item is <= ``item`` (``prepass_item``'s group for every
        item below the total; an item past it gets an address that is never dereferenced)."""
        sel_slot = cutlass.Int32(0)
        sel_base = cutlass.Int32(0)
        sel_roff = cutlass.Int32(0)
        for s in cutlass.range_constexpr(self.num_groups):
            if item >= bases[s]:
                if counts[s] != 0:
                    sel_slot = cutlass.Int32(s)
                    sel_base = bases[s]
                    sel_roff = roffs[s]
        return self.prepass_run_addresses(item, sel_slot, sel_base, sel_roff, m_sizes, m_ptrs, data, pitch)

    def prepass_run_addresses(self, item, slot, first_item, first_row, m_sizes, m_ptrs, data, pitch):
        """(raw A, scale word, workspace run) of item ``item`` of group slot ``slot``, whose items
        start at ``first_item`` and whose rows at workspace row ``first_row`` (items are 64-K runs
        of one row, sub-block fastest; kernel.hopper.workspace.item_addresses). Traced inline."""
        k = m_sizes[slot, 2]
        ksub = k // SUB_K
        local = item - first_item
        row = local // ksub
        sb = local - row * ksub
        i = row % 128
        raw = m_ptrs[slot, 0] + cutlass.Int64(row) * cutlass.Int64(k // 2) + cutlass.Int64(sb * (SUB_K // 2))
        sf = (
            m_ptrs[slot, 3] + (cutlass.Int64(row // 128) * cutlass.Int64(ksub) + cutlass.Int64(sb)) * 512
            + cutlass.Int64((i % 32) * 16 + (i // 32) * 4)
        )
        dst = data + cutlass.Int64(first_row + row) * pitch + cutlass.Int64(sb * (SUB_K * 2))
        return raw, sf, dst

    @cute.jit
    def prepass_wait(self, ws: cutlass.Int64, chunks: cutlass.Int32):
        """Thread 0: wait until every chunk is decoded, then count this CTA through; the last CTA
        through (every CTA has claimed its last chunk and left the wait) sets the three counters
        back to 0 for the next launch (the kernel boundary orders these stores before it)."""
        self.prepass_wait_done(ws, chunks)
        self.prepass_count_through(ws)

    @cute.jit
    def prepass_wait_done(self, ws: cutlass.Int64, chunks: cutlass.Int32):
        """Thread 0: wait (acquire) until every chunk of phase 1 is decoded."""
        wait_geq_acquire_gpu(ws + DONE_WORD, chunks)

    @cute.jit
    def prepass_count_through(self, ws: cutlass.Int64):
        """Thread 0, after ``prepass_wait_done``: count this CTA through; the last CTA through
        (every CTA has made its last claim and left the wait) sets the three counters back to 0."""
        num_ctas, _, _ = cute.arch.grid_dim()
        passed = atom_add_relaxed_gpu(ws + PASSED_WORD, cutlass.Int32(1))
        if passed == cutlass.Int32(num_ctas) - 1:
            store_relaxed_gpu(ws + CLAIM_WORD, cutlass.Int32(0))
            store_relaxed_gpu(ws + DONE_WORD, cutlass.Int32(0))
            store_relaxed_gpu(ws + PASSED_WORD, cutlass.Int32(0))

    @cute.jit
    def row_offset(self, m_sizes: cute.Tensor, slot: cutlass.Int32):
        """The slot's first workspace row: the prefix of M over the slots before it."""
        roff = cutlass.Int32(0)
        for s in range(slot):
            roff = roff + self.slot_rows(m_sizes[s, 0])
        return roff

    def slot_rows(self, m):
        """Workspace rows a slot of M rows takes: M, or (``y_row_pad``) M rounded up to
        ``HopperConfig.y_row_align`` (the rows past M are zero: kernel.hopper.workspace).
        Traced inline."""
        align = 1
        return m
        return (m + (align - 1)) // align * align

    @cute.jit
    def early_x_stages(self, k_f, t_begin, t_end):
        """X stages of the CTA's first tile (K ``k_f``) that go out before phase 1's completion
        barrier: all of its K tiles up to the ring's depth, none for a CTA without tiles."""
        pre = cutlass.min(k_f // self.config.tile_k, cutlass.Int32(self.stages))
        if t_begin >= t_end:
            pre = cutlass.Int32(0)
        return pre

    @cute.jit
    def producer_x_first(self, m_prefix, m_sizes, m_ptrs, tmaps_ptr, ws, pipe, raw_base, total, t_begin, share_slots):
        """The producer warp before phase 1's completion barrier (after its phase-1 chunks; with
        ``prepass_x_before`` before phase 1): (``y_tail64``) the balanced split, stored for
        everyone (``balanced_setup``), then (``exit_map_early``) the workspace's tensor map
        acquired, and (``prepass_x_early``) the first tile's map acquired and its X stages issued
        (``early_x_stages`` of them; ``produce_prepass_q`` steps its ring state past them after
        the barrier). Nothing escapes this branch but shared memory and the X ring
        (``balanced_setup`` keeps the share on ``self`` for this function's ``tile_origin``; the
        warps read it back from shared memory after phase 1). ``t_begin``: the static schedule's
        first tile (unused with ``y_tail64``)."""
        cfg = self.config
        lane = cute.arch.lane_idx()
        if cutlass.const_expr(self.tail64):
            t_begin, t_end, _t_step = self.balanced_setup(m_sizes, total, share_slots)
        else:
            _b, t_end, _t_step = self.tile_range(total)
        if cutlass.const_expr(self.prepass):
            state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
            _pre, _state = self.issue_early_x(lane, m_prefix, m_sizes, m_ptrs, tmaps_ptr, pipe, state, raw_base,
                                              t_begin, t_end, total)

    @cute.jit
    def issue_early_x(self, lane, m_prefix, m_sizes, m_ptrs, tmaps_ptr, pipe, state, raw_base, t_begin, t_end, total):
        """The CTA's first tile's X stages that go out before phase 1's completion barrier
        (``early_x_stages`` of them, its map acquired first): (how many, the ring state past them)."""
        t_first = cutlass.min(t_begin, total - 1)  # a CTA without tiles issues none (pre = 0)
        slot_f, _m_f, n_f, k_f, _m0_f, n0_f = self.tile_origin(m_prefix, m_sizes, t_first)
        tm_f = tmaps_ptr.toint() + cutlass.Int64(slot_f) * 256 + 128
        if lane == 0:
            self.acquire_map(tm_f)
        pre = self.early_x_stages(k_f, t_begin, t_end)
        for kt_f in range(pre):
            self.produce_x_stage(lane, pipe, state, raw_base, m_ptrs, slot_f, tm_f, k_f, n_f, n0_f, kt_f)
            state.advance()
        return pre, state

    @cute.jit
    def produce_prepass_q(self, m_prefix, m_sizes, m_ptrs, tmaps_ptr, ws, pipe, y_pipe, raw_base, sy_base,
                          t_begin, t_end, t_step, total):
        """The prepass producer after phase 1's completion barrier (in ``kernel``, one
        instruction for every thread): the first tile's X stages (up to ``num_ab_stages``; they
        read only B and its scales) went out before it (``producer_x_first``) and the ring state
        steps past them here; then per tile and K tile the raw X stage and the tile's fp16 Y
        boxes. (The first tile's origin is computed again here and in the loop: once per CTA.)"""
        cfg = self.config
        lane = cute.arch.lane_idx()
        tm_ws = ws + TENSOR_MAP_OFFSET
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
        _slot, _m, _n, k_first, _m0, _n0 = self.tile_origin(m_prefix, m_sizes, cutlass.min(t_begin, total - 1))
        pre = self.early_x_stages(k_first, t_begin, t_end)  # X stages of the first tile already issued
        for _kt in range(pre):
            state.advance()
        # phase 1's writes (acquired by thread 0 before the CTA barrier) -> the async proxy
        fence_proxy_async_global()
        if lane == 0:
            self.acquire_map(tm_ws, workspace=True)
        ystate = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.fp16_buffers)
        for tile in range(t_begin, t_end, t_step):
            slot, m, n, k, m0, n0 = self.tile_origin(m_prefix, m_sizes, tile)
            tm_x = tmaps_ptr.toint() + cutlass.Int64(slot) * 256 + 128  # B's map (swapped: X = B)
            y_row = self.row_offset(m_sizes, slot) + m0
            self.delay("producer", "tensormap", "before")
            if lane == 0:
                self.acquire_map(tm_x)
            self.delay("producer", "tensormap", "after")
            k_begin = cutlass.Int32(0)
            k_end = k // cfg.tile_k
            for kt in range(k_begin, k_end):
                if kt >= pre:
                    self.produce_x_stage(lane, pipe, state, raw_base, m_ptrs, slot, tm_x, k, n, n0, kt)
                    state.advance()
                if cutlass.const_expr(not self.ablates("y_ring")):
                    for sb in cutlass.range_constexpr(self.n_sub):
                        self.produce_y_box(lane, y_pipe, ystate, sy_base, tm_ws, kt * self.n_sub + sb, y_row)
                        ystate.advance()  # here, in the loop's own body: the loop carries it
            pre = cutlass.Int32(0)  # only the first tile's first stages went early
        self.delay("producer", "tail", "before")
        self.producer_tail(pipe, state)
        if cutlass.const_expr(not self.ablates("y_ring")):
            self.producer_tail(y_pipe, ystate, HB_OUT_Y)
        self.check_producer_exit()

    @cute.jit
    def produce_y_box(self, lane, y_pipe, ystate, sy_base, tm_ws, sub_block, y_row):
        """The prepass producer: the 64-K fp16 Y box ``sub_block`` of workspace row ``y_row`` into
        ``ystate``'s Y ring buffer (acquire, TMA, commit); the caller advances ``ystate``."""
        self.delay("producer", "acquire", "before")
        self.producer_acquire(y_pipe, ystate, HB_OUT_Y)
        self.delay("producer", "acquire", "after")
        ybuf = sy_base + ystate.index * self.y_buf_bytes
        self.poison_stage_before_fill_bytes(lane, ybuf, self.y_buf_bytes)
        ybar = y_pipe.producer_get_barrier(ystate).toint()
        if lane == 0:
            if cutlass.const_expr(self.ablates("y_load")):
                # profiling only: the box's bytes completed without moving them (stale buffer)
                mbarrier_complete_tx(ybar, self.y_buf_bytes)
            else:
                self.tma_rows(ybuf, tm_ws, sub_block * (SUB_K * 2), y_row, ybar, workspace=True)
        self.producer_commit(y_pipe, ystate, HB_OUT_Y)

    @cute.jit
    def produce_x_stage(self, lane, pipe, state, raw_base, m_ptrs, slot, tm_x, k, n, n0, kt):
        """Issue 14q: one X stage of the prepass producer (acquire, TMA of raw X, bulk copy of its
        scale blocks, commit); the caller advances ``state``."""
        cfg = self.config
        self.delay("producer", "acquire", "before")
        self.producer_acquire(pipe, state)
        self.delay("producer", "acquire", "after")
        stage = raw_base + state.index * self.raw_stage_bytes
        self.poison_stage_before_fill(lane, stage)
        sf_k = cutlass.Int64(kt * (cfg.tile_k // 64))
        mbar = pipe.producer_get_barrier(state).toint()
        if lane == 0:
            self.tma_rows(stage + self.off_x, tm_x, kt * (cfg.tile_k // 2), n0, mbar)
        self.load_sf_bulk(lane, 1, stage + self.off_sfx, m_ptrs[slot, 4], n0, (n + 127) // 128,
                          cutlass.Int64(k // 64), sf_k, mbar, self.mma_m)
        self.delay("producer", "issue", "before")
        self.producer_commit(pipe, state)
        self.delay("producer", "issue", "after")

    @cute.jit
    def consume_x_regs_y_ring(self, tiled_mma, sY, m_prefix, m_sizes, m_ptrs, pipe, y_pipe, raw_base, tidx,
                        t_begin, t_end, t_step, sy_iter=None):
        """The consumer warpgroups of phase 2 (prepass; ``y_pipe`` the TMA-filled Y ring) and of
        ``roles="split"`` with X in registers (``y_pipe`` the dequant warpgroups' fp16 ring): per
        64-K sub-block decode the X fragment from the raw stage (releasing the stage after the
        last one), wait for Y's fp16 box, issue the wgmmas, and release the previous sub-block's
        Y buffer once its wgmmas retired (one group in flight; ``wgmma_in_flight=2``: the buffer
        two sub-blocks back, two groups). No named barrier: each warp arrives on the empty
        mbarriers itself.

        ``y_tail64`` (``sy_iter``: the Y ring's storage): a tile with at most 64 Y rows issues
        m64n64k16 wgmmas (``mma64``) on the first 64 rows of the same 128-row Y buffer (the ring
        seen as 64-row buffers, buffer 2 b = the first half of buffer b) into the first half of
        the accumulators (the m64nNk16 accumulator fragment's first N/2 values are columns
        0 .. N/2 - 1, in the same order); the epilogue is unchanged (columns 64.. are zero and
        never stored: their rows are past the group's M). Per element the same m64nNk16 chain,
        one per 16 K in K order."""
        cfg = self.config
        thr_mma = tiled_mma.get_slice(tidx)
        tCrY = tiled_mma.make_fragment_B(thr_mma.partition_B(sY))
        acc = thr_mma.make_fragment_C(thr_mma.partition_shape_C((self.mma_m, self.mma_n)))
        if cutlass.const_expr(self.tail64):
            mma64 = sm90_utils.make_trivial_tiled_mma(
                cutlass.Float16, cutlass.Float16, OperandMajorMode.K, OperandMajorMode.K, cutlass.Float32,
                (cfg.consumer_warpgroups, 1, 1), tiler_mn=(64, self.half_n), a_source=warpgroup.OperandSource.RMEM,
            )
            atom64 = warpgroup.make_smem_layout_atom(warpgroup.SmemLayoutAtomKind.K_SW128, cutlass.Float16)
            y64_layout = cute.tile_to_shape(atom64, (self.half_n, SUB_K, 2 * self.fp16_buffers), order=(0, 1, 2))
            sY64 = sy_iter.get_tensor(y64_layout.outer, swizzle=y64_layout.inner)
            thr64 = mma64.get_slice(tidx)
            tCrY64 = mma64.make_fragment_B(thr64.partition_B(sY64))
            acc64 = cute.make_tensor(acc.iterator, cute.make_layout(thr64.partition_shape_C((self.mma_m, self.half_n))))
            mma64.set(warpgroup.Field.ACCUMULATE, True)
        tCcC = thr_mma.partition_C(cute.make_identity_tensor((self.mma_m, self.mma_n)))
        filler = self.wgmma_filler(tidx)
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
        ystate = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.fp16_buffers)
        retire_state = ystate.clone()
        in_flight = cfg.wgmma_in_flight
        for tile in range(t_begin, t_end, t_step):
            slot, m, n, k, m0, n0 = self.tile_origin(m_prefix, m_sizes, tile)
            x_sf_row0, _y_sf_row0 = self.sf_rows(m0, n0)
            if cutlass.const_expr(self.tail64):
                rows64 = m - m0 <= self.half_n  # a 64-row tile (run-time, per tile)
            k_tiles = k // cfg.tile_k
            k_begin = cutlass.Int32(0)
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
                        if rows64:
                            for kb in cutlass.range_constexpr(SUB_K // 16):
                                cute.gemm(mma64, acc64, x_frag[(None, None, kb)],
                                          tCrY64[(None, None, kb, 2 * ystate.index)], acc64)
                            self.commit_group(ystate.index)
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
            self.epilogue(acc, tCcC, m_ptrs[slot, 2], m, n, m0, n0)
            self.poison_accumulator(acc)

    # ------------------------------------------------------------- consumer helpers
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

    def check_wgmma(self, buf, warp0=None, warps: int = 0):
        """Before a wgmma group: no accumulator or fragment register written since the last
        wgmma fence; and, for a cooperative fp16 buffer ``buf`` (``warps`` warps from ``warp0``
        fill it), every one of them fenced and published it for this group."""
        if not self.checks:
            return
        me = self.hb_warp
        hb_check(self.delay_table, "ne.u32", self.hb_load(HB_DIRTY), cutlass.Int32(0),
                 CHECK_RULE_INDEX["wgmma_without_fence"], me, me, self.hb_cta, self.hb_lane)
        if buf is None:
            return
        seq = self.hb_load(HB_ISSUED) + 1
        for i in range(warps):
            w = warp0 + i
            hb_check(self.delay_table, "ne.u32", ld_shared_u32(self.hb_addr(HB_PUBLISHED, w) + buf * 4), seq,
                     CHECK_RULE_INDEX["wgmma_reads_unpublished"], me, cutlass.Int32(w), self.hb_cta, self.hb_lane)

    def check_reuse(self, buf, warp0, warps: int):
        """Before buffer ``buf`` is rewritten (or released to its producer): the group that
        read it last (this warp's) has been waited for by this warp and, for a cooperative
        buffer (``warps`` warps from ``warp0`` read it), by every one of them."""
        if not self.checks:
            return
        me = self.hb_warp
        need = ld_shared_u32(self.hb_addr(HB_READER) + buf * 4)
        own, peer = CHECK_RULE_INDEX["reuse_before_own_wait"], CHECK_RULE_INDEX["reuse_before_peer_wait"]
        if warps == 0:
            hb_check_reuse(self.delay_table, self.hb_load(HB_RETIRED), need, me, me, self.hb_cta, own, peer, self.hb_lane)
        for i in range(warps):
            w = cutlass.Int32(warp0 + i)
            hb_check_reuse(self.delay_table, ld_shared_u32(self.hb_addr(HB_RETIRED, w)), need, me, w, self.hb_cta,
                           own, peer, self.hb_lane)

    def producer_acquire(self, pipe, state, ring: int = HB_OUT_RAW):
        pipe.producer_acquire(state)
        if self.checks:  # the stage's previous fill was released
            hb_mask_update(self.hb_addr(ring), state.index, False)
        self.timeline_lane0("producer_first_acquire")

    def producer_commit(self, pipe, state, ring: int = HB_OUT_RAW):
        pipe.producer_commit(state)
        if self.checks:  # filled, not yet seen released
            hb_mask_update(self.hb_addr(ring), state.index, True)
        self.timeline_lane0("producer_first_commit")

    def producer_tail(self, pipe, state, ring: int = HB_OUT_RAW):
        """Wait until the consumers released every stage (the pipeline's own tail in production;
        with the checker the same acquires, each seen by it)."""
        if not self.checks:
            pipe.producer_tail(state)
            self.timeline_lane0("producer_tail")
            return
        for _i in range(pipe.num_stages):  # the pipeline's tail: empty waits only
            pipe.sync_object_empty.wait(state.index, state.phase)
            hb_mask_update(self.hb_addr(ring), state.index, False)
            state.advance()

    def check_producer_exit(self):
        """A producer warp at its exit: every stage it filled was seen released."""
        if self.checks:
            me = self.hb_warp
            hb_check(self.delay_table, "ne.u32", self.hb_load(HB_OUT_RAW) | self.hb_load(HB_OUT_Y), cutlass.Int32(0),
                     CHECK_RULE_INDEX["producer_exit_in_flight"], me, me, self.hb_cta, self.hb_lane)

    def acquire_map(self, tensor_map, workspace: bool = False):
        """Acquire a tensor map (the issuing lane, 0 or 1, before its TMAs use it). The checker
        keeps its low word: a group's map in the lane's ring of the last 4 (a tile's TMAs follow
        its own acquire), the prepass workspace's map (``workspace``) in a word of its own."""
        tensormap_acquire(tensor_map)
        if self.checks:
            lane = self.hb_lane % 2
            if workspace:
                st_shared_u32(self.hb_addr(HB_MAP_WS) + lane * 4, low_word(tensor_map))
            else:
                base = self.hb_addr(HB_MAPS) + lane * 20
                count = ld_shared_u32(base)
                st_shared_u32(base + 4 + (count % 4) * 4, low_word(tensor_map))
                st_shared_u32(base, count + 1)

    def check_map(self, tensor_map, workspace: bool = False):
        """Before a TMA with ``tensor_map``: this lane acquired it in this launch."""
        if self.checks:
            lane = self.hb_lane % 2
            if workspace:
                e = [ld_shared_u32(self.hb_addr(HB_MAP_WS) + lane * 4)] * 4
            else:
                base = self.hb_addr(HB_MAPS) + lane * 20
                e = [ld_shared_u32(base + 4 + 4 * i) for i in range(4)]
            hb_check_map(self.delay_table, tensor_map, *e, CHECK_RULE_INDEX["tma_without_tensormap_acquire"],
                         self.hb_warp, self.hb_cta, self.hb_lane)

    def tma_rows(self, dst, tensor_map, byte_col, row, mbar, workspace: bool = False):
        self.check_map(tensor_map, workspace)
        tma_load_rows(dst, tensor_map, byte_col, row, mbar)

    def hb_addr(self, word: int, warp=None):
        return self.hb_base + ((self.hb_warp if warp is None else warp) * HB_WARP_WORDS + word) * 4

    def hb_load(self, word: int):
        return ld_shared_u32(self.hb_addr(word))

    def hb_store(self, word: int, value):
        if self.checks:
            st_shared_u32(self.hb_addr(word), cutlass.Int32(value))

    # ------------------------------------------------- perturbation and poison (tests only)
    def poisoning(self) -> bool:
        return self.perturbation is not None and self.perturbation.poison

    @property
    def timeline(self) -> bool:
        """The timeline build (``Perturbation.timeline``, profiling.timeline): stamps at
        kernel.perturbation TIMELINE_POINTS into the device table; production's schedule."""
        return self.perturbation is not None and self.perturbation.timeline

    @cute.jit
    def timeline_point(self, name: cutlass.Constexpr):
        """This thread's %globaltimer at ``name`` into its CTA's cell (CTAs past TIMELINE_CTAS
        stamp nothing); the caller picks the one thread."""
        cta = cutlass.Int32(cute.arch.block_idx()[0])
        if cta < TIMELINE_CTAS:
            cell = (TIMELINE_WORD0 * 4 + (cta * len(TIMELINE_POINTS) + TIMELINE_INDEX[name]) * 8)
            timeline_stamp(cutlass.Int64(self.delay_table) + cutlass.Int64(cell),
                           TIMELINE_POINTS[TIMELINE_INDEX[name]][1] == "first")

    @cute.jit
    def timeline_lane0(self, name: cutlass.Constexpr):
        """``timeline_point`` by lane 0 of the calling warp (the producer's points)."""
        if cutlass.const_expr(self.timeline):
            if cute.arch.lane_idx() == 0:
                self.timeline_point(name)

    @cute.jit
    def timeline_first_consumer(self, name: cutlass.Constexpr):
        """``timeline_point`` by the CTA's thread 0 (the first consumer thread)."""
        if cutlass.const_expr(self.timeline):
            tid, _, _ = cute.arch.thread_idx()
            if cutlass.Int32(tid) == 0:
                self.timeline_point(name)

    def delay(self, role: str, site: str, when: str):
        """The seeded delay of one sync site (kernel/perturbation.py); in a production build, or
        where the seed gives this site no delay, nothing is traced."""
        p = self.perturbation
        if p is None:
            return
        if p.runtime:
            if not p.delays:
                return  # a "quiet" or "window" build: no delay site traced (production's schedule)
            if self.delay_table is None:
                raise RuntimeError("a run-time perturbation needs the harness build (HarnessHopperGemm)")
            if (role, site, when) not in SLOT_INDEX:
                raise KeyError(f"unknown perturbation site {role}.{site}.{when}")
            if (role, site, when) in SKEWED_SITES:
                sleep_ns_from_table_skewed(self.delay_table, SLOT_INDEX[role, site, when], self.delay_jitter,
                                           self.delay_skew)
            else:
                sleep_ns_from_table(self.delay_table, SLOT_INDEX[role, site, when], self.delay_jitter)
            return
        ns = p.delay_ns(role, site, when)
        if ns == 0:
            return
        if p.jitter == "none":
            sleep_ns(ns)
        else:
            sleep_ns_jittered(ns, p.jitter_ns, p.seed, p.jitter == "warp")

    @cute.jit
    def poison_region(self, base: cutlass.Int32, nbytes: cutlass.Constexpr, tid: cutlass.Int32,
                      nthreads: cutlass.Constexpr):
        """Threads ``0..nthreads-1`` overwrite ``nbytes`` of shared memory at ``base`` with NaN
        patterns, 16 bytes per store, thread ``tid`` taking chunks tid, tid + nthreads, ..."""
        chunks = nbytes // 16
        for i in cutlass.range_constexpr((chunks + nthreads - 1) // nthreads):
            c = tid + i * nthreads
            if cutlass.const_expr(chunks % nthreads == 0) or c < chunks:
                poison_shared_16(base + c * 16)

    def poison_released_stage(self, tidx, stage, wtid=None):
        """Consumers, after the barrier that ends their last read of a raw stage and before they
        release it: poison it (each thread its slice), make the stores visible to the async
        proxy (a TMA or bulk copy may refill the stage next) and to lane 0 (which arrives for
        its warp on the TMA pipeline). ``y_per_warpgroup``: a warpgroup's barrier says nothing
        about the other warpgroup, which may still read Y and the scales, so each warpgroup
        poisons only the 64 packed X rows that it alone reads (the producer's
        ``poison_stage_before_fill`` still poisons the whole stage once both released it)."""
        if not self.poisoning():
            return
        self.poison_region(stage, self.raw_stage_bytes, tidx, self.consumer_threads)
        cute.arch.fence_proxy("async.shared", space="cta")
        cute.arch.sync_warp()

    def poison_stage_before_fill(self, lane, stage):
        """The producer warp, after the empty-barrier wait and before issuing any copy into the
        stage: poison it, fence the async proxy, sync the warp (lanes 0/1 issue the copies).
        Only with one producer warp: several warps acquire independently, and one warp's poison
        could land on rows another warp already loaded."""
        if not self.poisoning() or self.config.producer_warps != 1:
            return
        self.poison_region(stage, self.raw_stage_bytes, lane, 32)
        cute.arch.fence_proxy("async.shared", space="cta")
        cute.arch.sync_warp()

    def poison_stage_before_fill_bytes(self, lane, base, nbytes: int):
        """y_source="prepass": the producer warp, after the Y ring's empty wait and before the
        TMA that refills the buffer: poison it, fence the async proxy, sync the warp."""
        if not self.poisoning():
            return
        self.poison_region(base, nbytes, lane, 32)
        cute.arch.fence_proxy("async.shared", space="cta")
        cute.arch.sync_warp()

    def poison_free_fp16_buffer(self, tidx, consumers, sx_base, sy_base, buf, wtid=None, ybuf0=0):
        """Cooperative two-buffer ping-pong, after the barrier that says every warp retired the
        wgmma that read buffer ``buf``: poison it (each thread its slice), then one more barrier,
        so no poison store can land after another thread's dequant store of the next sub-block.
        ``y_per_warpgroup``: the warpgroup's own Y buffer ``ybuf0 + buf``, its 128 threads, its
        own barrier (``consumers``)."""
        if not self.poisoning():
            return
        # the poison stores rewrite the buffer: the checker's reuse rule holds here as at the
        # next dequant (every reading warp waited for the group that read it)
        self.check_reuse(buf, 0, self.consumer_warps)
        self.poison_region(sy_base + buf * self.y_buf_bytes, self.y_buf_bytes, tidx, self.consumer_threads)
        if not self.x_in_regs:
            self.poison_region(sx_base + buf * self.x_buf_bytes, self.x_buf_bytes, tidx, self.consumer_threads)
        consumers.arrive_and_wait()

    def wgmma_filler(self, tidx):
        """Perturbed builds with ``wgmma_fill``: the filler wgmmas' tiled MMA (the real atom,
        m64 x mma_n x k16, with A from registers) and its A fragment, one k16 slice of zeros;
        None otherwise (production: nothing). The fillers accumulate into the real accumulator
        and read the real Y buffer: acc += 0 * Y adds exactly zero (Y is finite; a NaN that a
        filler reads from a poisoned Y is a real wgmma's read too), needs no scratch
        accumulator and no register chain of its own, and keeps them asynchronous (see
        :meth:`fill_wgmma`)."""
        p = self.perturbation
        if p is None or p.wgmma_fill == 0:
            return None
        mma = sm90_utils.make_trivial_tiled_mma(
            cutlass.Float16, cutlass.Float16, OperandMajorMode.K, OperandMajorMode.K, cutlass.Float32,
            (self.config.consumer_warpgroups, 1, 1), tiler_mn=(64, self.mma_n),
            a_source=warpgroup.OperandSource.RMEM,
        )
        thr = mma.get_slice(tidx)
        zero = cute.make_rmem_tensor(thr.partition_shape_A((self.mma_m, 16)), cutlass.Float16)
        zero32 = cute.recast_tensor(zero, cutlass.Uint32)
        # a literal 0, or one zero in every word, is rematerialized or copied next to each wgmma
        for i, word in enumerate(opaque_zeros_u32(cute.size(zero32))):
            zero32[i] = cutlass.Uint32(word)
        mma.set(warpgroup.Field.ACCUMULATE, True)
        return mma, zero

    def fill_wgmma(self, filler, acc, tCrY, buf, sb=None):
        """Queue ``wgmma_fill`` filler wgmmas ahead of a real wgmma group (same commit group, the
        real shape, into the real accumulator, after the group's ``wgmma.fence``): the tensor
        pipe executes in order, so the real wgmmas read their operands, and retire, that much
        later. The protocol (wait_group, then a barrier, before an operand is reused) stays
        correct however late they retire; a wait that is too lax or a missing barrier lets the
        operand be poisoned or rewritten while the real wgmma still has to read it.
        Checked in SASS (kernel/tests/test_hopper_perturbed_sass.py): HGMMAs in the real group,
        no WARPGROUP.DEPBAR among them. Earlier forms that ptxas serialized (a DEPBAR + ARRIVE
        after every filler, which also retires the previous real group): a scratch m64n8k16
        accumulator chained across the fillers, beyond about 50 fillers per group or in a
        run-time loop (properties/MUTANTS.md, "Fourth pass")."""
        if filler is None:
            return
        if sb is not None and sb % self.perturbation.fill_stride != 0:
            return  # fill_stride: a filled group, then unfilled ones (kernel/perturbation.py FILL_STRIDE)
        mma, zero = filler
        for _i in range(self.perturbation.wgmma_fill // (SUB_K // 16)):  # traced inline: Python loops
            for kb in range(SUB_K // 16):
                cute.gemm(mma, acc, zero[(None, None, 0)], tCrY[(None, None, kb, buf)], acc)

    def poison_accumulator(self, acc):
        """After the epilogue's stores: NaN accumulators (the next tile must reset them)."""
        if self.poisoning():
            acc.fill(float("nan"))
            self.hb_store(HB_DIRTY, 1)

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

    def ablates(self, what: str) -> bool:
        """Profiling builds only (kernel/hopper/ablation.py): whether the ablation leaves ``what`` out."""
        return self.ablation is not None and self.ablation.skips(what)

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

    def y_rs_units(self, tidx, stage, y_dst, y_sf_row0, sb: int, threads: int | None = None) -> list:
        """x_operand="regs": this thread's (row, a) units of Y for one sub-block, Y's units shared
        by ``threads`` threads (default: every dequantizing thread; 128 with ``y_per_warpgroup``,
        ``tidx`` then the index inside the warpgroup)."""
        threads = threads or self.dequant_threads
        return [self.y_rs_unit(tidx + u * threads, stage, y_dst, y_sf_row0, sb)
                for u in range(self.mma_n * 2 // threads)]

    def dequant_y_rs(self, tidx, stage, y_dst, y_sf_row0, sb: int, threads: int | None = None):
        """x_operand="regs": this thread's units of Y (:meth:`y_rs_units`), in the fragment's K
        order, two units per inline-asm block (the accumulators share the register budget)."""
        units = self.y_rs_units(tidx, stage, y_dst, y_sf_row0, sb, threads)
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
