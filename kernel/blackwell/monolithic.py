"""Monolithic kernel: 128 threads, one output tile per CTA, no warp roles beyond warp 0.

The design of the seed diff's `+` side (shared/seeds/submission_402102.diff), carried to any
group count and run-time shapes:
CTA c computes global tile c (grid = total tiles, ``make_plan(max_ctas=None)``). Warp 0 writes
the group's TMA descriptors into the CTA's own workspace entry, then issues both the TMA loads
and the MMAs, keeping up to ``num_ab_stages`` K tiles in flight; then all four warps run the
epilogue on the single accumulator stage.
"""

from typing import Tuple

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline

from kernel.blackwell.common import PTR_C, GroupedGemmBase, tcgen05_fence_after_sync, tcgen05_fence_before_sync

ISSUE_WARP = 0  # TMA + MMA issue, TMEM allocation
TMEM_ALLOC_BARRIER = 1


class MonolithicKernel(GroupedGemmBase):
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
        stages = self.num_ab_stages
        tile_k = self.tile_mnk[2]
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        tidx, _, _ = cute.arch.thread_idx()
        cta, _, _ = cute.arch.block_idx()

        # This CTA's tile, located exactly as LaunchPlan.locate does.
        tile = cutlass.Int32(cta)
        slot, group_start, _, m, n, k, tiles_m = self.locate_group(tile_prefix, sizes, tile)
        m_block, n_block = self.tile_blocks(tile, group_start, tiles_m)
        k_tiles = k // tile_k

        a_smem_staged, b_smem_staged, sfa_smem_staged, sfb_smem_staged = smem_layouts
        smem_tensors, ab_pipeline, acc_pipeline, tmem = self.setup_shared(
            a_smem_staged,
            b_smem_staged,
            sfa_smem_staged,
            sfb_smem_staged,
            acc_consumer_threads=self.threads_per_cta,
            tmem_alloc_barrier_id=TMEM_ALLOC_BARRIER,
            tmem_barrier_threads=self.threads_per_cta,
            tmem_allocator_warp=ISSUE_WARP,
        )
        sA, sB, sSFA, sSFB = smem_tensors
        smem_stages, global_parts, tCrA, tCrB, tCtAcc_fake = self.partition_operands(
            tiled_mma, tma_atoms, global_tensors, smem_tensors
        )
        acc_base, tCtAcc_staged = self.allocate_accumulators(tmem, tCtAcc_fake.layout)

        # ---------------------------------------------------------------- warp 0: TMA + MMA
        if warp_idx == ISSUE_WARP:
            self.write_group_tensormaps(tma_atoms, tensormaps, cta, 0, pointers, slot, m, n, k, ISSUE_WARP)
            self.acquire_tensormaps(tensormaps, cta, 0)
            descriptors = self.descriptor_ptrs(tensormaps, cta, 0)
            global_tiles = self.tile_sources(global_parts, m_block, n_block)
            tCtSFA, tCtSFB, s2t_sfa, s2t_sfb = self.scale_factor_tmem(
                tiled_mma, acc_base, sSFA, sSFB, sfa_smem_staged, sfb_smem_staged
            )

            load_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, stages)
            mma_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, stages)
            acc_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.num_acc_stages)
            acc_pipeline.producer_acquire(acc_state)
            tCtAcc = tCtAcc_staged[(None, None, None, acc_state.index)]

            # Prologue: fill the pipeline.
            prologue = k_tiles
            if prologue > stages:
                prologue = cutlass.Int32(stages)
            for k_tile in cutlass.range(prologue, unroll=1):
                ab_pipeline.producer_acquire(load_state)
                self.load_k_tile(
                    tma_atoms, global_tiles, smem_stages, descriptors, k_tile, load_state.index,
                    ab_pipeline.producer_get_barrier(load_state),
                )
                load_state.advance()
            # Steady state: MMA on K tile t, then refill the stage MMA t - lag has released
            # (lag 1 keeps the MMA of t queued behind t - 1 while the refill waits; one stage
            # has nothing to overlap, so it refills its only stage right away).
            lag = 1 if stages > 1 else 0
            for k_tile in cutlass.range(k_tiles, unroll=1):
                ab_pipeline.consumer_wait(mma_state)
                self.mma_k_tile(tiled_mma, tCtAcc, tCrA, tCrB, tCtSFA, tCtSFB, s2t_sfa, s2t_sfb, mma_state.index, k_tile)
                ab_pipeline.consumer_release(mma_state)
                mma_state.advance()
                refill = k_tile - lag + stages
                if k_tile >= lag and refill < k_tiles:
                    ab_pipeline.producer_acquire(load_state)
                    self.load_k_tile(
                        tma_atoms, global_tiles, smem_stages, descriptors, refill, load_state.index,
                        ab_pipeline.producer_get_barrier(load_state),
                    )
                    load_state.advance()
            acc_pipeline.producer_commit(acc_state)

        # ---------------------------------------------------------------- all warps: epilogue
        tiled_copy_t2r, thr_copy_t2r, tTR_tAcc = self.epilogue_partitions(tidx, tCtAcc_staged)
        epi_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.num_acc_stages)
        self.store_tile(
            tiled_copy_t2r, thr_copy_t2r, tTR_tAcc, acc_pipeline, epi_state, pointers[slot, PTR_C], m, n, m_block, n_block
        )

        tmem.relinquish_alloc_permit()
        tcgen05_fence_before_sync()
        cute.arch.barrier()
        tcgen05_fence_after_sync()
        tmem.free(acc_base)
