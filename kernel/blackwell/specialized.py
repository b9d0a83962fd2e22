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

TMEM_ALLOC_BARRIER = 1  # epilogue warps + MMA warp wait for the TMEM address
EPILOGUE_BARRIER = 2  # epilogue warps, before freeing TMEM


class SpecializedKernel(GroupedGemmBase):
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
        tile_m, tile_n, tile_k = self.tile_mnk
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        tidx, _, _ = cute.arch.thread_idx()
        cta, _, _ = cute.arch.block_idx()
        num_ctas, _, _ = cute.arch.grid_dim()

        # This CTA's tiles: [first, end) with stride `step` (kernel.plan.LaunchPlan.cta_tiles).
        total_tiles = tile_prefix[G]
        first = cutlass.Int32(cta)
        end = total_tiles
        step = cutlass.Int32(num_ctas)
        if cutlass.const_expr(self.config.schedule == "contiguous"):
            per_cta = (total_tiles + num_ctas - 1) // num_ctas
            first = cta * per_cta
            end = first + per_cta
            if end > total_tiles:
                end = total_tiles
            step = cutlass.Int32(1)

        storage_type = make_shared_storage(
            self.num_ab_stages, self.num_acc_stages, a_smem_staged, b_smem_staged, sfa_smem_staged, sfb_smem_staged
        )
        storage = SmemAllocator().allocate(storage_type)
        sA = storage.sA.get_tensor(a_smem_staged.outer, swizzle=a_smem_staged.inner)
        sB = storage.sB.get_tensor(b_smem_staged.outer, swizzle=b_smem_staged.inner)
        sSFA = storage.sSFA.get_tensor(sfa_smem_staged)
        sSFB = storage.sSFB.get_tensor(sfb_smem_staged)

        ab_pipeline = pipeline.PipelineTmaUmma.create(
            barrier_storage=storage.ab_mbar.data_ptr(),
            num_stages=self.num_ab_stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 1),
            tx_count=self.smem.stage_bytes,
        )
        acc_pipeline = pipeline.PipelineUmmaAsync.create(
            barrier_storage=storage.acc_mbar.data_ptr(),
            num_stages=self.num_acc_stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32 * cfg.EPILOGUE_WARPS),
        )
        tmem = TmemAllocator(
            storage.tmem_holding_buf.ptr,
            barrier_for_retrieve=pipeline.NamedBarrier(
                barrier_id=TMEM_ALLOC_BARRIER, num_threads=32 * (cfg.EPILOGUE_WARPS + 1)
            ),
            allocator_warp_id=0,
        )

        # Global tiles -> MMA partitions -> TMA partitions (coordinates only: the extents that
        # bound the loads live in the per-group descriptors).
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

        tma_atoms = (tma_atom_a, tma_atom_b, tma_atom_sfa, tma_atom_sfb)

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
                    slot = group_search(tile_prefix, tile, G)
                    group_start = tile_prefix[slot]
                    group_end = tile_prefix[slot + 1]
                    m = sizes[slot, 0]
                    n = sizes[slot, 1]
                    k = sizes[slot, 2]
                    tiles_m = (m + tile_m - 1) // tile_m
                    k_tiles = k // tile_k
                    self.write_group_tensormaps(tma_atoms, tensormaps, cta, slot, pointers, slot, m, n, k, cfg.TMA_WARP)
                    self.acquire_tensormaps(tensormaps, cta, slot)
                descriptors = self.descriptor_ptrs(tensormaps, cta, slot)
                rest = tile - group_start
                n_block = rest // tiles_m
                m_block = rest - n_block * tiles_m
                global_tiles = (
                    tAgA[(None, m_block, None, 0)],
                    tBgB[(None, n_block, None, 0)],
                    tAgSFA[(None, m_block, None, 0)],
                    tBgSFB[(None, n_block, None, 0)],
                )
                smem_stages = (tAsA, tBsB, tAsSFA, tBsSFB)
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
            tmem.wait_for_alloc()
            tcgen05_fence_after_sync()
            acc_base = tmem.retrieve_ptr(ACC_DTYPE)
            tCtAcc_staged = cute.make_tensor(acc_base, tCtAcc_fake.layout)
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
            tmem.allocate(self.tmem.alloc_columns)
            tcgen05_fence_before_sync()
            tmem.wait_for_alloc()
            tcgen05_fence_after_sync()
            acc_base = tmem.retrieve_ptr(ACC_DTYPE)
            tCtAcc_staged = cute.make_tensor(acc_base, tCtAcc_fake.layout)
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
                    slot = group_search(tile_prefix, tile, G)
                    group_start = tile_prefix[slot]
                    group_end = tile_prefix[slot + 1]
                    m = sizes[slot, 0]
                    n = sizes[slot, 1]
                    tiles_m = (m + tile_m - 1) // tile_m
                    c_address = pointers[slot, PTR_C]
                rest = tile - group_start
                n_block = rest // tiles_m
                m_block = rest - n_block * tiles_m
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
