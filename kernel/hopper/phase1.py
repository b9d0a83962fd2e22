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
    atom_add_acq_rel_gpu,
    publish_release_gpu,
    store_y_global_item,
    copy_y_staged_items,
    store_y_staged_item,
    atom_add_relaxed_gpu,
    load_y_global_items,
    fence_proxy_async_global,
    ld_shared_u32,
    st_shared_u32,
    store_relaxed_gpu,
    wait_geq_acquire_gpu,
)

SUB_K = cfgmod.DEQUANT_SUB_K
# y_source="prepass": the workspace's layout (kernel.hopper.workspace states it for the host)
from kernel.hopper.workspace import (BACKGROUND_CLAIM_WORD, CLAIM_WORD, DATA_OFFSET, DONE_WORD,  # noqa: E402
                                     PASSED_WORD)


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

    def phase1_barrier(self):
        """Phase 1's CTA barrier: the decoding threads only (named barrier
        ``PHASE1_BARRIER_ID``; the producer warp does not decode). Traced inline."""
        cute.arch.barrier(barrier_id=cfgmod.PHASE1_BARRIER_ID, number_of_threads=self.config.phase1_threads)

    def claim_chunk(self, ws, check: bool = True, word: int = CLAIM_WORD):
        """Thread 0: claim the next chunk (``atom.add`` on the claim word, or ``word``: the
        background warps'); returns its index (at or past the chunk count once every chunk is
        taken). The first claim, issued before the chunk count is known, is checked later
        (``check=False``). Traced inline."""
        self.delay("phase1", "claim", "before")
        chunk = atom_add_relaxed_gpu(ws + word, cutlass.Int32(1))
        if check:
            self.check_phase1_claim(chunk)
        self.delay("phase1", "claim", "after")
        return chunk

    def fence_chunk_stores(self, it):
        """Every thread, after its stores of the CTA's ``it``-th chunk: this thread's generic
        stores -> ordered before the async proxy (other CTAs' TMA). Traced inline."""
        fence_proxy_async_global()
        self.mark_phase1_fenced(it)

    def publish_chunk(self, ws, it, flag=None, warp0: int = 0, warps: int = 0):
        """Thread 0, after the CTA barrier that ends the CTA's ``it``-th chunk: count it done with
        a release (``fence.acq_rel`` + ``red.release``: the chunk's stores, every thread's before
        the barrier, happen before any acquire that reads the count); ``phase1_overlap``: set
        the chunk's done ``flag`` (an address) to 1 with a release instead. ``warp0``,
        ``warps``: the warps that decoded it (the checker's; 0: the consumer warps). Traced
        inline."""
        self.delay("phase1", "publish", "before")
        self.check_phase1_publish(it, warp0, warps)
        if flag is None:
            arrive_release_gpu(ws + DONE_WORD, cutlass.Int32(1))
        else:
            publish_release_gpu(flag, cutlass.Int32(1))
        self.delay("phase1", "publish", "after")

    def acquire_chunks(self, ws, target):
        """Thread 0: wait (acquire) until ``target`` chunks are counted done. Traced inline."""
        wait_geq_acquire_gpu(ws + DONE_WORD, target)
        self.mark_phase1_acquired(target)

    def prepass_chunking(self, items, batch: int = cfgmod.PREPASS_BATCH):
        """Phase 1's run-time chunk (``prepass_chunk`` = F > 0): clamp(ceil(items / (F x grid)),
        PREPASS_MIN_CHUNK, phase1_threads x ``batch``) items, and the number of chunks. Traced
        inline."""
        num_ctas, _, _ = cute.arch.grid_dim()
        div = cutlass.Int32(num_ctas) * self.config.prepass_chunk
        chunk = (items + (div - 1)) // div
        chunk = cutlass.max(chunk, cutlass.Int32(cfgmod.PREPASS_MIN_CHUNK))
        chunk = cutlass.min(chunk, cutlass.Int32(self.config.phase1_threads * batch))
        return chunk, (items + (chunk - 1)) // chunk

    @cute.jit
    def prepass_decode_scaled(self, tidx: cutlass.Int32, m_sizes: cute.Tensor, m_ptrs: cute.Tensor,
                              ws: cutlass.Int64, slots: cutlass.Int32, scratch: cutlass.Int32,
                              first_claim: cutlass.Int32, m_prefix: cute.Tensor):
        """The prepass builds, every decoding thread (the consumer warps) of every CTA: phase 1 with a chunk
        of clamp(ceil(items / (F x grid)), PREPASS_MIN_CHUNK, threads x PREPASS_BATCH) items,
        chosen at run time; thread t of a chunk takes items t, t + threads, ... and issues the
        loads of all of them before decoding any (one asm block). Thread 0 claims the next
        chunk while the current one is decoded and publishes it with the chunk's end barrier
        (one CTA barrier per chunk, two shared slots alternating as in ``prepass_broadcast``).
        Returns the number of chunks; the completion wait is ``prepass_wait`` (thread 0), then
        a CTA barrier. The deadlock argument of kernel.hopper.workspace is unchanged: a CTA
        claims only while running, and decodes every chunk it claimed before it waits.

        ``phase1_overlap`` (``m_prefix``: the tile prefix it locates the first round's last tile
        in): only the chunks below ``overlap_split``'s
        foreground end, each published by its done flag; a claim at or past that end stops the
        loop (it is no chunk: the background warps claim the rest on a counter of their own).
        Returns the chunk count (all of phase 1's)."""
        threads = self.config.phase1_threads
        batch = cfgmod.PREPASS_BATCH
        # per group: first item, first workspace row (registers for the whole loop)
        bases, roffs, counts, items, kmax = self.prepass_groups(m_sizes)
        chunk, chunks = self.prepass_chunking(items)
        pitch = cutlass.Int64(kmax * 2)
        data = ws + DATA_OFFSET
        end_chunk = chunks
        flags = cutlass.Int64(0)
        overlap = self.config.phase1_overlap
        if cutlass.const_expr(overlap):
            end_chunk = self.overlap_split(m_prefix, m_sizes, bases, chunk, chunks)
            flags = self.done_flags(ws, m_sizes)
        if cutlass.const_expr(self.checks):
            if tidx == 0:
                if first_claim < end_chunk:
                    self.check_phase1_claim(first_claim)
        # each warp's 32 item slots in the Y ring (unused until phase 1
        # ends; its TMA writes come after the proxy fence below and the completion barrier)
        warp_slots = scratch + (tidx // 32) * cfgmod.PREPASS_STAGED_WARP_BYTES
        it = cutlass.Int32(0)
        c = self.prepass_broadcast(tidx, slots, it, first_claim)
        while c < end_chunk:
            nxt = cutlass.Int32(0)
            if tidx == 0:
                # the next claim, in flight while this chunk is loaded and decoded
                if cutlass.const_expr(overlap):
                    nxt = self.claim_chunk(ws, check=False)
                    if nxt < end_chunk:
                        self.check_phase1_claim(nxt)
                else:
                    nxt = self.claim_chunk(ws)
            first = c * chunk
            end = cutlass.min(first + chunk, items)
            self.decode_chunk_items(tidx, threads, batch, first, end, bases, roffs, counts, m_sizes, m_ptrs, data,
                                    pitch, warp_slots)
            # this thread's generic stores -> ordered before the async proxy (other CTAs' TMA)
            self.fence_chunk_stores(it)
            if tidx == 0:
                st_shared_u32(slots + ((it + 1) % 2) * 4, nxt)
            self.phase1_barrier()
            if tidx == 0:
                if cutlass.const_expr(overlap):
                    self.publish_chunk(ws, it, flags + cutlass.Int64(4 * c))
                else:
                    self.publish_chunk(ws, it)
            it = it + 1
            c = ld_shared_u32(slots + (it % 2) * 4)
        # the slots' generic writes before the Y ring's TMA (async proxy) writes to them
        cute.arch.fence_proxy("async.shared", space="cta")
        if cutlass.const_expr(overlap):
            if tidx == 0:
                self.overlap_count_through(ws, flags, chunks)  # after its last claim
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

    # ------------------------------------------------ phase1_overlap
    @cute.jit
    def overlap_split(self, m_prefix: cute.Tensor, m_sizes: cute.Tensor, bases: list, chunk: cutlass.Int32,
                      chunks: cutlass.Int32):
        """``phase1_overlap``: the foreground's end, the chunks that hold every item up to the end
        of the Y block of the grid's last first-round tile (tile min(grid, tiles) - 1 of the
        raster order: the first round reads the Y blocks from the first up to that one, and items
        run in workspace-row order). 0 for a problem without tiles."""
        num_ctas, _, _ = cute.arch.grid_dim()
        total = m_prefix[self.num_groups]
        end = cutlass.Int32(0)
        if total > 0:
            slot, m_block, _n_block = self.locate(m_prefix, m_sizes, cutlass.min(total, cutlass.Int32(num_ctas)) - 1)
            base = cutlass.Int32(0)
            for s in cutlass.range_constexpr(self.num_groups):
                if slot == s:
                    base = bases[s]
            rows = cutlass.min((m_block + 1) * self.config.tile_m, m_sizes[slot, 0])
            end_item = base + rows * (m_sizes[slot, 2] // SUB_K)
            end = cutlass.min((end_item + (chunk - 1)) // chunk, chunks)
        return end

    @cute.jit
    def workspace_totals(self, m_sizes: cute.Tensor):
        """(items, workspace rows, largest K) by a run-time loop over the slots (the producer
        warpgroup's: no per-slot registers, as ``prepass_groups`` keeps)."""
        items = cutlass.Int32(0)
        rows = cutlass.Int32(0)
        kmax = cutlass.Int32(0)
        for s in range(self.num_groups):
            m = m_sizes[s, 0]
            if m_sizes[s, 1] != 0:
                items = items + m * (m_sizes[s, 2] // SUB_K)
            rows = rows + self.slot_rows(m)
            kmax = cutlass.max(kmax, m_sizes[s, 2])
        return items, rows, kmax

    @cute.jit
    def slot_first_item(self, m_sizes: cute.Tensor, slot: cutlass.Int32):
        """The slot's first phase-1 item: the items of the slots before it (run-time loop)."""
        base = cutlass.Int32(0)
        for s in range(slot):
            if m_sizes[s, 1] != 0:
                base = base + m_sizes[s, 0] * (m_sizes[s, 2] // SUB_K)
        return base

    @cute.jit
    def done_flags(self, ws: cutlass.Int64, m_sizes: cute.Tensor):
        """``phase1_overlap``: the address of chunk 0's done flag, after the workspace's rows
        (kernel.hopper.workspace ``Geometry.flags_offset``)."""
        _items, rows, kmax = self.workspace_totals(m_sizes)
        return ws + DATA_OFFSET + cutlass.Int64(rows) * cutlass.Int64(kmax * 2)

    @cute.jit
    def prepass_decode_background(self, dtid: cutlass.Int32, m_prefix: cute.Tensor, m_sizes: cute.Tensor,
                                  m_ptrs: cute.Tensor, ws: cutlass.Int64, slots: cutlass.Int32):
        """``phase1_overlap``, the producer warpgroup's three other warps (``dtid``: the thread's
        index among their 96), after phase 1's completion barrier, beside the tiles: the chunks
        from ``overlap_split``'s end on, claimed on ``BACKGROUND_CLAIM_WORD`` (claim c is chunk
        end + c), ``BACKGROUND_BATCH`` items per thread at a time, each stored straight from
        registers (the Y ring, the foreground's staging area, is the tiles' now); per chunk every
        thread's proxy fence, the warps' named barrier (``BACKGROUND_BARRIER_ID``), then thread 0
        sets the chunk's done flag with a release. The claims go through ``slots`` (the
        foreground's claim slots: the foreground ended before the completion barrier). Then
        thread 0 counts the role through (``overlap_count_through``). Progress: these warps wait
        only on each other; every chunk past the foreground is claimed by a running CTA's
        background warps and published without waiting on another CTA."""
        threads = 96
        batch = cfgmod.BACKGROUND_BATCH
        bases, roffs, counts, items, kmax = self.prepass_groups(m_sizes)
        chunk, chunks = self.prepass_chunking(items)
        start = self.overlap_split(m_prefix, m_sizes, bases, chunk, chunks)
        pitch = cutlass.Int64(kmax * 2)
        data = ws + DATA_OFFSET
        flags = self.done_flags(ws, m_sizes)
        first = cutlass.Int32(0)
        if dtid == 0:
            first = start + self.claim_chunk(ws, False, BACKGROUND_CLAIM_WORD)
            if first < chunks:
                self.check_phase1_claim(first)
        it = cutlass.Int32(0)
        c = self.background_broadcast(dtid, slots, it, first)
        while c < chunks:
            nxt = cutlass.Int32(0)
            if dtid == 0:
                nxt = start + self.claim_chunk(ws, False, BACKGROUND_CLAIM_WORD)
                if nxt < chunks:
                    self.check_phase1_claim(nxt)
            lo = c * chunk
            end = cutlass.min(lo + chunk, items)
            for part in range(lo, end, threads * batch):
                self.decode_chunk_direct(dtid, threads, batch, part, end, bases, roffs, counts, m_sizes, m_ptrs, data,
                                         pitch)
            self.fence_chunk_stores(it)
            if dtid == 0:
                st_shared_u32(slots + ((it + 1) % 2) * 4, nxt)
            self.background_barrier()
            if dtid == 0:
                self.publish_chunk(ws, it, flags + cutlass.Int64(4 * c), self.producer_warp + 1, 3)
            it = it + 1
            c = ld_shared_u32(slots + (it % 2) * 4)
        if dtid == 0:
            self.overlap_count_through(ws, flags, chunks)

    @cute.jit
    def background_broadcast(self, dtid: cutlass.Int32, slots: cutlass.Int32, it: cutlass.Int32,
                             claimed: cutlass.Int32):
        """``prepass_broadcast`` for the background warps (their named barrier)."""
        slot_addr = slots + (it % 2) * 4
        if dtid == 0:
            st_shared_u32(slot_addr, claimed)
        self.background_barrier()
        return ld_shared_u32(slot_addr)

    def background_barrier(self):
        """The background warps' barrier (``BACKGROUND_BARRIER_ID``, their 96 threads). Traced inline."""
        cute.arch.barrier(barrier_id=cfgmod.BACKGROUND_BARRIER_ID, number_of_threads=96)

    @cute.jit
    def decode_chunk_direct(self, tid: cutlass.Int32, threads: cutlass.Constexpr[int], batch: cutlass.Constexpr[int],
                            first: cutlass.Int32, end: cutlass.Int32, bases: list, roffs: list, counts: list,
                            m_sizes: cute.Tensor, m_ptrs: cute.Tensor, data: cutlass.Int64, pitch: cutlass.Int64):
        """``decode_chunk_items`` without the shared slots: items ``first + tid + j x threads`` <
        ``end``, ``batch`` at once, each decoded and stored from registers to its run."""
        loads = []
        dsts = []
        oks = []
        for j in cutlass.range_constexpr(batch):
            item = first + tid + j * threads
            ok = item < end
            raw, sf, dst = self.prepass_item_addresses(item, bases, roffs, counts, m_sizes, m_ptrs, data, pitch)
            loads.append((raw, sf, cutlass.Int32(ok)))
            dsts.append(dst)
            oks.append(ok)
        words = load_y_global_items(loads)
        for j in cutlass.range_constexpr(batch):
            if oks[j]:
                store_y_global_item(words[j], dsts[j], self.config.operand_exp_shift)

    @cute.jit
    def await_y_block(self, lane: cutlass.Int32, m_sizes: cute.Tensor, slot: cutlass.Int32, m: cutlass.Int32,
                      m0: cutlass.Int32, chunk: cutlass.Int32, flags: cutlass.Int64):
        """``phase1_overlap``, the producer warp before a tile's first Y box: the lanes acquire
        the done flags of the chunks that hold the tile's Y block (rows ``m0 ..`` of the slot,
        every sub-block), 32 at a time, then the warp's proxy fence orders what they acquired
        before its TMA reads."""
        ksub = m_sizes[slot, 2] // SUB_K
        base = self.slot_first_item(m_sizes, slot)
        lo = base + m0 * ksub
        hi = base + cutlass.min(m0 + self.config.tile_m, m) * ksub
        self.delay("phase1", "wait", "before")
        for c in range(lo // chunk + lane, (hi - 1) // chunk + 1, 32):
            wait_geq_acquire_gpu(flags + cutlass.Int64(4 * c), cutlass.Int32(1))
            self.check_overlap_read(flags + cutlass.Int64(4 * c))
        self.delay("phase1", "wait", "after")
        cute.arch.sync_warp()
        fence_proxy_async_global()

    @cute.jit
    def overlap_count_through(self, ws: cutlass.Int64, flags: cutlass.Int64, chunks: cutlass.Int32):
        """``phase1_overlap``: one thread of a role, after its last claim or flag read, counts the
        role through (three roles a CTA: the consumer warps after the foreground, the background
        warps after their last chunk, the producer warp after its last tile); the last of the
        grid's sets the claim counters, the count and the launch's done flags back to 0 (the
        kernel boundary orders these stores before the next launch). The add is acq_rel, so
        every read another role made before its add happens before these stores."""
        num_ctas, _, _ = cute.arch.grid_dim()
        self.delay("phase1", "reset", "before")
        passed = atom_add_acq_rel_gpu(ws + PASSED_WORD, cutlass.Int32(1))
        if passed == 3 * cutlass.Int32(num_ctas) - 1:
            for c in range(chunks):
                store_relaxed_gpu(flags + cutlass.Int64(4 * c), cutlass.Int32(0))
            for word in (CLAIM_WORD, BACKGROUND_CLAIM_WORD, PASSED_WORD):
                store_relaxed_gpu(ws + word, cutlass.Int32(0))
            self.check_phase1_reset(ws)
        self.delay("phase1", "reset", "after")

    @cute.jit
    def prepass_chunk_count(self, m_sizes: cute.Tensor):
        """Phase 1's chunk count (what ``prepass_decode_scaled`` computes), for any thread."""
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
        barrier. ``phase1_overlap``: nothing, and -1, which no CTA count equals (its tiles wait
        per Y block, and its roles count through and reset on their own:
        ``overlap_count_through``)."""
        passed = cutlass.Int32(-1)
        if cutlass.const_expr(not self.config.phase1_overlap):
            self.prepass_wait_done(ws, chunks)
            passed = self.prepass_count_through(ws)
        return passed

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
        """Workspace rows a slot of M rows takes: M, or (``y_row_pad``) M rounded up to
        ``HopperConfig.y_row_align`` (the rows past M are zero: kernel.hopper.workspace).
        Traced inline."""
        align = 1
        return m
        return (m + (align - 1)) // align * align
