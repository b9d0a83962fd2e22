"""``schedule="split_last"``: the last round's tiles cut in two K halves (kernel.plan states the
schedule; kernel.hopper.workspace the split area's layout).

Half 0 of a cut tile (K tiles [0, h)) publishes: every consumer thread stores its fp32
accumulators into the tile's partial-sum slot, the consumer threads pass named barrier
``SPLIT_BARRIER_ID``, and thread 0 counts the slot's flag up with a release (``fence.acq_rel`` +
``red.release``). Half 1 ([h, KT)) combines: thread 0 waits (acquire) for the flag, sets it back
to 0 for the next launch, the consumer threads pass the barrier, and each thread adds the slot's
values to its own accumulators (one fp32 addition each, the order the oracle's ``k_split`` bound
declares) before the tile's epilogue. The same thread index reads what it wrote on the other CTA:
both halves run the same tile shape, so thread t holds the same accumulator elements.

The combining CTA is ``2 j + 1`` and its publisher ``2 j``: CTAs are dispatched in index order,
so the publisher has started when its combiner waits, and a publisher never waits on anything
after phase 1; both halves run last on their CTAs, after the same number of whole tiles, so the
wait is short.
"""

import cutlass
import cutlass.cute as cute

from kernel.hopper import config as cfgmod
from kernel.hopper.ptx import (
    add_global_v4_f32,
    arrive_release_gpu,
    ld_relaxed_gpu,
    st_global_v4_f32,
    store_relaxed_gpu,
    wait_geq_acquire_gpu,
)
from kernel.hopper.workspace import SPLIT_ALIGN, SPLIT_FLAGS, SPLIT_WORD


class SplitMixin:
    """Methods of :class:`kernel.hopper.kernel.HopperNvfp4GroupedGemm` (its state is set by its ``__init__``)."""

    @property
    def split_last(self) -> bool:
        return self.config.schedule == "split_last"

    # ---- the unit loop (producer and consumers alike); for every other schedule a unit is a
    # whole tile and these trace nothing
    def unit_end(self, m_prefix: cute.Tensor, m_sizes: cute.Tensor, full_end):
        """The end of this CTA's unit range (``split_unit_end``). Traced inline."""
        if not self.split_last:
            return full_end
        return self.split_unit_end(m_prefix, m_sizes, full_end)

    def unit_tile(self, unit, full_end):
        """The tile unit ``unit`` runs (``split_unit_tile``). Traced inline."""
        if not self.split_last:
            return unit
        return self.split_unit_tile(unit, full_end)

    def unit_k_range(self, unit, full_end, k_begin, k_end):
        """(k_begin, k_end) of unit ``unit`` (``split_k_range``; else the tile's). Traced inline."""
        if not self.split_last:
            return k_begin, k_end
        return self.split_k_range(unit, full_end, k_end)

    @cute.jit
    def split_unit_end(self, m_prefix: cute.Tensor, m_sizes: cute.Tensor, full_end: cutlass.Int32):
        """The end of this CTA's units: its whole tiles' end, plus one for its half of the cut tile
        (``self.split_half`` >= 0), unless that is half 0 of a one-K-tile tile (empty: half 1
        runs it whole)."""
        end = full_end
        if self.split_half >= 0:
            _s, _m, _n, k, _m0, _n0 = self.tile_origin(m_prefix, m_sizes, self.split_cut)
            if self.split_half == 1 or k >= 2 * self.config.tile_k:
                end = full_end + 1
        return end

    @cute.jit
    def split_unit_tile(self, unit: cutlass.Int32, full_end: cutlass.Int32):
        """The tile of unit ``unit``: itself for a whole tile, else the cut tile."""
        tile = unit
        if unit >= full_end:
            tile = self.split_cut
        return tile

    @cute.jit
    def split_k_range(self, unit: cutlass.Int32, full_end: cutlass.Int32, k_tiles: cutlass.Int32):
        """(k_begin, k_end) of unit ``unit`` over its tile's ``k_tiles`` K tiles."""
        k_begin = cutlass.Int32(0)
        k_end = k_tiles
        if unit >= full_end:
            if self.split_half == 0:
                k_end = k_tiles // 2
            else:
                k_begin = k_tiles // 2
        return k_begin, k_end

    def split_area(self, ws):
        """The split area's address (its offset / ``SPLIT_ALIGN`` is header word ``SPLIT_WORD``). Traced inline."""
        offset = ld_relaxed_gpu(ws + SPLIT_WORD)
        return ws + cutlass.Int64(offset) * SPLIT_ALIGN

    def split_slot(self, area, j, tidx):
        """This thread's first 16 bytes in partial-sum slot ``j``. Traced inline."""
        slot_bytes = 4 * self.config.tile_m * self.config.tile_n
        return (area + 4 * SPLIT_FLAGS + cutlass.Int64(j) * slot_bytes + cutlass.Int64(tidx) * 16)

    def split_barrier(self):
        cute.arch.barrier(barrier_id=cfgmod.SPLIT_BARRIER_ID, number_of_threads=self.consumer_threads)

    @cute.jit
    def split_publish(self, acc, tidx, ws):
        """Half 0 of the cut tile (after its ``wait_group(0)``): the accumulators to slot
        ``cta // 2``, then its flag counted up with a release."""
        cta, _, _ = cute.arch.block_idx()
        j = cutlass.Int32(cta) // 2
        area = self.split_area(ws)
        addr = self.split_slot(area, j, tidx)
        step = cutlass.Int64(16 * self.consumer_threads)
        for q in cutlass.range_constexpr(cute.size(acc) // 4):
            st_global_v4_f32(addr + q * step, [acc[4 * q + i] for i in range(4)])
        self.split_barrier()
        if tidx == 0:
            self.delay("consumer", "split_publish", "before")
            arrive_release_gpu(area + cutlass.Int64(j) * 4, cutlass.Int32(1))
            self.delay("consumer", "split_publish", "after")

    @cute.jit
    def split_combine(self, acc, tidx, ws):
        """Half 1 of the cut tile (after its ``wait_group(0)``): wait for half 0's slot, add it to
        the accumulators (the epilogue follows)."""
        cta, _, _ = cute.arch.block_idx()
        j = cutlass.Int32(cta) // 2
        area = self.split_area(ws)
        if tidx == 0:
            self.delay("consumer", "split_wait", "before")
            flag = area + cutlass.Int64(j) * 4
            wait_geq_acquire_gpu(flag, cutlass.Int32(1))
            store_relaxed_gpu(flag, cutlass.Int32(0))
            self.delay("consumer", "split_wait", "after")
        self.split_barrier()
        addr = self.split_slot(area, j, tidx)
        step = cutlass.Int64(16 * self.consumer_threads)
        for q in cutlass.range_constexpr(cute.size(acc) // 4):
            total = add_global_v4_f32(addr + q * step, [acc[4 * q + i] for i in range(4)])
            for i in cutlass.range_constexpr(4):
                acc[4 * q + i] = total[i]
