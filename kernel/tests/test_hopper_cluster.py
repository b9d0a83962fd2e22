"""HopperConfig.cluster_x = 2 (issue 14, experimental): the 2-CTA cluster schedule of the prepass
variants, on the CPU. The host plan (kernel.plan, ``cluster_n``) pairs N blocks of one group and
one M block; the device walks it through kernel.device_schedule.cluster_tile_range and
``tile_origin`` (N block = column * 2 + rank). Its compile and SASS: test_hopper_compile.py."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernel.hopper.config import (
    DECLARED_VARIANTS,
    FASTEST_CONFIG,
    HopperConfig,
    config_problems,
    smem_bytes,
    SMEM_CAPACITY_BYTES,
    y_box_rows_per_cta,
    y_box_tx_bytes,
)
from kernel.plan import ceil_div, make_plan

PREC1X = next(c for c in DECLARED_VARIANTS if c.label == "h90_m128n128k256_s4_wg2_b8_swap_fp16_tma_prmt_rs_prec1x")
C2 = HopperConfig(**{**PREC1X.__dict__, "cluster_x": 2})


# ---- config -------------------------------------------------------------------------------
def test_cluster_labels_and_declared_variants():
    assert C2.label == PREC1X.label + "_c2" and config_problems(C2) == []
    # the axis is off by default: no other label carries it, every other variant unchanged
    assert [c for c in DECLARED_VARIANTS if "_c2" in c.label] == [c for c in DECLARED_VARIANTS if c.cluster_x == 2]
    declared = {c.label for c in DECLARED_VARIANTS if c.cluster_x == 2 and not c.y_cluster_decode}
    assert declared == {PREC1X.label + "_c2", PREC1X.label.replace("_b8_", "_b9_") + "_c2"}
    # (the cluster that shares Y's decode instead, "_c2d": kernel/tests/test_hopper_cluster_y.py)
    assert all("_c2d_" in c.label or "_c2db_" in c.label for c in DECLARED_VARIANTS if c.y_cluster_decode)
    assert all(c.cluster_x == 1 for c in DECLARED_VARIANTS if c not in {C2} and "_c2" not in c.label)


def test_cluster_smem_and_box_arithmetic():
    # the Y ring keeps its shape: the whole box per buffer (16 KB), half of it loaded by each CTA
    assert y_box_tx_bytes(C2) == y_box_tx_bytes(PREC1X) == 128 * 64 * 2
    assert y_box_rows_per_cta(PREC1X) == 128 and y_box_rows_per_cta(C2) == 64
    assert smem_bytes(C2) == smem_bytes(PREC1X)
    deeper = HopperConfig(**{**C2.__dict__, "fp16_buffers": 9})
    assert smem_bytes(deeper)["total"] <= SMEM_CAPACITY_BYTES and config_problems(deeper) == []
    too_deep = HopperConfig(**{**C2.__dict__, "fp16_buffers": 10})
    assert any("shared memory" in p for p in config_problems(too_deep))


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(cluster_x=3), "cluster_x must be one of"),
        (dict(cluster_x=True), "cluster_x must be one of"),
        (dict(prepass_chunk=0, prepass_x_early=False), "needs y_source='prepass' and prepass_chunk > 0"),
    ],
)
def test_cluster_rules(kwargs, words):
    bad = HopperConfig(**{**C2.__dict__, **kwargs})
    assert any(words in p for p in config_problems(bad)), config_problems(bad)


def test_cluster_needs_the_prepass():
    for base in (HopperConfig(), FASTEST_CONFIG):
        problems = config_problems(HopperConfig(**{**base.__dict__, "cluster_x": 2}))
        assert any("needs y_source='prepass'" in p for p in problems), problems


# ---- host plan ----------------------------------------------------------------------------
_sizes = st.lists(
    st.tuples(st.integers(0, 400), st.integers(0, 1300), st.integers(1, 4).map(lambda k: 256 * k), st.just(1)),
    min_size=1,
    max_size=9,
)


def _device_range(total: int, grid: int, cta: int, cluster: int) -> range:
    """kernel.device_schedule.cluster_tile_range ("contiguous") in plain Python."""
    unit, units = cta // cluster, grid // cluster
    per = (total + units - 1) // units
    first = unit * per
    return range(first, min(first + per, total))


@given(sizes=_sizes, max_ctas=st.integers(1, 140))
def test_cluster_pairs_never_straddle_and_ghosts_store_nothing(sizes, max_ctas):
    tile_m = tile_n = 128
    plan = make_plan(sizes, tile_m=tile_m, tile_n=tile_n, tile_k=256, max_ctas=max_ctas, cluster_n=2)
    flat = make_plan(sizes, tile_m=tile_m, tile_n=tile_n, tile_k=256, max_ctas=max_ctas)
    if plan.total_tiles == 0:
        assert flat.total_tiles == 0
        return
    assert plan.num_ctas % 2 == 0 and plan.num_ctas <= max(2, max_ctas)
    real = set()
    for cluster in range(plan.num_clusters):
        ranks = [plan.cta_tiles(2 * cluster + r) for r in (0, 1)]
        # both CTAs of a cluster walk the same cluster tiles (the same Y boxes), each >= 1
        assert ranks[0] == ranks[1] and len(ranks[0]) >= 1
        for r in (0, 1):
            assert ranks[r] == _device_range(plan.total_tiles, plan.num_ctas, 2 * cluster + r, 2)
        for tile in ranks[0]:
            (c0, g0), (c1, g1) = plan.member(tile, 0), plan.member(tile, 1)
            # one group, one M block (hence the same Y rows and the same K); N blocks 2j, 2j + 1
            assert (c0.slot, c0.m_block) == (c1.slot, c1.m_block)
            assert c0.n_block % 2 == 0 and c1.n_block == c0.n_block + 1
            n = plan.sizes[c0.slot][1]
            assert not g0, "rank 0 of a pair is never a ghost"
            # a ghost only as the odd partner of a group's last N block
            assert g1 == (plan.tiles_n[c0.slot] % 2 == 1 and c1.n_block == plan.tiles_n[c0.slot])
            for coord, ghost in ((c0, g0), (c1, g1)):
                n0 = coord.n_block * tile_n
                stored = [col for col in range(tile_n) if n0 + col < n]  # the epilogue's predicate
                if ghost:
                    assert stored == []
                else:
                    assert stored and (coord.slot, coord.m_block, coord.n_block) not in real
                    real.add((coord.slot, coord.m_block, coord.n_block))
    # every real tile of the problem exactly once
    assert real == {(c.slot, c.m_block, c.n_block) for c in map(flat.locate, range(flat.total_tiles))}


@given(sizes=_sizes)
def test_cluster_plan_without_clusters_is_unchanged(sizes):
    plan = make_plan(sizes, tile_m=128, tile_n=128, tile_k=256, max_ctas=132)
    assert plan == make_plan(sizes, tile_m=128, tile_n=128, tile_k=256, max_ctas=132, cluster_n=1)
    assert plan.cluster_n == 1 and "cluster" not in plan.describe()


def test_bench_shapes_pair_without_ghosts():
    """bench1-4: every group has an even number of 128-column N blocks (no ghosts) and the
    cluster grid runs as many tiles per CTA as the flat grid (3 / 6 / 1 / 1)."""
    from profiling.floors import BENCH_SHAPES

    for shape in BENCH_SHAPES:
        sizes = [tuple(s) for s in shape.sizes]
        flat = make_plan(sizes, tile_m=128, tile_n=128, tile_k=256, max_ctas=132)
        plan = make_plan(sizes, tile_m=128, tile_n=128, tile_k=256, max_ctas=132, cluster_n=2)
        assert all(t % 2 == 0 for t in plan.tiles_n), shape.name
        assert plan.tiles_per_cta == flat.tiles_per_cta and plan.num_ctas == flat.num_ctas, shape.name
        assert sum(ceil_div(t, 2) * m for t, m in zip(plan.tiles_n, plan.tiles_m)) == plan.total_tiles


def test_prepare_plans_clusters_and_half_boxes():
    """The host pipeline plans the c2 variant with clusters (an even grid), and its workspace's
    tensor map boxes are half a Y box."""
    import oracle
    from kernel.hopper import prepare

    data = oracle.make_inputs([(130, 384, 512, 1), (7, 256, 256, 1)], 3, device="cpu")
    prep = prepare(data, C2, dry_run=True)
    assert prep.plan.cluster_n == 2 and prep.plan.num_ctas % 2 == 0
    # 130 x 384: 2 M blocks x 2 pairs (3 N blocks: one ghost); 7 x 256: 1 x 1
    assert prep.plan.total_tiles == 2 * 2 + 1
    flat = prepare(data, PREC1X, dry_run=True)
    assert flat.plan.cluster_n == 1 and flat.plan.total_tiles == 2 * 3 + 2


def test_workspace_map_boxes_are_half_a_y_box(monkeypatch):
    import importlib

    import torch

    launch = importlib.import_module("kernel.hopper.launch")  # kernel.hopper.launch is also a function
    hooks = launch.HopperHooks()
    maps = []
    monkeypatch.setattr(hooks.workspaces, "_encoder", lambda rm: maps.append(rm) or bytes(128))
    plan = make_plan([(130, 384, 512, 1)], tile_m=128, tile_n=128, tile_k=256, max_ctas=132, cluster_n=2)
    c2 = hooks.workspace(C2, plan, 1, torch.device("cpu"))
    flat = hooks.workspace(PREC1X, plan, 1, torch.device("cpu"))
    assert c2 is not flat and [m.box_rows for m in maps] == [64, 128]  # one workspace per box shape
