"""Warp-specialized persistent kernel: 4 epilogue warps, 1 MMA warp, 1 TMA warp (192 threads).

CTA c of the persistent grid runs the tiles ``plan.cta_tiles(c)`` (contiguous range or strided,
by ``config.schedule``), in increasing order. All three roles walk the same tile sequence and
locate every tile themselves (binary search over the tile prefix sums, M block fastest), so no
per-tile metadata crosses roles; the roles meet only at the two pipelines:

* A/B pipeline (``num_ab_stages`` smem stages): TMA warp -> MMA warp, mbarrier transaction
  counts; the MMA warp frees a stage with tcgen05.commit.
* accumulator pipeline (``num_acc_stages`` TMEM buffers): MMA warp -> epilogue warps.

TMA descriptors: the workspace holds one descriptor set per (CTA, group slot). Slots only grow
along a CTA's tile sequence, so the TMA warp writes each entry at most once per launch, on the
first tile of that group; a descriptor is never rewritten while an earlier TMA load may still be
reading it (the seed rewrote one set per CTA in place, racing its own in-flight loads).
"""


from typing import Tuple

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline

from kernel.blackwell import config as cfg
from kernel.blackwell.common import (
    PTR_C,
    GroupedGemmBase,
    tcgen05_fence_after_sync,
    tcgen05_fence_before_sync,
)
from kernel.device_schedule import cta_tile_range, group_search

TMEM_ALLOC_BARRIER = 1  # epilogue warps + MMA warp wait for the TMEM address
EPILOGUE_BARRIER = 2  # epilogue warps, before freeing TMEM


class SpecializedKernel(GroupedGemmBase):
    @cute.jit
    def warp_roles(
        self,
        tiled_mma: cute.TiledMma,
        tma_atoms: Tuple,  # (A, B, SFA, SFB) TMA atoms
        global_tensors: Tuple,  # (mA, mB, mSFA, mSFB): TMA coordinate tensors
        smem_layouts: Tuple,  # (A, B, SFA, SFB) staged smem layouts
        sizes: cute.Tensor,
        tile_prefix: cute.Tensor,
        pointers: cute.Tensor,
        tensormaps: cute.Tensor,
    ):
        G = self.num_groups
        tile_k = self.tile_mnk[2]
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        tidx, _, _ = cute.arch.thread_idx()
        cta, _, _ = cute.arch.block_idx()

        # This CTA's tiles: [first, end) with stride `step` (kernel.plan.LaunchPlan.cta_tiles).
        total_tiles = tile_prefix[G]
        first, end, step = cta_tile_range(total_tiles, self.config.schedule)

        a_smem_staged, b_smem_staged, sfa_smem_staged, sfb_smem_staged = smem_layouts
        smem_tensors, ab_pipeline, acc_pipeline, tmem = self.setup_shared(
            a_smem_staged,
            b_smem_staged,
            sfa_smem_staged,
            sfb_smem_staged,
            acc_consumer_threads=32 * cfg.EPILOGUE_WARPS,
            tmem_alloc_barrier_id=TMEM_ALLOC_BARRIER,
            tmem_barrier_threads=32 * (cfg.EPILOGUE_WARPS + 1),
            tmem_allocator_warp=0,
        )
        sA, sB, sSFA, sSFB = smem_tensors
        smem_stages, global_parts, tCrA, tCrB, tCtAcc_fake = self.partition_operands(
            tiled_mma, tma_atoms, global_tensors, smem_tensors
        )

        # ---------------------------------------------------------------- TMA producer warp
        if warp_idx == cfg.TMA_WARP:
            ab_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.num_ab_stages)
            slot = cutlass.Int32(0)
            group_start = cutlass.Int32(0)
            group_end = cutlass.Int32(0)
            tiles_m = cutlass.Int32(1)
            k_tiles = cutlass.Int32(0)
            tile = first
            while tile < end:
                if tile >= group_end:
                    slot, group_start, group_end, m, n, k, tiles_m = self.locate_group(tile_prefix, sizes, tile)
                    k_tiles = k // tile_k
                    self.write_group_tensormaps(tma_atoms, tensormaps, cta, slot, pointers, slot, m, n, k, cfg.TMA_WARP)
                    self.acquire_tensormaps(tensormaps, cta, slot)
                descriptors = self.descriptor_ptrs(tensormaps, cta, slot)
                m_block, n_block = self.tile_blocks(tile, group_start, tiles_m)
                global_tiles = self.tile_sources(global_parts, m_block, n_block)
                for k_tile in cutlass.range(k_tiles, unroll=1):
                    ab_pipeline.producer_acquire(ab_state)
                    self.load_k_tile(
                        tma_atoms,
                        global_tiles,
                        smem_stages,
                        descriptors,
                        k_tile,
                        ab_state.index,
                        ab_pipeline.producer_get_barrier(ab_state),
                    )
                    ab_state.advance()
                tile += step
            ab_pipeline.producer_tail(ab_state)

        # ---------------------------------------------------------------- MMA warp
        if warp_idx == cfg.MMA_WARP:
            acc_base, tCtAcc_staged = self.retrieve_accumulators(tmem, tCtAcc_fake.layout)
            tCtSFA, tCtSFB, s2t_sfa, s2t_sfb = self.scale_factor_tmem(
                tiled_mma, acc_base, sSFA, sSFB, sfa_smem_staged, sfb_smem_staged
            )

            ab_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.num_ab_stages)
            acc_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.num_acc_stages)
            group_end = cutlass.Int32(0)
            k_tiles = cutlass.Int32(0)
            tile = first
            while tile < end:
                if tile >= group_end:
                    slot = group_search(tile_prefix, tile, G)
                    group_end = tile_prefix[slot + 1]
                    k_tiles = sizes[slot, 2] // tile_k
                acc_pipeline.producer_acquire(acc_state)
                tcgen05_fence_after_sync()  # the epilogue's TMEM reads of this stage are done
                tCtAcc = tCtAcc_staged[(None, None, None, acc_state.index)]
                for k_tile in cutlass.range(k_tiles, unroll=1):
                    ab_pipeline.consumer_wait(ab_state)
                    self.mma_k_tile(tiled_mma, tCtAcc, tCrA, tCrB, tCtSFA, tCtSFB, s2t_sfa, s2t_sfb, ab_state.index, k_tile)
                    ab_pipeline.consumer_release(ab_state)
                    ab_state.advance()
                acc_pipeline.producer_commit(acc_state)
                acc_state.advance()
                tile += step
            acc_pipeline.producer_tail(acc_state)

        # ---------------------------------------------------------------- epilogue warps
        if warp_idx < cfg.EPILOGUE_WARPS:
            acc_base, tCtAcc_staged = self.allocate_accumulators(tmem, tCtAcc_fake.layout)
            tiled_copy_t2r, thr_copy_t2r, tTR_tAcc = self.epilogue_partitions(tidx, tCtAcc_staged)

            acc_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.num_acc_stages)
            group_start = cutlass.Int32(0)
            group_end = cutlass.Int32(0)
            tiles_m = cutlass.Int32(1)
            m = cutlass.Int32(0)
            n = cutlass.Int32(0)
            c_address = cutlass.Int64(0)
            tile = first
            while tile < end:
                if tile >= group_end:
                    slot, group_start, group_end, m, n, _, tiles_m = self.locate_group(tile_prefix, sizes, tile)
                    c_address = pointers[slot, PTR_C]
                m_block, n_block = self.tile_blocks(tile, group_start, tiles_m)
                self.store_tile(
                    tiled_copy_t2r, thr_copy_t2r, tTR_tAcc, acc_pipeline, acc_state, c_address, m, n, m_block, n_block
                )
                acc_state.advance()
                tile += step

            tmem.relinquish_alloc_permit()
            tcgen05_fence_before_sync()
            pipeline.NamedBarrier(barrier_id=EPILOGUE_BARRIER, num_threads=32 * cfg.EPILOGUE_WARPS).arrive_and_wait()
            tcgen05_fence_after_sync()
            tmem.free(acc_base)
