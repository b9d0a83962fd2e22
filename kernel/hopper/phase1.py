"""Phase 1 of the ``y_source="prepass"`` builds: every CTA decodes chunks of the groups' Y rows
into the fp16 workspace (kernel/hopper/workspace.py states the layout and why the completion
barrier cannot deadlock), then waits for every chunk.

Its synchronization goes through four helpers, each a harness build's delay site (role
``phase1``, kernel/perturbation.py) and checker hook (kernel/hopper/harness.py; the rules on the
CPU: kernel.phase1_protocol): ``claim_chunk`` (thread 0's atomic claim), ``fence_chunk_stores``
and ``publish_chunk`` (every thread's proxy fence of its stores, then, after the chunk's CTA
barrier, thread 0's release that counts the chunk done), ``acquire_chunks`` (thread 0's
completion wait) and the reset in ``prepass_count_through``. A production build traces exactly
the primitives.
"""

import cutlass
import cutlass.cute as cute

from kernel.hopper import config as cfgmod
from kernel.hopper.ptx import (
    arrive_release_gpu,
    copy_y_staged_items,
    store_y_staged_item,
    atom_add_relaxed_gpu,
    ld_relaxed_gpu,
    load_y_global_items,
    fence_proxy_async_global,
    ld_shared_u32,
    st_shared_u32,
    store_relaxed_gpu,
    wait_geq_acquire_gpu,
)

SUB_K = cfgmod.DEQUANT_SUB_K
# y_source="prepass": the workspace's layout (kernel.hopper.workspace states it for the host)
from kernel.hopper.workspace import (CLAIM_WORD, DATA_OFFSET, DONE_WORD, FLAGS_WORD, PASSED_WORD,  # noqa: E402
                                     SPLIT_ALIGN, beside_item, box_chunk_range)


class Phase1Mixin:
    """Methods of :class:`kernel.hopper.kernel.HopperNvfp4GroupedGemm` (its state is set by its ``__init__``)."""

    # ------------------------------------------------ y_source="prepass"
    @cute.jit
    def prepass_broadcast(self, tidx: cutlass.Int32, slots: cutlass.Int32, it: cutlass.Int32, claimed: cutlass.Int32):
        """Thread 0's claim ``claimed`` (its value in the other threads ignored) to every thread,
        through shared slot ``it % 2`` (the other slot may still be read by a slow thread of the
        previous round, which has not yet reached this round's barrier)."""
        slot_addr = slots + (it % 2) * 4
        if tidx == 0:
            st_shared_u32(slot_addr, claimed)
        self.phase1_barrier()
        return ld_shared_u32(slot_addr)

    def decodes_phase1(self, warp_idx):
        """Whether warp ``warp_idx`` decodes phase 1's chunks (``HopperConfig.phase1_warps``):
        every warp before the producer warp, and with ``phase1_helpers`` every warp but it.
        Traced inline."""
        if self.config.phase1_helpers:
            return warp_idx != self.producer_warp
        return warp_idx < self.producer_warp

    def skips_phase1(self, warp_idx):
        """Whether warp ``warp_idx`` decodes none of phase 1's chunks: ``decodes_phase1``'s
        complement (the producer warp, and without ``phase1_helpers`` the warps after it).
        Traced inline."""
        if self.config.phase1_helpers:
            return warp_idx == self.producer_warp
        return warp_idx >= self.producer_warp

    def phase1_barrier(self):
        """Phase 1's CTA barrier: the decoding threads only (named barrier
        ``PHASE1_BARRIER_ID``; the producer warp does not decode). Traced inline."""
        cute.arch.barrier(barrier_id=cfgmod.PHASE1_BARRIER_ID, number_of_threads=self.config.phase1_threads)

    def claim_chunk(self, ws, check: bool = True):
        """Thread 0: claim the next chunk (``atom.add`` on the claim word); returns its index (at
        or past the chunk count once every chunk is taken). The first claim, issued before the
        chunk count is known, is checked later (``check=False``). Traced inline."""
        self.delay("phase1", "claim", "before")
        chunk = atom_add_relaxed_gpu(ws + CLAIM_WORD, cutlass.Int32(1))
        if check:
            self.check_phase1_claim(chunk)
        self.delay("phase1", "claim", "after")
        return chunk

    def fence_chunk_stores(self, it):
        """Every thread, after its stores of the CTA's ``it``-th chunk: this thread's generic
        stores -> ordered before the async proxy (other CTAs' TMA). Traced inline."""
        fence_proxy_async_global()
        self.mark_phase1_fenced(it)

    def publish_chunk(self, ws, it):
        """Thread 0, after the CTA barrier that ends the CTA's ``it``-th chunk: count it done with
        a release (``fence.acq_rel`` + ``red.release``: the chunk's stores, every thread's before
        the barrier, happen before any acquire that reads the count). Traced inline."""
        self.delay("phase1", "publish", "before")
        self.check_phase1_publish(it)
        arrive_release_gpu(ws + DONE_WORD, cutlass.Int32(1))
        self.delay("phase1", "publish", "after")

    def publish_chunk_flag(self, flags, chunk, it):
        """``phase1_beside``, the lead helper thread after the CTA's ``it``-th chunk's helper
        barrier: release chunk ``chunk``'s flag (``fence.acq_rel`` + ``red.release``, add 1: the
        chunk's stores, every helper's before the barrier, happen before any acquire that reads
        the flag). Traced inline."""
        self.delay("phase1", "publish", "before")
        self.check_phase1_publish(it)
        arrive_release_gpu(flags + cutlass.Int64(chunk) * 4, cutlass.Int32(1))
        self.delay("phase1", "publish", "after")

    def chunk_flags(self, ws):
        """``phase1_beside``: the chunk-flag area's address (its offset / ``SPLIT_ALIGN`` is header
        word ``FLAGS_WORD``, written by the host). Traced inline."""
        return ws + cutlass.Int64(ld_relaxed_gpu(ws + FLAGS_WORD)) * SPLIT_ALIGN

    @cute.jit
    def wait_stage_chunks(self, flags: cutlass.Int64, chunk: cutlass.Int32, rows_total: cutlass.Int32,
                          y_row: cutlass.Int32, rows: cutlass.Int32, kt: cutlass.Int32):
        """``phase1_beside``, the producer warp (all 32 lanes) before K stage ``kt``'s Y boxes: wait
        (acquire) until the chunks holding them are published (``box_chunk_range`` of each of the
        stage's sub-blocks, ``rows`` workspace rows from ``y_row``). Lanes 8q .. 8q + 7 spin on
        sub-block q's chunks, lane 8q + j on its j-th, (j + 8)-th, ..: one round trip for the stage
        once they are out; then the lanes meet (``__syncwarp`` orders their acquires before the
        caller's proxy fence and TMA)."""
        self.delay("phase1", "wait", "before")
        lane = cute.arch.lane_idx()
        per = 32 // self.n_sub
        c_lo, c_hi = box_chunk_range(kt * self.n_sub + lane // per, rows_total, y_row, rows, chunk)
        for c in range(c_lo + lane % per, c_hi + 1, per):
            wait_geq_acquire_gpu(flags + cutlass.Int64(c) * 4, cutlass.Int32(1))
        cute.arch.sync_warp()
        self.delay("phase1", "wait", "after")

    @cute.jit
    def beside_items(self, m_sizes: cute.Tensor):
        """``phase1_beside``: the workspace's rows and phase 1's items (``workspace.beside_items``:
        every (sub-block of the largest K, row) pair, holes included)."""
        rows_total = cutlass.Int32(0)
        kmax = cutlass.Int32(0)
        for s in cutlass.range_constexpr(self.num_groups):
            rows_total = rows_total + self.slot_rows(m_sizes[s, 0])
            kmax = cutlass.max(kmax, m_sizes[s, 2])
        return rows_total, (kmax // SUB_K) * rows_total

    @cute.jit
    def beside_item_addresses(self, item: cutlass.Int32, rows_total: cutlass.Int32, roffs: list, m_sizes: cute.Tensor,
                              m_ptrs: cute.Tensor, data: cutlass.Int64, pitch: cutlass.Int64):
        """``phase1_beside``: (raw A, scale word, workspace run, whether the item is no hole) of
        sub-block-major ``item`` (``workspace.beside_item``): its row's slot is the last one whose
        first row is at or before it (a slot without rows shares the next one's first row)."""
        sb, r = beside_item(item, rows_total)
        sel_slot = cutlass.Int32(0)
        sel_roff = cutlass.Int32(0)
        for s in cutlass.range_constexpr(self.num_groups):
            if r >= roffs[s]:
                sel_slot = cutlass.Int32(s)
                sel_roff = roffs[s]
        k = m_sizes[sel_slot, 2]
        ksub = k // SUB_K
        valid = cutlass.Int32(sb < ksub) * cutlass.Int32(m_sizes[sel_slot, 1] != 0)
        raw, sf, dst = self.row_run_addresses(sel_slot, r - sel_roff, sb, k, ksub, sel_roff, m_ptrs, data, pitch)
        return raw, sf, dst, valid

    @cute.jit
    def beside_count_through(self, ws: cutlass.Int64, chunks: cutlass.Int32):
        """``phase1_beside``, one whole warp of a party done with the chunk flags (a CTA's producer
        warp after its last wait, its lead helper warp after its last publish): count the party
        through ``PASSED_WORD`` (lane 0: ``fence.acq_rel`` then the add, a release of everything the
        party did); the last of the grid's 2 x CTAs parties (lane 0: ``fence.acq_rel`` after the
        add, an acquire of every other party's) sets this launch's chunk flags, the claim word and
        the count back to 0, the flags spread over the warp's lanes."""
        lane = cute.arch.lane_idx()
        passed = cutlass.Int32(0)
        self.delay("phase1", "reset", "before")
        if lane == 0:
            cute.arch.fence_acq_rel_gpu()
            passed = atom_add_relaxed_gpu(ws + PASSED_WORD, cutlass.Int32(1))
            cute.arch.fence_acq_rel_gpu()
        passed = cute.arch.shuffle_sync(passed, 0)
        cute.arch.sync_warp()
        num_ctas, _, _ = cute.arch.grid_dim()
        if passed == 2 * cutlass.Int32(num_ctas) - 1:
            flags = self.chunk_flags(ws)
            for c in range(lane, chunks, 32):
                store_relaxed_gpu(flags + cutlass.Int64(c) * 4, cutlass.Int32(0))
            if lane == 0:
                store_relaxed_gpu(ws + CLAIM_WORD, cutlass.Int32(0))
                if cutlass.const_expr(self.config.chunk_done_skip):
                    store_relaxed_gpu(ws + DONE_WORD, cutlass.Int32(0))
                store_relaxed_gpu(ws + PASSED_WORD, cutlass.Int32(0))
                self.check_phase1_reset(ws)
        self.delay("phase1", "reset", "after")

    def acquire_chunks(self, ws, target):
        """Thread 0: wait (acquire) until ``target`` chunks are counted done. Traced inline."""
        wait_geq_acquire_gpu(ws + DONE_WORD, target)
        self.mark_phase1_acquired(target)

    def prepass_chunking(self, items):
        """Phase 1's run-time chunk (``prepass_chunk`` = F > 0): clamp(ceil(items / (F x grid)),
        PREPASS_MIN_CHUNK, phase1_threads x ``prepass_batch``) items, and the number of chunks.
        Traced inline."""
        batch = self.config.prepass_batch
        num_ctas, _, _ = cute.arch.grid_dim()
        div = cutlass.Int32(num_ctas) * self.config.prepass_chunk
        chunk = (items + (div - 1)) // div
        chunk = cutlass.max(chunk, cutlass.Int32(cfgmod.PREPASS_MIN_CHUNK))
        chunk = cutlass.min(chunk, cutlass.Int32(self.config.phase1_threads * batch))
        return chunk, (items + (chunk - 1)) // chunk

    @cute.jit
    def prepass_decode_scaled(self, tidx: cutlass.Int32, m_sizes: cute.Tensor, m_ptrs: cute.Tensor,
                              ws: cutlass.Int64, slots: cutlass.Int32, scratch: cutlass.Int32,
                              first_claim: cutlass.Int32):
        """The prepass builds, every decoding thread (the consumer warps) of every CTA: phase 1 with a chunk
        of clamp(ceil(items / (F x grid)), PREPASS_MIN_CHUNK, threads x prepass_batch) items,
        chosen at run time; thread t of a chunk takes items t, t + threads, ... and issues the
        loads of all of them before decoding any (one asm block). Thread 0 claims the next
        chunk while the current one is decoded and publishes it with the chunk's end barrier
        (one CTA barrier per chunk, two shared slots alternating as in ``prepass_broadcast``).
        Returns the number of chunks; the completion wait is ``prepass_wait`` (thread 0), then
        a CTA barrier. The deadlock argument of kernel.hopper.workspace is unchanged: a CTA
        claims only while running, and decodes every chunk it claimed before it waits."""
        threads = self.config.phase1_threads
        batch = self.config.prepass_batch
        beside = self.config.phase1_beside
        # the thread's index among the decoding threads (phase1_helpers: the producer warp's 32
        # threads, between the consumers and the helpers, skipped; phase1_beside: the helpers
        # only); its staging slots stay its warp's own
        dtid = tidx
        if cutlass.const_expr(beside):
            dtid = tidx - (self.consumer_threads + 32)
        elif cutlass.const_expr(self.config.phase1_helpers):
            dtid = tidx - 32 * cutlass.Int32(tidx >= self.consumer_threads)
        # the thread that claims, broadcasts and publishes: thread 0 (phase1_beside: the first helper)
        lead = dtid if beside else tidx
        # per group: first item, first workspace row (registers for the whole loop)
        bases, roffs, counts, items, kmax = self.prepass_groups(m_sizes)
        if cutlass.const_expr(beside):
            # sub-block-major items; the decode takes the workspace's rows in place of the bases
            bases, items = self.beside_items(m_sizes)
        chunk, chunks = self.prepass_chunking(items)
        if cutlass.const_expr(self.checks):
            if lead == 0:
                self.check_phase1_claim(first_claim)
        pitch = cutlass.Int64(kmax * 2)
        data = ws + DATA_OFFSET
        flags = self.chunk_flags(ws) if beside else None
        # each warp's 32 item slots in the Y ring (unused until phase 1 ends; its TMA writes come
        # after the proxy fence below and the completion barrier); phase1_beside: in the helpers'
        # own region, whose Y ring the tiles use meanwhile
        warp_slots = scratch + ((dtid if beside else tidx) // 32) * cfgmod.PREPASS_STAGED_WARP_BYTES
        it = cutlass.Int32(0)
        c = self.prepass_broadcast(lead, slots, it, first_claim)
        while c < chunks:
            nxt = cutlass.Int32(0)
            if lead == 0:
                # the next claim, in flight while this chunk is loaded and decoded
                nxt = self.claim_chunk(ws)
            first = c * chunk
            end = cutlass.min(first + chunk, items)
            self.decode_chunk_items(dtid, threads, batch, first, end, bases, roffs, counts, m_sizes, m_ptrs, data,
                                    pitch, warp_slots)
            # this thread's generic stores -> ordered before the async proxy (other CTAs' TMA)
            self.fence_chunk_stores(it)
            if lead == 0:
                st_shared_u32(slots + ((it + 1) % 2) * 4, nxt)
                if cutlass.const_expr(self.timeline):
                    self.timeline_point("phase1_fenced")
            self.phase1_barrier()
            if lead == 0:
                if cutlass.const_expr(beside):
                    self.publish_chunk_flag(flags, c, it)
                    if cutlass.const_expr(self.config.chunk_done_skip):
                        arrive_release_gpu(ws + DONE_WORD, cutlass.Int32(1))  # counted for the producers' skip
                else:
                    self.publish_chunk(ws, it)
                if cutlass.const_expr(self.timeline):
                    self.timeline_point("phase1_published")
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
            if cutlass.const_expr(self.config.phase1_beside):
                # sub-block-major items (bases: the workspace's rows); a hole is not decoded
                raw, sf, dst, valid = self.beside_item_addresses(item, bases, roffs, m_sizes, m_ptrs, data, pitch)
                ok = (cutlass.Int32(ok) * valid) != 0
            else:
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
            if cutlass.const_expr(self.timeline and j == 0):
                if tidx == 0:
                    self.timeline_point("phase1_loaded")  # after the decode that waited for the loads
            copy_y_staged_items(warp_slots, dsts[j], cutlass.Int32(oks[j]), lane)

    @cute.jit
    def prepass_chunk_count(self, m_sizes: cute.Tensor):
        """Phase 1's chunk count (what ``prepass_decode_scaled`` computes), for any thread."""
        if cutlass.const_expr(self.config.phase1_beside):
            _rows, items = self.beside_items(m_sizes)
        else:
            _b, _r, _c, items, _k = self.prepass_groups(m_sizes)
        _chunk, chunks = self.prepass_chunking(items)
        return chunks

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
        return self.row_run_addresses(slot, row, sb, k, ksub, first_row, m_ptrs, data, pitch)

    def row_run_addresses(self, slot, row, sb, k, ksub, first_row, m_ptrs, data, pitch):
        """(raw A, scale word, workspace run) of sub-block ``sb`` of row ``row`` of group slot
        ``slot`` (K ``k``, ``ksub`` sub-blocks), whose rows start at workspace row ``first_row``.
        Traced inline."""
        i = row % 128
        raw = m_ptrs[slot, 0] + cutlass.Int64(row) * cutlass.Int64(k // 2) + cutlass.Int64(sb * (SUB_K // 2))
        sf = (
            m_ptrs[slot, 3] + (cutlass.Int64(row // 128) * cutlass.Int64(ksub) + cutlass.Int64(sb)) * 512
            + cutlass.Int64((i % 32) * 16 + (i // 32) * 4)
        )
        dst = data + cutlass.Int64(first_row + row) * pitch + cutlass.Int64(sb * (SUB_K * 2))
        return raw, sf, dst

    def completion_barrier(self, tidx):
        """Phase 1's completion barrier, one ``bar.sync`` that every thread of the CTA executes:
        thread 0 arrives after its completion wait, the producer warp after its work before the
        barrier (it decodes no chunk); the workspace reads come after it. Traced inline."""
        self.mark_phase1_completion_arrive(tidx)
        cute.arch.barrier()

    @cute.jit
    def prepass_wait(self, ws: cutlass.Int64, chunks: cutlass.Int32):
        """Thread 0: wait until every chunk is decoded, then count this CTA through. Returns the
        count before this CTA's add, for ``prepass_reset_if_last``, which thread 0 calls after
        the CTA's tiles: nothing waits for the add's round trip before phase 1's completion
        barrier."""
        self.prepass_wait_done(ws, chunks)
        return self.prepass_count_through(ws)

    @cute.jit
    def prepass_wait_done(self, ws: cutlass.Int64, chunks: cutlass.Int32):
        """Thread 0: wait (acquire) until every chunk of phase 1 is decoded."""
        self.delay("phase1", "wait", "before")
        self.acquire_chunks(ws, chunks)
        self.delay("phase1", "wait", "after")

    def prepass_count_through(self, ws):
        """Thread 0, after ``prepass_wait_done``: count this CTA through (the count before its
        add: the CTAs through before it). Traced inline; the add and the reset stores are two
        sites of the ``reset`` delay slots."""
        self.delay("phase1", "reset", "before")
        passed = atom_add_relaxed_gpu(ws + PASSED_WORD, cutlass.Int32(1))
        self.delay("phase1", "reset", "after")
        return passed

    @cute.jit
    def prepass_reset_if_last(self, ws: cutlass.Int64, passed: cutlass.Int32):
        """Thread 0, any time after its count through (``passed``: the count before its add):
        the last CTA through (every CTA has made its last claim and left the wait) sets the
        three counters back to 0 for the next launch (the kernel boundary orders these stores
        before it)."""
        num_ctas, _, _ = cute.arch.grid_dim()
        self.delay("phase1", "reset", "before")
        if passed == cutlass.Int32(num_ctas) - 1:
            store_relaxed_gpu(ws + CLAIM_WORD, cutlass.Int32(0))
            store_relaxed_gpu(ws + DONE_WORD, cutlass.Int32(0))
            store_relaxed_gpu(ws + PASSED_WORD, cutlass.Int32(0))
            self.check_phase1_reset(ws)
        self.delay("phase1", "reset", "after")

    @cute.jit
    def row_offset(self, m_sizes: cute.Tensor, slot: cutlass.Int32):
        """The slot's first workspace row: the prefix of M over the slots before it."""
        roff = cutlass.Int32(0)
        for s in range(slot):
            roff = roff + self.slot_rows(m_sizes[s, 0])
        return roff

    def slot_rows(self, m):
        """Workspace rows a slot of M rows takes: M (kernel.hopper.workspace). Traced inline."""
        return m
