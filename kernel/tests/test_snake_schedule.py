"""schedule="snake" (kernel.plan) and its device twins (kernel.device_schedule), on the CPU.

The Hopper ``y_tail16`` variant runs every tile with wgmma N = its Y rows rounded up to 16 and
deals the tiles to CTAs class by class (heaviest first) in rounds of alternating direction. Here:
every tile runs exactly once and every output element is covered once; the list is ordered by
class, each class in global tile order; on the two multi-round benchmark shapes the snake's
makespan under the measured cost model (a tile of N rows costs 1/2 + N / 256 of a full one) is
below the balanced split's (the reason the variant exists); and the device functions, executed
on the host by CuTe DSL's JIT, agree with the host functions bit for bit.
"""

# no `from __future__ import annotations`: cute.jit reads the device functions' annotations

import random

import pytest
import torch

from kernel.plan import SNAKE_ROWS_STEP, ceil_div, make_plan, snake_index, snake_locate, snake_rounds

BENCH = {
    "bench1": ((80, 176, 128, 72, 64, 248, 96, 160), 4096, 7168),
    "bench2": ((40, 76, 168, 72, 164, 148, 196, 160), 7168, 2048),
    "bench3": ((192, 320), 3072, 4096),
    "bench4": ((128, 384), 4096, 1536),
}


def _plan(sizes, max_ctas, schedule="snake"):
    return make_plan(sizes, tile_m=128, tile_n=128, tile_k=256, max_ctas=max_ctas, schedule=schedule)


def _random_sizes(rng, groups):
    ms = [0, 1, 15, 16, 17, 40, 63, 64, 65, 72, 112, 113, 127, 128, 129, 176, 192, 193, 248, 256, 300]
    return [(rng.choice(ms), rng.choice([0, 1, 128, 129, 512, 1000]), 256, 1) for _ in range(groups)]


def _rows(plan, tile):
    c = plan.locate(tile)
    return min(plan.tile_m, plan.sizes[c.slot][0] - c.m_block * plan.tile_m)


def test_every_tile_and_element_exactly_once():
    rng = random.Random(10)
    for _ in range(200):
        sizes = _random_sizes(rng, rng.randint(1, 6))
        plan = _plan(sizes, rng.choice([1, 2, 3, 7, 16, 132]))
        seen = [t for c in range(plan.num_ctas) for t in plan.cta_tiles(c)]
        assert sorted(seen) == list(range(plan.total_tiles))
        covered = {}
        for t in seen:
            c = plan.locate(t)
            m, n = plan.sizes[c.slot][:2]
            for r in range(c.m_block * 128, min(m, c.m_block * 128 + 128)):
                covered[(c.slot, r)] = covered.get((c.slot, r), 0) + min(128, n - c.n_block * 128)
        for s, (m, n, _k, _l) in enumerate(plan.sizes):
            for r in range(m if n else 0):
                assert covered[(s, r)] == n, (sizes, s, r)


def test_list_is_by_class_then_global_order_and_rounds_alternate():
    rng = random.Random(11)
    for _ in range(100):
        plan = _plan(_random_sizes(rng, rng.randint(1, 6)), rng.choice([1, 5, 132]))
        order = plan.snake_list()
        keys = [(-ceil_div(_rows(plan, t), SNAKE_ROWS_STEP), t) for t in order]
        assert keys == sorted(keys)
        assert all(1 <= plan.tile_class(t) <= 128 // SNAKE_ROWS_STEP for t in order)
        p = plan.num_ctas
        for c in range(p):
            tiles = plan.cta_tiles(c)
            assert len(tiles) == snake_rounds(plan.total_tiles, p, c)
            for r, t in enumerate(tiles):
                assert order.index(t) == (r * p + c if r % 2 == 0 else r * p + p - 1 - c)


def _model_makespan(plan, cost):
    return max((sum(cost(_rows(plan, t)) for t in plan.cta_tiles(c)) for c in range(plan.num_ctas)), default=0)


@pytest.mark.parametrize("name", ["bench1", "bench2"])
def test_snake_beats_the_balanced_split_on_the_multi_round_shapes(name):
    ms, n, k = BENCH[name]
    sizes = [(m, n, k, 1) for m in ms]
    snake, balanced = _plan(sizes, 132), _plan(sizes, 132, "balanced")

    def exact(rows):  # y_tail16: N = rows rounded up to 16
        return 0.5 + ceil_div(rows, 16) * 16 / 256

    def halves(rows):  # y_tail64: 64 or 128 rows
        return 0.75 if rows <= 64 else 1.0

    assert _model_makespan(snake, exact) < _model_makespan(balanced, halves)


def test_snake_needs_no_clusters():
    with pytest.raises(ValueError, match="snake"):
        make_plan([(64, 128, 256, 1)], tile_m=128, tile_n=128, tile_k=256, max_ctas=4, schedule="snake", cluster_n=2)


def test_device_twins_match_the_host():
    cutlass = pytest.importorskip("cutlass")
    import cutlass.cute as cute
    from cutlass.cute.runtime import from_dlpack

    from kernel import device_schedule as ds

    groups = 5

    @cute.jit
    def run(sizes: cute.Tensor, cases: cute.Tensor, out: cute.Tensor, n: cutlass.Int32):
        # cases[i] = (entry, round, cta, ctas, total) -> out[i] = (slot, m_block, n_block, index, rounds)
        for i in range(n):
            slot, mb, nb = ds.snake_locate(sizes, groups, 128, 128, cases[i, 0])
            out[i, 0] = slot
            out[i, 1] = mb
            out[i, 2] = nb
            out[i, 3] = ds.snake_index(cases[i, 1], cases[i, 2], cases[i, 3])
            out[i, 4] = ds.snake_rounds(cases[i, 4], cases[i, 3], cases[i, 2])

    rng = random.Random(12)
    for _ in range(40):
        plan = _plan(_random_sizes(rng, groups), rng.choice([1, 3, 17, 132]))
        total = plan.total_tiles
        if not total:
            continue
        p = plan.num_ctas
        cases = [(i, rng.randrange(4), rng.randrange(p), p, total) for i in range(total)]
        out = torch.zeros(len(cases), 5, dtype=torch.int32)
        run(from_dlpack(torch.tensor([list(s) for s in plan.sizes], dtype=torch.int32)),
            from_dlpack(torch.tensor(cases, dtype=torch.int32)), from_dlpack(out), cutlass.Int32(len(cases)))
        order = plan.snake_list()
        for (i, r, c, _p, _t), row in zip(cases, out.tolist()):
            co = plan.locate(order[i])
            assert row[:3] == [co.slot, co.m_block, co.n_block] == list(snake_locate(plan.sizes, 128, 128, i))
            assert row[3] == snake_index(r, c, p) and row[4] == snake_rounds(total, p, c)
