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
from kernel.device_schedule import (balanced_counts, balanced_locate, balanced_share, balanced_share_warp,
                                    cluster_tile_range, cta_tile_range, group_search, snake_index, snake_locate,
                                    snake_rounds, streamk_count, streamk_piece, streamk_range, uniform_share)
from kernel.hopper import staging
from kernel.hopper.config import HopperConfig
from kernel.plan import (SNAKE_ROWS_STEP, STREAMK_CLAIMED, STREAMK_END, STREAMK_IDLE, STREAMK_PUBLISHED,
                         STREAMK_TAKEN)
from kernel.tables import GUARD_POINTER, GUARD_PREFIX, GUARD_SIZE
from kernel.perturbation import (JITTER_MODE_WORD, JITTER_NS_WORD, SEED_WORD, SKEW_NS_WORD, SKEW_WARP_WORD, SLOT_INDEX,
                                 TIMELINE_CTAS, TIMELINE_INDEX, TIMELINE_POINTS, TIMELINE_WORD0, Perturbation)
from kernel.hopper.ablation import Ablation, check_ablation
from kernel.hopper.ptx import (
    timeline_stamp,
    bulk_copy_to_peer,
    mapa_shared_u32,
    arrive_release_gpu,
    copy_y_staged_items,
    store_y_staged_item,
    decode_x_raw_rs,
    load_x_raw_rs,
    mbarrier_complete_tx,
    atom_add_relaxed_gpu,
    dequant_y_global_rs,
    load_y_global_items,
    store_y_global_item,
    tid_x_opaque,
    prefetch_l2_pair,
    fence_proxy_async_global,
    atom_add_acq_rel_gpu,
    ld_relaxed_gpu_u32,
    store_release_gpu,
    wait_flags_ready,
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
    tma_load_rows_multicast,
    hb_check,
    hb_check_map,
    hb_check_reuse,
    hb_mask_update,
    low_word,
    atom_cas_relaxed_gpu,
    st_global_v4_f32,
    ld_global_cg_v4_f32_or_zero,
)

SUB_K = cfgmod.DEQUANT_SUB_K
TAIL16_STEP = SNAKE_ROWS_STEP  # y_tail16: the wgmma N step, the snake schedule's class step
# y_source="prepass": the workspace's layout (kernel.hopper.workspace states it for the host)
from kernel.hopper.workspace import (  # noqa: E402
    CLAIM_WORD, DATA_OFFSET, DONE_WORD, ITEMS_PER_THREAD, PASSED_WORD, TENSOR_MAP_OFFSET,
)
from kernel.hopper.workspace import FLAG_CELL_BYTES, GEN_WORD, STREAMK_STATE_BYTES  # noqa: E402
from kernel.perturbation import CHECK_RULE_INDEX, SKEWED_SITES  # noqa: E402

X_RAW_REGS = 6  # x_prefetch: a sub-block's raw X bytes (two 8-byte runs) and its two scale bytes

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
def copy_tables_to_smem(tidx: cutlass.Int32, threads: cutlass.Constexpr[int], srcs: tuple, dsts: tuple,
                        reals: cutlass.Constexpr[tuple], leads: cutlass.Constexpr[tuple],
                        fills: cutlass.Constexpr[tuple]):
    """``smem_tables``: table t's ``reals[t]`` elements at ``srcs[t]`` (global) to ``dsts[t] +
    leads[t]`` (shared), with ``leads[t]`` elements of ``fills[t]`` before them and after them;
    element i by thread i mod ``threads``. Every load of a thread is issued before its first store
    and none is under a branch (the index is clamped into the table, the fill chosen after the
    load), so the whole copy is one round trip to memory: with a load and a store per branch,
    ptxas kept each thread's three loads one after the other (three round trips, measured)."""
    values = []
    for t in cutlass.range_constexpr(len(reals)):
        real, lead = reals[t], leads[t]
        count = real + 2 * lead
        src = cute.make_tensor(srcs[t], cute.make_layout(real))
        for j in cutlass.range_constexpr((count + threads - 1) // threads):
            r = tidx + j * threads - lead
            x = src[cutlass.min(cutlass.max(r, cutlass.Int32(0)), cutlass.Int32(real - 1))]
            v = src.element_type(fills[t])
            if r >= 0:
                if r < real:
                    v = x
            values.append(v)
    n = 0
    for t in cutlass.range_constexpr(len(reals)):
        count = reals[t] + 2 * leads[t]
        dst = cute.make_tensor(dsts[t], cute.make_layout(count))
        for j in cutlass.range_constexpr((count + threads - 1) // threads):
            i = tidx + j * threads
            if i < count:
                dst[i] = values[n]
            n += 1


@cute.jit
def if_thread0_count_through(tid: cutlass.Int32, ws: cutlass.Int64, gen: cutlass.Int32):
    """``prepass_sync="flags"``, thread 0 of phase 1's threads after its CTA's last claim (and its
    generation read): count the CTA through; the last CTA through resets the claim and passed
    words and advances the generation (kernel.hopper.workspace)."""
    if tid == 0:
        num_ctas_x, _, _ = cute.arch.grid_dim()
        passed = atom_add_acq_rel_gpu(ws + PASSED_WORD, cutlass.Int32(1))
        if passed == cutlass.Int32(num_ctas_x) - 1:
            store_relaxed_gpu(ws + CLAIM_WORD, cutlass.Int32(0))
            store_relaxed_gpu(ws + PASSED_WORD, cutlass.Int32(0))
            store_relaxed_gpu(ws + GEN_WORD, gen + 1)


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
        # prepass_decoders (session 10, experimental): phase 1's own warps, after the producer
        # warp(s); they decode in the background while the other roles run phase 2
        self.decoders = config.prepass_decoders
        self.decoder_warp0 = self.producer_warp + config.producer_warps
        self.decoder_threads = 32 * config.prepass_decoders
        self.decoder_staging = cfgmod.decoder_staging_bytes(config)
        self.out_multiplier = float(2.0 ** (-2 * config.operand_exp_shift))
        self.x_buf_bytes = self.mma_m * SUB_K * 2
        self.y_buf_bytes = self.mma_n * SUB_K * 2
        stages, raw_bytes = self.stages, self.stages * self.raw_stage_bytes
        self.x_in_regs = config.x_operand == "regs"
        # x_operand="regs" with Y's half-row units not a multiple of the consumer threads (3
        # consumer warpgroups): one unit per thread, the threads past the last unit skip it
        self.y_units_ragged = self.x_in_regs and (2 * self.mma_n) % self.consumer_threads != 0
        # x_operand="regs": X never goes through shared memory (a token allocation)
        x_elems = 8 if self.x_in_regs else config.fp16_buffers * self.mma_m * SUB_K
        # y_per_warpgroup: one 2-buffer Y ring per consumer warpgroup (buffers w*2, w*2+1)
        self.y_per_wg = config.y_per_warpgroup
        self.y_copies = config.y_copies
        y_elems = config.fp16_buffers * self.mma_n * SUB_K * self.y_copies
        # y_source="prepass": Y arrives as fp16 TMA boxes in a ring of fp16_buffers (its own
        # full/empty mbarriers); one more 8-byte cell holds phase 1's two claim slots
        self.prepass = config.y_source == "prepass"
        self.y_tx_bytes = cfgmod.y_box_tx_bytes(config)
        # cluster_x = 2 (issue 14, experimental): CTAs per cluster along X; each CTA's producer
        # loads ``y_cta_rows`` rows of every Y box (its rank's half), multicast to both CTAs.
        # The Y ring's full barrier: one arrive (this CTA's producer, expecting the whole box,
        # ``y_tx_bytes``) plus the complete_tx of both halves; its empty barrier: one arrive per
        # consumer warp of every CTA of the cluster (``warp_release``: lane r of each warp on
        # rank r's barrier, PipelineTmaAsync's signalling for a cluster layout), since each
        # producer overwrites the buffer in both CTAs. With a cluster layout, create() fences the
        # barrier init and syncs the cluster (every thread of both CTAs, before phase 1), so no
        # multicast or remote arrive reaches an uninitialized barrier
        self.cluster = config.cluster_x
        # y_cluster_decode (session 13, experimental): the cluster shares the decode of Y
        # (consume_cluster_y); its mbarriers, landed[b] then free[b], in ycl_bars
        self.y_cluster = config.y_cluster_decode
        self.y_cta_rows = cfgmod.y_box_rows_per_cta(config)
        self.y_release_warps = self.cluster * self.consumer_warps
        self.y_cluster_vmnk = (1, self.cluster, 1, 1)
        fp16_bar_count = 2 * config.fp16_buffers if self.split else 1
        if self.prepass:
            fp16_bar_count = 2 * config.fp16_buffers + 1
        # prepass_sync="flags": phase 1 publishes per (Y block, K chunk) flags instead of the
        # grid barrier; one more 8-byte cell broadcasts the launch's generation (claim slot 2)
        self.prepass_flags = config.prepass_sync == "flags"
        if self.prepass_flags:
            fp16_bar_count += 1
        # prepass_kernel_warps (session 16): phase 1 in the launch before this one (phase1_kernel);
        # with flags (session 17) this launch only waits on them: its phase 1 is not inline
        self.own_launch = config.prepass_kernel_warps != 0
        self.inline_flags = self.prepass_flags and not self.own_launch
        # y_tail64 (session 5, experimental): a tile whose Y rows are at most 64 (m - m0 <= 64, a
        # group's last Y block) runs wgmma N = 64 on the first half of the 128-row Y buffer and of
        # the accumulators; tiles come from the balanced schedule (kernel.plan): this CTA's
        # (first full, full count, first light, light count), set while the kernel is traced
        self.tail64 = config.y_tail64
        # y_tail16 (session 10, experimental): every tile's wgmma N is its Y rows rounded up to 16
        # (16 .. 128, per tile at run time), on the first N rows of the 128-row Y buffer and the
        # first N / 2 accumulators; tiles from the snake schedule (kernel.plan)
        self.tail16 = config.y_tail16
        self.x_prefetch = config.x_prefetch
        # prepass_chunk builds: the first tile's X stages go out before phase 1's completion
        # barrier (producer_x_first; prepass_x_before: before phase 1)
        self.early_x = config.prepass_x_early or config.prepass_x_before
        self.half_n = self.mma_n // 2
        self.share = None
        if self.tail64:
            # the share's four int32 after the claim slots (the producer warp computes it during
            # phase 1's completion wait, the consumers read it after the barrier)
            fp16_bar_count += cfgmod.TAIL64_SHARE_BYTES // 8
        # stream_k (session 18): the CTA's stream-K range instead of a balanced share (kernel.plan
        # streamk_*): (first entry, its K tile, end entry, its K tile, full-list length, the claim
        # of the boundary the range ends in, the last piece's first K tile as the producer decided)
        self.stream_k = config.stream_k
        # (harness builds: Perturbation.streamk_take, every boundary taken by the CTA after it)
        self.forced_take = config.stream_k and perturbation is not None and perturbation.streamk_take
        if self.stream_k:
            fp16_bar_count += cfgmod.STREAMK_SHARE_BYTES // 8

        hb_words = (config.threads // 32) * HB_WARP_WORDS
        # epilogue="smem" (session 6, experimental): C staged through one shared buffer per
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
        # smem_tables: the three device tables in shared memory, guard rows included (tables_to_smem)
        self.smem_tables = config.smem_tables
        table_words = cfgmod.smem_table_words(num_groups)

        @cute.struct
        class SharedStorage:
            bars: cute.struct.MemRange[cutlass.Int64, stages * 2]
            fp16_bars: cute.struct.MemRange[cutlass.Int64, fp16_bar_count]
            if self.y_cluster:
                ycl_bars: cute.struct.MemRange[cutlass.Int64, 2 * cfgmod.Y_CLUSTER_BUFFERS]
            if self.smem_tables:
                t_ptrs: cute.struct.MemRange[cutlass.Int64, table_words["pointers"]]
                t_sizes: cute.struct.MemRange[cutlass.Int32, table_words["sizes"]]
                t_prefix: cute.struct.MemRange[cutlass.Int32, table_words["prefix"]]
            raw: cute.struct.Align[cute.struct.MemRange[cutlass.Uint8, raw_bytes], cfgmod.SMEM_ALIGN]
            sX: cute.struct.Align[cute.struct.MemRange[cutlass.Float16, x_elems], cfgmod.SMEM_ALIGN]
            sY: cute.struct.Align[cute.struct.MemRange[cutlass.Float16, y_elems], cfgmod.SMEM_ALIGN]
            if self.decoder_staging:  # prepass_decoders, staged: the decoder warps' item slots
                sP: cute.struct.Align[cute.struct.MemRange[cutlass.Uint8, self.decoder_staging], cfgmod.SMEM_ALIGN]
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
        y_layout = cute.tile_to_shape(atom, (self.mma_n, SUB_K, self.fp16_buffers * self.y_copies), order=(0, 1, 2))
        launch = dict(grid=(num_ctas, 1, 1), block=(self.threads, 1, 1), min_blocks_per_mp=1, stream=stream)
        if self.config.ctas_per_sm > 1:
            # HopperConfig.ctas_per_sm: ptxas keeps the registers to what that many CTAs leave
            # (launch_register_cap), and the carveout gives the SM's shared memory to them
            launch.update(max_number_threads=[self.threads, 1, 1], min_blocks_per_mp=self.config.ctas_per_sm,
                          preferred_smem_carveout=100)
        if self.cluster != 1:
            # clusters of consecutive CTAs (the plan's num_ctas is a multiple of cluster_x)
            launch["cluster"] = (self.cluster, 1, 1)
        if self.config.pdl:
            launch["use_pdl"] = True  # griddepcontrol in the kernel (HopperConfig.pdl)
        if self.config.prepass_kernel_warps:
            # phase 1's own launch first (HopperConfig.prepass_kernel_warps); both with the
            # programmatic-serialization attribute, so each may start beside its predecessor
            sizes_ptr, _prefix, ptrs_ptr, _tmaps, _delays, ws_ptr = pointers
            threads = 32 * self.config.prepass_kernel_warps
            self.phase1_kernel(sizes_ptr, ptrs_ptr, ws_ptr).launch(
                grid=(num_ctas, 1, 1), block=(threads, 1, 1), stream=stream, use_pdl=True,
                # the register cap: 65536 / (threads x min blocks) = prepass_kernel_regs; the
                # carveout: all shared memory, the GEMM's CTAs' configuration. (Measured on the
                # H200, profiling.pdl_probe: a dependent launch that needs 100 KB of shared memory
                # or more starts on an SM only once this launch's CTA there has left, whatever
                # the carveout, so the GEMM does not run beside phase 1 there)
                max_number_threads=[threads, 1, 1],
                min_blocks_per_mp=65536 // (threads * self.config.prepass_kernel_regs),
                preferred_smem_carveout=100,
            )
            launch["use_pdl"] = True
        self.kernel(tiled_mma, x_layout, y_layout, *pointers).launch(**launch)

    @cute.kernel
    def phase1_kernel(self, sizes_ptr: cute.Pointer, ptrs_ptr: cute.Pointer, ws_ptr: cute.Pointer):
        """``prepass_kernel_warps``: phase 1 in a launch of its own. Every thread waits for the
        stream's previous kernel first (its writes of A and its scales visible, its reads of the
        workspace done), and only then lets the GEMM's grid launch: so whatever the GEMM reads
        before its own wait (tables, tensor maps, B) was complete before it started."""
        cute.arch.griddepcontrol_wait()
        cute.arch.griddepcontrol_launch_dependents()
        tidx, _, _ = cute.arch.thread_idx()
        G = self.num_groups
        m_sizes = cute.make_tensor(sizes_ptr, cute.make_layout((G, 4), stride=(4, 1)))
        m_ptrs = cute.make_tensor(ptrs_ptr, cute.make_layout((G, 5), stride=(5, 1)))
        scratch = cutlass.Int32(0)
        if cutlass.const_expr(cfgmod.phase1_launch_smem(self.config)):
            smem = cutlass.memory.SmemAllocator()
            scratch = smem.allocate_array(cutlass.Uint8, cfgmod.phase1_launch_smem(self.config),
                                          byte_alignment=128).toint()
        if cutlass.const_expr(self.ablates("prepass")):
            pass  # profiling only (no_prepass): no item decoded, the GEMM reads stale rows
        elif cutlass.const_expr(self.prepass_flags):
            self.phase1_warp_flags(cutlass.Int32(tidx), m_sizes, m_ptrs, ws_ptr.toint(), scratch)
        else:
            self.phase1_own_decode(cutlass.Int32(tidx), m_sizes, m_ptrs, ws_ptr.toint(), scratch)

    @cute.jit
    def own_launch_count_through(self, ws: cutlass.Int64, gen: cutlass.Int32):
        """``prepass_kernel_warps`` with flags, the producer warp after its last Y box and the
        rings' tails: wait for phase 1's grid (complete: every claim made), then lane 0 counts this
        CTA through; the last CTA through resets the claims and advances the generation
        (``if_thread0_count_through``), after every CTA of this grid read it."""
        cute.arch.griddepcontrol_wait()
        if_thread0_count_through(cute.arch.lane_idx(), ws, gen)

    @cute.jit
    def phase1_warp_flags(self, tidx: cutlass.Int32, m_sizes: cute.Tensor, m_ptrs: cute.Tensor, ws: cutlass.Int64,
                          scratch: cutlass.Int32):
        """``prepass_kernel_warps`` with flags: phase 1 on the phase-1 launch, every warp on its
        own. A warp claims chunks of 32 x PHASE1_KERNEL_BATCH items (K-chunk-major, as
        ``flags_chunk_decode`` orders them; lane 0 claims the next while the chunk is decoded),
        decodes and stores its items (``prepass_store="staged"``: through its 32 slots at
        ``scratch``), fences them towards the async proxy, syncs the warp, and its lanes add the
        chunk's items of every flag cell it touched to the cell's counter (``warp_flag_publish``).
        No CTA barrier and no count through (the GEMM's CTAs advance the generation and reset the
        claims: ``own_launch_count_through``); the counters only grow (kernel.hopper.workspace)."""
        lane = tidx % 32
        batch = cfgmod.PHASE1_KERNEL_BATCH
        roffs, bstarts, ms, n_oks, nblocks, levels, per_level, items, pitch, data, flags = self.flags_items(m_sizes, ws)
        chunk = 32 * batch
        chunks = (items + (chunk - 1)) // chunk
        warp_slots = scratch + (tidx // 32) * cfgmod.PREPASS_STAGED_WARP_BYTES
        claim = cutlass.Int32(0)
        if lane == 0:
            claim = atom_add_relaxed_gpu(ws + CLAIM_WORD, cutlass.Int32(1))
        c = cute.arch.shuffle_sync(claim, 0)
        while c < chunks:
            nxt = cutlass.Int32(0)
            if lane == 0:
                nxt = atom_add_relaxed_gpu(ws + CLAIM_WORD, cutlass.Int32(1))
            first = c * chunk
            end = cutlass.min(first + chunk, items)
            self.flags_chunk_decode(lane, 32, first, end, per_level, roffs, n_oks, m_sizes, m_ptrs, data, pitch,
                                    warp_slots, self.config.prepass_store == "staged", batch)
            # this lane's generic stores -> ordered before the async proxy (the GEMM's TMA), then
            # the warp's barrier orders every lane's stores before the publishing lanes' release
            fence_proxy_async_global()
            cute.arch.sync_warp()
            self.warp_flag_publish(lane, first, end, per_level, nblocks, levels, roffs, bstarts, ms, flags)
            c = cute.arch.shuffle_sync(nxt, 0)

    @cute.jit
    def warp_flag_publish(self, lane: cutlass.Int32, first: cutlass.Int32, end: cutlass.Int32,
                          per_level: cutlass.Int32, nblocks: cutlass.Int32, levels: cutlass.Int32, roffs: list,
                          bstarts: list, ms: list, flags: cutlass.Int64):
        """``phase1_warp_flags``, after a chunk's warp barrier: lane l takes cells l, l + 32, ... of
        those the chunk's items touched (``flag_cell_span``) and adds the chunk's items of the cell
        to its counter with a release (``fence.acq_rel.gpu`` + ``red.release.gpu``): no round
        trip, no reset."""
        g_last = self.prepass_flag_order(end - 1, per_level, nblocks, roffs, bstarts)
        g = self.prepass_flag_order(first, per_level, nblocks, roffs, bstarts) + lane
        while g <= g_last:
            cell, cnt, _total = self.flag_cell_span(g, first, end, per_level, nblocks, levels, roffs, bstarts, ms,
                                                   flags)
            arrive_release_gpu(cell, cnt)
            g = g + 32

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
        if cutlass.const_expr(self.stream_k):
            # ``tile``: this CTA's piece (kernel.plan.streamk_pieces), its entry of the full list
            # (entry < nf) or of the light list (entry - nf)
            ea, ka, eb, kb, nf, _claimed = self.share
            entry, _k0, _k1, _w, _p = streamk_piece(ea, ka, eb, kb, tile)
            light_list = cutlass.Int32(entry >= nf)
            slot, m_block, n_block = balanced_locate(m_sizes, self.num_groups, self.config.tile_m,
                                                     self.config.tile_n, light_list, entry - nf * light_list)
        elif cutlass.const_expr(self.tail64):
            fs, fc, ts, _tc = self.share
            light_list = cutlass.Int32(tile >= fc)
            idx = fs + tile
            if tile >= fc:
                idx = ts + (tile - fc)
            slot, m_block, n_block = balanced_locate(m_sizes, self.num_groups, self.config.tile_m,
                                                     self.config.tile_n, light_list, idx)
        elif cutlass.const_expr(self.tail16):
            # the snake schedule: ``tile`` is this CTA's round, its entry of the class-ordered list
            cta, _, _ = cute.arch.block_idx()
            ctas, _, _ = cute.arch.grid_dim()
            idx = snake_index(tile, cutlass.Int32(cta), cutlass.Int32(ctas))
            slot, m_block, n_block = snake_locate(m_sizes, self.num_groups, self.config.tile_m, self.config.tile_n,
                                                  idx)
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
        if cutlass.const_expr(self.cluster != 1):
            # a cluster tile (kernel.plan): this CTA's N block of the cluster's column; past the
            # group's last N block for a ghost (X zero-filled by TMA, every store predicated off)
            n_block = n_block * self.cluster + cute.arch.block_idx_in_cluster()
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
        if cutlass.const_expr(self.stream_k):
            self.share = self.streamk_setup(m_sizes)
            if_lane0_store_share(slots, self.share)
            return self.tile_range(total)
        nf, nt = balanced_counts(m_sizes, self.num_groups, self.config.tile_m, self.config.tile_n)
        cta, _, _ = cute.arch.block_idx()
        ctas, _, _ = cute.arch.grid_dim()
        if cutlass.const_expr(self.ablates("balanced_split")):
            self.share = uniform_share(nf, nt, cutlass.Int32(ctas), cutlass.Int32(cta))  # profiling only
        elif cutlass.const_expr(self.config.exit_split_warp):
            self.share = balanced_share_warp(nf, nt, cutlass.Int32(ctas), cutlass.Int32(cta), cute.arch.lane_idx())
        else:
            self.share = balanced_share(nf, nt, cutlass.Int32(ctas), cutlass.Int32(cta))
        if_lane0_store_share(slots, self.share)
        return self.tile_range(total)

    def balanced_read(self, total, slots):
        """y_tail64, the consumer warps after phase 1's completion barrier: the share the producer
        warp stored (``balanced_setup``), and the tile range. Traced inline."""
        self.share = tuple(ld_shared_u32(slots + 4 * i) for i in range(6 if self.stream_k else 4))
        return self.tile_range(total)

    def streamk_setup(self, m_sizes: cute.Tensor):
        """stream_k, the producer warp (every lane): this CTA's range (kernel.device_schedule.
        streamk_range: kernel.plan.streamk_boundary at its own index and the next) and, when its first piece hands on, the claim of the
        boundary that piece ends at (lane 0: IDLE -> CLAIMED; finding TAKEN, the CTA after it ran
        the whole tile already: the word back to IDLE, the piece runs without handing on).
        Returns the six-word share (``locate``, ``tile_range``, ``streamk_piece_k``). Traced inline."""
        cfg = self.config
        cta, _, _ = cute.arch.block_idx()
        ctas, _, _ = cute.arch.grid_dim()
        ea, ka, eb, kb, nf = streamk_range(m_sizes, self.num_groups, cfg.tile_m, cfg.tile_n, cfg.tile_k,
                                           cutlass.Int32(ctas), cutlass.Int32(cta))
        return ea, ka, eb, kb, nf, self.streamk_claim(m_sizes, ea, ka, eb, kb)

    @cute.jit
    def streamk_claim(self, m_sizes: cute.Tensor, ea: cutlass.Int32, ka: cutlass.Int32, eb: cutlass.Int32,
                      kb: cutlass.Int32):
        """stream_k, every lane of the producer warp (``streamk_setup``); lane 0 makes the claim,
        and its value is the one stored for the consumers (``if_lane0_store_share``): 1 if this
        CTA's first piece hands on and it claimed the boundary it ends at, else 0 (0 on the other
        lanes, which never read it)."""
        cta, _, _ = cute.arch.block_idx()
        _e, _k0, _k1, _w, first_hands_on = streamk_piece(ea, ka, eb, kb, cutlass.Int32(0))
        claimed = cutlass.Int32(0)
        if cutlass.const_expr(self.forced_take):
            # (harness build, Perturbation.streamk_take: no claim; the CTA after takes the tile)
            first_hands_on = cutlass.Int32(0)
        if streamk_count(ea, ka, eb, kb) * first_hands_on != 0:
            if cute.arch.lane_idx() == 0:
                word = self.streamk_state(m_sizes, cutlass.Int32(cta) + 1)
                old = atom_cas_relaxed_gpu(word, cutlass.Int32(STREAMK_IDLE), cutlass.Int32(STREAMK_CLAIMED))
                claimed = cutlass.Int32(old == STREAMK_IDLE)
                if old == STREAMK_TAKEN:
                    store_relaxed_gpu(word, cutlass.Int32(STREAMK_IDLE))
        return claimed

    @cute.jit
    def streamk_region(self, m_sizes: cute.Tensor):
        """stream_k: the workspace's stream-K region (kernel.hopper.workspace, Geometry.streamk_offset:
        after the data rows, every slot's rows x 2 x the largest K)."""
        rows = cutlass.Int32(0)
        kmax = cutlass.Int32(0)
        for s in cutlass.range_constexpr(self.num_groups):
            rows = rows + self.slot_rows(m_sizes[s, 0])
            kmax = cutlass.max(kmax, m_sizes[s, 2])
        return self.ws_base + DATA_OFFSET + cutlass.Int64(rows) * cutlass.Int64(kmax * 2)

    @cute.jit
    def streamk_state(self, m_sizes: cute.Tensor, b: cutlass.Int32):
        """stream_k: the address of boundary ``b``'s state word."""
        return self.streamk_region(m_sizes) + cutlass.Int64(b) * 4

    @cute.jit
    def streamk_partial(self, m_sizes: cute.Tensor, b: cutlass.Int32):
        """stream_k: the address of boundary ``b``'s partial (the consumers' fp32 accumulators)."""
        return (self.streamk_region(m_sizes) + STREAMK_STATE_BYTES
                + cutlass.Int64(b) * (4 * self.config.acc_regs_per_thread * self.consumer_threads))

    @cute.jit
    def streamk_piece_k(self, tile: cutlass.Int32, k_tiles: cutlass.Int32):
        """stream_k: (k0, k1, waits, hands on) of piece ``tile``: its K tiles k0 .. k1 - 1 (k1 the
        tile's K tiles for a piece that runs to the end), whether it continues from the partial of
        the boundary at this CTA's index and whether it hands its partial on at the next."""
        ea, ka, eb, kb, _nf, _claimed = self.share
        _e, k0, k1, waits, hands_on = streamk_piece(ea, ka, eb, kb, tile)
        if k1 == STREAMK_END:
            k1 = k_tiles
        return k0, k1, waits, hands_on

    @cute.jit
    def tile_range(self, total: cutlass.Int32):
        if cutlass.const_expr(self.stream_k):
            ea, ka, eb, kb, _nf, _claimed = self.share
            first, end, step = cutlass.Int32(0), streamk_count(ea, ka, eb, kb), cutlass.Int32(1)
        elif cutlass.const_expr(self.tail64):
            # the balanced schedule: entries 0 .. full + light - 1 of this CTA's list (locate)
            first, end, step = cutlass.Int32(0), self.share[1] + self.share[3], cutlass.Int32(1)
        elif cutlass.const_expr(self.tail16):
            # the snake schedule: this CTA's rounds (kernel.plan.snake_rounds)
            cta, _, _ = cute.arch.block_idx()
            ctas, _, _ = cute.arch.grid_dim()
            first, end, step = cutlass.Int32(0), snake_rounds(total, cutlass.Int32(ctas), cutlass.Int32(cta)), \
                cutlass.Int32(1)
        elif cutlass.const_expr(self.cluster != 1):
            # the cluster's range of cluster tiles, the same for both CTAs (kernel.plan)
            first, end, step = cluster_tile_range(total, self.config.schedule, self.cluster)
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
        elif cutlass.const_expr(cfg.prepass_kernel_warps and cfg.prepass_kernel_trigger == "start"):
            # phase 1 ran in the launch before this one (phase1_kernel), which let this grid start
            # only after the stream's previous kernel completed; the producer waits for phase 1
            # itself before its first Y box. The next launch may start its CTAs beside these
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

        if cutlass.const_expr(self.y_cluster):
            # landed[b]: this CTA's one expect_tx arrive per use plus the peer's st.async bytes;
            # free[b]: one arrival per consumer warp of the peer CTA. The init fenced for the
            # cluster, then every thread of both CTAs syncs before any remote store or arrive
            # can reach them
            if tidx == 0:
                for b in cutlass.range_constexpr(cfgmod.Y_CLUSTER_BUFFERS):
                    cute.arch.mbarrier_init(self.cluster_y_landed(b), 1)
                    cute.arch.mbarrier_init(self.cluster_y_free_bar(b), self.consumer_warps)
            cute.arch.mbarrier_init_fence()  # fence.mbarrier_init.release.cluster
            cute.arch.cluster_arrive_relaxed()
            cute.arch.cluster_wait()

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

        if cutlass.const_expr(self.smem_tables):
            sizes_ptr, prefix_ptr, ptrs_ptr = self.tables_to_smem(storage, tidx, sizes_ptr, prefix_ptr, ptrs_ptr)
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

        if cutlass.const_expr(self.prepass_flags and self.decoders):
            # ---------- session 10: phase 1 in the background on the decoder warps, phase 2 at once
            ws = ws_ptr.toint()
            claim_slots = storage.fp16_bars.data_ptr().toint() + 16 * self.fp16_buffers
            y_pipe = self.y_ring(storage, self.consumer_warps, (1, 1, 1, 1))
            if warp_idx >= self.decoder_warp0:
                scratch = cutlass.Int32(0)
                if cutlass.const_expr(self.decoder_staging):
                    scratch = storage.sP.data_ptr().toint()
                self.prepass_decode_background(tidx - 32 * self.decoder_warp0, m_sizes, m_ptrs, ws, claim_slots,
                                               scratch)
            elif warp_idx >= self.producer_warp:
                # the launch's generation, read before the hand-off: the decoder warps count the CTA
                # through phase 1 (after which the generation may advance) only after it
                gen = ld_relaxed_gpu_u32(ws + GEN_WORD)
                pipeline.NamedBarrier(barrier_id=cfgmod.DECODER_HANDOFF_BARRIER_ID,
                                      num_threads=32 + self.decoder_threads).arrive()
                if cutlass.const_expr(self.tail64):
                    p_begin, p_end, p_step = self.balanced_setup(m_sizes, total,
                                                                 claim_slots + cfgmod.BACKGROUND_SHARE_OFFSET)
                    pipeline.NamedBarrier(barrier_id=cfgmod.SHARE_BARRIER_ID,
                                          num_threads=self.consumer_threads + 32).arrive()
                else:
                    p_begin, p_end, p_step = self.tile_range(total)
                self.produce_prepass_q(m_prefix, m_sizes, m_ptrs, tmaps_ptr, ws, pipe, y_pipe, raw_base, sy_base,
                                       p_begin, p_end, p_step, total, gen)
            else:
                if cutlass.const_expr(self.tail64):
                    # the producer warp's split (balanced_setup), handed over by a named barrier
                    pipeline.NamedBarrier(barrier_id=cfgmod.SHARE_BARRIER_ID,
                                          num_threads=self.consumer_threads + 32).arrive_and_wait()
                    c_begin, c_end, c_step = self.balanced_read(total, claim_slots + cfgmod.BACKGROUND_SHARE_OFFSET)
                else:
                    c_begin, c_end, c_step = self.tile_range(total)
                if cutlass.const_expr(cfg.prepass_first_local):
                    # the first tile's first K tile(s) of Y into the Y ring by the consumers, at
                    # once (phase 1 runs on the decoder warps meanwhile); the producer completes
                    # those ring slots after this barrier and waits on flags only from the next
                    self.prepass_first_local_decode(tidx, m_prefix, m_sizes, m_ptrs, c_begin, c_end, sy_base,
                                                    self.consumer_threads)
                    pipeline.NamedBarrier(barrier_id=cfgmod.LOCAL_BARRIER_ID,
                                          num_threads=self.consumer_threads + 32).arrive()
                self.consume_x_regs_y_ring(tiled_mma, sY, m_prefix, m_sizes, m_ptrs, pipe, y_pipe, raw_base, tidx,
                                           c_begin, c_end, c_step, late_coords=cfg.consumer_warpgroups == 3,
                                           sy_iter=storage.sY if (self.tail64 or self.tail16) else None)
        elif cutlass.const_expr(self.inline_flags):
            # ---------- issue 14: phase 1 K-chunk-major with readiness flags, then phase 2
            ws = ws_ptr.toint()
            claim_slots = storage.fp16_bars.data_ptr().toint() + 16 * self.fp16_buffers
            y_pipe = self.y_ring(storage, self.consumer_warps, (1, 1, 1, 1))
            gen = self.prepass_decode_flags(tidx, m_sizes, m_ptrs, ws, claim_slots)
            # no completion barrier: the producer waits per Y box on its flag, the consumers on
            # the Y ring's full mbarriers as before
            if warp_idx >= self.producer_warp:
                self.produce_prepass_q(m_prefix, m_sizes, m_ptrs, tmaps_ptr, ws, pipe, y_pipe, raw_base, sy_base,
                                       t_begin, t_end, t_step, total, gen)
            else:
                self.consume_x_regs_y_ring(tiled_mma, sY, m_prefix, m_sizes, m_ptrs, pipe, y_pipe, raw_base, tidx,
                                     t_begin, t_end, t_step, late_coords=cfg.consumer_warpgroups == 3)
        elif cutlass.const_expr(self.prepass and cfg.prepass_chunk):
            # ------------------------- issue 14q: phase 1 with run-time chunks, then phase 2
            ws = ws_ptr.toint()
            claim_slots = storage.fp16_bars.data_ptr().toint() + 16 * self.fp16_buffers
            # (cluster_x = 2: the ring shared by the cluster, see ``y_release_warps``)
            y_pipe = self.y_ring(storage, self.y_release_warps, self.y_cluster_vmnk)
            share_slots = claim_slots + 8  # y_tail64: the CTA's balanced share (4 x int32)
            self.ws_base = ws  # (stream_k: its state words and partials are in the workspace)
            self.streamk_head_slot = share_slots + 24  # stream_k: the share's word 6
            lean = cfg.prepass_lean_exit
            count_after = cfg.exit_count_after
            # (phase1_only: no X stage may be left in flight at the exit)
            first_local = cfg.prepass_first_local and not self.ablates("phase2")
            # (prepass_first_local: the split before phase 1, so every thread knows the first tile)
            x_before = ((lean and cfg.prepass_x_before) or cfg.prepass_first_local) and not self.ablates("phase2")
            if cutlass.const_expr(x_before):
                # prepass_x_before: the producer warp's split and first X stages before phase 1
                # (neither needs it), so X's first stages load while Y is decoded
                if warp_idx >= self.producer_warp:
                    self.producer_x_first(m_prefix, m_sizes, m_ptrs, tmaps_ptr, ws, pipe, raw_base, total,
                                          cutlass.Int32(0) if self.tail64 else t_begin, share_slots)
            own_launch = self.own_launch  # phase 1 in the launch before this one
            if cutlass.const_expr(self.ablates("prepass") or own_launch):
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
                    if cutlass.const_expr(not x_before):
                        # the split (y_tail64: ~1200 instructions on one lane, ~150 over the
                        # lanes with exit_split_warp) and (prepass_x_early) the first tile's X
                        # stages, after the warp's phase-1 chunks
                        self.producer_x_first(m_prefix, m_sizes, m_ptrs, tmaps_ptr, ws, pipe, raw_base, total,
                                              cutlass.Int32(0) if self.tail64 else t_begin, share_slots)
                elif cutlass.const_expr(not first_local and not own_launch):
                    if tidx == 0:
                        if cutlass.const_expr(count_after):
                            self.prepass_wait_done(ws, chunks)
                        else:
                            self.prepass_wait(ws, chunks)
                        if cutlass.const_expr(self.timeline):
                            self.timeline_point("phase1_passed")  # the grid barrier's spin ended
                if cutlass.const_expr(first_local):
                    # the first tile's first K tile into the Y ring by this CTA itself; the
                    # producer awaits phase 1's completion before its first workspace box instead
                    total = m_prefix[G]
                    if cutlass.const_expr(self.tail64):
                        f_begin, f_end, _f_step = self.balanced_read(total, share_slots)  # producer_x_first's
                    else:
                        f_begin, f_end, _f_step = self.tile_range(total)
                    self.prepass_first_local_decode(tidx, m_prefix, m_sizes, m_ptrs, f_begin, f_end, sy_base)
                # phase 1's completion barrier (prepass_first_local: the local decode's): one
                # instruction that every thread executes (bar.sync is barrier.sync.aligned; reached
                # from the two roles' own code it was undefined in PTX, and compute-sanitizer
                # synccheck aborted the launch on it)
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
                    gen = None
                    if cutlass.const_expr(own_launch and self.prepass_flags):
                        # the generation phase 1's flags carry (+ 1): only this grid's CTAs
                        # advance it, each after this read (own_launch_count_through)
                        gen = ld_relaxed_gpu_u32(ws + GEN_WORD)
                    elif cutlass.const_expr(own_launch):
                        # phase 1's grid complete and its workspace stores visible: the one wait
                        # of this grid, before its first Y box (the X stages went out already)
                        cute.arch.griddepcontrol_wait()
                    self.produce_prepass_q(m_prefix, m_sizes, m_ptrs, tmaps_ptr, ws, pipe, y_pipe, raw_base, sy_base,
                                           p_begin, p_end, p_step, total, gen=gen,
                                           chunks=chunks if first_local else None)
                    if cutlass.const_expr(own_launch and self.prepass_flags):
                        self.own_launch_count_through(ws, gen)
                else:
                    if cutlass.const_expr(count_after):
                        # counted through after the barrier: the atomic's round trip overlaps the
                        # producer's first Y boxes instead of delaying them
                        if tidx == 0:
                            self.prepass_count_through(ws)
                    if cutlass.const_expr(self.tail64):
                        c_begin, c_end, c_step = self.balanced_read(total, share_slots)
                    else:
                        c_begin, c_end, c_step = self.tile_range(total)
                    self.consume_x_regs_y_ring(tiled_mma, sY, m_prefix, m_sizes, m_ptrs, pipe, y_pipe, raw_base, tidx,
                                               c_begin, c_end, c_step, late_coords=cfg.consumer_warpgroups == 3,
                                               sy_iter=storage.sY if (self.tail64 or self.tail16) else None)
        elif cutlass.const_expr(self.prepass):
            # ---------------------------------------------- phase 1: Y -> fp16 workspace
            ws = ws_ptr.toint()
            claim_slots = storage.fp16_bars.data_ptr().toint() + 16 * self.fp16_buffers
            self.prepass_decode(tidx, m_sizes, m_ptrs, ws, claim_slots)
            y_pipe = self.y_ring(storage, self.consumer_warps, (1, 1, 1, 1))

        if cutlass.const_expr(self.prepass and cfg.prepass_chunk):
            pass  # phase 2 above
        elif cutlass.const_expr(self.prepass):
            # ------------------------------------- phase 2: X raw per stage, Y fp16 by TMA
            if warp_idx >= self.producer_warp:
                self.produce_prepass(m_prefix, m_sizes, m_ptrs, tmaps_ptr, ws, pipe, y_pipe, raw_base, sy_base,
                                     t_begin, t_end, t_step)
            else:
                self.consume_x_regs_y_ring(tiled_mma, sY, m_prefix, m_sizes, m_ptrs, pipe, y_pipe, raw_base, tidx,
                                     t_begin, t_end, t_step)
        elif warp_idx >= self.producer_warp:
            # ------------------------------------------------------------ producer warp
            lane = cute.arch.lane_idx()
            pw = warp_idx - self.producer_warp
            p_end = t_end
            if cutlass.const_expr(cfg.consumer_regs):
                # the whole producer warpgroup gives registers back (one setmaxnreg for all
                # four warps); only its first warp loads, the others run no tile and exit
                cute.arch.setmaxregister_decrease(cfg.producer_regs)
                if pw != 0:
                    p_end = t_begin
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
            if cutlass.const_expr(not cfg.consumer_regs) or pw == 0:
                self.producer_tail(pipe, state)
            self.check_producer_exit()
        elif warp_idx < self.dequant_warp0:
            # ------------------------------------------------------- consumer warpgroups
            if cutlass.const_expr(cfg.consumer_regs):
                cute.arch.setmaxregister_increase(cfg.consumer_regs)  # every consumer warpgroup
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
            elif cutlass.const_expr(self.y_cluster):
                self.consume_cluster_y(tiled_mma, thr_mma, acc, tCrY, tCcC, filler, m_prefix, m_sizes, m_ptrs, pipe,
                                       raw_base, sy_base, tidx, t_begin, t_end, t_step)
            elif cutlass.const_expr(self.split):
                fp16_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.fp16_buffers)
                for tile in range(t_begin, t_end, t_step):
                    slot, m, n, k, m0, n0 = self.tile_origin(m_prefix, m_sizes, tile)
                    steps = (k // cfg.tile_k) * self.n_sub
                    self.reset_accumulator(acc)
                    tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
                    self.wgmma_fence()
                    # first sub-block peeled: nothing to release before it
                    self.delay("consumer", "fp16_wait", "before")
                    fp16_pipe.consumer_wait(fp16_state)
                    self.delay("consumer", "fp16_wait", "after")
                    self.mma_sub_block(tiled_mma, acc, tCrX, tCrY, fp16_state.index, filler)
                    retire_state = fp16_state.clone()
                    fp16_state.advance()
                    for _step in range(1, steps):
                        self.delay("consumer", "fp16_wait", "before")
                        fp16_pipe.consumer_wait(fp16_state)
                        self.delay("consumer", "fp16_wait", "after")
                        self.mma_sub_block(tiled_mma, acc, tCrX, tCrY, fp16_state.index, filler)
                        # the previous sub-block's wgmma has retired: its buffer is free
                        self.delay("consumer", "wgmma_wait", "before")
                        self.wait_group(1)
                        self.delay("consumer", "wgmma_wait", "after")
                        self.warp_release(fp16_pipe, retire_state)
                        retire_state.advance()
                        fp16_state.advance()
                    self.delay("consumer", "wgmma_wait", "before")
                    self.wait_group(0)
                    self.warp_release(fp16_pipe, retire_state)
                    self.epilogue(acc, tCcC, m_ptrs[slot, 2], m, n, m0, n0)
                    self.poison_accumulator(acc)
            else:
                # y_per_warpgroup: each warpgroup w syncs only its own 128 threads (barrier id
                # 1 + w), decodes the whole Y into its own ring (buffers w*2, w*2+1) and so
                # drifts freely against the other; wtid is its thread index inside the warpgroup
                wtid, ybuf0 = tidx, 0
                # checker: the warps that write and read this warp's fp16 buffers (all consumer
                # warps; y_per_warpgroup: its own warpgroup's four)
                hb_warp0, hb_warps = 0, self.consumer_warps
                if cutlass.const_expr(self.y_per_wg):
                    wg = warp_idx // 4
                    wtid = tidx - 128 * wg
                    ybuf0 = wg * self.fp16_buffers
                    hb_warp0, hb_warps = wg * 4, 4
                    consumers = pipeline.NamedBarrier(barrier_id=1 + wg, num_threads=128)
                else:
                    consumers = pipeline.NamedBarrier(barrier_id=1, num_threads=self.consumer_threads)
                state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
                # three fp16 buffers: a running index over every sub-block of every tile (its phase
                # is unused); two: the static ping-pong sb % 2
                fp16_buf = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.fp16_buffers)
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
                            # 2 or 4 buffers divide the K tile's sub-blocks: static; 3 do not
                            buf = sb % self.fp16_buffers
                            if cutlass.const_expr(self.fp16_buffers == 3):
                                buf = fp16_buf.index
                            if cutlass.const_expr(self.y_per_wg):
                                buf = ybuf0 + sb % 2  # this warpgroup's ring
                            self.delay("consumer", "decode", "before")
                            self.check_reuse(buf, hb_warp0, hb_warps)
                            if cutlass.const_expr(self.x_in_regs):
                                x_frag = self.x_fragment(thr_mma, tidx, stage, x_sf_row0, sb)
                                if cutlass.const_expr(self.ablates("y_dequant")):
                                    pass  # profiling only: Y's buffers keep what they hold
                                elif cutlass.const_expr(self.y_per_wg):
                                    self.dequant_y_rs(wtid, stage, sy_base + buf * self.y_buf_bytes, y_sf_row0, sb, 128)
                                elif cutlass.const_expr(self.y_units_ragged):
                                    self.dequant_y_rs_ragged(tidx, stage, sy_base + buf * self.y_buf_bytes, y_sf_row0, sb)
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
                            if cutlass.const_expr(self.ablates("y_sync")):
                                pass  # profiling only
                            elif cutlass.const_expr(self.fp16_buffers == 2):
                                self.delay("consumer", "bar_reuse", "before")
                                # every warp has retired the wgmma that read the other buffer
                                consumers.arrive_and_wait()
                                self.delay("consumer", "bar_reuse", "after")
                                self.poison_free_fp16_buffer(tidx, consumers, sx_base, sy_base, (sb + 1) % 2, wtid, ybuf0)
                            else:
                                # no second barrier: the buffer written next was last read by the
                                # wgmma three sub-blocks back (four with wgmma_in_flight=2), which
                                # every warp retired (its wait_group(1), or (2)) before the barrier
                                # this warp passed last
                                if cutlass.const_expr(self.fp16_buffers == 3):
                                    fp16_buf.advance()
                        state.advance()
                    self.wait_group(0)
                    self.epilogue(acc, tCcC, m_ptrs[slot, 2], m, n, m0, n0)
                    self.poison_accumulator(acc)
        elif cutlass.const_expr(self.split):
            # ---------------------------------------- dequant warpgroups (roles="split")
            if cutlass.const_expr(cfg.consumer_regs and cfg.dequant_regs < cfg.launch_register_cap):
                cute.arch.setmaxregister_decrease(cfg.dequant_regs)
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
        if cutlass.const_expr(self.cluster != 1):
            # every thread of both CTAs: no CTA exits while its peer may still multicast a Y half
            # into its shared memory or arrive on its Y ring's empty barriers. Relaxed (no
            # GPU-scope fence behind the epilogue's stores): it orders exits only; the peer's last
            # multicasts were awaited by this CTA's consumers and its remote arrives by this CTA's
            # producer_tail before either reaches this barrier
            cute.arch.cluster_arrive_relaxed()
            cute.arch.cluster_wait()


    def tables_to_smem(self, storage, tidx, sizes_ptr, prefix_ptr, ptrs_ptr):
        """``smem_tables``, every thread at the kernel's start (after griddepcontrol.wait: a kernel
        may have written the tables): the sizes, tile prefix and pointer tables copied into shared
        memory, element i of each (guard rows included) by thread i mod threads, all loads of a
        thread independent of each other (one round trip for the CTA), then one CTA barrier.
        The SMEM_TABLE_GUARD_ROWS rows before and after each table hold kernel.tables' guard
        fills (GUARD_SIZE, GUARD_PREFIX, GUARD_POINTER), as a strict table's guard rows do in
        global memory, so a read one slot past either end gets the same values in every build.
        Returns the shared pointers of the real rows (slot 0). Traced inline."""
        G = self.num_groups
        R = cfgmod.SMEM_TABLE_GUARD_ROWS
        dsts = (storage.t_sizes.data_ptr(), storage.t_prefix.data_ptr(), storage.t_ptrs.data_ptr())
        widths = (4, 1, 5)
        copy_tables_to_smem(tidx, self.threads, (sizes_ptr, prefix_ptr, ptrs_ptr), dsts, (4 * G, G + 1, 5 * G),
                            tuple(R * w for w in widths), (GUARD_SIZE, GUARD_PREFIX, GUARD_POINTER))
        out = [d + R * w for d, w in zip(dsts, widths)]
        cute.arch.barrier()  # every table element stored before any thread reads one
        return out[0], out[1], out[2]

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

    @cute.jit
    def prepass_item(self, item: cutlass.Int32, m_sizes: cute.Tensor, m_ptrs: cute.Tensor, data: cutlass.Int64,
                     pitch: cutlass.Int64):
        """Decode item ``item`` (kernel.hopper.workspace.item_location / item_addresses)."""
        base = cutlass.Int32(0)
        roff = cutlass.Int32(0)
        sel_slot = cutlass.Int32(0)
        sel_base = cutlass.Int32(0)
        sel_roff = cutlass.Int32(0)
        for s in range(self.num_groups):
            m = m_sizes[s, 0]
            count = m * (m_sizes[s, 2] // SUB_K)
            if m_sizes[s, 1] == 0:
                count = cutlass.Int32(0)
            if item >= base:
                if item < base + count:
                    sel_slot = cutlass.Int32(s)
                    sel_base = base
                    sel_roff = roff
            base = base + count
            roff = roff + self.slot_rows(m)
        raw, sf, dst = self.prepass_run_addresses(item, sel_slot, sel_base, sel_roff, m_sizes, m_ptrs, data, pitch)
        dequant_y_global_rs(raw, sf, dst, self.config.operand_exp_shift)

    @cute.jit
    def prepass_decode(self, tidx: cutlass.Int32, m_sizes: cute.Tensor, m_ptrs: cute.Tensor, ws: cutlass.Int64,
                       slots: cutlass.Int32):
        """Phase 1, every thread of every CTA: decode every group's Y rows into the workspace,
        then wait until every chunk is decoded (kernel.hopper.workspace: why this cannot
        deadlock, and how the counters go back to zero for the next launch)."""
        threads = self.threads
        chunk = threads * ITEMS_PER_THREAD
        items = cutlass.Int32(0)
        kmax = cutlass.Int32(0)
        for s in range(self.num_groups):
            if m_sizes[s, 1] != 0:
                items = items + m_sizes[s, 0] * (m_sizes[s, 2] // SUB_K)
            kmax = cutlass.max(kmax, m_sizes[s, 2])
        chunks = (items + (chunk - 1)) // chunk
        pitch = cutlass.Int64(kmax * 2)
        data = ws + DATA_OFFSET
        it = cutlass.Int32(0)
        c = self.prepass_claim(tidx, ws, slots, it)
        while c < chunks:
            for j in cutlass.range_constexpr(ITEMS_PER_THREAD):
                item = c * chunk + tidx + j * threads
                if item < items:
                    self.prepass_item(item, m_sizes, m_ptrs, data, pitch)
            # this thread's generic stores -> ordered before the async proxy (other CTAs' TMA)
            fence_proxy_async_global()
            cute.arch.barrier()
            if tidx == 0:
                arrive_release_gpu(ws + DONE_WORD, cutlass.Int32(1))
            it = it + 1
            c = self.prepass_claim(tidx, ws, slots, it)
        if tidx == 0:
            self.prepass_wait(ws, chunks)
        cute.arch.barrier()

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
        if cutlass.const_expr(self.config.exit_claim_first):
            # prepass_lean_exit / prepass_claim_first: thread 0's first claim goes out before
            # anything else, so its round trip overlaps the chunking arithmetic and the L2
            # prefetch below
            first_claim = cutlass.Int32(0)
            if tidx == 0:
                first_claim = atom_add_relaxed_gpu(ws + CLAIM_WORD, cutlass.Int32(1))
        # per group: first item, first workspace row (registers for the whole loop)
        bases, roffs, counts, items, kmax = self.prepass_groups(m_sizes)
        chunk, chunks = self.prepass_chunking(items)
        pitch = cutlass.Int64(kmax * 2)
        data = ws + DATA_OFFSET
        staged = self.config.prepass_store == "staged"
        # prepass_store="staged": each warp's 32 item slots in the Y ring (unused until phase 1
        # ends; its TMA writes come after the proxy fence below and the completion barrier)
        warp_slots = scratch + (tidx // 32) * cfgmod.PREPASS_STAGED_WARP_BYTES
        it = cutlass.Int32(0)
        if cutlass.const_expr(self.config.exit_claim_first):
            # thread 0 issues the first claim (prepass_claim's atomic), then, while it is in
            # flight, every other thread prefetches its first item of chunk blockIdx (raw row run
            # and scales) into L2: a hint, whichever CTA claims that chunk then loads those from
            # L2, not DRAM (thread 0's item shares a line with thread 1's)
            cta, _, _ = cute.arch.block_idx()
            item0 = cutlass.Int32(cta) * chunk + tidx
            if item0 < cutlass.min(cutlass.Int32(cta) * chunk + chunk, items):
                if tidx != 0:
                    raw0, sf0, _dst0 = self.prepass_item_addresses(item0, bases, roffs, counts, m_sizes, m_ptrs, data,
                                                                   pitch)
                    prefetch_l2_pair(raw0, sf0, cutlass.Int32(1))
            if tidx == 0:
                st_shared_u32(slots, first_claim)  # slot it % 2 = 0, as prepass_claim
            cute.arch.barrier()
            c = ld_shared_u32(slots)
        else:
            c = self.prepass_claim(tidx, ws, slots, it)
        while c < chunks:
            nxt = cutlass.Int32(0)
            if tidx == 0:
                # the next claim, in flight while this chunk is loaded and decoded
                nxt = atom_add_relaxed_gpu(ws + CLAIM_WORD, cutlass.Int32(1))
            first = c * chunk
            end = cutlass.min(first + chunk, items)
            self.decode_chunk_items(tidx, threads, batch, first, end, bases, roffs, counts, m_sizes, m_ptrs, data,
                                    pitch, staged, warp_slots)
            # this thread's generic stores -> ordered before the async proxy (other CTAs' TMA)
            fence_proxy_async_global()
            if tidx == 0:
                st_shared_u32(slots + ((it + 1) % 2) * 4, nxt)
            cute.arch.barrier()
            if tidx == 0:
                arrive_release_gpu(ws + DONE_WORD, cutlass.Int32(1))
            it = it + 1
            c = ld_shared_u32(slots + (it % 2) * 4)
        if cutlass.const_expr(staged):
            # the slots' generic writes before the Y ring's TMA (async proxy) writes to them
            cute.arch.fence_proxy("async.shared", space="cta")
        return chunks

    @cute.jit
    def phase1_own_decode(self, tidx: cutlass.Int32, m_sizes: cute.Tensor, m_ptrs: cute.Tensor, ws: cutlass.Int64,
                          scratch: cutlass.Int32):
        """``prepass_kernel_warps``: phase 1's items on the phase-1 launch, in the chunks of
        ``prepass_chunking`` (with this launch's threads and grid), chunk c by CTA c % grid: no
        claims and no counters (the launch's end is the barrier). Each thread issues the loads of
        its items of a chunk at once, then decodes and stores them (``prepass_decode_scaled``'s
        asm; ``prepass_store="staged"``: each warp's items through its slots at ``scratch``, whole
        128-byte runs per warp store, as in the GEMM's phase 1)."""
        threads = 32 * self.config.prepass_kernel_warps
        bases, roffs, counts, items, kmax = self.prepass_groups(m_sizes)
        batch = cfgmod.PHASE1_KERNEL_BATCH
        chunk, chunks = self.prepass_chunking(items, threads, batch)
        pitch = cutlass.Int64(kmax * 2)
        data = ws + DATA_OFFSET
        cta, _, _ = cute.arch.block_idx()
        grid, _, _ = cute.arch.grid_dim()
        warp_slots = scratch + (tidx // 32) * cfgmod.PREPASS_STAGED_WARP_BYTES
        c = cutlass.Int32(cta)
        while c < chunks:
            first = c * chunk
            end = cutlass.min(first + chunk, items)
            self.decode_chunk_items(tidx, threads, batch, first, end, bases, roffs, counts, m_sizes, m_ptrs, data,
                                    pitch, self.config.prepass_store == "staged", warp_slots)
            c = c + cutlass.Int32(grid)
        # the generic stores before the GEMM's TMA reads of them (async proxy)
        fence_proxy_async_global()

    @cute.jit
    def decode_chunk_items(self, tidx: cutlass.Int32, threads: cutlass.Constexpr[int], batch: cutlass.Constexpr[int],
                           first: cutlass.Int32, end: cutlass.Int32, bases: list, roffs: list, counts: list,
                           m_sizes: cute.Tensor, m_ptrs: cute.Tensor, data: cutlass.Int64, pitch: cutlass.Int64,
                           staged: cutlass.Constexpr[bool], warp_slots: cutlass.Int32):
        """Phase 1 (item order of ``prepass_item_addresses``), one thread of ``threads``: its items
        ``first + tidx + j x threads`` < ``end`` of a chunk, ``batch`` at once: every item's loads
        in one asm block, then each item decoded and stored, directly or (``staged``) through its
        lane's slot of the warp's 32 at ``warp_slots`` and the warp's whole-run stores."""
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
            if cutlass.const_expr(staged):
                # the item into this lane's shared slot, then the warp's whole-run stores
                if oks[j]:
                    store_y_staged_item(words[j], warp_slots + lane * 128, (lane % 8) * 16,
                                        self.config.operand_exp_shift)
                copy_y_staged_items(warp_slots, dsts[j], cutlass.Int32(oks[j]), lane)
            elif oks[j]:
                store_y_global_item(words[j], dsts[j], self.config.operand_exp_shift)

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
    def prepass_first_local_decode(self, tidx: cutlass.Int32, m_prefix: cute.Tensor, m_sizes: cute.Tensor,
                                   m_ptrs: cute.Tensor, t_begin: cutlass.Int32, t_end: cutlass.Int32,
                                   sy_base: cutlass.Int32, threads: int = 0):
        """``prepass_first_local``, every thread after its phase-1 chunks: the CTA's first tile's
        first K tile of Y (its ``n_sub`` 64-K sub-blocks x ``mma_n`` rows, item = (sub-block,
        row), sub-block fastest) decoded from A straight into the Y ring's first ``n_sub``
        buffers, which the producer's first ``n_sub`` ring slots are: phase 1's item loads and
        its staged store, the 128-byte slot at buffer row r and the XOR key (r % 8) x 16, which is
        where the TMA box's 128-byte swizzle puts chunk c of row r. Rows past the group's M are
        not read (A has M rows; their accumulator columns are never stored). Ends with each
        thread's generic -> async proxy fence; the caller's CTA barrier orders the stores before
        the producer completes the ring slots. The staged phase 1 used buffers 0 .. 2 as its
        warps' slots: its last CTA barrier is behind.

        On the background phase 1 (``prepass_decoders``) the consumer warps alone run it
        (``threads``: theirs), at the start, for ``first_local_tiles`` K tiles (sub-block index
        over them, buffer = the ring slot of that sub-block; sub-blocks past the group's K are
        not read), and the caller's named barrier hands the buffers to the producer."""
        threads = threads if threads else self.threads
        tiles = self.config.first_local_tiles
        subs = self.n_sub * tiles
        per = subs * self.mma_n
        if t_begin < t_end:
            slot, m, _n, k, m0, _n0 = self.tile_origin(m_prefix, m_sizes, t_begin)
            ksub = k // SUB_K
            loads = []
            places = []
            for j in cutlass.range_constexpr((per + threads - 1) // threads):
                i = tidx + j * threads
                r = i // subs
                sb = i - r * subs
                ok = cutlass.Int32(0)
                if i < per:
                    if m0 + r < m:
                        if cutlass.const_expr(tiles == 1):
                            ok = cutlass.Int32(1)
                        elif sb < ksub:
                            ok = cutlass.Int32(1)
                raw, sf, _dst = self.prepass_run_addresses((m0 + r) * ksub + sb, slot, cutlass.Int32(0),
                                                           cutlass.Int32(0), m_sizes, m_ptrs, cutlass.Int64(0),
                                                           cutlass.Int64(0))
                loads.append((raw, sf, ok))
                places.append((sy_base + sb * self.y_buf_bytes + r * 128, (r % 8) * 16, ok))
            words = load_y_global_items(loads)
            for j in cutlass.range_constexpr(len(places)):
                if places[j][2] != 0:
                    store_y_staged_item(words[j], places[j][0], places[j][1], self.config.operand_exp_shift)
        cute.arch.fence_proxy("async.shared", space="cta")

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
        align = self.config.y_row_align
        if cutlass.const_expr(align == 1):
            return m
        return (m + (align - 1)) // align * align

    @cute.jit
    def produce_prepass(self, m_prefix, m_sizes, m_ptrs, tmaps_ptr, ws, pipe, y_pipe, raw_base, sy_base,
                        t_begin, t_end, t_step):
        """The producer warp of phase 2: per stage X (B rows, TMA) and its scale block (bulk
        copy) into the raw ring, then Y's four 64-K fp16 boxes (TMA over the workspace) into
        the Y ring."""
        cfg = self.config
        lane = cute.arch.lane_idx()
        tm_ws = ws + TENSOR_MAP_OFFSET
        # phase 1's writes (acquired by thread 0 before the CTA barrier) -> the async proxy
        fence_proxy_async_global()
        if lane == 0:
            self.acquire_map(tm_ws, workspace=True)
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
        ystate = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.fp16_buffers)
        for tile in range(t_begin, t_end, t_step):
            slot, m, n, k, m0, n0 = self.tile_origin(m_prefix, m_sizes, tile)
            sfx_ptr = m_ptrs[slot, 4]
            tm_x = tmaps_ptr.toint() + cutlass.Int64(slot) * 256 + 128  # B's map (swapped: X = B)
            y_row = self.row_offset(m_sizes, slot) + m0
            self.delay("producer", "tensormap", "before")
            if lane == 0:
                self.acquire_map(tm_x)
            self.delay("producer", "tensormap", "after")
            rest_k = cutlass.Int64(k // 64)
            x_blocks = (n + 127) // 128
            for kt in range(k // cfg.tile_k):
                self.delay("producer", "acquire", "before")
                self.producer_acquire(pipe, state)
                self.delay("producer", "acquire", "after")
                stage = raw_base + state.index * self.raw_stage_bytes
                self.poison_stage_before_fill(lane, stage)
                sf_k = cutlass.Int64(kt * (cfg.tile_k // 64))
                mbar = pipe.producer_get_barrier(state).toint()
                if lane == 0:
                    self.tma_rows(stage + self.off_x, tm_x, kt * (cfg.tile_k // 2), n0, mbar)
                self.load_sf_bulk(lane, 1, stage + self.off_sfx, sfx_ptr, n0, x_blocks, rest_k, sf_k, mbar, self.mma_m)
                self.delay("producer", "issue", "before")
                self.producer_commit(pipe, state)
                self.delay("producer", "issue", "after")
                state.advance()
                for sb in cutlass.range_constexpr(self.n_sub):
                    self.produce_y_box(lane, y_pipe, ystate, sy_base, tm_ws, kt * self.n_sub + sb, y_row)
                    ystate.advance()  # here, in the loop's own body: the loop carries it
        self.delay("producer", "tail", "before")
        self.producer_tail(pipe, state)
        self.producer_tail(y_pipe, ystate, HB_OUT_Y)
        self.check_producer_exit()

    @cute.jit
    def streamk_head_k0(self, lane: cutlass.Int32, m_sizes: cute.Tensor, k0: cutlass.Int32):
        """stream_k, the producer warp at a piece that starts at K tile ``k0`` > 0 of a tile split at
        this CTA's boundary: lane 0 takes the tile (IDLE -> TAKEN) if the CTA before has not
        claimed it (it never started: the grid is not co-resident), and then runs it from K tile 0;
        otherwise the piece starts at ``k0`` from the partial. The first K tile goes to the
        consumers through shared memory before the piece's first X stage is committed (its full
        barrier's arrive releases it; they read it after waiting for that stage); returned to
        every lane."""
        cta, _, _ = cute.arch.block_idx()
        start = k0
        if lane == 0:
            word = self.streamk_state(m_sizes, cutlass.Int32(cta))
            old = atom_cas_relaxed_gpu(word, cutlass.Int32(STREAMK_IDLE), cutlass.Int32(STREAMK_TAKEN))
            if old == STREAMK_IDLE:
                start = cutlass.Int32(0)
                if cutlass.const_expr(self.forced_take):
                    # (Perturbation.streamk_take: the CTA before never claims, so none resets it)
                    store_relaxed_gpu(word, cutlass.Int32(STREAMK_IDLE))
            st_shared_u32(self.streamk_head_slot, start)
        cute.arch.sync_warp()
        return cute.arch.shuffle_sync(start, 0)

    @cute.jit
    def early_x_stages(self, k_f, t_begin, t_end):
        """X stages of the CTA's first tile (K ``k_f``) that go out before phase 1's completion
        barrier: all of its K tiles up to the ring's depth, none for a CTA without tiles."""
        pre = cutlass.min(k_f // self.config.tile_k, cutlass.Int32(self.stages))
        if cutlass.const_expr(self.stream_k):
            # the first piece's K tiles (from 0), none when it may continue another CTA's partial
            # (its first K tile is decided at its start: streamk_head_k0)
            _k0, k1, waits, _h = self.streamk_piece_k(t_begin, k_f // self.config.tile_k)
            pre = cutlass.min(k1, cutlass.Int32(self.stages)) * (1 - waits)
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
        if cutlass.const_expr(cfg.exit_map_early):
            if lane == 0:
                # the workspace's map was written before the launch (phase 1 writes only its rows)
                self.acquire_map(ws + TENSOR_MAP_OFFSET, workspace=True)
        if cutlass.const_expr(self.early_x):
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
                          t_begin, t_end, t_step, total, gen=None, chunks=None):
        """Issue 14q (``prepass_chunk`` builds): ``produce_prepass`` after phase 1's completion
        barrier (in ``kernel``, one instruction for every thread); with ``prepass_x_early`` the
        first tile's X stages (up to ``num_ab_stages``; they read only B and its scales) went out
        before it (``producer_x_first``) and the ring state steps past them here. (The first tile's
        origin is computed again here and in the loop: once per CTA, left as is.)

        ``prepass_sync="flags"`` (``gen``: phase 1's generation): no completion barrier; before
        the Y boxes of K chunk ``kt`` of a tile the warp waits for that chunk's flag of the
        tile's Y block (``wait_flags_ready``: the lanes read the flags of chunks kt .. kt + 31 at
        once, so a tile whose Y is all published costs one round trip).

        ``prepass_first_local`` (``chunks``: phase 1's chunk count): the first tile's first K tile
        of Y is in the ring already (``prepass_first_local_decode``, ordered by the CTA barrier
        behind): its ring slots are completed without a copy, and lane 0 awaits phase 1's
        completion (and counts the CTA through) only before the first workspace box, or at the
        end when there is none (``first_local_wait``). On the background phase 1 (flags) the
        consumers decode ``first_local_tiles`` K tiles at the start instead: the warp syncs on
        their hand-over barrier (``LOCAL_BARRIER_ID``) after its early X stages, completes those
        slots without a copy, and waits on flags only from the next K tile of the first tile."""
        cfg = self.config
        lane = cute.arch.lane_idx()
        tm_ws = ws + TENSOR_MAP_OFFSET
        wait_local = chunks is not None  # the barrier prepass's first_local: phase 1 awaited late
        local_flags = self.prepass_flags and cfg.prepass_first_local  # the background's: flags skipped
        first_local = wait_local or local_flags
        if cutlass.const_expr(wait_local):
            need_wait = cutlass.Int32(1)
        if cutlass.const_expr(self.prepass_flags):
            target = gen + 1
            rows = cutlass.Int32(0)
            kmax = cutlass.Int32(0)
            for s in cutlass.range_constexpr(self.num_groups):
                rows = rows + m_sizes[s, 0]
                kmax = cutlass.max(kmax, m_sizes[s, 2])
            levels = kmax // cfg.tile_k
            flags = ws + DATA_OFFSET + cutlass.Int64(rows) * cutlass.Int64(kmax * 2)
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
        map_early = cfg.exit_map_early
        early = self.early_x
        pre = cutlass.Int32(0)  # X stages of the first tile already issued
        if cutlass.const_expr(self.inline_flags):
            if cutlass.const_expr(cfg.prepass_x_early):
                pre, state = self.issue_early_x(lane, m_prefix, m_sizes, m_ptrs, tmaps_ptr, pipe, state, raw_base,
                                                t_begin, t_end, total)
            if lane == 0:
                self.acquire_map(tm_ws, workspace=True)
            if cutlass.const_expr(local_flags):
                # the consumers' local decode (prepass_first_local_decode) is in the ring buffers
                pipeline.NamedBarrier(barrier_id=cfgmod.LOCAL_BARRIER_ID,
                                      num_threads=self.consumer_threads + 32).arrive_and_wait()
        else:
            # phase 1's completion barrier is behind (kernel): producer_x_first issued the first
            # tile's early X stages before it; the ring state steps past them
            if cutlass.const_expr(early):
                _slot, _m, _n, k_first, _m0, _n0 = self.tile_origin(m_prefix, m_sizes, cutlass.min(t_begin, total - 1))
                pre = self.early_x_stages(k_first, t_begin, t_end)
                for _kt in range(pre):
                    state.advance()
            if cutlass.const_expr(not first_local and not self.prepass_flags):
                # phase 1's writes (acquired by thread 0 before the CTA barrier) -> the async proxy
                # (with flags, phase 1 in its own launch: wait_flags_ready fences per wait)
                fence_proxy_async_global()
            if cutlass.const_expr(not map_early):  # (map_early: producer_x_first acquired it)
                if lane == 0:
                    self.acquire_map(tm_ws, workspace=True)
        ystate = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.fp16_buffers)
        for tile in range(t_begin, t_end, t_step):
            slot, m, n, k, m0, n0 = self.tile_origin(m_prefix, m_sizes, tile)
            tm_x = tmaps_ptr.toint() + cutlass.Int64(slot) * 256 + 128  # B's map (swapped: X = B)
            y_row = self.row_offset(m_sizes, slot) + m0
            if cutlass.const_expr(self.prepass_flags):
                block = cutlass.Int32(0)
                for s in range(slot):
                    block = block + (m_sizes[s, 0] + (self.mma_n - 1)) // self.mma_n
                block = block + m0 // self.mma_n
                if cutlass.const_expr(self.own_launch):
                    # the cell's counter, which only grows (phase1_warp_flags): ready for this
                    # launch at (generation + 1) x the block's items per level
                    my_flag = flags + cutlass.Int64(block * levels + lane) * FLAG_CELL_BYTES
                    tile_target = target * (cutlass.min(cutlass.Int32(self.mma_n), m - m0) * self.n_sub)
                else:
                    my_flag = flags + cutlass.Int64(block * levels + lane) * FLAG_CELL_BYTES + 4
                    tile_target = target
                k_tiles = k // cfg.tile_k
                ready = cutlass.Int32(0)  # K chunks of this tile whose flags were seen
                if cutlass.const_expr(local_flags):
                    if tile == t_begin:
                        ready = cutlass.Int32(cfg.first_local_tiles)  # decoded locally: no flag
            self.delay("producer", "tensormap", "before")
            if cutlass.const_expr(map_early and early and not self.inline_flags):
                # the first tile's map was acquired with its early X stages (producer_x_first)
                if lane == 0:
                    if tile != t_begin:
                        self.acquire_map(tm_x)
            else:
                if lane == 0:
                    self.acquire_map(tm_x)
            self.delay("producer", "tensormap", "after")
            k_begin = cutlass.Int32(0)
            k_end = k // cfg.tile_k
            if cutlass.const_expr(self.stream_k):
                k_begin, k_end, waits, _hands_on = self.streamk_piece_k(tile, k_end)
                if waits != 0:
                    k_begin = self.streamk_head_k0(lane, m_sizes, k_begin)
            for kt in range(k_begin, k_end):
                if kt >= pre:
                    self.produce_x_stage(lane, pipe, state, raw_base, m_ptrs, slot, tm_x, k, n, n0, kt)
                    state.advance()
                if cutlass.const_expr(self.prepass_flags):
                    if kt >= ready:
                        # lane l: chunk kt + l; acquire, ballot, warp sync, proxy fence (ptx.py)
                        ready = kt + wait_flags_ready(my_flag + cutlass.Int64(kt) * FLAG_CELL_BYTES,
                                                      cutlass.Int32(kt + lane < k_tiles), tile_target)
                local = None
                if cutlass.const_expr(first_local):
                    # the first tile's first K tile: decoded by this CTA into these slots already
                    local = cutlass.Int32(0)
                    if tile == t_begin:
                        if cutlass.const_expr(cfg.first_local_tiles == 1):
                            if kt == 0:
                                local = cutlass.Int32(1)
                        elif kt < cfg.first_local_tiles:
                            local = cutlass.Int32(1)
                    if cutlass.const_expr(wait_local):
                        if local == 0:
                            if need_wait != 0:
                                self.first_local_wait(lane, ws, chunks)
                                need_wait = cutlass.Int32(0)
                if cutlass.const_expr(not self.ablates("y_ring")):
                    for sb in cutlass.range_constexpr(self.n_sub):
                        self.produce_y_box(lane, y_pipe, ystate, sy_base, tm_ws, kt * self.n_sub + sb, y_row, local)
                        ystate.advance()  # here, in the loop's own body: the loop carries it
            pre = cutlass.Int32(0)  # only the first tile's first stages went early
        if cutlass.const_expr(wait_local):
            if need_wait != 0:  # no workspace box at all (no tile, or one tile of one K tile)
                self.first_local_wait(lane, ws, chunks)
        if cutlass.const_expr(cfg.prepass_kernel_warps and cfg.prepass_kernel_trigger == "late"):
            # every load of this CTA issued: the next launch (the next call's phase 1) may start
            # its CTAs beside this one now
            cute.arch.griddepcontrol_launch_dependents()
        self.delay("producer", "tail", "before")
        self.producer_tail(pipe, state)
        if cutlass.const_expr(not self.ablates("y_ring")):
            self.producer_tail(y_pipe, ystate, HB_OUT_Y)
        self.check_producer_exit()

    # ------------------------------------- prepass_sync="flags" (issue 14, experimental)
    # Synchronization (kernel.hopper.workspace states the layout and the host's side):
    # * writer: each phase-1 thread stores its items (generic proxy), then
    #   fence.proxy.async.global (its generic writes ordered before later async-proxy reads,
    #   what the grid barrier's writers do too), then the chunk's barrier (the CTA's, or the
    #   decoder warps' named one); per flag cell the chunk touched one thread does
    #   fence.acq_rel.gpu + atom.add.acq_rel.gpu (cumulative over the writes ordered before it
    #   by that bar.sync, as the grid barrier's red.release), and the
    #   add that completes the cell's count stores the flag with st.release.gpu (its acquire
    #   made every other CTA's published writes of the cell happen before that release);
    # * reader: the producer warp's lanes ld.acquire.gpu the flags, bar.warp.sync (memory
    #   ordering among the warp's lanes), then fence.proxy.async.global before lane 0 issues the
    #   TMA of the box: the barrier path's order (thread 0's acquire, bar.sync, the producer's
    #   proxy fence, TMA), with the acquire per box instead of once per launch;
    # * progress: the grid is at most one CTA per SM (the plan's grid <= SMs, and the kernel's
    #   shared memory allows one CTA per SM), but even without co-residency no wait can block
    #   forever: a CTA's producer spins only after the CTA's own phase 1 loop ended, i.e. after
    #   it published every chunk it claimed and saw the claim counter past the last chunk; every
    #   chunk was therefore claimed by a CTA that was running, and a running CTA publishes what
    #   it claimed without waiting on any other CTA (only its own CTA barriers).
    def flags_layout(self, m_sizes: cute.Tensor):
        """``prepass_sync="flags"``: per slot its first workspace row, first Y block, M and whether
        it has columns (N != 0), and the totals (rows, Y blocks, largest K). Traced inline."""
        roffs, bstarts, ms, n_oks = [], [], [], []
        rows = cutlass.Int32(0)
        nblocks = cutlass.Int32(0)
        kmax = cutlass.Int32(0)
        for s in range(self.num_groups):  # (a plain method: a Python loop, unrolled as it is traced)
            roffs.append(rows)
            bstarts.append(nblocks)
            m = m_sizes[s, 0]
            ms.append(m)
            n_oks.append(cutlass.Int32(m_sizes[s, 1] != 0))
            rows = rows + m
            nblocks = nblocks + (m + (self.mma_n - 1)) // self.mma_n
            kmax = cutlass.max(kmax, m_sizes[s, 2])
        return roffs, bstarts, ms, n_oks, rows, nblocks, kmax

    def flags_items(self, m_sizes: cute.Tensor, ws: cutlass.Int64):
        """``prepass_sync="flags"``'s phase-1 geometry (``flags_layout``, then: levels, items per
        level and in all, the workspace pitch, its data and its flag cells' addresses). Traced
        inline."""
        roffs, bstarts, ms, n_oks, rows, nblocks, kmax = self.flags_layout(m_sizes)
        levels = kmax // self.config.tile_k
        per_level = rows * self.n_sub
        pitch = cutlass.Int64(kmax * 2)
        data = ws + DATA_OFFSET
        return roffs, bstarts, ms, n_oks, nblocks, levels, per_level, per_level * levels, pitch, data, \
            data + cutlass.Int64(rows) * pitch

    @cute.jit
    def flags_chunk_decode(self, tid: cutlass.Int32, threads: cutlass.Constexpr[int], first: cutlass.Int32,
                           end: cutlass.Int32, per_level: cutlass.Int32, roffs: list, n_oks: list,
                           m_sizes: cute.Tensor, m_ptrs: cute.Tensor, data: cutlass.Int64, pitch: cutlass.Int64,
                           warp_slots: cutlass.Int32, staged: cutlass.Constexpr[bool],
                           batch: cutlass.Constexpr[int] = cfgmod.PREPASS_BATCH):
        """``prepass_sync="flags"``: thread ``tid`` of ``threads`` decodes its items of the chunk
        ``first .. end - 1`` (items K-chunk-major: level, workspace row, the level's sub-block; a
        group's items past its K, or of a group without columns, decode nothing): every item's
        loads in one asm block, then each item stored, directly or (``staged``) through the warp's
        32 shared slots at ``warp_slots`` and whole-run stores; ``batch`` items per thread."""
        sbk = self.n_sub
        loads = []
        dsts = []
        oks = []
        for j in cutlass.range_constexpr(batch):
            item = first + tid + j * threads
            lvl = item // per_level
            rem = item - lvl * per_level
            row = rem // sbk
            sb = lvl * sbk + (rem - row * sbk)
            sel_slot = cutlass.Int32(0)
            sel_roff = cutlass.Int32(0)
            sel_ok = cutlass.Int32(0)
            for s in cutlass.range_constexpr(self.num_groups):
                if row >= roffs[s]:
                    sel_slot = cutlass.Int32(s)
                    sel_roff = roffs[s]
                    sel_ok = n_oks[s]
            ksub = m_sizes[sel_slot, 2] // SUB_K
            ok = cutlass.Int32(0)
            if sb < ksub:
                ok = sel_ok
            if item >= end:
                ok = cutlass.Int32(0)
            # (slot-local row, sub-block) as the item of a group whose items start at 0
            raw, sf, dst = self.prepass_run_addresses((row - sel_roff) * ksub + sb, sel_slot, cutlass.Int32(0),
                                                        sel_roff, m_sizes, m_ptrs, data, pitch)
            loads.append((raw, sf, ok))
            dsts.append(dst)
            oks.append(ok)
        words = load_y_global_items(loads)
        for j in cutlass.range_constexpr(batch):
            if cutlass.const_expr(staged):
                # the item into this lane's shared slot, then the warp's whole-run stores (the slot
                # was last read by this warp's previous copy: the warp's own order)
                lane = tid % 32
                if oks[j] != 0:
                    store_y_staged_item(words[j], warp_slots + lane * 128, (lane % 8) * 16,
                                        self.config.operand_exp_shift)
                copy_y_staged_items(warp_slots, dsts[j], oks[j], lane)
            else:
                if oks[j] != 0:
                    store_y_global_item(words[j], dsts[j], self.config.operand_exp_shift)

    def prepass_decode_flags(self, tidx: cutlass.Int32, m_sizes: cute.Tensor, m_ptrs: cute.Tensor,
                             ws: cutlass.Int64, slots: cutlass.Int32):
        """Phase 1 of ``prepass_sync="flags"``, every thread of every CTA (``flags_phase1`` with the
        CTA barrier); then thread 0 counts its CTA through (``if_thread0_count_through``). Returns the
        generation. Traced inline."""
        gen = self.flags_phase1(tidx, self.threads, m_sizes, m_ptrs, ws, slots, cutlass.Int32(0), False, False)
        if_thread0_count_through(tidx, ws, gen)  # after this CTA's last claim (and its generation read)
        return gen

    def prepass_decode_background(self, dtid: cutlass.Int32, m_sizes: cute.Tensor, m_ptrs: cute.Tensor,
                                  ws: cutlass.Int64, slots: cutlass.Int32, scratch: cutlass.Int32):
        """Phase 1 in the background (``prepass_decoders`` > 0), the decoder warps of every CTA
        (``dtid``: the thread's index among them): ``flags_phase1`` with the decoder warps' own
        named barrier (DECODER_BARRIER_ID) in place of the CTA barrier, while the consumers and
        the producer run phase 2 (the producer waits per K chunk on its Y block's flag);
        ``prepass_store="staged"``: each item through the warp's 32 slots at ``scratch`` (a region
        of its own). After the CTA's last claim the decoder warps wait at the hand-off barrier for
        the producer warp's arrive (it read the generation before), then thread 0 counts the CTA
        through. Progress: no decoder warp waits on anything but the decoder warps of its own CTA
        and (once) its producer warp's arrive, which comes before the producer's first wait; every
        chunk is claimed by a running CTA and published without waiting on another CTA
        (kernel.hopper.workspace). Traced inline."""
        threads = self.decoder_threads
        warp_slots = scratch + (dtid // 32) * cfgmod.PREPASS_STAGED_WARP_BYTES
        gen = self.flags_phase1(dtid, threads, m_sizes, m_ptrs, ws, slots, warp_slots,
                                self.config.prepass_store == "staged", True)
        # the producer warp read the generation before its arrive: only then may the CTA count through
        pipeline.NamedBarrier(barrier_id=cfgmod.DECODER_HANDOFF_BARRIER_ID, num_threads=32 + threads).arrive_and_wait()
        if_thread0_count_through(dtid, ws, gen)

    @cute.jit
    def flags_phase1(self, tid: cutlass.Int32, threads: cutlass.Constexpr[int], m_sizes: cute.Tensor,
                     m_ptrs: cute.Tensor, ws: cutlass.Int64, slots: cutlass.Int32, warp_slots: cutlass.Int32,
                     staged: cutlass.Constexpr[bool], named: cutlass.Constexpr[bool]):
        """``prepass_sync="flags"``'s phase 1 on ``threads`` threads of every CTA (``tid``: the
        thread's index among them; ``named``: they sync on DECODER_BARRIER_ID, else on the CTA
        barrier): ``prepass_decode_scaled`` with the items K-chunk-major (level = ``tile_k`` K,
        then workspace row, then the level's sub-block; kernel.hopper.workspace;
        ``flags_chunk_decode``) and, after each chunk's barrier, the chunk's flag cells published
        (``prepass_flag_publish``). Thread 0 reads the generation and makes the first claim before
        the first barrier (both broadcast through shared slots: the generation in slot 2, claims
        alternating in slots 0 and 1) and the next claim while a chunk is decoded. Returns the
        generation."""
        gen_slot = slots + 8
        if tid == 0:
            st_shared_u32(gen_slot, ld_relaxed_gpu_u32(ws + GEN_WORD))
            st_shared_u32(slots, atom_add_relaxed_gpu(ws + CLAIM_WORD, cutlass.Int32(1)))
        roffs, bstarts, ms, n_oks, nblocks, levels, per_level, items, pitch, data, flags = self.flags_items(m_sizes, ws)
        chunk, chunks = self.prepass_chunking(items, threads)
        self.phase1_sync(threads, named)  # the generation and the first claim (slot 0)
        gen = ld_shared_u32(gen_slot)
        it = cutlass.Int32(0)
        c = ld_shared_u32(slots)
        while c < chunks:
            nxt = cutlass.Int32(0)
            if tid == 0:
                # the next claim, in flight while this chunk is loaded and decoded
                nxt = atom_add_relaxed_gpu(ws + CLAIM_WORD, cutlass.Int32(1))
            first = c * chunk
            end = cutlass.min(first + chunk, items)
            self.flags_chunk_decode(tid, threads, first, end, per_level, roffs, n_oks, m_sizes, m_ptrs, data, pitch,
                                    warp_slots, staged)
            # this thread's generic stores -> ordered before the async proxy (other CTAs' TMA)
            fence_proxy_async_global()
            if tid == 0:
                st_shared_u32(slots + ((it + 1) % 2) * 4, nxt)
            self.phase1_sync(threads, named)
            self.prepass_flag_publish(tid, first, end, per_level, nblocks, levels, roffs, bstarts, ms, flags, gen,
                                      threads)
            it = it + 1
            c = ld_shared_u32(slots + (it % 2) * 4)
        return gen

    def phase1_sync(self, threads: int, named: bool):
        """The flags phase 1's barrier: the decoder warps' named barrier, or the CTA barrier."""
        if named:
            pipeline.NamedBarrier(barrier_id=cfgmod.DECODER_BARRIER_ID, num_threads=threads).arrive_and_wait()
        else:
            cute.arch.barrier()

    @cute.jit
    def prepass_flag_order(self, item: cutlass.Int32, per_level: cutlass.Int32, nblocks: cutlass.Int32,
                           roffs: list, bstarts: list):
        """The flag cell of item ``item`` in item order: level x blocks + block."""
        lvl = item // per_level
        row = (item - lvl * per_level) // self.n_sub
        block = cutlass.Int32(0)
        for s in cutlass.range_constexpr(self.num_groups):
            if row >= roffs[s]:
                block = bstarts[s] + (row - roffs[s]) // self.mma_n
        return lvl * nblocks + block

    @cute.jit
    def flag_cell_span(self, g: cutlass.Int32, first: cutlass.Int32, end: cutlass.Int32, per_level: cutlass.Int32,
                       nblocks: cutlass.Int32, levels: cutlass.Int32, roffs: list, bstarts: list, ms: list,
                       flags: cutlass.Int64):
        """Flag cell ``g`` in item order (level x blocks + block): its address, how many of the
        items ``first .. end - 1`` are its, and its items in all (its block's rows x the level's
        sub-blocks)."""
        sbk = self.n_sub
        lvl = g // nblocks
        b = g - lvl * nblocks
        sel_roff = cutlass.Int32(0)
        sel_b0 = cutlass.Int32(0)
        sel_m = cutlass.Int32(0)
        for s in cutlass.range_constexpr(self.num_groups):
            if b >= bstarts[s]:
                sel_roff = roffs[s]
                sel_b0 = bstarts[s]
                sel_m = ms[s]
        m0 = (b - sel_b0) * self.mma_n
        lo = lvl * per_level + (sel_roff + m0) * sbk
        hi = lvl * per_level + (sel_roff + cutlass.min(m0 + self.mma_n, sel_m)) * sbk
        cnt = cutlass.min(end, hi) - cutlass.max(first, lo)
        return flags + cutlass.Int64(b * levels + lvl) * FLAG_CELL_BYTES, cnt, hi - lo

    @cute.jit
    def prepass_flag_publish(self, tidx: cutlass.Int32, first: cutlass.Int32, end: cutlass.Int32,
                             per_level: cutlass.Int32, nblocks: cutlass.Int32, levels: cutlass.Int32, roffs: list,
                             bstarts: list, ms: list, flags: cutlass.Int64, gen: cutlass.Int32,
                             threads: cutlass.Constexpr[int]):
        """After a chunk's CTA barrier: the flag cells its items ``first .. end - 1`` touched are
        consecutive in item order; thread t takes cells t, t + threads, ... of them and adds the
        chunk's items of the cell to its counter; the add that completes the cell's count (its
        rows x the level's sub-blocks) sets the counter back to 0 and release-stores the flag =
        ``gen`` + 1 (kernel.hopper.workspace.flag_cells_of_chunk: the same on the host)."""
        g_last = self.prepass_flag_order(end - 1, per_level, nblocks, roffs, bstarts)
        g = self.prepass_flag_order(first, per_level, nblocks, roffs, bstarts) + tidx
        while g <= g_last:
            cell, cnt, total = self.flag_cell_span(g, first, end, per_level, nblocks, levels, roffs, bstarts, ms,
                                                  flags)
            old = atom_add_acq_rel_gpu(cell, cnt)
            if old + cnt == total:
                store_relaxed_gpu(cell, cutlass.Int32(0))  # no other add to it in this launch
                store_release_gpu(cell + 4, gen + 1)
            g = g + threads

    @cute.jit
    def first_local_wait(self, lane, ws, chunks):
        """``prepass_first_local``, the producer warp: lane 0 awaits phase 1's completion and
        counts the CTA through (``prepass_wait``), then the warp's proxy fence orders the acquired
        workspace rows before its TMA reads (the barrier path's order, on the lane that issues the
        boxes)."""
        if lane == 0:
            self.prepass_wait(ws, chunks)
        cute.arch.sync_warp()
        fence_proxy_async_global()

    @cute.jit
    def produce_y_box(self, lane, y_pipe, ystate, sy_base, tm_ws, sub_block, y_row, local=None):
        """The prepass producer: the 64-K fp16 Y box ``sub_block`` of workspace row ``y_row`` into
        ``ystate``'s Y ring buffer (acquire, TMA, commit); the caller advances ``ystate``.
        ``local`` != 0 (``prepass_first_local``): the buffer holds the box already (decoded by the
        CTA, ordered by a CTA barrier before this): its transaction is completed without a copy."""
        self.delay("producer", "acquire", "before")
        self.producer_acquire(y_pipe, ystate, HB_OUT_Y)
        self.delay("producer", "acquire", "after")
        ybuf = sy_base + ystate.index * self.y_buf_bytes
        if cutlass.const_expr(self.cluster != 1):
            # this CTA's half of the box (rows rank * y_cta_rows ..), multicast to both CTAs: only
            # that half may be poisoned here (the peer's half may already have landed)
            half = cute.arch.block_idx_in_cluster() * self.y_cta_rows
            self.poison_stage_before_fill_bytes(lane, ybuf + half * (SUB_K * 2), self.y_cta_rows * SUB_K * 2)
            ybar = y_pipe.producer_get_barrier(ystate).toint()
            if lane == 0:
                self.check_map(tm_ws, workspace=True)
                tma_load_rows_multicast(ybuf + half * (SUB_K * 2), tm_ws, sub_block * (SUB_K * 2), y_row + half, ybar)
        elif cutlass.const_expr(local is not None):
            if local == 0:
                self.poison_stage_before_fill_bytes(lane, ybuf, self.y_buf_bytes)
            ybar = y_pipe.producer_get_barrier(ystate).toint()
            if lane == 0:
                if cutlass.const_expr(self.ablates("y_load")):
                    mbarrier_complete_tx(ybar, self.y_buf_bytes)  # profiling only
                elif local != 0:
                    mbarrier_complete_tx(ybar, self.y_buf_bytes)
                else:
                    self.tma_rows(ybuf, tm_ws, sub_block * (SUB_K * 2), y_row, ybar, workspace=True)
        else:
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
                        t_begin, t_end, t_step, late_coords=False, sy_iter=None):
        """The consumer warpgroups of phase 2 (prepass; ``y_pipe`` the TMA-filled Y ring) and of
        ``roles="split"`` with X in registers (``y_pipe`` the dequant warpgroups' fp16 ring): per
        64-K sub-block decode the X fragment from the raw stage (releasing the stage after the last one), wait for Y's fp16 box, issue the
        wgmmas, and release the previous sub-block's Y buffer once its wgmmas retired (one
        group in flight; ``wgmma_in_flight=2``: the buffer two sub-blocks back, two groups). No
        named barrier: each warp arrives on the empty mbarriers itself; ``consumer_stagger``
        (not declared) adds one per tile between the two warpgroups (warpgroup 1 starts the
        tile after warpgroup 0 issued its first ``consumer_stagger`` sub-blocks).

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
        if cutlass.const_expr(self.tail16):
            # per N = 16 j (j = 1 .. 7): its wgmma and the first N / 2 accumulators of each thread;
            # N = 128 is tiled_mma itself. Y's operand is the 128-row buffer's own descriptor (a
            # K-major SW128 descriptor holds the start address and the 8-row stride, not N: an N-row
            # wgmma reads the buffer's first N rows), so no view or descriptor per N
            narrow = []
            for j in cutlass.range_constexpr(1, self.mma_n // TAIL16_STEP):
                nn = TAIL16_STEP * j  # (an index per j; y_tail16_step > 16 uses every (step / 16)-th)
                mma_j = sm90_utils.make_trivial_tiled_mma(
                    cutlass.Float16, cutlass.Float16, OperandMajorMode.K, OperandMajorMode.K, cutlass.Float32,
                    (cfg.consumer_warpgroups, 1, 1), tiler_mn=(64, nn), a_source=warpgroup.OperandSource.RMEM,
                )
                thr_j = mma_j.get_slice(tidx)
                acc_j = cute.make_tensor(acc.iterator, cute.make_layout(thr_j.partition_shape_C((self.mma_m, nn))))
                mma_j.set(warpgroup.Field.ACCUMULATE, True)
                narrow.append((mma_j, acc_j))
        tCcC = thr_mma.partition_C(cute.make_identity_tensor((self.mma_m, self.mma_n)))
        filler = self.wgmma_filler(tidx)
        if cutlass.const_expr(self.x_prefetch):
            raw_regs = cute.make_rmem_tensor((X_RAW_REGS,), cutlass.Int32)  # x_raw_into / x_decode
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
        ystate = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.fp16_buffers)
        retire_state = ystate.clone()
        lag = cfg.consumer_stagger
        in_flight = cfg.wgmma_in_flight
        if cutlass.const_expr(lag):
            stagger_wg = cute.arch.make_warp_uniform(cute.arch.warp_idx()) // 4
        for tile in range(t_begin, t_end, t_step):
            slot, m, n, k, m0, n0 = self.tile_origin(m_prefix, m_sizes, tile)
            x_sf_row0, _y_sf_row0 = self.sf_rows(m0, n0)
            if cutlass.const_expr(lag):
                # consumer_stagger: this tile's barrier (by its parity in the CTA's list)
                stagger_bar = pipeline.NamedBarrier(
                    barrier_id=cfgmod.STAGGER_BARRIER_ID0 + ((tile - t_begin) // t_step) % 2,
                    num_threads=self.consumer_threads)
                if stagger_wg == 1:
                    stagger_bar.arrive_and_wait()  # warpgroup 0 has issued this tile's first lag sub-blocks
            if cutlass.const_expr(self.tail64):
                rows64 = m - m0 <= self.half_n  # a 64-row tile (run-time, per tile)
            k_tiles = k // cfg.tile_k
            k_begin = cutlass.Int32(0)
            if cutlass.const_expr(self.stream_k):
                # this piece's K tiles; one that starts inside its tile waits for its first X stage
                # (the producer's decision came with it: streamk_head_k0), then for the partial
                k_begin, k_tiles, waits, hands_on = self.streamk_piece_k(tile, k_tiles)
                if waits != 0:
                    self.x_stage_wait(pipe, state)
                    k_begin = ld_shared_u32(self.streamk_head_slot)
                if k_begin != 0:
                    self.streamk_wait(tidx, m_sizes)
                # (the partial, or zeros: the accumulators defined alike on both paths)
                self.streamk_fill(acc, tidx, m_sizes, cutlass.Int32(k_begin != 0))
            else:
                self.reset_accumulator(acc)
            tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
            self.wgmma_fence()
            if cutlass.const_expr(self.x_prefetch):
                # the tile's first X stage, its first sub-block's raw bytes and Y box
                self.x_stage_wait(pipe, state)
                self.x_raw_into(raw_regs, tidx, raw_base + state.index * self.raw_stage_bytes, x_sf_row0, 0)
                self.y_ring_wait(y_pipe, ystate)
            for kt in range(k_begin, k_tiles):
                if cutlass.const_expr(not self.x_prefetch):
                    self.x_stage_wait(pipe, state)
                stage = raw_base + state.index * self.raw_stage_bytes
                for sb in cutlass.range_constexpr(self.n_sub):
                    if cutlass.const_expr(self.x_prefetch):
                        x_frag = self.x_decode(thr_mma, raw_regs)
                    else:
                        x_frag = self.x_fragment(thr_mma, tidx, stage, x_sf_row0, sb)
                    if cutlass.const_expr(sb == self.n_sub - 1):
                        # every X read of this stage is done (its values are in registers)
                        cute.arch.sync_warp()  # one elected lane arrives for its warp
                        self.delay("consumer", "release", "before")
                        pipe.consumer_release(state)
                        self.delay("consumer", "release", "after")
                    if cutlass.const_expr(not self.x_prefetch):
                        self.y_ring_wait(y_pipe, ystate)
                    self.wgmma_fence()  # the fragment registers were just written
                    self.check_wgmma(None)
                    self.fill_wgmma(filler, acc, tCrY, ystate.index, sb)
                    if cutlass.const_expr(self.tail16):
                        # one branch per N = 16 j, each committing its own group (as y_tail64's two);
                        # the tile's N in steps of 16 (1 .. 8) from m and m0, per sub-block
                        # (y_tail16_step = 16 s: N rounded up to 16 s, a branch for each multiple of s)
                        per = cfg.y_tail16_step // TAIL16_STEP
                        steps16 = (cutlass.min(m - m0, cutlass.Int32(self.mma_n)) + (cfg.y_tail16_step - 1)) \
                            // cfg.y_tail16_step * per
                        if steps16 == self.mma_n // TAIL16_STEP:
                            for kb in cutlass.range_constexpr(SUB_K // 16):
                                cute.gemm(tiled_mma, acc, x_frag[(None, None, kb)],
                                          tCrY[(None, None, kb, ystate.index)], acc)
                            self.commit_group(ystate.index)
                        for j in cutlass.range_constexpr(1, self.mma_n // TAIL16_STEP):
                            if cutlass.const_expr(j % per != 0):
                                continue
                            if steps16 == j:
                                # (no name bound in the branch: it would be carried out of it)
                                for kb in cutlass.range_constexpr(SUB_K // 16):
                                    cute.gemm(narrow[j - 1][0], narrow[j - 1][1], x_frag[(None, None, kb)],
                                              tCrY[(None, None, kb, ystate.index)], narrow[j - 1][1])
                                self.commit_group(ystate.index)
                    elif cutlass.const_expr(self.tail64):
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
                    if cutlass.const_expr(lag and sb == lag - 1):
                        if kt == 0 and stagger_wg == 0:
                            stagger_bar.arrive()  # warpgroup 1 may start this tile
                    if cutlass.const_expr(self.x_prefetch):
                        # the next sub-block's raw X bytes and Y box while this group runs and
                        # before waiting for the previous one (registers of their own)
                        if cutlass.const_expr(sb < self.n_sub - 1):
                            self.x_raw_into(raw_regs, tidx, stage, x_sf_row0, sb + 1)
                            self.y_ring_wait(y_pipe, ystate)
                        elif kt + 1 < k_tiles:
                            next_state = state.clone()
                            next_state.advance()
                            self.x_stage_wait(pipe, next_state)
                            self.x_raw_into(raw_regs, tidx, raw_base + next_state.index * self.raw_stage_bytes,
                                            x_sf_row0, 0)
                            self.y_ring_wait(y_pipe, ystate)
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
            if cutlass.const_expr(late_coords):
                # issue 14q, 3 consumer warpgroups at the 128-register launch cap: the epilogue's
                # coordinates from a fresh (opaque) thread index, so none stays live across the
                # K loop (ptxas spilled one otherwise)
                thr_late = tiled_mma.get_slice(tid_x_opaque())
                tCcC_late = thr_late.partition_C(cute.make_identity_tensor((self.mma_m, self.mma_n)))
                self.epilogue(acc, tCcC_late, m_ptrs[slot, 2], m, n, m0, n0)
            elif cutlass.const_expr(self.stream_k):
                if hands_on != 0:
                    # the tile's K prefix: its partial to the CTA after this one (if this CTA
                    # claimed the boundary; otherwise that CTA took the whole tile)
                    _ea, _ka, _eb, _kb, _nf, claimed = self.share
                    if claimed != 0:
                        self.streamk_store(acc, tidx, m_sizes)
                else:
                    self.epilogue(acc, tCcC, m_ptrs[slot, 2], m, n, m0, n0)
            else:
                self.epilogue(acc, tCcC, m_ptrs[slot, 2], m, n, m0, n0)
            self.poison_accumulator(acc)

    # ------------------------------------------------------------- consumer helpers
    @cute.jit
    def consume_cluster_y(self, tiled_mma, thr_mma, acc, tCrY, tCcC, filler, m_prefix, m_sizes, m_ptrs, pipe,
                          raw_base, sy_base, tidx, t_begin, t_end, t_step):
        """``y_cluster_decode``: the consumers of one CTA of a 2-CTA cluster. Both CTAs walk the
        same tiles (N blocks 2j and 2j + 1 of one M block: the same Y); ``g`` counts the CTA's
        sub-blocks over its tiles, equal in both. Sub-block g reads Y buffer g % B (B =
        Y_CLUSTER_BUFFERS) in each CTA, filled by rank g % 2 in both CTAs: this CTA decodes the
        sub-blocks of its parity, AHEAD sub-blocks before their wgmma (after issuing the wgmma of
        g - AHEAD), into its buffer and the peer's. Per buffer b, this CTA's mbarriers: landed[b]
        (for the buffers the peer fills: one expect_tx arrive of this CTA per use, and the bytes
        of the peer's ``st.async`` stores, each completing its 16 bytes on it) and free[b] (for
        the buffers this CTA fills: the peer's 8 consumer warps arrive after the wgmma that read
        their copy of b retired). The decoder of g waits free for use g // B - 1 (sub-block
        g - B, retired by the peer at its step g - B + 1, one step earlier), syncs its own
        consumers (their wgmma of g - B retired), decodes into its buffer (``st.shared``) and the
        peer's (``st.async``), fences the async proxy and syncs its consumers again (its own copy
        is complete for its wgmmas). No memory barrier and no cluster-scope fence: the bytes are
        counted, not released. The raw stages: the Y side waits a stage AHEAD
        sub-blocks before the X side reads it; the X side releases it after its last X fragment
        (every Y decode from it came earlier in this thread's order)."""
        cfg = self.config
        AHEAD = cfgmod.Y_CLUSTER_AHEAD
        rank = cutlass.Int32(cute.arch.block_idx_in_cluster())
        peer = 1 - rank
        # the peer's landed barriers (st.async completes its bytes there) and its shared window
        peer_landed = mapa_shared_u32(self.cluster_y_landed(0).toint(), peer)
        peer_delta = mapa_shared_u32(sy_base, peer) - sy_base
        consumers = pipeline.NamedBarrier(barrier_id=1, num_threads=self.consumer_threads)
        x_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
        y_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
        g = cutlass.Int32(0)
        for tile in range(t_begin, t_end, t_step):
            slot, m, n, k, m0, n0 = self.tile_origin(m_prefix, m_sizes, tile)
            x_sf_row0, y_sf_row0 = self.sf_rows(m0, n0)
            k_tiles = k // cfg.tile_k
            steps = k_tiles * self.n_sub
            self.reset_accumulator(acc)
            tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
            self.wgmma_fence()
            # the tile's first raw stage, for its first AHEAD sub-blocks of Y
            self.delay("consumer", "wait", "before")
            pipe.consumer_wait(y_state)
            self.delay("consumer", "wait", "after")
            y_stage = raw_base + y_state.index * self.raw_stage_bytes
            for j in cutlass.range_constexpr(AHEAD):
                if cfgmod.y_cluster_filler(g + j) == rank:
                    self.cluster_y_fill(g + j, j, y_stage, y_sf_row0, tidx, sy_base, peer_landed, peer_delta,
                                        consumers)
            for kt in range(k_tiles):
                x_stage = raw_base + x_state.index * self.raw_stage_bytes
                for sb in cutlass.range_constexpr(self.n_sub):
                    gs = g + kt * self.n_sub + sb
                    b = cfgmod.y_cluster_buffer(gs)
                    if cutlass.const_expr(sb == self.n_sub - AHEAD):
                        # the Y side moves to the next K tile's stage (past the tile's last one
                        # after its last K tile: the next tile's first; only the wait depends on
                        # a run-time value, no pipeline state is changed under a run-time branch)
                        y_state.advance()
                        if kt + 1 < k_tiles:
                            self.delay("consumer", "wait", "before")
                            pipe.consumer_wait(y_state)
                            self.delay("consumer", "wait", "after")
                    x_frag = self.x_fragment(thr_mma, tidx, x_stage, x_sf_row0, sb)
                    if cfgmod.y_cluster_filler(gs) != rank:
                        # the peer's copy of sub-block gs landed here: this use's expect_tx arrive
                        # (one thread), then every thread waits for the phase
                        self.delay("consumer", "fp16_wait", "before")
                        if tidx == 0:
                            cute.arch.mbarrier_arrive_and_expect_tx(self.cluster_y_landed(b), self.y_buf_bytes)
                        cute.arch.mbarrier_wait(self.cluster_y_landed(b), cfgmod.y_cluster_landed_parity(gs))
                        if cutlass.const_expr(cfg.y_cluster_copy == "st_async"):
                            # st.async wrote in the generic proxy; a bulk copy writes in the async
                            # proxy, which the wgmma reads in (as after a TMA load)
                            cute.arch.fence_proxy("async.shared", space="cta")
                        self.delay("consumer", "fp16_wait", "after")
                    if cutlass.const_expr(sb == self.n_sub - 1):
                        # the last read of this K tile's stage (its Y was decoded earlier)
                        cute.arch.sync_warp()
                        self.delay("consumer", "release", "before")
                        pipe.consumer_release(x_state)
                        self.delay("consumer", "release", "after")
                        x_state.advance()
                    self.wgmma_fence()  # the fragment registers were just written
                    self.check_wgmma(None)
                    self.fill_wgmma(filler, acc, tCrY, b, sb)
                    for kb in cutlass.range_constexpr(SUB_K // 16):
                        cute.gemm(tiled_mma, acc, x_frag[(None, None, kb)], tCrY[(None, None, kb, b)], acc)
                    self.commit_group(b)
                    self.delay("consumer", "wgmma_wait", "before")
                    self.wait_group(1)
                    self.delay("consumer", "wgmma_wait", "after")
                    if kt * self.n_sub + sb > 0:
                        self.cluster_y_free(gs - 1, rank, peer)
                    if kt * self.n_sub + sb + AHEAD < steps:
                        if cfgmod.y_cluster_filler(gs + AHEAD) == rank:
                            ahead_stage = raw_base + y_state.index * self.raw_stage_bytes
                            self.cluster_y_fill(gs + AHEAD, (sb + AHEAD) % self.n_sub, ahead_stage, y_sf_row0, tidx,
                                                sy_base, peer_landed, peer_delta, consumers)
            self.delay("consumer", "wgmma_wait", "before")
            self.wait_group(0)
            self.delay("consumer", "wgmma_wait", "after")
            self.cluster_y_free(g + steps - 1, rank, peer)
            self.epilogue(acc, tCcC, m_ptrs[slot, 2], m, n, m0, n0)
            self.poison_accumulator(acc)
            g += steps

    def cluster_y_landed(self, b):
        """``y_cluster_decode``: this CTA's landed[b] mbarrier (a pointer)."""
        return self.smem_storage.ycl_bars.data_ptr() + b

    def cluster_y_peer_landed(self, peer_landed0, b):
        """``y_cluster_decode``: the peer's landed[b] (a shared::cluster address), from its
        landed[0] (``peer_landed0``, mapped once per kernel)."""
        return peer_landed0 + cfgmod.MBARRIER_BYTES * b

    def cluster_y_free_bar(self, b):
        """``y_cluster_decode``: this CTA's free[b] mbarrier (a pointer), after the landed ones."""
        return self.smem_storage.ycl_bars.data_ptr() + cfgmod.Y_CLUSTER_BUFFERS + b

    @cute.jit
    def cluster_y_free(self, gs: cutlass.Int32, rank: cutlass.Int32, peer: cutlass.Int32):
        """``y_cluster_decode``, after the wgmma of sub-block ``gs`` retired in this warp: if the
        peer filled its buffer, this warp arrives on the peer's free[buffer of gs]."""
        if cfgmod.y_cluster_filler(gs) != rank:
            cute.arch.sync_warp()
            self.delay("consumer", "fp16_release", "before")
            if cute.arch.lane_idx() == 0:
                cute.arch.mbarrier_arrive(self.cluster_y_free_bar(cfgmod.y_cluster_buffer(gs)), peer)
            self.delay("consumer", "fp16_release", "after")

    @cute.jit
    def cluster_y_fill(self, ga: cutlass.Int32, sb: cutlass.Constexpr, y_stage, y_sf_row0, tidx, sy_base,
                       peer_landed: cutlass.Int32, peer_delta: cutlass.Int32, consumers):
        """``y_cluster_decode``: this CTA fills sub-block ``ga`` (K sub-block ``sb`` of the raw
        stage ``y_stage``) into its Y buffer of both CTAs (see :meth:`consume_cluster_y`);
        ``peer_landed``: the peer's landed[0] (shared::cluster address)."""
        ba = cfgmod.y_cluster_buffer(ga)
        # the peer retired its wgmma of ga - B on its copy (parity trick: the first use passes)
        self.delay("consumer", "bar_reuse", "before")
        cute.arch.mbarrier_wait(self.cluster_y_free_bar(ba), cfgmod.y_cluster_free_parity(ga))
        # every warp here retired its wgmma of ga - B
        consumers.arrive_and_wait()
        self.delay("consumer", "bar_reuse", "after")
        self.delay("consumer", "decode", "before")
        bulk = self.config.y_cluster_copy == "bulk"
        if cutlass.const_expr(not self.ablates("y_dequant")):
            units = self.y_rs_units(tidx, y_stage, sy_base + ba * self.y_buf_bytes, y_sf_row0, sb)
            if cutlass.const_expr(bulk):
                dequant_y_units_rs(units, self.config.operand_exp_shift)  # this CTA's copy only
            else:
                # the peer's copy by st.async, each 16 bytes counted on the peer's landed[ba]
                dequant_y_units_rs(units, self.config.operand_exp_shift,
                                   (peer_delta, self.cluster_y_peer_landed(peer_landed, ba)))
        self.delay("consumer", "fence", "before")
        cute.arch.fence_proxy("async.shared", space="cta")
        self.delay("consumer", "fence", "after")
        consumers.arrive_and_wait()  # this CTA's copy complete for its own wgmmas (and the copy engine)
        self.delay("consumer", "bar_dequant", "after")
        if cutlass.const_expr(bulk):
            # the peer's copy: the whole buffer by the copy engine, its bytes counted on the peer's
            # landed[ba]. The source is read later, asynchronously: this CTA refills ba only after
            # the peer's free[ba] arrivals, which follow its landed[ba] wait (the copy complete)
            if tidx == 0:
                src = sy_base + ba * self.y_buf_bytes
                bulk_copy_to_peer(src + peer_delta, src, self.y_buf_bytes, self.cluster_y_peer_landed(peer_landed, ba))

    @cute.jit
    def warp_release(self, fp16_pipe, state):
        """Release ``state``'s fp16 buffer once per warp (the empty barrier counts warps).
        The ``no_y_ring`` ablation (prepass builds, whose only fp16 ring is Y's) releases none."""
        if cutlass.const_expr(self.ablates("y_ring")):
            return
        self.check_reuse(state.index, None, 0)
        cute.arch.sync_warp()
        self.delay("consumer", "fp16_release", "before")
        if cutlass.const_expr(self.cluster != 1):
            # lane r arrives on cluster rank r's empty barrier (PipelineTmaAsync's signalling for
            # a cluster layout, through the cluster-mapped address): lane 1 here, lane 0 below
            if cute.arch.lane_idx() == 1:
                fp16_pipe.consumer_release(state)
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

    @cute.jit
    def streamk_store(self, acc, tidx: cutlass.Int32, m_sizes: cute.Tensor):
        """stream_k, the consumer threads after a piece that hands on (every wgmma retired): the
        fp32 accumulators to the partial of the boundary at this CTA's index + 1 (16-byte chunk j
        of thread t at (j x threads + t) x 16), the consumers' barrier, then one thread publishes
        it (fence.acq_rel.gpu, red.release.gpu: CLAIMED + 1 = PUBLISHED)."""
        cta, _, _ = cute.arch.block_idx()
        b = cutlass.Int32(cta) + 1
        base = self.streamk_partial(m_sizes, b)
        for j in cutlass.range_constexpr(cute.size(acc) // 4):
            st_global_v4_f32(base + cutlass.Int64(j * self.consumer_threads + tidx) * 16,
                             [acc[4 * j + i] for i in range(4)])
        pipeline.NamedBarrier(barrier_id=cfgmod.STREAMK_BARRIER_ID, num_threads=self.consumer_threads).arrive_and_wait()
        if tidx == 0:
            arrive_release_gpu(self.streamk_state(m_sizes, b), cutlass.Int32(STREAMK_PUBLISHED - STREAMK_CLAIMED))

    @cute.jit
    def streamk_wait(self, tidx: cutlass.Int32, m_sizes: cute.Tensor):
        """stream_k, the consumer threads at a piece that continues the partial of the boundary at
        this CTA's index: one thread waits until it is PUBLISHED (ld.acquire.gpu) and sets the word
        back to IDLE (nobody else touches it this launch), then the consumers' barrier; the
        partial is read by :meth:`streamk_fill` after it."""
        cta, _, _ = cute.arch.block_idx()
        if tidx == 0:
            word = self.streamk_state(m_sizes, cutlass.Int32(cta))
            wait_geq_acquire_gpu(word, cutlass.Int32(STREAMK_PUBLISHED))
            store_relaxed_gpu(word, cutlass.Int32(STREAMK_IDLE))
        pipeline.NamedBarrier(barrier_id=cfgmod.STREAMK_BARRIER_ID, num_threads=self.consumer_threads).arrive_and_wait()

    def streamk_fill(self, acc, tidx, m_sizes, load):
        """stream_k, every piece's start (in place of ``reset_accumulator``): each thread's
        accumulators from the partial of the boundary at this CTA's index (the layout of
        :meth:`streamk_store`) when ``load`` != 0 (after :meth:`streamk_wait`), zeros otherwise,
        by predicated loads. Traced inline."""
        cta, _, _ = cute.arch.block_idx()
        base = self.streamk_partial(m_sizes, cutlass.Int32(cta))
        for j in range(cute.size(acc) // 4):
            vals = ld_global_cg_v4_f32_or_zero(base + cutlass.Int64(j * self.consumer_threads + tidx) * 16, load)
            for i in range(4):
                acc[4 * j + i] = vals[i]
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
        if self.y_per_wg:
            rows = 64 * self.pitch
            self.poison_region(stage + self.off_x + (tidx // 128) * rows, rows, wtid, 128)
        else:
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
        if self.y_per_wg:
            self.check_reuse(ybuf0 + buf, (self.hb_warp // 4) * 4 if self.checks else 0, 4)
        else:
            self.check_reuse(buf, 0, self.consumer_warps)
        if self.y_per_wg:
            self.poison_region(sy_base + (ybuf0 + buf) * self.y_buf_bytes, self.y_buf_bytes, wtid, 128)
            consumers.arrive_and_wait()
            return
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
        if self.ablates("dequant"):
            return
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

    def x_raw_into(self, raw_regs, tidx, stage, x_sf_row0, sb: int):
        """``x_prefetch``: this thread's raw X bytes and scale bytes of sub-block ``sb`` into
        ``raw_regs`` (X_RAW_REGS registers of their own; :meth:`x_decode` decodes them)."""
        if self.ablates("x_dequant"):
            return
        raws, sfs = self.x_raw_addresses(tidx, stage, x_sf_row0, sb)
        for i, word in enumerate(load_x_raw_rs(raws[0], raws[1], sfs[0], sfs[1])):
            raw_regs[i] = word

    def x_decode(self, thr_mma, raw_regs):
        """``x_prefetch``: the X fragment from :meth:`x_raw_into`'s registers (no shared access)."""
        if self.ablates("x_dequant"):
            return self.x_fragment(thr_mma, None, None, None, 0)
        words = decode_x_raw_rs([raw_regs[i] for i in range(X_RAW_REGS)], self.config.operand_exp_shift)
        return self.x_fragment_from_words(thr_mma, words)

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

    @cute.jit
    def dequant_y_rs_ragged(self, tidx: cutlass.Int32, stage: cutlass.Int32, y_dst: cutlass.Int32,
                            y_sf_row0: cutlass.Int32, sb: cutlass.Constexpr):
        """dequant_y_rs where Y's 2*mma_n units are not a multiple of the consumer threads: unit
        ``tidx + u * threads`` if it exists, one unit per asm block (warp-uniform: units come in
        runs of 32 threads)."""
        units = self.mma_n * 2
        for u in cutlass.range_constexpr((units + self.dequant_threads - 1) // self.dequant_threads):
            unit = tidx + u * self.dequant_threads
            if unit < units:
                dequant_y_units_rs([self.y_rs_unit(unit, stage, y_dst, y_sf_row0, sb)], self.config.operand_exp_shift)

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
        if not self.ablates("mma"):
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
