"""Properties of the shared launch plan and device tables, on CPU (every CI run)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

import oracle
from kernel.plan import LIGHT_COST, make_plan
from kernel.tables import POINTER_COLUMNS, TableCache
from kernel.validation import KernelConstraints, validate_problem

pytestmark = pytest.mark.properties

sizes_strategy = st.lists(
    st.tuples(st.integers(0, 700), st.integers(0, 900), st.sampled_from([64, 256, 512, 1024]), st.just(1)),
    min_size=1,
    max_size=20,
)
tiles = st.sampled_from([(128, 128, 256), (128, 256, 256), (64, 128, 128), (64, 256, 64)])
grids = st.one_of(st.none(), st.integers(1, 140))
schedules = st.sampled_from(["contiguous", "strided", "balanced"])
orders = st.sampled_from(["by_cost", "by_work", "caller"])


# structured corners every profile runs: empty groups (M or N zero) before, between and after
# non-empty ones in caller order (the by_work order moves them last, where a slip hides)
EMPTY_AROUND_WORK = [(0, 64, 64, 1), (129, 0, 64, 1), (130, 257, 64, 1), (0, 0, 64, 1), (64, 300, 256, 1), (5, 0, 64, 1)]
EMPTY_FIRST = [(0, 128, 64, 1), (1, 1, 64, 1)]
TILE_MULTIPLES = [(128, 256, 64, 1), (129, 257, 64, 1), (256, 128, 512, 1)]


def _plan(sizes, tile, max_ctas, schedule, order):
    return make_plan(sizes, tile_m=tile[0], tile_n=tile[1], tile_k=tile[2], max_ctas=max_ctas,
                     schedule=schedule, order=order)


def _blocks(extent: int, tile: int) -> list[int]:
    """Indices of the tiles that hold rows 0..extent-1: one per tile start (enumerated, not divided)."""
    return [start // tile for start in range(0, extent, tile)]


@given(sizes_strategy, tiles, grids, schedules, orders)
@example(EMPTY_AROUND_WORK, (128, 128, 256), None, "contiguous", "caller")
@example(EMPTY_AROUND_WORK, (64, 256, 64), 3, "strided", "caller")
@example(EMPTY_FIRST, (128, 128, 256), 2, "contiguous", "caller")
@example(TILE_MULTIPLES, (128, 128, 256), 4, "contiguous", "by_work")
def test_every_tile_runs_exactly_once(sizes, tile, max_ctas, schedule, order):
    plan = _plan(sizes, tile, max_ctas, schedule, order)
    seen = [t for cta in range(plan.num_ctas) for t in plan.cta_tiles(cta)]
    assert sorted(seen) == list(range(plan.total_tiles))
    # and the tiles cover every output element of every group exactly once
    covered = {}
    for t in seen:
        c = plan.locate(t)
        covered.setdefault(c.group, set()).add((c.m_block, c.n_block))
    for g, (m, n, _, _) in enumerate(sizes):
        want = {(i, j) for i in _blocks(m, tile[0]) for j in _blocks(n, tile[1])}
        assert covered.get(g, set()) == want


@given(sizes_strategy, tiles, grids, schedules)
@example(EMPTY_AROUND_WORK, (128, 128, 256), 5, "contiguous")
def test_cta_ranges_partition_and_balance(sizes, tile, max_ctas, schedule):
    plan = _plan(sizes, tile, max_ctas, schedule, "by_work")
    counts = [len(plan.cta_tiles(c)) for c in range(plan.num_ctas)]
    assert sum(counts) == plan.total_tiles
    assert plan.num_ctas <= (plan.total_tiles if max_ctas is None else min(max_ctas, plan.total_tiles))
    if not counts:
        return
    if schedule == "balanced":
        # every CTA of min(total, max_ctas) is launched (phase 1 of the Hopper prepass uses them
        # all) and some may own no tile; no CTA costs more than the cost bound + a light tile
        # (kernel/tests/test_balanced_schedule.py: the split against the exact optimum)
        costs = [sum(plan.tile_cost(t) for t in plan.cta_tiles(c)) for c in range(plan.num_ctas)]
        assert max(costs) <= -(-sum(costs) // plan.num_ctas) + LIGHT_COST, costs
    else:
        assert min(counts) >= 1, f"a launched CTA owns no tile: {counts}"
    # tiles_per_cta (what the device derives from the grid size) is the longest range a CTA runs
    assert max(counts) == plan.tiles_per_cta, (counts, plan.tiles_per_cta)
    if schedule == "contiguous":
        # full ranges, then one shorter range at most, each starting where the previous ended
        assert counts[:-1] == [plan.tiles_per_cta] * (len(counts) - 1), counts
        ranges = [plan.cta_tiles(c) for c in range(plan.num_ctas)]
        assert all(r0.stop == r1.start for r0, r1 in zip(ranges, ranges[1:]))
    elif schedule == "strided":
        assert max(counts) - min(counts) <= 1, counts
    # as many CTAs as the cap allows, minus only those a contiguous range split leaves idle
    if max_ctas is None or max_ctas >= plan.total_tiles:
        assert plan.num_ctas == plan.total_tiles
    elif schedule in ("strided", "balanced"):
        assert plan.num_ctas == max_ctas


@given(sizes_strategy, tiles, orders)
@example(EMPTY_AROUND_WORK, (128, 128, 256), "caller")
@example(EMPTY_FIRST, (64, 128, 128), "caller")
def test_device_group_search_matches_a_direct_enumeration(sizes, tile, order):
    plan = _plan(sizes, tile, None, "contiguous", order)
    tile_idx = 0
    for slot, group in enumerate(plan.group_order):
        m, n = sizes[group][0], sizes[group][1]
        for n_block in _blocks(n, tile[1]):
            for m_block in _blocks(m, tile[0]):
                assert plan.locate(tile_idx) == (slot, group, m_block, n_block)
                tile_idx += 1
    assert tile_idx == plan.total_tiles


@given(sizes_strategy, tiles)
def test_group_order_is_by_work_and_is_undone(sizes, tile):
    plan = _plan(sizes, tile, 132, "contiguous", "by_work")
    assert sorted(plan.group_order) == list(range(len(sizes)))
    work = [plan.tiles_m[s] * plan.tiles_n[s] * plan.k_tiles(s) for s in range(plan.num_groups)]
    assert work == sorted(work, reverse=True)
    per_slot = [f"out{g}" for g in plan.group_order]
    assert plan.restore_order(per_slot) == [f"out{g}" for g in range(len(sizes))]


@given(sizes_strategy, tiles)
def test_group_order_by_cost_puts_the_longest_tiles_first_and_is_undone(sizes, tile):
    """The default order: slots by K tiles, most first, then by work (so the global tile order
    runs from the costliest tiles down: what the snake split deals from)."""
    plan = _plan(sizes, tile, 132, "balanced", "by_cost")
    assert plan == make_plan(sizes, tile_m=tile[0], tile_n=tile[1], tile_k=tile[2], max_ctas=132, schedule="balanced")
    assert sorted(plan.group_order) == list(range(len(sizes)))
    key = [(plan.k_tiles(s), plan.tiles_m[s] * plan.tiles_n[s] * plan.k_tiles(s)) for s in range(plan.num_groups)]
    assert key == sorted(key, reverse=True)
    per_slot = [f"out{g}" for g in plan.group_order]
    assert plan.restore_order(per_slot) == [f"out{g}" for g in range(len(sizes))]


@given(st.lists(st.tuples(st.integers(1, 200), st.integers(1, 200), st.sampled_from([64, 128]), st.just(1)),
                min_size=1, max_size=4),
       st.integers(0, 2**31 - 1))
def test_pointer_tables_follow_new_tensors_of_the_same_shapes(sizes, seed):
    constraints = KernelConstraints(k_granularity=64, device_type="cpu")
    cache = TableCache()
    tables = []
    for s in (seed, seed + 1):
        data = oracle.make_inputs(sizes, s, device="cpu")
        groups = validate_problem(data, constraints)
        plan = make_plan([g.size for g in groups], tile_m=128, tile_n=128, tile_k=256, max_ctas=132)
        t = cache.get(plan, groups, torch.device("cpu"))
        want = [[getattr(groups[g], col).data_ptr() for col in POINTER_COLUMNS] for g in plan.group_order]
        assert t.pointers.tolist() == want
        assert t.tile_prefix.tolist() == list(plan.tile_prefix)
        assert t.sizes.tolist() == [list(x) for x in plan.sizes]
        assert cache.get(plan, groups, torch.device("cpu")) is t  # same tensors -> cached, no copy
        tables.append((t, data))
    assert tables[0][0] is not tables[1][0]


@given(sizes_strategy, tiles, st.integers(1, 140), orders)
@example([(2320, 4096, 4096, 1)], (256, 128, 256), 132, "by_cost")  # 320 tiles: 56 cut on 132 CTAs
@example([(300, 900, 256, 1)], (128, 128, 256), 140, "by_cost")  # one K tile: nothing to cut
@example([(64, 64, 512, 1)], (128, 128, 256), 2, "by_cost")  # one tile, two CTAs: both halves
def test_split_last_covers_every_k_tile_once(sizes, tile, max_ctas, order):
    """schedule="split_last": every (tile, K tile) is run by exactly one unit; a cut tile has one
    publishing half ([0, h)) and one combining half ([h, KT)) on two CTAs, and a slot of its own;
    no CTA runs more K tiles than the contiguous schedule's busiest CTA on the same grid."""
    plan = _plan(sizes, tile, max_ctas, "split_last", order)
    assert plan.num_ctas == min(plan.total_tiles, max_ctas)
    runs, roles = {}, {}
    for cta in range(plan.num_ctas):
        for u in plan.cta_units(cta):
            assert 0 <= u.k_begin < u.k_end <= plan.k_tiles(plan.locate(u.tile).slot)
            for kt in range(u.k_begin, u.k_end):
                assert (u.tile, kt) not in runs, f"tile {u.tile} K tile {kt} run twice"
                runs[(u.tile, kt)] = cta
            roles.setdefault(u.tile, []).append((u.role, u.k_begin, u.k_end, cta))
    want = {(t, kt) for t in range(plan.total_tiles) for kt in range(plan.k_tiles(plan.locate(t).slot))}
    assert set(runs) == want
    slots = set()
    for t, parts in roles.items():
        kt = plan.k_tiles(plan.locate(t).slot)
        if len(parts) == 1:
            assert parts[0][0] == "whole" and plan.split_index(t) is None
            continue
        (r0, b0, e0, c0), (r1, b1, e1, c1) = sorted(parts, key=lambda p: p[1])
        assert (r0, b0, e0, r1, b1, e1) == ("publish", 0, kt // 2, "combine", kt // 2, kt) and c0 != c1
        index = plan.split_index(t)
        assert index is not None and 0 <= index < plan.num_ctas // 2 and index not in slots
        slots.add(index)
    if not plan.total_tiles:
        return
    contiguous = make_plan(sizes, tile_m=tile[0], tile_n=tile[1], tile_k=tile[2], max_ctas=plan.num_ctas,
                           schedule="contiguous", order=order)
    def busiest(p):
        return max((sum(u.k_end - u.k_begin for u in p.cta_units(c)) for c in range(p.num_ctas)), default=0)
    assert busiest(plan) <= busiest(contiguous)
