"""The device side of ``kernel.plan``, shared by the CuTe DSL kernels (Hopper and Blackwell).

Each function is the device twin of a host function whose properties are fuzzed on the CPU
(``properties/test_plan_properties.py``): :func:`group_search` is
``kernel.plan.device_group_search``, :func:`cta_tile_range` is ``LaunchPlan.cta_tiles``; the
``balanced_*``, ``snake_*`` and :func:`k_uniform` functions are ``kernel.plan``'s functions of the
same names (schedule="balanced"), :func:`split_last_range` is ``kernel.plan.split_last_shape``
and ``LaunchPlan.cta_units`` (schedule="split_last").
All are ``@cute.jit`` helpers, inlined where they are called.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute

from kernel.plan import BALANCED_STEPS, FULL_COST, LIGHT_COST, SPLIT_CANDIDATES


@cute.jit
def group_search(tile_prefix: cute.Tensor, tile: cutlass.Int32, num_groups: cutlass.Constexpr[int]) -> cutlass.Int32:
    """The slot s with prefix[s] <= tile < prefix[s+1]: kernel.plan.device_group_search, verbatim."""
    left = cutlass.Int32(0)
    right = cutlass.Int32(num_groups)
    while left < right:
        mid = (left + right) // 2
        if tile_prefix[mid + 1] <= tile:
            left = mid + 1
        else:
            right = mid
    return left


@cute.jit
def cta_tile_range(total_tiles: cutlass.Int32, schedule: cutlass.Constexpr[str]):
    """(first, end, step) of this CTA's tiles: LaunchPlan.cta_tiles for the grid it runs in.

    ``contiguous``: [cta * per, min((cta + 1) * per, total)) with per = ceil(total / grid);
    ``strided``: cta, cta + grid, ... below total.
    """
    cta, _, _ = cute.arch.block_idx()
    num_ctas, _, _ = cute.arch.grid_dim()
    first = cutlass.Int32(cta)
    end = total_tiles
    step = cutlass.Int32(num_ctas)
    if cutlass.const_expr(schedule == "contiguous"):
        per_cta = (total_tiles + num_ctas - 1) // num_ctas
        first = cta * per_cta
        end = first + per_cta
        if end > total_tiles:
            end = total_tiles
        step = cutlass.Int32(1)
    return first, end, step


@cute.jit
def split_last_range(total_tiles: cutlass.Int32):
    """schedule="split_last" (kernel.plan.split_last_shape, LaunchPlan.cta_units): (first, full
    end, cut tile, half) of this CTA. Its whole tiles are [first, full end); when ``half`` >= 0 it
    then runs half ``half`` of the cut tile (half 0: K tiles [0, h), half 1: [h, KT), h = KT // 2;
    the caller drops half 0 of a one-K-tile tile). ``half`` is -1 for no half: no cut applies to
    the grid (the contiguous ranges), or this CTA has none. The cut tile's partial-sum slot is
    ``cut tile - full * grid`` = ``cta // 2``."""
    cta, _, _ = cute.arch.block_idx()
    num_ctas, _, _ = cute.arch.grid_dim()
    ctas = cutlass.Int32(num_ctas)
    full = total_tiles // ctas
    rest = total_tiles - full * ctas
    first = cutlass.Int32(cta) * full
    end = first + full
    cut = full * ctas + cutlass.Int32(cta) // 2
    half = cutlass.Int32(cta) % 2
    if cutlass.Int32(cta) >= 2 * rest:
        half = cutlass.Int32(-1)
    if rest == 0 or 2 * rest > ctas:
        # no cut: the contiguous ranges on this grid
        per = (total_tiles + ctas - 1) // ctas
        first = cutlass.Int32(cta) * per
        stop = first + per
        if stop > total_tiles:
            stop = total_tiles
        if first > total_tiles:
            first = total_tiles
        end = stop
        half = cutlass.Int32(-1)
    return first, end, cut, half


@cute.jit
def slot_blocks(m_sizes: cute.Tensor, s: cutlass.Constexpr[int], tile_m: cutlass.Constexpr[int],
                tile_n: cutlass.Constexpr[int]):
    """(M blocks, N blocks, light) of slot ``s``: light is 1 when its last M block holds at most
    tile_m / 2 rows (LaunchPlan.slot_light), 0 otherwise and for an empty slot."""
    m = m_sizes[s, 0]
    tm = (m + (tile_m - 1)) // tile_m
    tn = (m_sizes[s, 1] + (tile_n - 1)) // tile_n
    light = cutlass.Int32(m - (tm - 1) * tile_m <= tile_m // 2) * cutlass.Int32(tm > 0)
    return tm, tn, light


@cute.jit
def balanced_counts(m_sizes: cute.Tensor, num_groups: cutlass.Constexpr[int], tile_m: cutlass.Constexpr[int],
                    tile_n: cutlass.Constexpr[int]):
    """(full tiles, light tiles) of the problem: LaunchPlan.balanced_lists' lengths. A slot's last
    M block is light when it holds at most tile_m / 2 rows (LaunchPlan.slot_light)."""
    nf = cutlass.Int32(0)
    nt = cutlass.Int32(0)
    for s in cutlass.range_constexpr(num_groups):
        tm, tn, light = slot_blocks(m_sizes, s, tile_m, tile_n)
        nf = nf + tn * (tm - light)
        nt = nt + tn * light
    return nf, nt


@cute.jit
def balanced_split(nf: cutlass.Int32, nt: cutlass.Int32, ctas: cutlass.Int32):
    """kernel.plan.balanced_split, the same candidates in the same order, every one unrolled;
    the first feasible one is kept (``found``)."""
    fu = (nf + (ctas - 1)) // ctas
    tu = (nt + (ctas - 1)) // ctas
    p = ctas
    fa = fu
    ta = tu
    fb = fu
    tb = tu
    found = cutlass.Int32(0)
    l0 = (FULL_COST * nf + LIGHT_COST * nt + (ctas - 1)) // ctas
    phi = nf // ctas
    for step in cutlass.range_constexpr(BALANCED_STEPS):
        lim = l0 + step
        for o in cutlass.range_constexpr(3):
            f1 = phi + (o - 2)
            ta1 = cutlass.max(lim - FULL_COST * f1, cutlass.Int32(0)) // LIGHT_COST
            ok = cutlass.Int32(f1 >= 0) * cutlass.Int32(ctas * f1 >= nf) * cutlass.Int32(ctas * ta1 >= nt)
            if ok * (1 - found) != 0:
                p = ctas
                fa = f1
                ta = ta1
                fb = f1
                tb = ta1
                found = cutlass.Int32(1)
            for d in cutlass.range_constexpr(1, 4):
                f2 = f1 + d
                tb2 = cutlass.max(lim - FULL_COST * f2, cutlass.Int32(0)) // LIGHT_COST
                hi = cutlass.min(ctas, cutlass.max(ctas * f2 - nf, cutlass.Int32(0)) // d)
                ok = (cutlass.Int32(f1 >= 0) * cutlass.Int32(FULL_COST * f2 <= lim) * cutlass.Int32(ctas * f2 >= nf)
                      * cutlass.Int32(hi * (ta1 - tb2) >= nt - ctas * tb2))
                if ok * (1 - found) != 0:
                    p = hi
                    fa = f1
                    ta = ta1
                    fb = f2
                    tb = tb2
                    found = cutlass.Int32(1)
    return p, fa, ta, fb, tb


@cute.jit
def split_candidate(nf: cutlass.Int32, nt: cutlass.Int32, ctas: cutlass.Int32, idx: cutlass.Int32):
    """kernel.plan.split_candidate: (feasible, p, fa, ta, fb, tb) of candidate ``idx`` (run time)
    of balanced_split's search, the same arithmetic (d = j is 1..3 for j > 0)."""
    step = idx // 12
    r = idx - step * 12
    o = r // 4
    j = r - o * 4
    lim = (FULL_COST * nf + LIGHT_COST * nt + (ctas - 1)) // ctas + step
    f1 = nf // ctas - 2 + o
    ta = cutlass.max(lim - FULL_COST * f1, cutlass.Int32(0)) // LIGHT_COST
    d = cutlass.max(j, cutlass.Int32(1))
    f2 = f1 + j
    tb = cutlass.max(lim - FULL_COST * f2, cutlass.Int32(0)) // LIGHT_COST
    hi = cutlass.min(ctas, cutlass.max(ctas * f2 - nf, cutlass.Int32(0)) // d)
    ok = cutlass.Int32(f1 >= 0) * cutlass.Int32(ctas * f1 >= nf) * cutlass.Int32(ctas * ta >= nt)
    p = ctas
    if j != 0:
        ok = (cutlass.Int32(f1 >= 0) * cutlass.Int32(FULL_COST * f2 <= lim) * cutlass.Int32(ctas * f2 >= nf)
              * cutlass.Int32(hi * (ta - tb) >= nt - ctas * tb))
        p = hi
    return ok, p, f1, ta, f2, tb


@cute.jit
def balanced_split_warp(nf: cutlass.Int32, nt: cutlass.Int32, ctas: cutlass.Int32, lane: cutlass.Int32):
    """``balanced_split`` computed by a whole warp (every lane must call it; every lane gets the
    result): lane l evaluates candidates l, l + 32, ... (``split_candidate``) and keeps its
    lowest feasible one; a butterfly min over the lanes gives the lowest feasible index of all,
    and its lane's (p, fa, ta, fb, tb) are read by shuffles. The same split as the unrolled
    search, in ~150 instructions on the warp instead of ~1200 (the one-lane search
    cost ~1.2 us on bench4's critical path on the H200, 2026-12-02: docs/results.md)."""
    fu = (nf + (ctas - 1)) // ctas
    tu = (nt + (ctas - 1)) // ctas
    best = cutlass.Int32(SPLIT_CANDIDATES)
    p, fa, ta, fb, tb = ctas, fu, tu, fu, tu
    for r in cutlass.range_constexpr((SPLIT_CANDIDATES + 31) // 32):
        idx = lane + 32 * r
        ok, cp, cfa, cta_, cfb, ctb = split_candidate(nf, nt, ctas, idx)
        if ok * cutlass.Int32(idx < SPLIT_CANDIDATES) * cutlass.Int32(best == SPLIT_CANDIDATES) != 0:
            best = idx
            p, fa, ta, fb, tb = cp, cfa, cta_, cfb, ctb
    low = best
    for s in cutlass.range_constexpr(5):
        low = cutlass.min(low, cute.arch.shuffle_sync_bfly(low, offset=1 << s))
    if low < SPLIT_CANDIDATES:
        src = low % 32
        p = cute.arch.shuffle_sync(p, src)
        fa = cute.arch.shuffle_sync(fa, src)
        ta = cute.arch.shuffle_sync(ta, src)
        fb = cute.arch.shuffle_sync(fb, src)
        tb = cute.arch.shuffle_sync(tb, src)
    else:
        p, fa, ta, fb, tb = ctas, fu, tu, fu, tu
    return p, fa, ta, fb, tb


@cute.jit
def balanced_share(nf: cutlass.Int32, nt: cutlass.Int32, ctas: cutlass.Int32, cta: cutlass.Int32):
    """(first full, full count, first light, light count) of CTA ``cta``: kernel.plan.balanced_share."""
    p, fa, ta, fb, tb = balanced_split(nf, nt, ctas)
    return share_of_split(nf, nt, cta, p, fa, ta, fb, tb)


@cute.jit
def share_of_split(nf: cutlass.Int32, nt: cutlass.Int32, cta: cutlass.Int32, p: cutlass.Int32, fa: cutlass.Int32,
                   ta: cutlass.Int32, fb: cutlass.Int32, tb: cutlass.Int32):
    """CTA ``cta``'s runs under the split (p, fa, ta, fb, tb), cut at the lists' ends."""
    fs = cta * fa
    fc = fa
    ts = cta * ta
    tc = ta
    if cta >= p:
        fs = p * fa + (cta - p) * fb
        fc = fb
        ts = p * ta + (cta - p) * tb
        tc = tb
    fs = cutlass.min(fs, nf)
    ts = cutlass.min(ts, nt)
    return fs, cutlass.min(fc, nf - fs), ts, cutlass.min(tc, nt - ts)


@cute.jit
def balanced_share_warp(nf: cutlass.Int32, nt: cutlass.Int32, ctas: cutlass.Int32, cta: cutlass.Int32,
                        lane: cutlass.Int32):
    """``balanced_share`` from ``balanced_split_warp`` (a whole warp calls it)."""
    p, fa, ta, fb, tb = balanced_split_warp(nf, nt, ctas, lane)
    return share_of_split(nf, nt, cta, p, fa, ta, fb, tb)


@cute.jit
def uniform_share(nf: cutlass.Int32, nt: cutlass.Int32, ctas: cutlass.Int32, cta: cutlass.Int32):
    """The share of ``balanced_share``'s fallback split, without its search: every CTA
    ceil(nf / ctas) full and ceil(nt / ctas) light entries (profiling only: the ``uniform_split``
    ablation; every tile still runs once)."""
    fu = (nf + (ctas - 1)) // ctas
    tu = (nt + (ctas - 1)) // ctas
    fs = cutlass.min(cta * fu, nf)
    ts = cutlass.min(cta * tu, nt)
    return fs, cutlass.min(fu, nf - fs), ts, cutlass.min(tu, nt - ts)


@cute.jit
def balanced_locate(m_sizes: cute.Tensor, num_groups: cutlass.Constexpr[int], tile_m: cutlass.Constexpr[int],
                    tile_n: cutlass.Constexpr[int], light_list: cutlass.Int32, idx: cutlass.Int32,
                    all_tiles: cutlass.Int32 = 0):
    """(slot, m_block, n_block) of entry ``idx`` of the full list (``light_list`` 0) or of the
    light list (1), or (``all_tiles`` 1, ``light_list`` 0) of every tile in global order (the
    snake split's list; no branch between the lists): kernel.plan.balanced_locate. The slot is
    the last one that owns entries of that list and whose first entry is <= ``idx`` (slot 0 when
    none: an index past the list, never run, still gets an in-range slot)."""
    sel_slot = cutlass.Int32(0)
    sel_base = cutlass.Int32(0)
    sel_per = cutlass.Int32(1)
    sel_tm = cutlass.Int32(1)
    base = cutlass.Int32(0)
    for s in cutlass.range_constexpr(num_groups):
        tm, tn, light = slot_blocks(m_sizes, s, tile_m, tile_n)
        per = light * (light_list + all_tiles) + (tm - light) * (1 - light_list)  # entries per N block
        count = tn * per
        if idx >= base:
            if count != 0:
                sel_slot = cutlass.Int32(s)
                sel_base = base
                sel_per = per
                sel_tm = tm
        base = base + count
    rest = idx - sel_base
    n_block = rest // sel_per
    m_block = rest - n_block * sel_per + light_list * (sel_tm - 1)
    return sel_slot, m_block, n_block


@cute.jit
def k_uniform(m_sizes: cute.Tensor, num_groups: cutlass.Constexpr[int], tile_m: cutlass.Constexpr[int],
              tile_n: cutlass.Constexpr[int], tile_k: cutlass.Constexpr[int]) -> cutlass.Int32:
    """1 when every slot that owns tiles has the same number of K tiles, else 0
    (kernel.plan.LaunchPlan.k_uniform)."""
    first = cutlass.Int32(-1)
    same = cutlass.Int32(1)
    for s in cutlass.range_constexpr(num_groups):
        tm, tn, _light = slot_blocks(m_sizes, s, tile_m, tile_n)
        kt = (m_sizes[s, 2] + (tile_k - 1)) // tile_k
        if tm * tn != 0:
            if first >= 0:
                if kt != first:
                    same = cutlass.Int32(0)
            first = kt
    return same


@cute.jit
def snake_share(total: cutlass.Int32, ctas: cutlass.Int32, cta: cutlass.Int32):
    """The share of CTA ``cta`` in the snake split (kernel.plan.snake_count), in the balanced
    share's four words: (cta, its tile count, -1, 0); the -1 (a balanced share has no negative
    word) tells ``locate`` to map entry j through :func:`snake_tile`."""
    r = total // ctas  # rounds every CTA completes; round r exists for this CTA when its tile does
    return cta, r + cutlass.Int32(snake_tile(ctas, cta, r) < total), cutlass.Int32(-1), cutlass.Int32(0)


@cute.jit
def snake_tile(ctas: cutlass.Int32, cta: cutlass.Int32, j: cutlass.Int32) -> cutlass.Int32:
    """The global tile of CTA ``cta``'s ``j``-th entry in the snake split (kernel.plan.snake_tile)."""
    return j * ctas + cta + (j % 2) * (ctas - 1 - 2 * cta)
