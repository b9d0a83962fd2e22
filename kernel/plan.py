"""Host-side launch planning shared by every kernel (Blackwell, Hopper, the CPU model).

Plain Python, testable without a GPU. A :class:`LaunchPlan` fixes, for one problem and one
tile shape:

* the launch order of the groups (``group_order[slot]`` is the caller's group index; by
  default the groups with the most K tiles per tile go first, then those with the most work, so
  that the tail of the persistent grid is short), and how to put the outputs back in the
  caller's order;
* per-slot tile counts and their prefix sums: the global tile index space;
* how that space is cut among CTAs (``contiguous`` ranges, as the seed kernel does, or
  ``strided`` round-robin), and :meth:`LaunchPlan.locate`, the arithmetic the device
  performs to map a global tile back to (slot, m block, n block).

Inside a group, tiles are numbered with the M block fastest:
``tile = tile_prefix[slot] + n_block * tiles_m[slot] + m_block``.

Balanced (``schedule="balanced"``, the Hopper ``y_tail64`` variant): a slot's last M block that
holds at most ``tile_m / 2`` rows is a *light* tile (the kernel runs it with a half-height
wgmma, measured at about 3/4 of a full tile's time); every other tile is *full*. The tile index
space is unchanged (``tile_prefix``, M block fastest); what changes is which CTA runs which
tile. With tile costs of :data:`FULL_COST` and :data:`LIGHT_COST` (quarter units) the split
:func:`balanced_split` gives CTAs ``c < p`` ``fa`` full and ``ta`` light tiles and the others
``fb`` and ``tb`` (a makespan of at most L units, the smallest L it finds); CTA ``c`` runs a
contiguous run of the full tiles (global order), then a contiguous run of the light tiles (the
heavy tiles first). ``num_ctas`` is ``min(total, max_ctas)``: trailing CTAs may own no tile (they
still take part in the Hopper prepass's phase 1). That split counts tiles, not K: when the slots'
K differ (:attr:`LaunchPlan.k_uniform` false) a CTA with two long tiles could run several times
the mean, so the tiles are dealt in the *snake* order instead (:func:`snake_tile`: round r deals
one tile to every CTA, forwards in even rounds and backwards in odd ones, over the global order,
which ``by_cost`` sorts from the most K tiles down: the CTAs that took the costliest tiles in
one round take the cheapest of the next). The device twins are in kernel.device_schedule
(``balanced_split``, ``balanced_share``, ``balanced_locate``, ``k_uniform``, ``snake_share``,
``snake_tile``): the same integer arithmetic.

Split last round (``schedule="split_last"``, the Hopper 256-row Y tile): with ``F = total // ctas``
full rounds and ``R = total - F * ctas`` tiles left, a contiguous schedule runs ``F + 1`` tile
times where most CTAs do ``F``. When ``0 < 2 R <= ctas`` the R last tiles are cut in two K halves
instead (:func:`split_last_shape`, :meth:`LaunchPlan.cta_units`): CTA ``c`` runs full tiles ``[c F, (c + 1) F)``, then, for
``c < 2 R``, half ``c % 2`` of tile ``F ctas + c // 2``: half 0 holds K tiles ``[0, h)`` and
publishes its fp32 accumulators, half 1 holds ``[h, KT)`` (the longer half), waits for them, adds
them to its own and stores the tile (``h = KT // 2``; a tile of one K tile is not cut: half 1
runs it whole, half 0 runs nothing). Otherwise the schedule is ``contiguous`` on the same grid
(no CTA count trimmed: the device decides from the grid). The makespan drops from ``F + 1`` to
about ``F + 1/2`` tile times; the oracle's bound covers the cut (``KernelConstraints.k_split``).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Literal, NamedTuple, Sequence

GroupOrder = Literal["by_cost", "by_work", "caller"]
Schedule = Literal["contiguous", "strided", "balanced", "split_last"]

# schedule="balanced": tile costs in quarter units (a light tile, <= tile_m / 2 rows of the
# slot's last M block, ~0.75 of a full tile on the H200, 2026-12-01: docs/results.md)
FULL_COST = 4
LIGHT_COST = 3
# balanced_split tries makespans L0 .. L0 + BALANCED_STEPS - 1 (L0 = ceil(cost / CTAs)), then
# falls back to the uniform split (every CTA ceil(full / CTAs) full + ceil(light / CTAs) light)
BALANCED_STEPS = 4


def ceil_div(a: int, b: int) -> int:
    return (a + b - 1) // b


class TileCoord(NamedTuple):
    slot: int  # position in launch order
    group: int  # the caller's group index
    m_block: int
    n_block: int


@dataclass(frozen=True)
class LaunchPlan:
    tile_m: int
    tile_n: int
    tile_k: int
    group_order: tuple[int, ...]
    sizes: tuple[tuple[int, int, int, int], ...]  # (m, n, k, l) in launch (slot) order
    tiles_m: tuple[int, ...]
    tiles_n: tuple[int, ...]
    tile_prefix: tuple[int, ...]  # len G + 1
    num_ctas: int
    schedule: Schedule

    @property
    def num_groups(self) -> int:
        return len(self.sizes)

    @property
    def total_tiles(self) -> int:
        return self.tile_prefix[-1]

    @property
    def tiles_per_cta(self) -> int:
        """Upper bound of tiles one CTA runs (the contiguous range length); ``balanced``: the
        longest CTA list."""
        if self.schedule in ("balanced", "split_last"):
            return max((len(self.cta_tiles(c)) for c in range(self.num_ctas)), default=0)
        return ceil_div(self.total_tiles, self.num_ctas) if self.num_ctas else 0

    # ---- schedule="balanced" -------------------------------------------------------------
    def slot_light(self, slot: int) -> bool:
        """Whether the slot's last M block is a light tile (<= tile_m / 2 rows; slots that own
        tiles only)."""
        m = self.sizes[slot][0]
        if not self.tiles_m[slot] or not self.tiles_n[slot]:
            return False
        return m - (self.tiles_m[slot] - 1) * self.tile_m <= self.tile_m // 2

    def is_light(self, tile: int) -> bool:
        c = self.locate(tile)
        return self.slot_light(c.slot) and c.m_block == self.tiles_m[c.slot] - 1

    def tile_cost(self, tile: int) -> int:
        """Quarter units (schedule="balanced"'s model): LIGHT_COST or FULL_COST."""
        return LIGHT_COST if self.is_light(tile) else FULL_COST

    def balanced_lists(self) -> tuple[list[int], list[int]]:
        """(full tiles, light tiles), each in global tile order."""
        full, light = [], []
        for t in range(self.total_tiles):
            (light if self.is_light(t) else full).append(t)
        return full, light

    def balanced_share(self, cta: int) -> tuple[int, int, int, int]:
        """(first full, full count, first light, light count) of CTA ``cta``: its positions in
        :meth:`balanced_lists` (kernel.device_schedule.balanced_share on the device)."""
        full, light = self.balanced_lists()
        return balanced_share(len(full), len(light), self.num_ctas, cta)

    def k_tiles(self, slot: int) -> int:
        return ceil_div(self.sizes[slot][2], self.tile_k)

    @property
    def k_uniform(self) -> bool:
        """Whether every slot that owns tiles has the same number of K tiles (then
        ``schedule="balanced"`` splits by tile counts, else by the snake)."""
        return len({self.k_tiles(s) for s in range(self.num_groups) if self.tiles_m[s] * self.tiles_n[s]}) <= 1

    def cta_tiles(self, cta: int) -> Sequence[int]:
        """The global tiles CTA ``cta`` runs, in the order it runs them; a range, except for
        ``balanced`` (a tuple: its full tiles, then its light tiles)."""
        if not 0 <= cta < self.num_ctas:
            raise IndexError(f"cta {cta} outside 0..{self.num_ctas - 1}")
        if self.schedule == "balanced":
            if not self.k_uniform:
                return tuple(snake_tile(self.num_ctas, cta, j)
                             for j in range(snake_count(self.total_tiles, self.num_ctas, cta)))
            full, light = self.balanced_lists()
            fs, fc, ts, tc = balanced_share(len(full), len(light), self.num_ctas, cta)
            return tuple(full[fs:fs + fc]) + tuple(light[ts:ts + tc])
        if self.schedule == "split_last":
            return tuple(u.tile for u in self.cta_units(cta))
        if self.schedule == "contiguous":
            return self._contiguous_range(cta, self.tiles_per_cta)
        return range(cta, self.total_tiles, self.num_ctas)

    def _contiguous_range(self, cta: int, per: int) -> range:
        start = min(cta * per, self.total_tiles)
        return range(start, min(start + per, self.total_tiles))

    def _whole(self, tile: int) -> WorkUnit:
        return WorkUnit(tile, 0, self.k_tiles(self.locate(tile).slot), "whole")

    def cta_units(self, cta: int) -> tuple[WorkUnit, ...]:
        """The work units CTA ``cta`` runs, in order: (tile, K tiles [k_begin, k_end), role).
        Every schedule but ``split_last`` runs whole tiles only."""
        if not 0 <= cta < self.num_ctas:
            raise IndexError(f"cta {cta} outside 0..{self.num_ctas - 1}")
        if self.schedule != "split_last":
            return tuple(self._whole(t) for t in self.cta_tiles(cta))
        full, split = split_last_shape(self.total_tiles, self.num_ctas)
        if not split:  # full is the contiguous range length
            return tuple(self._whole(t) for t in self._contiguous_range(cta, full))
        units = [self._whole(t) for t in range(cta * full, (cta + 1) * full)]
        if cta < 2 * split:
            tile = full * self.num_ctas + cta // 2
            unit = split_half(self.k_tiles(self.locate(tile).slot), cta % 2)
            if unit is not None:
                units.append(WorkUnit(tile, *unit))
        return tuple(units)

    def split_index(self, tile: int) -> int | None:
        """``split_last``: the partial-sum slot of a cut tile (its place among the cut tiles),
        None for a tile run whole."""
        if self.schedule != "split_last":
            return None
        full, split = split_last_shape(self.total_tiles, self.num_ctas)
        first = full * self.num_ctas
        if split and first <= tile < first + split and split_half(self.k_tiles(self.locate(tile).slot), 0):
            return tile - first
        return None

    def locate(self, tile: int) -> TileCoord:
        """Global tile -> coordinates, by the binary search over ``tile_prefix`` the kernels use.

        The slot is the one whose range [tile_prefix[s], tile_prefix[s+1]) holds ``tile``;
        empty slots (M or N zero) own no tile and are never returned.
        """
        if not 0 <= tile < self.total_tiles:
            raise IndexError(f"tile {tile} outside 0..{self.total_tiles - 1}")
        slot = device_group_search(self.tile_prefix, tile)
        rest = tile - self.tile_prefix[slot]
        n_block, m_block = divmod(rest, self.tiles_m[slot])
        return TileCoord(slot, self.group_order[slot], m_block, n_block)

    def restore_order(self, per_slot: Sequence) -> list:
        """Outputs listed in slot order -> the caller's group order."""
        out = [None] * len(per_slot)
        for slot, group in enumerate(self.group_order):
            out[group] = per_slot[slot]
        return out

    def describe(self) -> str:
        return (
            f"plan tile={self.tile_m}x{self.tile_n}x{self.tile_k} groups={self.num_groups} "
            f"tiles={self.total_tiles} ctas={self.num_ctas} schedule={self.schedule} "
            f"order={list(self.group_order)}"
        )


class WorkUnit(NamedTuple):
    tile: int
    k_begin: int  # K tiles [k_begin, k_end) of the tile
    k_end: int
    role: str  # "whole": stores C; "publish": writes its fp32 sums for the tile's other half;
    # "combine": adds the other half's sums to its own, then stores C


# schedule="split_last": the partial-sum slots a workspace holds (one per cut tile, at most
# half the grid) and so the largest grid that schedule plans (a Hopper has 132 SMs)
SPLIT_SLOTS = 128


def split_last_shape(total: int, ctas: int) -> tuple[int, int]:
    """(full tiles per CTA, tiles cut in K halves) of ``schedule="split_last"``; (tiles per CTA
    of the contiguous schedule, 0) when no cut applies (no leftover, or more leftover tiles than
    half the grid). kernel.device_schedule.split_last_range on the device."""
    if ctas <= 0:
        return 0, 0
    full = total // ctas
    rest = total - full * ctas
    if 0 < rest and 2 * rest <= ctas:
        return full, rest
    return ceil_div(total, ctas), 0


def split_half(k_tiles: int, half: int) -> tuple[int, int, str] | None:
    """(k_begin, k_end, role) of half ``half`` of a cut tile of ``k_tiles`` K tiles; None when that
    half is empty (a one-K-tile tile is run whole by half 1)."""
    h = k_tiles // 2
    if half == 0:
        return (0, h, "publish") if h > 0 else None
    return (h, k_tiles, "combine" if h > 0 else "whole")


def device_group_search(tile_prefix: Sequence[int], tile: int) -> int:
    """Largest slot s with tile_prefix[s] <= tile < tile_prefix[s+1] (lower-bound search).

    Written as the loop the device code runs (left/right/mid on ``tile_prefix[mid + 1]``), so
    the plan properties check the kernels' arithmetic, not Python's bisect.
    """
    left, right = 0, len(tile_prefix) - 1
    while left < right:
        mid = (left + right) // 2
        if tile_prefix[mid + 1] <= tile:
            left = mid + 1
        else:
            right = mid
    return left


# balanced_split's candidates in its order: idx = (step * 3 + o) * 4 + j, j = 0 the one-kind
# candidate, j = d = 1..3 the two-kind ones (kernel.device_schedule.balanced_split_warp: one
# candidate per lane and round, the lowest feasible index wins)
SPLIT_CANDIDATES = BALANCED_STEPS * 3 * 4


def split_candidate(nf: int, nt: int, ctas: int, idx: int) -> tuple[int, int, int, int, int, int]:
    """(feasible, p, fa, ta, fb, tb) of candidate ``idx`` of :func:`balanced_split`'s search."""
    step, r = divmod(idx, 12)
    o, j = divmod(r, 4)
    lim = ceil_div(FULL_COST * nf + LIGHT_COST * nt, ctas) + step
    f1 = nf // ctas - 2 + o
    ta = max(lim - FULL_COST * f1, 0) // LIGHT_COST
    if j == 0:
        return int(f1 >= 0) * int(ctas * f1 >= nf) * int(ctas * ta >= nt), ctas, f1, ta, f1, ta
    f2 = f1 + j
    tb = max(lim - FULL_COST * f2, 0) // LIGHT_COST
    hi = min(ctas, max(ctas * f2 - nf, 0) // j)
    ok = int(f1 >= 0) * int(FULL_COST * f2 <= lim) * int(ctas * f2 >= nf) * int(hi * (ta - tb) >= nt - ctas * tb)
    return ok, hi, f1, ta, f2, tb


def balanced_split(nf: int, nt: int, ctas: int) -> tuple[int, int, int, int, int]:
    """(p, fa, ta, fb, tb): CTAs ``c < p`` take ``fa`` full and ``ta`` light tiles, the others
    ``fb`` and ``tb``, with ``p * fa + (ctas - p) * fb >= nf`` and the same for the light tiles
    (the runs are cut at the lists' ends). For each makespan L = L0, L0 + 1, ... (BALANCED_STEPS
    of them, L0 = ceil((FULL_COST nf + LIGHT_COST nt) / ctas)) and each ``f1`` in
    ``phi - 2 .. phi`` (``phi`` = nf // ctas): one kind (every CTA ``f1`` full + the most light
    tiles that fit in L), then two kinds (``f1`` and ``f1 + d``, d = 1..3, each with the most
    light tiles that fit, ``p`` the most CTAs of the first kind that still cover the full tiles);
    the first that covers both lists wins (:func:`split_candidate` in that order). Otherwise the
    uniform split (ceil(nf / ctas), ceil(nt / ctas)). The device runs the same arithmetic
    (kernel.device_schedule.balanced_split: every candidate unrolled, the first feasible one
    selected; balanced_split_warp: the candidates over a warp's lanes, the lowest feasible one
    selected); only non-negative integers are divided, so C's truncating division and Python's
    floor division agree."""
    for idx in range(SPLIT_CANDIDATES):
        ok, *split = split_candidate(nf, nt, ctas, idx)
        if ok:
            return tuple(split)
    fu, tu = ceil_div(nf, ctas), ceil_div(nt, ctas)
    return ctas, fu, tu, fu, tu


def balanced_share(nf: int, nt: int, ctas: int, cta: int) -> tuple[int, int, int, int]:
    """(first full, full count, first light, light count) of CTA ``cta`` under
    :func:`balanced_split` (kernel.device_schedule.balanced_share, the same arithmetic)."""
    p, fa, ta, fb, tb = balanced_split(nf, nt, ctas)
    if cta < p:
        fs, fc, ts, tc = cta * fa, fa, cta * ta, ta
    else:
        fs, fc, ts, tc = p * fa + (cta - p) * fb, fb, p * ta + (cta - p) * tb, tb
    fs, ts = min(fs, nf), min(ts, nt)
    return fs, min(fc, nf - fs), ts, min(tc, nt - ts)


def snake_count(total: int, ctas: int, cta: int) -> int:
    """Tiles of CTA ``cta`` in the snake split of ``total`` tiles over ``ctas`` CTAs: round r
    gives CTA c the tile r * ctas + c (r even) or r * ctas + ctas - 1 - c (r odd), while it
    exists (kernel.device_schedule.snake_share)."""
    r = total // ctas  # rounds every CTA completes; round r exists for this CTA when its tile does
    return r + int(snake_tile(ctas, cta, r) < total)


def snake_tile(ctas: int, cta: int, j: int) -> int:
    """Global tile of CTA ``cta``'s ``j``-th entry in the snake split (kernel.device_schedule.snake_tile)."""
    return j * ctas + cta + (j % 2) * (ctas - 1 - 2 * cta)


def group_work(size: Sequence[int], tile_m: int, tile_n: int, tile_k: int) -> int:
    m, n, k = size[0], size[1], size[2]
    return ceil_div(m, tile_m) * ceil_div(n, tile_n) * ceil_div(k, tile_k)


def make_plan(
    problem_sizes: Sequence[Sequence[int]],
    *,
    tile_m: int,
    tile_n: int,
    tile_k: int,
    max_ctas: int | None,
    schedule: Schedule = "contiguous",
    order: GroupOrder = "by_cost",
) -> LaunchPlan:
    """Plan one launch.

    Slot order: ``by_cost`` (default) the groups whose tiles have the most K tiles first, then by
    work (tiles x K tiles), so the global tile order runs from the costliest tiles to the
    cheapest (what the snake split of ``schedule="balanced"`` needs when K differs between
    groups; with one K it is ``by_work``); ``by_work`` by work alone; ``caller`` as given.

    ``max_ctas`` caps the persistent grid (SM count times CTAs per SM); ``None`` launches one
    CTA per tile (the monolithic kernels). Every launched CTA owns at least one tile. Groups with M == 0 or N == 0 are allowed and own no
    tile. The sort is stable, so equal-work groups keep the caller's relative order.
    """
    sizes = [tuple(int(x) for x in s) for s in problem_sizes]
    if order == "by_cost":
        group_order = sorted(
            range(len(sizes)),
            key=lambda g: (-ceil_div(sizes[g][2], tile_k), -group_work(sizes[g], tile_m, tile_n, tile_k)),
        )
    elif order == "by_work":
        group_order = sorted(
            range(len(sizes)), key=lambda g: -group_work(sizes[g], tile_m, tile_n, tile_k)
        )
    elif order == "caller":
        group_order = list(range(len(sizes)))
    else:
        raise ValueError(f"unknown group order {order!r}")
    slot_sizes = tuple(sizes[g] for g in group_order)
    tiles_m = tuple(ceil_div(s[0], tile_m) for s in slot_sizes)
    tiles_n = tuple(ceil_div(s[1], tile_n) for s in slot_sizes)
    prefix = [0]
    for tm, tn in zip(tiles_m, tiles_n):
        prefix.append(prefix[-1] + tm * tn)
    total = prefix[-1]
    if max_ctas is None:
        num_ctas = total
    else:
        if max_ctas < 1:
            raise ValueError(f"max_ctas must be >= 1, got {max_ctas}")
        num_ctas = min(total, max_ctas)
        if schedule in ("balanced", "split_last"):
            pass  # every CTA of min(total, max_ctas): the split is of this grid (trailing CTAs may idle)
        elif schedule == "contiguous" and total:
            # ceil-sized ranges can leave trailing CTAs with nothing (9 tiles on 8 CTAs: ranges of
            # 2 fill 5 CTAs): launch only the CTAs that own a range. The range length, which the
            # device derives from the grid as ceil(total / num_ctas), does not change.
            num_ctas = ceil_div(total, ceil_div(total, num_ctas))
    if schedule == "split_last" and num_ctas > 2 * SPLIT_SLOTS:
        raise ValueError(f"schedule='split_last' plans at most {2 * SPLIT_SLOTS} CTAs, got {num_ctas}")
    if schedule not in ("contiguous", "strided", "balanced", "split_last"):
        raise ValueError(f"unknown schedule {schedule!r}")
    return LaunchPlan(
        tile_m=tile_m,
        tile_n=tile_n,
        tile_k=tile_k,
        group_order=tuple(group_order),
        sizes=slot_sizes,
        tiles_m=tiles_m,
        tiles_n=tiles_n,
        tile_prefix=tuple(prefix),
        num_ctas=num_ctas,
        schedule=schedule,
    )


def slot_list_entries(size: Sequence[int], tile_m: int, tile_n: int, light_list: int,
                      all_tiles: int = 0) -> tuple[int, int, int]:
    """(M blocks, entries per N block, entries) a slot of ``size`` owns in the full list
    (``light_list`` 0) or the light list (1) of :meth:`LaunchPlan.balanced_lists`, or (``all_tiles``
    1) in the list of every tile: its last M block is light when it holds at most ``tile_m / 2``
    rows (kernel.device_schedule.slot_blocks on the device)."""
    m, n = size[0], size[1]
    tm, tn = ceil_div(m, tile_m), ceil_div(n, tile_n)
    light = int(m - (tm - 1) * tile_m <= tile_m // 2) * int(tm > 0)
    per = light * (light_list + all_tiles) + (tm - light) * (1 - light_list)
    return tm, per, tn * per


def balanced_locate(sizes: Sequence[Sequence[int]], tile_m: int, tile_n: int, light_list: int,
                    idx: int, all_tiles: int = 0) -> tuple[int, int, int]:
    """(slot, m_block, n_block) of entry ``idx`` of the full list (``light_list`` 0) or the light
    list (1) of :meth:`LaunchPlan.balanced_lists`, or (``all_tiles`` 1) of every tile in global
    order (``sizes`` in slot order), written as the loop the device runs
    (kernel.device_schedule.balanced_locate)."""
    sel_slot, sel_base, sel_per, sel_tm, base = 0, 0, 1, 1, 0
    for s, size in enumerate(sizes):
        tm, per, count = slot_list_entries(size, tile_m, tile_n, light_list, all_tiles)
        if idx >= base and count != 0:
            sel_slot, sel_base, sel_per, sel_tm = s, base, per, tm
        base += count
    rest = idx - sel_base
    n_block = rest // sel_per
    return sel_slot, rest - n_block * sel_per + light_list * (sel_tm - 1), n_block
