"""What both Blackwell kernels share: the traced host function, the kernel entry point, operand
layouts, shared storage/pipeline/TMEM setup, TMA partitions, group lookup, per-group TMA
descriptors, the scale-factor TMEM copies and the epilogue. The kernel files keep only their
warp roles and loops (``warp_roles``).

Importing this module imports CuTe DSL; ``kernel.blackwell.host`` imports it lazily after it
has fixed the target architecture.

Run-time values (never compile-time constants): every problem size, every pointer, the tile
prefix sums, the total tile count and the CTA count. Compile-time values: the config and the
group count (it sizes the device tables' layouts).
"""


from typing import Tuple

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline
import cutlass.utils.blackwell_helpers as sm100_utils
import cutlass.utils.blockscaled_layout as blockscaled_utils
from cutlass._mlir.dialects import nvvm
from cutlass.cute.nvgpu import OperandMajorMode, cpasync, tcgen05
from cutlass.cutlass_dsl import dsl_user_op
from cutlass.memory import SmemAllocator, TmemAllocator
from cutlass.tensor_utils import TensorMapManager, TensorMapUpdateMode

from kernel.blackwell import config as cfg
from kernel.device_schedule import group_search
from kernel.tables import POINTER_COLUMNS

AB_DTYPE = cutlass.Float4E2M1FN
SF_DTYPE = cutlass.Float8E4M3FN
C_DTYPE = cutlass.Float16
ACC_DTYPE = cutlass.Float32

BYTES_PER_TENSORMAP = 128
NUM_TENSORMAPS = 4  # a, b, sfa, sfb
TENSORMAP_I64 = BYTES_PER_TENSORMAP // 8
PTR_A, PTR_B, PTR_C, PTR_SFA, PTR_SFB = (POINTER_COLUMNS.index(c) for c in ("a", "b", "c", "sfa_blocked", "sfb_blocked"))
# Operand row strides are assumed divisible by this many elements: K is a multiple of the K tile
# (validated on the host), so FP4 rows of K elements are whole 16-byte units.
K_DIVISIBILITY = 32


def tensormap_slots(config: cfg.BlackwellConfig, num_groups: int) -> int:
    """Descriptor sets per CTA in the workspace (see the ``kernel.blackwell.specialized`` docstring)."""
    return num_groups if config.warp_roles == "specialized" else 1


@dsl_user_op
def tcgen05_fence_after_sync(*, loc=None, ip=None) -> None:
    """tcgen05.fence::after_thread_sync: order the tcgen05 ops that follow after a thread sync
    (mbarrier wait, bar.sync) that observed another thread's tcgen05 work or TMEM release."""
    nvvm.tcgen05_fence(nvvm.Tcgen05FenceKind.AFTER_THREAD_SYNC, loc=loc, ip=ip)


@dsl_user_op
def tcgen05_fence_before_sync(*, loc=None, ip=None) -> None:
    """tcgen05.fence::before_thread_sync: order prior tcgen05 ops (TMEM loads) before the thread
    sync (mbarrier arrive, bar.sync) that lets another thread reuse that TMEM."""
    nvvm.tcgen05_fence(nvvm.Tcgen05FenceKind.BEFORE_THREAD_SYNC, loc=loc, ip=ip)


def make_operand_tensors(a_ptr, b_ptr, sfa_ptr, sfb_ptr, m, n, k):
    """Global A, B (K-major FP4) and the blocked scale tensors of one group, for TMA.

    L is always 1; its stride is given the row stride's value (a legal TMA stride that never
    moves, since the L coordinate is always 0) so that no m*k product can overflow int32.
    """
    a_layout = cute.make_layout(
        (m, cute.assume(k, K_DIVISIBILITY), 1),
        stride=(cute.assume(k, K_DIVISIBILITY), 1, cute.assume(k, K_DIVISIBILITY)),
    )
    b_layout = cute.make_layout(
        (n, cute.assume(k, K_DIVISIBILITY), 1),
        stride=(cute.assume(k, K_DIVISIBILITY), 1, cute.assume(k, K_DIVISIBILITY)),
    )
    a = cute.make_tensor(a_ptr, a_layout)
    b = cute.make_tensor(b_ptr, b_layout)
    # ((32, 4, rest_m), (16, 4, rest_k), l): the cuBLAS blocked layout (oracle/layouts.py)
    sfa = cute.make_tensor(sfa_ptr, blockscaled_utils.tile_atom_to_shape_SF(a.shape, cfg.SF_VEC_SIZE))
    sfb = cute.make_tensor(sfb_ptr, blockscaled_utils.tile_atom_to_shape_SF(b.shape, cfg.SF_VEC_SIZE))
    return a, b, sfa, sfb


def gmem_ptr(dtype, address):
    return cute.make_ptr(dtype, address, cute.AddressSpace.gmem, assumed_align=16)


def make_shared_storage(num_ab_stages: int, num_acc_stages: int, a_layout, b_layout, sfa_layout, sfb_layout):
    """The CTA's shared memory: barriers first, then 1024-byte aligned operand buffers."""

    @cute.struct
    class SharedStorage:
        ab_mbar: cute.struct.MemRange[cutlass.Int64, 2 * num_ab_stages]
        acc_mbar: cute.struct.MemRange[cutlass.Int64, 2 * num_acc_stages]
        tmem_holding_buf: cutlass.Int32
        sA: cute.struct.Align[
            cute.struct.MemRange[AB_DTYPE, cute.cosize(a_layout.outer)], cfg.SMEM_ALIGN_BYTES
        ]
        sB: cute.struct.Align[
            cute.struct.MemRange[AB_DTYPE, cute.cosize(b_layout.outer)], cfg.SMEM_ALIGN_BYTES
        ]
        sSFA: cute.struct.Align[cute.struct.MemRange[SF_DTYPE, cute.cosize(sfa_layout)], cfg.SMEM_ALIGN_BYTES]
        sSFB: cute.struct.Align[cute.struct.MemRange[SF_DTYPE, cute.cosize(sfb_layout)], cfg.SMEM_ALIGN_BYTES]

    return SharedStorage


def s2t_copy_and_partition(sSF: cute.Tensor, tSF: cute.Tensor):
    """tcgen05.cp (smem -> TMEM) of the scale factors: the tiled copy and both partitions."""
    tCsSF_compact = cute.filter_zeros(sSF)
    tCtSF_compact = cute.filter_zeros(tSF)
    copy_atom_s2t = cute.make_copy_atom(tcgen05.Cp4x32x128bOp(tcgen05.CtaGroup.ONE), SF_DTYPE)
    tiled_copy_s2t = tcgen05.make_s2t_copy(copy_atom_s2t, tCtSF_compact)
    thr_copy_s2t = tiled_copy_s2t.get_slice(0)
    tCsSF_compact_s2t_ = thr_copy_s2t.partition_S(tCsSF_compact)
    tCsSF_compact_s2t = tcgen05.get_s2t_smem_desc_tensor(tiled_copy_s2t, tCsSF_compact_s2t_)
    tCtSF_compact_s2t = thr_copy_s2t.partition_D(tCtSF_compact)
    return tiled_copy_s2t, tCsSF_compact_s2t, tCtSF_compact_s2t


def check_traced_budget(smem: cfg.SmemBudget, stage_bytes: tuple, storage_bytes: int) -> None:
    """Trace-time check: the layouts the DSL built occupy what kernel.blackwell.config planned."""
    planned = (smem.a_bytes, smem.b_bytes, smem.sfa_bytes, smem.sfb_bytes)
    if tuple(stage_bytes) != planned:
        raise AssertionError(f"smem stage bytes traced {tuple(stage_bytes)} != planned {planned}")
    if storage_bytes != smem.total_bytes:
        raise AssertionError(f"shared storage {storage_bytes} B != planned {smem.arithmetic()}")


class GroupedGemmBase:
    """Host side and device entry shared by the two warp-role variants; subclasses define
    ``warp_roles`` (a ``@cute.jit`` method called by ``kernel``).

    Nothing is stored on ``self`` during tracing: every attribute is set in ``__init__`` from the
    (resolved) config, and the traced function passes what it builds to the kernel as arguments.
    """

    def __init__(self, config: cfg.BlackwellConfig, num_groups: int):
        self.config = config.resolved()
        if not 1 <= num_groups <= cfg.MAX_GROUPS:
            raise ValueError(f"num_groups={num_groups} outside 1..{cfg.MAX_GROUPS}")
        self.num_groups = num_groups
        self.tile_mnk = self.config.tile_mnk
        self.num_ab_stages = self.config.num_ab_stages
        self.num_acc_stages = self.config.num_acc_stages
        self.smem = cfg.smem_budget(self.config)
        self.tmem = cfg.tmem_budget(self.config)
        self.threads_per_cta = cfg.threads_per_cta(self.config)
        self.tensormap_slots = tensormap_slots(self.config, num_groups)
        self.epi_tile = (self.tile_mnk[0], cfg.EPILOGUE_COLUMNS)
        self.num_epi_subtiles = self.tile_mnk[1] // cfg.EPILOGUE_COLUMNS

    # The compiled function's run-time arguments, in order (see kernel.blackwell.host).
    @cute.jit
    def __call__(
        self,
        sizes_ptr: cute.Pointer,  # int32 [G, 4]: (m, n, k, l) per slot
        tile_prefix_ptr: cute.Pointer,  # int32 [G + 1]
        pointers_ptr: cute.Pointer,  # int64 [G, 5]: POINTER_COLUMNS per slot
        tensormap_ptr: cute.Pointer,  # int64 [num_ctas, slots, 4, 16]: TMA descriptor workspace
        num_ctas: cutlass.Int32,
        stream,
    ):
        G = self.num_groups
        tile_m, tile_n, tile_k = self.tile_mnk
        sizes = cute.make_tensor(sizes_ptr, cute.make_layout((G, 4), stride=(4, 1)))
        tile_prefix = cute.make_tensor(tile_prefix_ptr, cute.make_layout((G + 1,), stride=(1,)))
        ncols = len(POINTER_COLUMNS)
        pointers = cute.make_tensor(pointers_ptr, cute.make_layout((G, ncols), stride=(ncols, 1)))
        slots = self.tensormap_slots
        tensormaps = cute.make_tensor(
            tensormap_ptr,
            cute.make_layout(
                (num_ctas, slots, NUM_TENSORMAPS, TENSORMAP_I64),
                stride=(slots * NUM_TENSORMAPS * TENSORMAP_I64, NUM_TENSORMAPS * TENSORMAP_I64, TENSORMAP_I64, 1),
            ),
        )

        tiled_mma = sm100_utils.make_blockscaled_trivial_tiled_mma(
            AB_DTYPE,
            AB_DTYPE,
            OperandMajorMode.K,
            OperandMajorMode.K,
            SF_DTYPE,
            cfg.SF_VEC_SIZE,
            tcgen05.CtaGroup.ONE,
            (tile_m, tile_n),
        )
        mma_tiler = self.tile_mnk
        a_smem_staged = sm100_utils.make_smem_layout_a(tiled_mma, mma_tiler, AB_DTYPE, self.num_ab_stages)
        b_smem_staged = sm100_utils.make_smem_layout_b(tiled_mma, mma_tiler, AB_DTYPE, self.num_ab_stages)
        sfa_smem_staged = blockscaled_utils.make_smem_layout_sfa(tiled_mma, mma_tiler, cfg.SF_VEC_SIZE, self.num_ab_stages)
        sfb_smem_staged = blockscaled_utils.make_smem_layout_sfb(tiled_mma, mma_tiler, cfg.SF_VEC_SIZE, self.num_ab_stages)

        # Template operands: the descriptors are rewritten per group on the device, so only the
        # types, ranks and alignment of these matter; their sizes are run-time placeholders.
        fake = cutlass.Int32(256)
        a0, b0, sfa0, sfb0 = make_operand_tensors(
            gmem_ptr(AB_DTYPE, 0), gmem_ptr(AB_DTYPE, 0), gmem_ptr(SF_DTYPE, 0), gmem_ptr(SF_DTYPE, 0), fake, fake, fake
        )
        cluster_vmnk = cute.tiled_divide(cute.make_layout((1, 1, 1)), (tiled_mma.thr_id.shape,)).shape
        g2s = cpasync.CopyBulkTensorTileG2SOp(tcgen05.CtaGroup.ONE)
        a_smem = cute.slice_(a_smem_staged, (None, None, None, 0))
        b_smem = cute.slice_(b_smem_staged, (None, None, None, 0))
        sfa_smem = cute.slice_(sfa_smem_staged, (None, None, None, 0))
        sfb_smem = cute.slice_(sfb_smem_staged, (None, None, None, 0))
        tma_atom_a, tma_a = cute.nvgpu.make_tiled_tma_atom_A(g2s, a0, a_smem, mma_tiler, tiled_mma, cluster_vmnk)
        tma_atom_b, tma_b = cute.nvgpu.make_tiled_tma_atom_B(g2s, b0, b_smem, mma_tiler, tiled_mma, cluster_vmnk)
        tma_atom_sfa, tma_sfa = cute.nvgpu.make_tiled_tma_atom_A(
            g2s, sfa0, sfa_smem, mma_tiler, tiled_mma, cluster_vmnk, internal_type=cutlass.Int16
        )
        tma_atom_sfb, tma_sfb = cute.nvgpu.make_tiled_tma_atom_B(
            g2s, sfb0, sfb_smem, mma_tiler, tiled_mma, cluster_vmnk, internal_type=cutlass.Int16
        )

        # The byte arithmetic of kernel.blackwell.config is what the traced layouts occupy.
        storage_type = make_shared_storage(
            self.num_ab_stages, self.num_acc_stages, a_smem_staged, b_smem_staged, sfa_smem_staged, sfb_smem_staged
        )
        check_traced_budget(
            self.smem,
            (
                cute.size_in_bytes(AB_DTYPE, a_smem),
                cute.size_in_bytes(AB_DTYPE, b_smem),
                cute.size_in_bytes(SF_DTYPE, sfa_smem),
                cute.size_in_bytes(SF_DTYPE, sfb_smem),
            ),
            storage_type.size_in_bytes(),
        )

        self.kernel(
            tiled_mma,
            tma_atom_a,
            tma_a,
            tma_atom_b,
            tma_b,
            tma_atom_sfa,
            tma_sfa,
            tma_atom_sfb,
            tma_sfb,
            sizes,
            tile_prefix,
            pointers,
            tensormaps,
            a_smem_staged,
            b_smem_staged,
            sfa_smem_staged,
            sfb_smem_staged,
        ).launch(
            grid=(num_ctas, 1, 1),
            block=[self.threads_per_cta, 1, 1],
            cluster=(1, 1, 1),
            smem=self.smem.total_bytes,
            stream=stream,
        )

    # -- the device entry point ----------------------------------------------------------------

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
        """What ``__call__`` launches: the subclass's ``warp_roles``, traced inline (no call in
        the compiled code). The operands go in groups of four, in (A, B, SFA, SFB) order."""
        self.warp_roles(
            tiled_mma,
            (tma_atom_a, tma_atom_b, tma_atom_sfa, tma_atom_sfb),
            (mA, mB, mSFA, mSFB),
            (a_smem_staged, b_smem_staged, sfa_smem_staged, sfb_smem_staged),
            sizes,
            tile_prefix,
            pointers,
            tensormaps,
        )

    # -- device helpers shared by both kernels --------------------------------------------------

    @cute.jit
    def write_group_tensormaps(
        self,
        tma_atoms: Tuple,
        tensormaps: cute.Tensor,
        cta: cutlass.Int32,
        slot_in_workspace: cutlass.Int32,
        pointers: cute.Tensor,
        slot: cutlass.Int32,
        m: cutlass.Int32,
        n: cutlass.Int32,
        k: cutlass.Int32,
        warp_id: cutlass.Constexpr[int],
    ):
        """Build group ``slot``'s four TMA descriptors in workspace entry (cta, slot_in_workspace).

        Run by warp ``warp_id`` only; the caller issues ``fence_tensormap_update`` (acquire)
        before any TMA load that uses them (same warp, so program order covers the rest).
        Each workspace entry is written once per launch (see the kernels), so no TMA load can
        still be reading a descriptor while it is being rewritten.
        """
        manager = TensorMapManager(TensorMapUpdateMode.GMEM, BYTES_PER_TENSORMAP)
        desc = self.tensormap_gmem_ptrs(tensormaps, cta, slot_in_workspace)
        a, b, sfa, sfb = make_operand_tensors(
            gmem_ptr(AB_DTYPE, pointers[slot, PTR_A]),
            gmem_ptr(AB_DTYPE, pointers[slot, PTR_B]),
            gmem_ptr(SF_DTYPE, pointers[slot, PTR_SFA]),
            gmem_ptr(SF_DTYPE, pointers[slot, PTR_SFB]),
            m,
            n,
            k,
        )
        for i in cutlass.range_constexpr(NUM_TENSORMAPS):
            manager.init_tensormap_from_atom(tma_atoms[i], desc[i], warp_id)
        manager.update_tensormap((a, b, sfa, sfb), tma_atoms, desc, warp_id, desc)

    @cute.jit
    def tensormap_gmem_ptrs(self, tensormaps: cute.Tensor, cta: cutlass.Int32, slot_in_workspace: cutlass.Int32):
        manager = TensorMapManager(TensorMapUpdateMode.GMEM, BYTES_PER_TENSORMAP)
        return tuple(
            manager.get_tensormap_ptr(tensormaps[(cta, slot_in_workspace, i, None)].iterator)
            for i in range(NUM_TENSORMAPS)
        )

    @cute.jit
    def acquire_tensormaps(self, tensormaps: cute.Tensor, cta: cutlass.Int32, slot_in_workspace: cutlass.Int32):
        """fence.proxy.tensormap acquire of freshly written descriptors, once per write (it also
        drops stale copies from the descriptor cache: the workspace memory is reused by later
        launches)."""
        manager = TensorMapManager(TensorMapUpdateMode.GMEM, BYTES_PER_TENSORMAP)
        desc = self.tensormap_gmem_ptrs(tensormaps, cta, slot_in_workspace)
        for i in cutlass.range_constexpr(NUM_TENSORMAPS):
            manager.fence_tensormap_update(desc[i])

    @cute.jit
    def descriptor_ptrs(self, tensormaps: cute.Tensor, cta: cutlass.Int32, slot_in_workspace: cutlass.Int32):
        """Generic-address pointers to a workspace entry's descriptors, for the TMA loads."""
        manager = TensorMapManager(TensorMapUpdateMode.GMEM, BYTES_PER_TENSORMAP)
        desc = self.tensormap_gmem_ptrs(tensormaps, cta, slot_in_workspace)
        return tuple(manager.get_tensormap_ptr(d, cute.AddressSpace.generic) for d in desc)

    @cute.jit
    def load_k_tile(
        self,
        tma_atoms: Tuple,
        global_tiles: Tuple,
        smem_stages: Tuple,
        descriptors: Tuple,
        k_tile: cutlass.Int32,
        stage: cutlass.Int32,
        barrier,
    ):
        """The four TMA loads of one K tile (A, B, SFA, SFB) into one pipeline stage."""
        for i in cutlass.range_constexpr(NUM_TENSORMAPS):
            cute.copy(
                tma_atoms[i],
                global_tiles[i][(None, k_tile)],
                smem_stages[i][(None, stage)],
                tma_bar_ptr=barrier,
                tma_desc_ptr=descriptors[i],
            )

    @cute.jit
    def mma_k_tile(
        self,
        tiled_mma: cute.TiledMma,
        tCtAcc: cute.Tensor,
        tCrA: cute.Tensor,
        tCrB: cute.Tensor,
        tCtSFA: cute.Tensor,
        tCtSFB: cute.Tensor,
        s2t_sfa: Tuple,
        s2t_sfb: Tuple,
        stage: cutlass.Int32,
        k_tile: cutlass.Int32,
    ):
        """Scale factors smem -> TMEM, then one block-scaled MMA per 64-wide K block.

        The accumulator is overwritten by the first MMA of the first K tile and accumulated
        into by every other one; the flag is recomputed from the loop indices each time.
        """
        tiled_copy_s2t_sfa, tCsSFA_s2t, tCtSFA_s2t = s2t_sfa
        tiled_copy_s2t_sfb, tCsSFB_s2t, tCtSFB_s2t = s2t_sfb
        cute.copy(tiled_copy_s2t_sfa, tCsSFA_s2t[(None, None, None, None, stage)], tCtSFA_s2t)
        cute.copy(tiled_copy_s2t_sfb, tCsSFB_s2t[(None, None, None, None, stage)], tCtSFB_s2t)
        num_kblocks = cute.size(tCrA, mode=[2])
        for kblock in cutlass.range_constexpr(num_kblocks):
            if cutlass.const_expr(kblock == 0):
                tiled_mma.set(tcgen05.Field.ACCUMULATE, k_tile != 0)
            else:
                tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
            tiled_mma.set(tcgen05.Field.SFA, tCtSFA[(None, None, kblock)].iterator)
            tiled_mma.set(tcgen05.Field.SFB, tCtSFB[(None, None, kblock)].iterator)
            cute.gemm(
                tiled_mma,
                tCtAcc,
                tCrA[(None, None, kblock, stage)],
                tCrB[(None, None, kblock, stage)],
                tCtAcc,
            )

    # Trace-time helpers (plain Python, no dynamic control flow): a call emits its ops inline at
    # the call site, in a fixed order, so a kernel compiles as if they were written out there.

    def setup_shared(
        self,
        a_smem_staged: cute.ComposedLayout,
        b_smem_staged: cute.ComposedLayout,
        sfa_smem_staged: cute.Layout,
        sfb_smem_staged: cute.Layout,
        acc_consumer_threads: int,
        tmem_alloc_barrier_id: int,
        tmem_barrier_threads: int,
        tmem_allocator_warp: int,
    ):
        """Shared storage, the staged smem operand tensors, both pipelines and the TMEM allocator.

        Returns ((sA, sB, sSFA, sSFB), ab_pipeline, acc_pipeline, tmem). The kernels differ only
        in who consumes the accumulator and who waits for the TMEM address (the arguments).
        """
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
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, acc_consumer_threads),
        )
        tmem = TmemAllocator(
            storage.tmem_holding_buf.ptr,
            barrier_for_retrieve=pipeline.NamedBarrier(barrier_id=tmem_alloc_barrier_id, num_threads=tmem_barrier_threads),
            allocator_warp_id=tmem_allocator_warp,
        )
        return (sA, sB, sSFA, sSFB), ab_pipeline, acc_pipeline, tmem

    def partition_operands(self, tiled_mma: cute.TiledMma, tma_atoms: Tuple, global_tensors: Tuple, smem_tensors: Tuple):
        """Global tiles -> MMA partitions -> TMA partitions (coordinates only: the extents that
        bound the loads live in the per-group descriptors), plus the MMA operand fragments.

        Returns (smem_stages, global_parts, tCrA, tCrB, tCtAcc_fake): smem_stages =
        (tAsA, tBsB, tAsSFA, tBsSFB), global_parts = (tAgA, tBgB, tAgSFA, tBgSFB); tCtAcc_fake's
        layout (acc stages appended) is the accumulator's, its address a placeholder.
        """
        tma_atom_a, tma_atom_b, tma_atom_sfa, tma_atom_sfb = tma_atoms
        mA, mB, mSFA, mSFB = global_tensors
        sA, sB, sSFA, sSFB = smem_tensors
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
        return (tAsA, tBsB, tAsSFA, tBsSFB), (tAgA, tBgB, tAgSFA, tBgSFB), tCrA, tCrB, tCtAcc_fake

    @staticmethod
    def tile_sources(global_parts: Tuple, m_block: cutlass.Int32, n_block: cutlass.Int32):
        """The global K-tile sequences (A, B, SFA, SFB) of output tile (m_block, n_block)."""
        tAgA, tBgB, tAgSFA, tBgSFB = global_parts
        return (
            tAgA[(None, m_block, None, 0)],
            tBgB[(None, n_block, None, 0)],
            tAgSFA[(None, m_block, None, 0)],
            tBgSFB[(None, n_block, None, 0)],
        )

    def locate_group(self, tile_prefix: cute.Tensor, sizes: cute.Tensor, tile: cutlass.Int32):
        """The group slot owning ``tile`` and its geometry, as LaunchPlan.locate finds it.

        Returns (slot, group_start, group_end, m, n, k, tiles_m); loads nobody uses are dropped
        by the compiler.
        """
        slot = group_search(tile_prefix, tile, self.num_groups)
        group_start = tile_prefix[slot]
        group_end = tile_prefix[slot + 1]
        m = sizes[slot, 0]
        n = sizes[slot, 1]
        k = sizes[slot, 2]
        tiles_m = (m + self.tile_mnk[0] - 1) // self.tile_mnk[0]
        return slot, group_start, group_end, m, n, k, tiles_m

    @staticmethod
    def tile_blocks(tile: cutlass.Int32, group_start: cutlass.Int32, tiles_m: cutlass.Int32):
        """(m_block, n_block) of ``tile`` inside its group (M block fastest)."""
        rest = tile - group_start
        n_block = rest // tiles_m
        m_block = rest - n_block * tiles_m
        return m_block, n_block

    def retrieve_accumulators(self, tmem, acc_layout):
        """Wait for the TMEM address, then the staged accumulator tensor at its base."""
        tmem.wait_for_alloc()
        tcgen05_fence_after_sync()
        acc_base = tmem.retrieve_ptr(ACC_DTYPE)
        return acc_base, cute.make_tensor(acc_base, acc_layout)

    def allocate_accumulators(self, tmem, acc_layout):
        """Allocate TMEM (the allocator warp), then ``retrieve_accumulators``."""
        tmem.allocate(self.tmem.alloc_columns)
        tcgen05_fence_before_sync()
        return self.retrieve_accumulators(tmem, acc_layout)

    def scale_factor_tmem(self, tiled_mma, acc_base, sSFA, sSFB, sfa_smem_staged, sfb_smem_staged):
        """SFA/SFB TMEM tensors (after the accumulator stages) and their smem -> TMEM copies.

        Returns (tCtSFA, tCtSFB, s2t_sfa, s2t_sfb) as ``mma_k_tile`` takes them.
        """
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
        return tCtSFA, tCtSFB, s2t_sfa, s2t_sfb

    def epilogue_partitions(self, tidx, tCtAcc_staged: cute.Tensor):
        """TMEM -> register copies of one EPILOGUE_COLUMNS-wide slice per step (32x32b.x32).

        Thread t of the four epilogue warps reads TMEM lane t (accumulator row t).
        Returns the tiled copy, the thread's slice of it, and the TMEM source partition
        (T2R, T2R_M, T2R_N, 1, subtiles, acc stage).
        """
        copy_atom_t2r = cute.make_copy_atom(
            tcgen05.Ld32x32bOp(tcgen05.Repetition.x32, tcgen05.Pack.NONE), ACC_DTYPE
        )
        tAcc_epi = cute.flat_divide(tCtAcc_staged[((None, None), 0, 0, None)], self.epi_tile)
        tiled_copy_t2r = tcgen05.make_tmem_copy(copy_atom_t2r, tAcc_epi[(None, None, 0, 0, 0)])
        thr_copy_t2r = tiled_copy_t2r.get_slice(tidx)
        tTR_tAcc = thr_copy_t2r.partition_S(tAcc_epi)
        return tiled_copy_t2r, thr_copy_t2r, tTR_tAcc

    @cute.jit
    def store_tile(
        self,
        tiled_copy_t2r: cute.TiledCopy,
        thr_copy_t2r,
        tTR_tAcc: cute.Tensor,
        acc_pipeline,
        acc_state,
        c_address: cutlass.Int64,
        m: cutlass.Int32,
        n: cutlass.Int32,
        m_block: cutlass.Int32,
        n_block: cutlass.Int32,
    ):
        """Accumulator stage ``acc_state`` -> fp16 -> C, predicated to the group's M x N.

        The stage is released right after its last TMEM load; the stores of that last slice
        overlap the next tile's MMAs. 16-byte stores are used only when provably aligned:
        C rows start on 16 bytes iff N % 8 == 0 (the base is 16-byte aligned, validated).
        """
        tile_m, tile_n = self.tile_mnk[0], self.tile_mnk[1]
        # 64-bit tile origin: m * n may exceed 2^31; offsets inside the tile fit in 32 bits.
        origin = (cutlass.Int64(m_block * tile_m) * cutlass.Int64(n) + cutlass.Int64(n_block * tile_n)) * 2
        tile_address = c_address + origin
        residue_m = m - m_block * tile_m
        residue_n = n - n_block * tile_n
        rows_aligned = n % 8 == 0

        # (T2R, T2R_M, T2R_N, 1, subtiles): the thread's coordinates inside the tile
        cC = cute.make_identity_tensor((tile_m, tile_n))
        tTR_cC = thr_copy_t2r.partition_D(cute.flat_divide(cC, self.epi_tile))
        gC_aligned = cute.make_tensor(
            cute.make_ptr(C_DTYPE, tile_address, cute.AddressSpace.gmem, assumed_align=16),
            cute.make_layout((tile_m, tile_n), stride=(cute.assume(n, divby=8), 1)),
        )
        gC_any = cute.make_tensor(
            cute.make_ptr(C_DTYPE, tile_address, cute.AddressSpace.gmem, assumed_align=2),
            cute.make_layout((tile_m, tile_n), stride=(n, 1)),
        )
        tTR_gC_aligned = thr_copy_t2r.partition_D(cute.flat_divide(gC_aligned, self.epi_tile))
        tTR_gC_any = thr_copy_t2r.partition_D(cute.flat_divide(gC_any, self.epi_tile))

        tTR_rAcc = cute.make_rmem_tensor(tTR_cC[(None, None, None, 0, 0)].shape, ACC_DTYPE)
        tTR_rC = cute.make_rmem_tensor(tTR_cC[(None, None, None, 0, 0)].shape, C_DTYPE)
        store_vec = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), C_DTYPE, num_bits_per_copy=128)
        store_one = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), C_DTYPE, num_bits_per_copy=16)

        acc_pipeline.consumer_wait(acc_state)
        tcgen05_fence_after_sync()
        tTR_tAcc_stage = tTR_tAcc[(None, None, None, None, None, acc_state.index)]
        row = tTR_cC[(0, 0, 0, 0, 0)][0]
        row_in = row < residue_m
        for sub in cutlass.range_constexpr(self.num_epi_subtiles):
            cute.copy(tiled_copy_t2r, tTR_tAcc_stage[(None, None, None, 0, sub)], tTR_rAcc)
            cute.arch.fence_view_async_tmem_load()
            if cutlass.const_expr(sub == self.num_epi_subtiles - 1):
                # every TMEM read of this stage is complete: hand it back to the MMA warp
                tcgen05_fence_before_sync()
                acc_pipeline.consumer_release(acc_state)
            tTR_rC.store(tTR_rAcc.load().to(C_DTYPE))
            cols_in = (sub + 1) * cfg.EPILOGUE_COLUMNS <= residue_n
            if row_in and cols_in and rows_aligned:
                cute.copy(store_vec, cute.flatten(tTR_rC), cute.flatten(tTR_gC_aligned[(None, None, None, 0, sub)]))
            elif row_in:
                tTR_cC_sub = tTR_cC[(None, None, None, 0, sub)]
                pred = cute.make_rmem_tensor(tTR_rC.shape, cutlass.Boolean)
                for i in cutlass.range_constexpr(cute.size(pred)):
                    pred[i] = tTR_cC_sub[i][1] < residue_n
                cute.copy(
                    store_one,
                    cute.flatten(tTR_rC),
                    cute.flatten(tTR_gC_any[(None, None, None, 0, sub)]),
                    pred=cute.flatten(pred),
                )
