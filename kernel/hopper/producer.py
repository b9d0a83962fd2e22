"""The producer warp's side of the Hopper kernel: the raw-stage loaders (cp.async, bulk rows,
TMA), the prepass producer's X stages and Y boxes, the ring handshakes, the tensor maps, and
the CTA's tile schedule (plain, strided or balanced; kernel.plan states it for the host).
"""

import cutlass
import cutlass.cute as cute
import cutlass.pipeline as pipeline

from kernel.hopper import config as cfgmod
from kernel.device_schedule import (
    balanced_counts,
    balanced_locate,
    balanced_share,
    balanced_share_warp,
    cta_tile_range,
    group_search,
    k_uniform,
    snake_share,
    snake_tile,
    split_last_range,
    uniform_share,
)
from kernel.hopper.ptx import (
    mbarrier_complete_tx,
    fence_proxy_async_global,
    ld_relaxed_gpu,
    ld_shared_u32,
    st_shared_u32,
    bulk_copy_g2s,
    cp_async_16,
    tensormap_acquire,
    tma_load_rows,
    hb_check,
    hb_check_map,
    hb_mask_update,
    low_word,
)

SUB_K = cfgmod.DEQUANT_SUB_K
# y_source="prepass": the workspace's layout (kernel.hopper.workspace states it for the host)
from kernel.hopper.workspace import DONE_WORD, TENSOR_MAP_OFFSET  # noqa: E402
from kernel.perturbation import CHECK_RULE_INDEX  # noqa: E402


from kernel.hopper.harness import HB_MAP_WS, HB_MAPS, HB_OUT_RAW, HB_OUT_Y  # noqa: E402


@cute.jit
def if_lane0_store_share(slots: cutlass.Int32, share):
    """Lane 0 stores the int32 of a balanced share (y_tail64: four) at shared
    address ``slots``."""
    if cute.arch.lane_idx() == 0:
        for i in cutlass.range_constexpr(len(share)):
            st_shared_u32(slots + 4 * i, share[i])


class ProducerMixin:
    """Methods of :class:`kernel.hopper.kernel.HopperNvfp4GroupedGemm` (its state is set by its ``__init__``)."""

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
        its light tiles), or, when the share says so, its snake list (kernel.plan.LaunchPlan.cta_tiles)."""
        if cutlass.const_expr(self.tail64):
            fs, fc, ts, _tc = self.share
            # the snake split (the slots' K differ: ts < 0) is entry snake_tile(..) of the list of
            # every tile; chosen by arithmetic, not a branch (a branch here costs 1-4 % on the
            # H100: results row D6)
            snake = cutlass.Int32(ts < 0)
            light_list = cutlass.Int32(tile >= fc) * (1 - snake)
            idx = fs + tile
            if tile >= fc:
                idx = ts + (tile - fc)
            ctas, _, _ = cute.arch.grid_dim()
            idx = snake * snake_tile(cutlass.Int32(ctas), fs, tile) + (1 - snake) * idx
            slot, m_block, n_block = balanced_locate(m_sizes, self.num_groups, self.config.tile_m,
                                                     self.config.tile_n, light_list, idx, snake)
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

    def is_producer(self, warp_idx):
        """Whether warp ``warp_idx`` (one at or past ``producer_warp``) issues the loads: every
        one of them (a Python True), or with ``producer_warpgroup`` the first of that warpgroup
        only (the other three pass the CTA-wide barriers and exit). Traced inline."""
        if self.config.producer_warpgroup:
            return warp_idx == self.producer_warp
        return True

    def give_registers(self, consumer: bool):
        """``producer_warpgroup``: setmaxnreg, each warpgroup at the start of its role: the producer
        warpgroup down to its share, the consumers up to theirs (``HopperConfig.warpgroup_regs``;
        nothing otherwise). Traced inline."""
        if self.config.producer_warpgroup:
            producer, consumers = self.config.warpgroup_regs
            if consumer:
                cute.arch.warpgroup_reg_alloc(consumers)
            else:
                cute.arch.warpgroup_reg_dealloc(producer)

    def balanced_setup(self, m_sizes: cute.Tensor, total, slots):
        """y_tail64, the producer warp: this CTA's share of the balanced split
        (kernel.plan.balanced_share; the snake split's when the slots' K differ), kept on ``self``
        while the warp's code is traced (``locate`` and ``tile_range`` read it) and stored at
        ``slots`` (4 x int32, lane 0) for the consumers
        (``balanced_read``, after phase 1's completion barrier). Returns the tile range. Traced
        inline (a plain method: an attribute set in a run-time branch's own body would be carried
        out of it)."""
        nf, nt = balanced_counts(m_sizes, self.num_groups, self.config.tile_m, self.config.tile_n)
        cta, _, _ = cute.arch.block_idx()
        ctas, _, _ = cute.arch.grid_dim()
        if cutlass.const_expr(self.ablates("balanced_split")):
            share = uniform_share(nf, nt, cutlass.Int32(ctas), cutlass.Int32(cta))  # profiling only
        elif cutlass.const_expr(self.config.prepass_split_warp):
            share = balanced_share_warp(nf, nt, cutlass.Int32(ctas), cutlass.Int32(cta), cute.arch.lane_idx())
        else:
            share = balanced_share(nf, nt, cutlass.Int32(ctas), cutlass.Int32(cta))
        # the slots' K differ: the tiles dealt in the snake order instead (kernel.plan); chosen
        # by arithmetic (no branch in this inline method)
        cfg = self.config
        uni = k_uniform(m_sizes, self.num_groups, cfg.tile_m, cfg.tile_n, cfg.tile_k)
        snake = snake_share(total, cutlass.Int32(ctas), cutlass.Int32(cta))
        self.share = tuple(uni * b + (1 - uni) * w for b, w in zip(share, snake))
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
        elif cutlass.const_expr(self.split_last):
            # whole tiles [first, end); the half of a cut tile kept on self (kernel/hopper/split.py)
            first, end, self.split_cut, self.split_half = split_last_range(total)
            step = cutlass.Int32(1)
        else:
            first, end, step = cta_tile_range(total, self.config.schedule)
        return first, end, step

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

    @cute.jit
    def early_x_stages(self, k_f, t_begin, t_end):
        """X stages of the CTA's first tile (K ``k_f``) that go out before phase 1's completion
        barrier: ``PREPASS_EARLY_X_STAGES`` (at most its K tiles), none for a CTA without tiles."""
        pre = cutlass.min(k_f // self.config.tile_k, cutlass.Int32(min(cfgmod.PREPASS_EARLY_X_STAGES, self.stages)))
        if t_begin >= t_end:
            pre = cutlass.Int32(0)
        return pre

    @cute.jit
    def producer_x_first(self, m_prefix, m_sizes, m_ptrs, tmaps_ptr, ws, pipe, raw_base, total, t_begin, share_slots):
        """The producer warp from the kernel's start to phase 1's completion barrier (it decodes no
        chunk; the consumer warps do, meanwhile):
        (``y_tail64``) the balanced split, stored for everyone (``balanced_setup``), then the
        workspace's tensor map acquired (written by the host, never in a launch: its acquire
        need not wait for phase 1), then the first tile's map acquired and its X stages issued
        (``early_x_stages`` of them; ``produce_prepass_q`` steps its ring state past them after
        the barrier). Nothing escapes this branch but shared memory and the X ring
        (``balanced_setup`` keeps the share on ``self`` for this function's ``tile_origin``; the
        warps read it back from shared memory after phase 1). ``t_begin``: the static schedule's
        first tile (unused with ``y_tail64``)."""
        lane = cute.arch.lane_idx()
        if cutlass.const_expr(self.tail64):
            t_begin, t_end, _t_step = self.balanced_setup(m_sizes, total, share_slots)
        else:
            _b, t_end, _t_step = self.tile_range(total)
        if lane == 0:
            self.acquire_map(ws + TENSOR_MAP_OFFSET, workspace=True)
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
        self.issue_early_x(lane, m_prefix, m_sizes, m_ptrs, tmaps_ptr, pipe, state, raw_base, t_begin, t_end, total)

    @cute.jit
    def issue_early_x(self, lane, m_prefix, m_sizes, m_ptrs, tmaps_ptr, pipe, state, raw_base, t_begin, t_end, total):
        """The CTA's first tile's X stages that go out before phase 1's completion barrier
        (``early_x_stages`` of them, its map acquired first; X's scale pointer read once, not
        per stage: each read is a round trip the next stage would wait for)."""
        t_first = cutlass.min(t_begin, total - 1)  # a CTA without tiles issues none (pre = 0)
        slot_f, _m_f, n_f, k_f, _m0_f, n0_f = self.tile_origin(m_prefix, m_sizes, t_first)
        tm_f = tmaps_ptr.toint() + cutlass.Int64(slot_f) * 256 + 128
        sfx_f = m_ptrs[slot_f, 4]
        if lane == 0:
            self.acquire_map(tm_f)
        pre = self.early_x_stages(k_f, t_begin, t_end)
        for kt_f in range(pre):
            self.produce_x_stage(lane, pipe, state, raw_base, sfx_f, tm_f, k_f, n_f, n0_f, kt_f)
            state.advance()

    def acquire_stage_chunks(self, flags, chunk, rows_total, y_row, rows_left, kt, stage):
        """``phase1_beside``, the producer warp: wait for the chunks that hold K stage ``kt``'s Y
        boxes (``wait_stage_chunks``; the tile's rows from ``y_row``, at most ``tile_m`` of
        ``rows_left``), order their writes before the async proxy's reads, and (checker) mark its
        ``stage``-th stage acquired. Traced inline."""
        self.wait_stage_chunks(flags, chunk, rows_total, y_row, cutlass.min(rows_left, self.config.tile_m), kt)
        fence_proxy_async_global()
        self.mark_beside_acquired(stage)

    @cute.jit
    def produce_prepass_q(self, m_prefix, m_sizes, m_ptrs, tmaps_ptr, ws, pipe, y_pipe, raw_base, sy_base,
                          t_begin, t_end, t_step, total):
        """The prepass producer after phase 1's completion barrier (in ``kernel``, one
        instruction for every thread): the first tile's early X stages (``early_x_stages``; they
        read only B and its scales) went out before it (``producer_x_first``, which also acquired
        the workspace's map) and the ring state steps past them here; then per tile and K tile the
        raw X stage and the tile's fp16 Y boxes. (The first tile's origin is computed again here
        and in the loop: once per CTA.)"""
        cfg = self.config
        beside = cfg.phase1_beside
        lane = cute.arch.lane_idx()
        tm_ws = ws + TENSOR_MAP_OFFSET
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
        if cutlass.const_expr(beside):
            # phase 1 runs beside the tiles: no stage went early, and each tile waits for its
            # own rows' chunk flags (below) instead of a completion barrier
            pre = cutlass.Int32(0)
            if lane == 0:
                self.acquire_map(tm_ws, workspace=True)
            flags = self.chunk_flags(ws)
            rows_total, items = self.beside_items(m_sizes)
            chunk, chunks = self.prepass_chunking(items)
        else:
            _slot, _m, _n, k_first, _m0, _n0 = self.tile_origin(m_prefix, m_sizes, cutlass.min(t_begin, total - 1))
            pre = self.early_x_stages(k_first, t_begin, t_end)  # X stages of the first tile already issued
            for _kt in range(pre):
                state.advance()
            # phase 1's writes (acquired by thread 0 before the CTA barrier) -> the async proxy
            fence_proxy_async_global()
            self.check_phase1_read()  # the checker: every chunk acquired before the workspace's first TMA
        ystate = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.fp16_buffers)
        stage = cutlass.Int32(0)  # phase1_beside with the checker: the K stages issued so far
        all_done = cutlass.Int32(0)  # chunk_done_skip: every chunk of the launch acquired
        for unit in range(t_begin, self.unit_end(m_prefix, m_sizes, t_end), t_step):
            slot, m, n, k, m0, n0 = self.tile_origin(m_prefix, m_sizes, self.unit_tile(unit, t_end))
            y_row = self.row_offset(m_sizes, slot) + m0
            sfx = m_ptrs[slot, 4]  # X's scales, read once per tile (first needed after the early stages)
            tm_x = tmaps_ptr.toint() + cutlass.Int64(slot) * 256 + 128  # B's map (swapped: X = B)
            self.delay("producer", "tensormap", "before")
            if lane == 0:
                self.acquire_map(tm_x)
            self.delay("producer", "tensormap", "after")
            k_begin, k_end = self.unit_k_range(unit, t_end, cutlass.Int32(0), k // cfg.tile_k)
            for kt in range(k_begin, k_end):
                if kt >= pre:
                    self.produce_x_stage(lane, pipe, state, raw_base, sfx, tm_x, k, n, n0, kt)
                    state.advance()
                waits = beside and not self.ablates("chunk_wait")
                if cutlass.const_expr(waits and cfg.chunk_done_skip):
                    if all_done == 0:
                        counted = ld_relaxed_gpu(ws + DONE_WORD)  # in flight beside the flag acquires
                        self.acquire_stage_chunks(flags, chunk, rows_total, y_row, m - m0, kt, stage)
                        # lane 0's read for the whole warp: its lanes take the branch together
                        # (the next wait ends with a __syncwarp)
                        if cute.arch.shuffle_sync(counted, 0) >= chunks:
                            # every chunk counted: one acquire of every publish, then no more waits
                            cute.arch.fence_acq_rel_gpu()
                            fence_proxy_async_global()
                            all_done = cutlass.Int32(1)
                    else:
                        self.mark_beside_acquired(stage)
                if cutlass.const_expr(waits and not cfg.chunk_done_skip):
                    # the chunks holding this K stage's Y boxes (the tile's rows inside its group,
                    # sub-blocks kt * n_sub ..), acquired by the warp's lanes, then their writes
                    # -> the async proxy
                    self.acquire_stage_chunks(flags, chunk, rows_total, y_row, m - m0, kt, stage)
                if cutlass.const_expr(not self.ablates("y_ring")):
                    for sb in cutlass.range_constexpr(self.n_sub):
                        if cutlass.const_expr(waits):
                            self.check_beside_read(stage)
                        self.produce_y_box(lane, y_pipe, ystate, sy_base, tm_ws, kt * self.n_sub + sb, y_row)
                        ystate.advance()  # here, in the loop's own body: the loop carries it
                if cutlass.const_expr(beside and self.checks):
                    stage = stage + 1
            pre = cutlass.Int32(0)  # only the first tile's first stages went early
        self.delay("producer", "tail", "before")
        self.producer_tail(pipe, state)
        if cutlass.const_expr(not self.ablates("y_ring")):
            self.producer_tail(y_pipe, ystate, HB_OUT_Y)
        self.check_producer_exit()
        if cutlass.const_expr(beside):
            self.beside_count_through(ws, chunks)  # done with the chunk flags


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
    def produce_x_stage(self, lane, pipe, state, raw_base, sfx_ptr, tm_x, k, n, n0, kt):
        """one X stage of the prepass producer (acquire, TMA of raw X, bulk copy of its
        scale blocks from ``sfx_ptr``, the tile's X scales, read once per tile: a table read
        here would be a round trip per stage); the caller advances ``state``."""
        cfg = self.config
        stage, mbar = self.open_raw_stage(lane, pipe, state, raw_base)
        sf_k = cutlass.Int64(kt * (cfg.tile_k // 64))
        if lane == 0:
            self.tma_rows(stage + self.off_x, tm_x, kt * (cfg.tile_k // 2), n0, mbar)
        self.load_sf_bulk(lane, 1, stage + self.off_sfx, sfx_ptr, n0, (n + 127) // 128,
                          cutlass.Int64(k // 64), sf_k, mbar, self.mma_m)
        self.close_raw_stage(pipe, state)

    def open_raw_stage(self, lane, pipe, state, raw_base):
        """The producer, before filling raw stage ``state``: wait until it is free (the acquire
        and its delay sites), poison it in the harness builds; returns the stage's shared
        address and its full barrier's (what TMA and bulk copies complete; unused by cp.async).
        Traced inline."""
        self.delay("producer", "acquire", "before")
        self.producer_acquire(pipe, state)
        self.delay("producer", "acquire", "after")
        stage = raw_base + state.index * self.raw_stage_bytes
        self.poison_stage_before_fill(lane, stage)
        return stage, pipe.producer_get_barrier(state).toint()

    def close_raw_stage(self, pipe, state):
        """The producer, after issuing raw stage ``state``'s copies: commit it (and its delay
        sites); the caller advances ``state``. Traced inline."""
        self.delay("producer", "issue", "before")
        self.producer_commit(pipe, state)
        self.delay("producer", "issue", "after")

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
