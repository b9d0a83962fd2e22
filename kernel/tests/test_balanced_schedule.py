"""schedule="balanced" (kernel.plan) and its device twins (kernel.device_schedule), on the CPU.

The Hopper ``y_tail64`` variant runs a group's last Y block of <= 64 rows as a 64-row tile
(~0.75 of a 128-row tile on the H200) and splits the tiles over the persistent grid by cost.
Here: every tile runs exactly once and every output element is covered once; the light tiles
are exactly the 64-row tails; the split's makespan on the four benchmark shapes, against the
exact optimum (small problems, brute force) and the cost lower bound (large ones); and the
device functions, executed on the host by CuTe DSL's JIT, agree with the host functions bit
for bit (the kernel's own arithmetic, not a transcription of it).
"""

# no `from __future__ import annotations`: cute.jit reads the device functions' annotations

import random

import pytest
import torch

from kernel.plan import (FULL_COST, LIGHT_COST, balanced_locate, balanced_share, balanced_split, ceil_div,
                         make_plan, snake_count, snake_tile)

BENCH = {
    "bench1": ((80, 176, 128, 72, 64, 248, 96, 160), 4096, 7168),
    "bench2": ((40, 76, 168, 72, 164, 148, 196, 160), 7168, 2048),
    "bench3": ((192, 320), 3072, 4096),
    "bench4": ((128, 384), 4096, 1536),
}
# (CTAs, full tiles, light tiles, makespan in quarter units) on 132 SMs; the contiguous schedule
# of the 128-row variant runs 3 / 6 / 1 / 1 full tiles per CTA (12 / 24 / 4 / 4 units)
BENCH_SPLIT = {"bench1": (132, 256, 96, 11), "bench2": (132, 448, 280, 20), "bench3": (120, 72, 48, 4),
               "bench4": (128, 128, 0, 4)}


def _plan(sizes, max_ctas, tile=(128, 128, 256)):
    return make_plan(sizes, tile_m=tile[0], tile_n=tile[1], tile_k=tile[2], max_ctas=max_ctas, schedule="balanced")


def _makespan(plan):
    return max((sum(plan.tile_cost(t) for t in plan.cta_tiles(c)) for c in range(plan.num_ctas)), default=0)


def _random_sizes(rng, groups):
    ms = [0, 1, 40, 63, 64, 65, 72, 127, 128, 129, 176, 192, 193, 248, 256, 300, 320, 384]
    return [(rng.choice(ms), rng.choice([0, 1, 128, 129, 512, 1000]), 256, 1) for _ in range(groups)]


@pytest.mark.parametrize("name", sorted(BENCH))
def test_benchmark_shapes_split(name):
    ms, n, k = BENCH[name]
    plan = _plan([(m, n, k, 1) for m in ms], 132)
    full, light = plan.balanced_lists()
    ctas, nf, nt, span = BENCH_SPLIT[name]
    assert (plan.num_ctas, len(full), len(light), _makespan(plan)) == (ctas, nf, nt, span)


def _check_covering(plan, sizes):
    seen = [t for c in range(plan.num_ctas) for t in plan.cta_tiles(c)]
    assert sorted(seen) == list(range(plan.total_tiles))
    elements = {}
    for c in range(plan.num_ctas):
        tiles = list(plan.cta_tiles(c))
        costs = [plan.tile_cost(t) for t in tiles]
        if plan.k_uniform:
            assert costs == sorted(costs, reverse=True), "a CTA runs its full tiles first"
        for t in tiles:
            co = plan.locate(t)
            m, n = plan.sizes[co.slot][0], plan.sizes[co.slot][1]
            m0, n0 = co.m_block * plan.tile_m, co.n_block * plan.tile_n
            rows = plan.tile_m // 2 if plan.is_light(t) else plan.tile_m
            # a light tile's wgmma covers 64 rows: every row of its block must lie in them
            assert min(m, m0 + plan.tile_m) <= m0 + rows
            assert plan.is_light(t) == (m - m0 <= plan.tile_m // 2), "the kernel's test: m - m0 <= 64"
            for r in range(m0, min(m, m0 + rows)):
                for col in sorted({n0, min(n, n0 + plan.tile_n) - 1}):  # the block's edge columns
                    key = (co.group, r, col)
                    assert key not in elements, f"element {key} covered twice"
                    elements[key] = t
    for g, (m, n, _k, _l) in enumerate(sizes):
        for r in range(m):
            for n0 in range(0, n, plan.tile_n):
                assert (g, r, n0) in elements, f"group {g} row {r} columns {n0}.. not covered"


def test_every_tile_and_element_exactly_once():
    rng = random.Random(5)
    for _ in range(150):
        sizes = _random_sizes(rng, rng.randint(1, 9))
        _check_covering(_plan(sizes, rng.choice([1, 2, 3, 7, 16, 132])), sizes)


def _k_cost(plan, tile):
    """A tile's cost in quarter units times its K tiles (what a CTA's time follows)."""
    return plan.tile_cost(tile) * plan.k_tiles(plan.locate(tile).slot)


def _k_span(plan, tiles_of):
    return max(sum(_k_cost(plan, t) for t in tiles_of(c)) for c in range(plan.num_ctas))


def _count_split_tiles(plan):
    """The tiles each CTA would run under the count-based split (what K-uniform problems get)."""
    full, light = plan.balanced_lists()
    shares = [balanced_share(len(full), len(light), plan.num_ctas, c) for c in range(plan.num_ctas)]
    return lambda c: full[shares[c][0]:shares[c][0] + shares[c][1]] + light[shares[c][2]:shares[c][2] + shares[c][3]]


def _mixed_k_sizes(rng, groups):
    ms = [1, 40, 64, 65, 127, 128, 129, 200, 457, 600]
    return [(rng.choice(ms), rng.choice([1, 128, 129, 1000, 2880]), 256 * rng.randint(1, 28), 1) for _ in range(groups)]


def test_mixed_k_tiles_are_dealt_in_the_snake_order():
    """When the groups' K differ, the balanced schedule deals the tiles in the snake order over
    the costliest-first global order: every tile and element exactly once, the CTA with the most
    work within two of the costliest tiles of the mean, and on a problem whose groups' K differ
    by 3.5x (the suite's ragged_mixed) far below the count-based split."""
    rng = random.Random(23)
    for _ in range(120):
        sizes = _mixed_k_sizes(rng, rng.randint(2, 8))
        plan = _plan(sizes, rng.choice([1, 3, 16, 132]))
        if plan.k_uniform:
            continue
        _check_covering(plan, sizes)
        for c in range(plan.num_ctas):
            assert list(plan.cta_tiles(c)) == [snake_tile(plan.num_ctas, c, j)
                                               for j in range(snake_count(plan.total_tiles, plan.num_ctas, c))]
        costs = [_k_cost(plan, t) for t in range(plan.total_tiles)]
        assert _k_span(plan, plan.cta_tiles) <= sum(costs) / plan.num_ctas + 2 * max(costs), sizes
    mixed = [(200, 1408, 2048, 1), (457, 2880, 4096, 1), (33, 5120, 7168, 1)]
    plan = _plan(mixed, 132)
    assert not plan.k_uniform
    assert [plan.k_tiles(s) for s in range(3)] == [28, 16, 8], "the costliest tiles first"
    assert _k_span(plan, plan.cta_tiles) == 96 < _k_span(plan, _count_split_tiles(plan)) == 168


def _exact(nf, nt, ctas):
    """The smallest makespan of any packing (brute force over per-CTA (full, light) counts)."""
    lim = ceil_div(FULL_COST * nf + LIGHT_COST * nt, ctas)
    while True:
        combos = [(f, (lim - FULL_COST * f) // LIGHT_COST) for f in range(lim // FULL_COST + 1)]
        best = {0: 0}  # full tiles placed -> most light tiles placed
        for _ in range(ctas):
            nxt = {}
            for f, t in best.items():
                for cf, ct in combos:
                    key, val = min(nf, f + cf), min(nt, t + ct)
                    if nxt.get(key, -1) < val:
                        nxt[key] = val
            best = nxt
        if best.get(nf, -1) >= nt:
            return lim
        lim += 1


def _split_span(nf, nt, ctas):
    shares = [balanced_share(nf, nt, ctas, c) for c in range(ctas)]
    assert sum(s[1] for s in shares) == nf and sum(s[3] for s in shares) == nt
    # contiguous runs of both lists, in CTA order
    assert [s[0] for s in shares] == sorted(s[0] for s in shares)
    assert all(a[0] + a[1] == b[0] for a, b in zip(shares, shares[1:]))
    assert all(a[2] + a[3] == b[2] for a, b in zip(shares, shares[1:]))
    return max(FULL_COST * s[1] + LIGHT_COST * s[3] for s in shares)


def test_split_within_one_quarter_of_the_optimum_on_small_grids():
    rng = random.Random(7)
    for _ in range(400):
        ctas, nf, nt = rng.randint(1, 16), rng.randint(0, 60), rng.randint(0, 40)
        if nf + nt == 0:
            continue
        assert _split_span(nf, nt, ctas) <= _exact(nf, nt, ctas) + 1, (nf, nt, ctas)


def test_split_within_a_light_tile_of_the_bound_on_132_ctas():
    rng = random.Random(11)
    for _ in range(400):
        nf, nt = rng.randint(0, 3000), rng.randint(0, 1200)
        if nf + nt == 0:
            continue
        bound = ceil_div(FULL_COST * nf + LIGHT_COST * nt, 132)
        uniform = FULL_COST * ceil_div(nf, 132) + LIGHT_COST * ceil_div(nt, 132)
        span = _split_span(nf, nt, 132)
        assert span <= min(bound + LIGHT_COST, uniform), (nf, nt, span, bound)


# ---- the device twins, executed on the host ----------------------------------------------------
@pytest.fixture(scope="module")
def device_fns():
    cutlass = pytest.importorskip("cutlass")
    import cutlass.cute as cute
    from cutlass.cute.runtime import from_dlpack

    from kernel import device_schedule as ds

    @cute.jit
    def shares(cases: cute.Tensor, out: cute.Tensor, n: cutlass.Int32):
        # cases[i] = (nf, nt, ctas, cta) -> out[i] = (p, fa, ta, fb, tb, fs, fc, ts, tc)
        for i in range(n):
            nf, nt, ctas, cta = cases[i, 0], cases[i, 1], cases[i, 2], cases[i, 3]
            p, fa, ta, fb, tb = ds.balanced_split(nf, nt, ctas)
            fs, fc, ts, tc = ds.balanced_share(nf, nt, ctas, cta)
            for j, v in enumerate((p, fa, ta, fb, tb, fs, fc, ts, tc)):
                out[i, j] = v

    groups = 5

    @cute.jit
    def locate(sizes: cute.Tensor, idx: cute.Tensor, out: cute.Tensor, n: cutlass.Int32):
        # out[0] = (nf, nt); out[1 + i] = (slot, m_block, n_block) of idx[i] = (list, entry)
        nf, nt = ds.balanced_counts(sizes, groups, 128, 128)
        out[0, 0] = nf
        out[0, 1] = nt
        for i in range(n):
            # idx[i, 0]: 0 the full list, 1 the light list, 2 every tile
            kind = idx[i, 0]
            slot, mb, nb = ds.balanced_locate(sizes, groups, 128, 128, cutlass.Int32(kind == 1), idx[i, 1],
                                              cutlass.Int32(kind == 2))
            out[1 + i, 0] = slot
            out[1 + i, 1] = mb
            out[1 + i, 2] = nb

    def run_shares(rows):
        cases = torch.tensor(rows, dtype=torch.int32)
        out = torch.zeros(len(rows), 9, dtype=torch.int32)
        shares(from_dlpack(cases), from_dlpack(out), cutlass.Int32(len(rows)))
        return out.tolist()

    def run_locate(sizes, entries):
        s = torch.tensor(sizes, dtype=torch.int32)
        e = torch.tensor(entries or [(0, 0)], dtype=torch.int32)
        out = torch.zeros(len(entries) + 1, 3, dtype=torch.int32)
        locate(from_dlpack(s), from_dlpack(e), from_dlpack(out), cutlass.Int32(len(entries)))
        return out.tolist()

    return run_shares, run_locate, groups


def test_device_split_and_share_match_the_host(device_fns):
    run_shares, _, _ = device_fns
    rng = random.Random(13)
    rows = [(256, 96, 132, 0), (448, 280, 132, 131), (72, 48, 120, 47), (128, 0, 128, 127), (0, 5, 3, 2)]
    for _ in range(2000):
        ctas = rng.choice([1, 2, 5, 17, 64, 132])
        rows.append((rng.randint(0, 3000), rng.randint(0, 1200), ctas, rng.randrange(ctas)))
    for (nf, nt, ctas, cta), got in zip(rows, run_shares(rows)):
        assert got == [*balanced_split(nf, nt, ctas), *balanced_share(nf, nt, ctas, cta)], (nf, nt, ctas, cta)


def test_device_counts_and_locate_match_the_plan(device_fns):
    _, run_locate, groups = device_fns
    rng = random.Random(17)
    for _ in range(60):
        sizes = _random_sizes(rng, groups)
        plan = _plan(sizes, 132)
        full, light = plan.balanced_lists()
        entries = [(0, i) for i in range(len(full))] + [(1, i) for i in range(len(light))]
        got = run_locate([list(s) for s in plan.sizes], entries)
        assert got[0][:2] == [len(full), len(light)]
        for (lst, i), row in zip(entries, got[1:]):
            co = plan.locate((light if lst else full)[i])
            assert row == [co.slot, co.m_block, co.n_block] == list(balanced_locate(plan.sizes, 128, 128, lst, i))
        # the list of every tile (the snake split's): entry i is global tile i
        got = run_locate([list(s) for s in plan.sizes], [(2, i) for i in range(plan.total_tiles)])
        for i, row in enumerate(got[1:]):
            co = plan.locate(i)
            assert row == [co.slot, co.m_block, co.n_block] == list(balanced_locate(plan.sizes, 128, 128, 0, i, 1))


def test_device_snake_matches_the_plan():
    """k_uniform, snake_share and snake_tile (device functions, run on the host) against the plan."""
    cutlass = pytest.importorskip("cutlass")
    import cutlass.cute as cute
    from cutlass.cute.runtime import from_dlpack

    from kernel import device_schedule as ds

    groups = 4

    @cute.jit
    def snake(sizes: cute.Tensor, cases: cute.Tensor, out: cute.Tensor, n: cutlass.Int32):
        # out[0, 0] = k_uniform(sizes); cases[i] = (total, ctas, cta, j) -> out[1 + i] = (share..., tile)
        out[0, 0] = ds.k_uniform(sizes, groups, 128, 128, 256)
        for i in range(n):
            share = ds.snake_share(cases[i, 0], cases[i, 1], cases[i, 2])
            for w in cutlass.range_constexpr(4):
                out[1 + i, w] = share[w]
            out[1 + i, 4] = ds.snake_tile(cases[i, 1], cases[i, 2], cases[i, 3])

    rng = random.Random(29)
    for trial in range(12):
        sizes = _mixed_k_sizes(rng, groups) if trial % 3 else [(rng.choice([0, 65, 300]), 512, 1024, 1)] * groups
        if trial == 1:  # a slot without tiles does not count
            sizes = [(65, 512, 1024, 1), (300, 512, 1024, 1), (0, 512, 4096, 1), (65, 129, 1024, 1)]
        plan = _plan(sizes, 132)
        rows = []
        for _ in range(300):
            total, ctas = rng.randint(1, 5000), rng.choice([1, 2, 7, 120, 132])
            cta = rng.randrange(ctas)
            rows.append((total, ctas, cta, rng.randrange(max(1, snake_count(total, ctas, cta)))))
        cases = torch.tensor(rows, dtype=torch.int32)
        out = torch.zeros(len(rows) + 1, 5, dtype=torch.int32)
        snake(from_dlpack(torch.tensor([list(s) for s in plan.sizes], dtype=torch.int32)), from_dlpack(cases),
              from_dlpack(out), cutlass.Int32(len(rows)))
        got = out.tolist()
        assert got[0][0] == int(plan.k_uniform), sizes
        for (total, ctas, cta, j), row in zip(rows, got[1:]):
            assert row == [cta, snake_count(total, ctas, cta), -1, 0, snake_tile(ctas, cta, j)], (total, ctas, cta, j)


def test_uniform_share_covers_every_entry_once_and_is_balanced_on_bench4():
    """The ``uniform_split`` ablation's share (device function, run on the host): every full and
    light entry in exactly one CTA's runs, and on bench4 (128 full, 0 light, 128 CTAs) the same
    share as the balanced split, so timing it against production measures the split's search."""
    cutlass = pytest.importorskip("cutlass")
    import cutlass.cute as cute
    from cutlass.cute.runtime import from_dlpack

    from kernel import device_schedule as ds

    @cute.jit
    def uniform(cases: cute.Tensor, out: cute.Tensor, n: cutlass.Int32):
        for i in range(n):
            fs, fc, ts, tc = ds.uniform_share(cases[i, 0], cases[i, 1], cases[i, 2], cases[i, 3])
            for j, v in enumerate((fs, fc, ts, tc)):
                out[i, j] = v

    rng = random.Random(5)
    problems = [(128, 0, 128), (256, 96, 132), (72, 48, 120), (0, 7, 3), (5, 0, 17)]
    problems += [(rng.randint(0, 900), rng.randint(0, 400), rng.choice([1, 3, 64, 132])) for _ in range(40)]
    rows = [(nf, nt, ctas, c) for nf, nt, ctas in problems for c in range(ctas)]
    cases = torch.tensor(rows, dtype=torch.int32)
    out = torch.zeros(len(rows), 4, dtype=torch.int32)
    uniform(from_dlpack(cases), from_dlpack(out), cutlass.Int32(len(rows)))
    got = out.tolist()
    at = 0
    for nf, nt, ctas in problems:
        shares = got[at:at + ctas]
        at += ctas
        full = sorted(i for fs, fc, _, _ in shares for i in range(fs, fs + fc))
        light = sorted(i for _, _, ts, tc in shares for i in range(ts, ts + tc))
        assert full == list(range(nf)) and light == list(range(nt)), (nf, nt, ctas)
        if (nf, nt, ctas) == (128, 0, 128):
            assert shares == [list(balanced_share(nf, nt, ctas, c)) for c in range(ctas)]


def _random_split_cases(seed: int, n: int) -> list[tuple[int, int, int]]:
    rng = random.Random(seed)
    cases = [(256, 96, 132), (448, 280, 132), (72, 48, 120), (128, 0, 128), (0, 5, 3), (0, 0, 7)]
    for _ in range(n):
        ctas = rng.choice([1, 2, 5, 17, 64, 132])
        cases.append((rng.randint(0, 3000), rng.randint(0, 1200), ctas))
    return cases


def test_device_split_candidates_match_the_host():
    """kernel.device_schedule.split_candidate (run time idx, run on the host) equals
    kernel.plan.split_candidate on every candidate of 300 cases."""
    cutlass = pytest.importorskip("cutlass")
    import cutlass.cute as cute
    from cutlass.cute.runtime import from_dlpack

    from kernel import device_schedule as ds
    from kernel.plan import SPLIT_CANDIDATES, split_candidate

    @cute.jit
    def candidates(cases: cute.Tensor, out: cute.Tensor, n: cutlass.Int32):
        for i in range(n):
            got = ds.split_candidate(cases[i, 0], cases[i, 1], cases[i, 2], cases[i, 3])
            for j, v in enumerate(got):
                out[i, j] = v

    rows = [(nf, nt, ctas, idx) for nf, nt, ctas in _random_split_cases(4, 300) for idx in range(SPLIT_CANDIDATES)]
    cases = torch.tensor(rows, dtype=torch.int32)
    out = torch.zeros(len(rows), 6, dtype=torch.int32)
    candidates(from_dlpack(cases), from_dlpack(out), cutlass.Int32(len(rows)))
    for (nf, nt, ctas, idx), got in zip(rows, out.tolist()):
        assert got == list(split_candidate(nf, nt, ctas, idx)), (nf, nt, ctas, idx)
