"""Monolithic kernel: 128 threads, one output tile per CTA, no warp roles beyond warp 0.

The design of the seed diff's `+` side, carried to any group count and run-time shapes:
CTA c computes global tile c (grid = total tiles, ``make_plan(max_ctas=None)``). Warp 0 writes
the group's TMA descriptors into the CTA's own workspace entry, then issues both the TMA loads
and the MMAs, keeping up to ``num_ab_stages`` K tiles in flight; then all four warps run the
epilogue on the single accumulator stage.
"""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.blockscaled_layout as blockscaled_utils
from cutlass.cute.nvgpu import cpasync
from cutlass.memory import SmemAllocator, TmemAllocator

from kernel.blackwell import config as cfg
from kernel.blackwell.common import (
    ACC_DTYPE,
    PTR_C,
    SF_DTYPE,
    GroupedGemmBase,
    group_search,
    make_shared_storage,
    s2t_copy_and_partition,
    tcgen05_fence_after_sync,
    tcgen05_fence_before_sync,
)

ISSUE_WARP = 0  # TMA + MMA issue, TMEM allocation
TMEM_ALLOC_BARRIER = 1


class MonolithicKernel(GroupedGemmBase):
    @cute.kernel
    def kernel(
        self,
        tiled_mma: cute.TiledMma,
        tma_atom_a: cute.CopyAtom,
        mA: cute.Tensor,
        tma_atom_b: cute.CopyAtom,
        mB: cute.Tensor,
        tma_atom_sfa: cute.CopyAtom,
        mSFA: cute.Tensor,
        tma_atom_sfb: cute.CopyAtom,
        mSFB: cute.Tensor,
        sizes: cute.Tensor,
        tile_prefix: cute.Tensor,
        pointers: cute.Tensor,
        tensormaps: cute.Tensor,
        a_smem_staged: cute.ComposedLayout,
        b_smem_staged: cute.ComposedLayout,
        sfa_smem_staged: cute.Layout,
        sfb_smem_staged: cute.Layout,
    ):
        G = self.num_groups
        stages = self.num_ab_stages
        tile_m, tile_n, tile_k = self.tile_mnk
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        tidx, _, _ = cute.arch.thread_idx()
        cta, _, _ = cute.arch.block_idx()

        # This CTA's tile, located exactly as LaunchPlan.locate does.
        tile = cutlass.Int32(cta)
        slot = group_search(tile_prefix, tile, G)
        m = sizes[slot, 0]
        n = sizes[slot, 1]
        k = sizes[slot, 2]
        tiles_m = (m + tile_m - 1) // tile_m
        rest = tile - tile_prefix[slot]
        n_block = rest // tiles_m
        m_block = rest - n_block * tiles_m
        k_tiles = k // tile_k

        storage_type = make_shared_storage(
            stages, self.num_acc_stages, a_smem_staged, b_smem_staged, sfa_smem_staged, sfb_smem_staged
        )
        storage = SmemAllocator().allocate(storage_type)
        sA = storage.sA.get_tensor(a_smem_staged.outer, swizzle=a_smem_staged.inner)
        sB = storage.sB.get_tensor(b_smem_staged.outer, swizzle=b_smem_staged.inner)
        sSFA = storage.sSFA.get_tensor(sfa_smem_staged)
        sSFB = storage.sSFB.get_tensor(sfb_smem_staged)

        ab_pipeline = pipeline.PipelineTmaUmma.create(
            barrier_storage=storage.ab_mbar.data_ptr(),
            num_stages=stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 1),
            tx_count=self.smem.stage_bytes,
        )
        acc_pipeline = pipeline.PipelineUmmaAsync.create(
            barrier_storage=storage.acc_mbar.data_ptr(),
            num_stages=self.num_acc_stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.threads_per_cta),
        )
        tmem = TmemAllocator(
            storage.tmem_holding_buf.ptr,
            barrier_for_retrieve=pipeline.NamedBarrier(barrier_id=TMEM_ALLOC_BARRIER, num_threads=self.threads_per_cta),
            allocator_warp_id=ISSUE_WARP,
        )

        thr_mma = tiled_mma.get_slice(0)
        gA = cute.local_tile(mA, cute.slice_(self.tile_mnk, (None, 0, None)), (None, None, None))
        gB = cute.local_tile(mB, cute.slice_(self.tile_mnk, (0, None, None)), (None, None, None))
        gSFA = cute.local_tile(mSFA, cute.slice_(self.tile_mnk, (None, 0, None)), (None, None, None))
        gSFB = cute.local_tile(mSFB, cute.slice_(self.tile_mnk, (0, None, None)), (None, None, None))
        tAsA, tAgA = cpasync.tma_partition(
            tma_atom_a, 0, cute.make_layout(1), cute.group_modes(sA, 0, 3), cute.group_modes(thr_mma.partition_A(gA), 0, 3)
        )
        tBsB, tBgB = cpasync.tma_partition(
            tma_atom_b, 0, cute.make_layout(1), cute.group_modes(sB, 0, 3), cute.group_modes(thr_mma.partition_B(gB), 0, 3)
        )
        tAsSFA, tAgSFA = cpasync.tma_partition(
            tma_atom_sfa,
            0,
            cute.make_layout(1),
            cute.group_modes(sSFA, 0, 3),
            cute.group_modes(thr_mma.partition_A(gSFA), 0, 3),
        )
        tBsSFB, tBgSFB = cpasync.tma_partition(
            tma_atom_sfb,
            0,
            cute.make_layout(1),
            cute.group_modes(sSFB, 0, 3),
            cute.group_modes(thr_mma.partition_B(gSFB), 0, 3),
        )
        tAsSFA = cute.filter_zeros(tAsSFA)
        tAgSFA = cute.filter_zeros(tAgSFA)
        tBsSFB = cute.filter_zeros(tBsSFB)
        tBgSFB = cute.filter_zeros(tBgSFB)

        tCrA = tiled_mma.make_fragment_A(sA)
        tCrB = tiled_mma.make_fragment_B(sB)
        acc_shape = tiled_mma.partition_shape_C(self.tile_mnk[:2])
        tCtAcc_fake = tiled_mma.make_fragment_C(cute.append(acc_shape, self.num_acc_stages))

        tmem.allocate(self.tmem.alloc_columns)
        tcgen05_fence_before_sync()
        tmem.wait_for_alloc()
        tcgen05_fence_after_sync()
        acc_base = tmem.retrieve_ptr(ACC_DTYPE)
        tCtAcc_staged = cute.make_tensor(acc_base, tCtAcc_fake.layout)

        tma_atoms = (tma_atom_a, tma_atom_b, tma_atom_sfa, tma_atom_sfb)

        # ---------------------------------------------------------------- warp 0: TMA + MMA
        if warp_idx == ISSUE_WARP:
            self.write_group_tensormaps(tma_atoms, tensormaps, cta, 0, pointers, slot, m, n, k, ISSUE_WARP)
            self.acquire_tensormaps(tensormaps, cta, 0)
            descriptors = self.descriptor_ptrs(tensormaps, cta, 0)
            global_tiles = (
                tAgA[(None, m_block, None, 0)],
                tBgB[(None, n_block, None, 0)],
                tAgSFA[(None, m_block, None, 0)],
                tBgSFB[(None, n_block, None, 0)],
            )
            smem_stages = (tAsA, tBsB, tAsSFA, tBsSFB)

            sf_base = acc_base + self.tmem.acc_columns * self.num_acc_stages
            tCtSFA = cute.make_tensor(
                cute.recast_ptr(sf_base, dtype=SF_DTYPE),
                blockscaled_utils.make_tmem_layout_sfa(
                    tiled_mma, self.tile_mnk, cfg.SF_VEC_SIZE, cute.slice_(sfa_smem_staged, (None, None, None, 0))
                ),
            )
            tCtSFB = cute.make_tensor(
                cute.recast_ptr(sf_base + self.tmem.sfa_columns, dtype=SF_DTYPE),
                blockscaled_utils.make_tmem_layout_sfb(
                    tiled_mma, self.tile_mnk, cfg.SF_VEC_SIZE, cute.slice_(sfb_smem_staged, (None, None, None, 0))
                ),
            )
            s2t_sfa = s2t_copy_and_partition(sSFA, tCtSFA)
            s2t_sfb = s2t_copy_and_partition(sSFB, tCtSFB)

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
