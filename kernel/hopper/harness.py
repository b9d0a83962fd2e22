"""The harness hooks of the Hopper kernel (tests and profiling only): delay sites, poison on
release, the happens-before checker, the timeline stamps, the filler wgmmas and the ablation
switch. With ``perturbation=None`` and ``ablation=None`` (production) they trace nothing.
"""

import cutlass
import cutlass.cute as cute
import cutlass.utils.hopper_helpers as sm90_utils
from cutlass.cute.nvgpu import OperandMajorMode, warpgroup

from kernel.hopper import config as cfgmod
from kernel.perturbation import SLOT_INDEX, TIMELINE_CTAS, TIMELINE_INDEX, TIMELINE_POINTS, TIMELINE_WORD0
from kernel.hopper.ptx import (
    timeline_stamp,
    ld_shared_u32,
    st_shared_u32,
    poison_shared_16,
    sleep_ns,
    opaque_zeros_u32,
    sleep_ns_from_table_skewed,
    sleep_ns_from_table,
    sleep_ns_jittered,
    hb_check,
    hb_check_reuse,
    hb_claim_mark,
    hb_count_global,
    ld_relaxed_gpu,
    st_shared_u32_if_zero,
)

SUB_K = cfgmod.DEQUANT_SUB_K
from kernel.perturbation import (CHECK_RULE_INDEX, PHASE1_CLAIM_MAP_CHUNKS, PHASE1_CLAIM_MAP_WORD0,  # noqa: E402
                                 PHASE1_PUBLISHED_WORD, SKEWED_SITES)
from kernel.hopper.workspace import CLAIM_WORD, DONE_WORD, PASSED_WORD  # noqa: E402


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
# phase 1 (y_source="prepass"), every warp: how many of its CTA's chunks it proxy-fenced the
# workspace stores of; warp 0 (thread 0): the chunk count its completion wait acquired, and that
# count as it stood when thread 0 arrived at phase 1's completion barrier
HB_P1_FENCED, HB_P1_ACQUIRED, HB_P1_ACQUIRED_AT_BARRIER = 24, 25, 26


class HarnessMixin:
    """Methods of :class:`kernel.hopper.kernel.HopperNvfp4GroupedGemm` (its state is set by its ``__init__``)."""

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

    # ---- phase 1 (y_source="prepass"): the rules kernel.phase1_protocol states on the CPU. The
    # launch-wide shadow (publish count, claim map) lives in the device table; the per-CTA one in
    # the warps' slots
    def mark_phase1_fenced(self, it):
        """Every thread, after its proxy fence of chunk ``it``'s workspace stores: its warp has
        fenced ``it + 1`` chunks (read by thread 0 after the chunk's CTA barrier)."""
        if self.checks:
            self.hb_store(HB_P1_FENCED, it + 1)

    def check_phase1_claim(self, chunk):
        """Thread 0, after a claim returned ``chunk``: no other claim of this launch took it."""
        if self.checks:
            hb_claim_mark(self.delay_table, chunk, self.p1_chunks, PHASE1_CLAIM_MAP_WORD0, PHASE1_CLAIM_MAP_CHUNKS,
                          CHECK_RULE_INDEX["phase1_claim_not_unique"], self.hb_warp, self.hb_cta, self.hb_lane)

    def check_phase1_publish(self, it):
        """Thread 0, after chunk ``it``'s CTA barrier and before its release: every warp of the CTA
        fenced its stores of the chunk before that barrier; then the launch's publish count, in
        program order before the release (so whoever acquires the release reads it)."""
        if not self.checks:
            return
        rule = CHECK_RULE_INDEX["phase1_publish_unfenced"]
        for w in self.config.phase1_warps:  # the decoding warps
            hb_check(self.delay_table, "lt.u32", ld_shared_u32(self.hb_addr(HB_P1_FENCED, w)), it + 1, rule,
                     self.hb_warp, cutlass.Int32(w), self.hb_cta, self.hb_lane)
        hb_count_global(self.delay_table, PHASE1_PUBLISHED_WORD)

    def mark_phase1_acquired(self, target):
        """Thread 0, after its completion wait: it acquired the releases of ``target`` chunks."""
        if self.checks:
            st_shared_u32(self.hb_addr(HB_P1_ACQUIRED, 0), cutlass.Int32(target))

    def mark_phase1_completion_arrive(self, tidx):
        """Every thread, right before phase 1's completion barrier: thread 0 keeps what it has
        acquired so far (what the producer warp, after the barrier, may rely on)."""
        if self.checks:
            st_shared_u32_if_zero(self.hb_addr(HB_P1_ACQUIRED_AT_BARRIER, 0),
                                  ld_shared_u32(self.hb_addr(HB_P1_ACQUIRED, 0)), tidx)

    def check_phase1_read(self):
        """The producer warp, before its first TMA of the workspace (after the completion barrier):
        thread 0 had acquired every chunk when it arrived at that barrier, and every chunk was
        published through the release (the count its acquire made visible)."""
        if not self.checks or self.p1_chunks is None:
            return
        rule, me = CHECK_RULE_INDEX["phase1_read_unpublished"], self.hb_warp
        hb_check(self.delay_table, "lt.u32", ld_shared_u32(self.hb_addr(HB_P1_ACQUIRED_AT_BARRIER, 0)), self.p1_chunks,
                 rule, me, cutlass.Int32(0), self.hb_cta, self.hb_lane)
        published = ld_relaxed_gpu(self.delay_table + cutlass.Int64(4 * PHASE1_PUBLISHED_WORD))
        hb_check(self.delay_table, "lt.u32", published, self.p1_chunks, rule, me, me, self.hb_cta, self.hb_lane)

    def mark_beside_acquired(self, stage):
        """``phase1_beside``, the producer warp after its acquires of the chunks of its ``stage``-th
        K stage (counted over its tiles from 0): it may read that stage's rows."""
        if self.checks:
            self.hb_store(HB_P1_ACQUIRED, stage + 1)

    def check_beside_read(self, stage):
        """``phase1_beside``, the producer warp before a Y box of its ``stage``-th K stage: it
        acquired that stage's chunks (rule ``phase1_read_unpublished``; no race needed: a missing or
        late wait fires on every run)."""
        if self.checks:
            me = self.hb_warp
            hb_check(self.delay_table, "lt.u32", self.hb_load(HB_P1_ACQUIRED), stage + 1,
                     CHECK_RULE_INDEX["phase1_read_unpublished"], me, me, self.hb_cta, self.hb_lane)

    def check_phase1_reset(self, ws):
        """The last CTA through phase 1, after its reset stores: the three counters read back 0."""
        if self.checks:
            left = ld_relaxed_gpu(ws + CLAIM_WORD) | ld_relaxed_gpu(ws + DONE_WORD) | ld_relaxed_gpu(ws + PASSED_WORD)
            hb_check(self.delay_table, "ne.u32", left, cutlass.Int32(0), CHECK_RULE_INDEX["phase1_counter_not_reset"],
                     self.hb_warp, self.hb_warp, self.hb_cta, self.hb_lane)

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

    def poison_released_stage(self, tidx, stage):
        """Consumers, after the barrier that ends their last read of a raw stage and before they
        release it: poison it (each thread its slice), make the stores visible to the async
        proxy (a TMA or bulk copy may refill the stage next) and to lane 0 (which arrives for
        its warp on the TMA pipeline)."""
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

    def poison_free_fp16_buffer(self, tidx, consumers, sx_base, sy_base, buf):
        """Cooperative two-buffer ping-pong, after the barrier that says every warp retired the
        wgmma that read buffer ``buf``: poison it (each thread its slice), then one more barrier,
        so no poison store can land after another thread's dequant store of the next sub-block."""
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
        run-time loop (docs/results.md)."""
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

    def ablates(self, what: str) -> bool:
        """Profiling builds only (kernel/hopper/ablation.py): whether the ablation leaves ``what`` out."""
        return self.ablation is not None and self.ablation.skips(what)
