"""profiling.floors reproduces the reference H200 floors and does its arithmetic right."""

import math

import pytest

from profiling import floors
from profiling.floors import Ceilings, floor, get_shape, traffic
from profiling.shape_suite import family_shapes

BENCH_SHAPES = family_shapes("leaderboard-bench")

# Bytes floor and FLOPs floor (us) at the reference H200 ceilings (4.3 TB/s, 790 TFLOP/s), to
# 0.1 us; the FLOPs floors are the reference floors of docs/results.md row 0.
FACTS_FLOORS = {"bench1": (33.6, 76.1), "bench2": (19.1, 38.1), "bench3": (4.3, 16.3), "bench4": (2.7, 8.2)}


@pytest.mark.parametrize("name", sorted(FACTS_FLOORS))
def test_floors_match_facts(name):
    f = floor(get_shape(name))
    want_b, want_f = FACTS_FLOORS[name]
    assert round(f.floor_bytes_us, 1) == want_b
    assert round(f.floor_flops_us, 1) == want_f
    assert f.floor_us == max(f.floor_bytes_us, f.floor_flops_us)
    assert f.bound == "compute"


def test_standard_shapes_are_facts_table():
    got = {s.name: ([x[0] for x in s.sizes], {x[1] for x in s.sizes}, {x[2] for x in s.sizes}) for s in BENCH_SHAPES}
    assert got == {
        "bench1": ([80, 176, 128, 72, 64, 248, 96, 160], {4096}, {7168}),
        "bench2": ([40, 76, 168, 72, 164, 148, 196, 160], {7168}, {2048}),
        "bench3": ([192, 320], {3072}, {4096}),
        "bench4": ([128, 384], {4096}, {1536}),
    }
    assert all(s[3] == 1 for shape in BENCH_SHAPES for s in shape.sizes)


def test_traffic_by_hand_bench1():
    t = traffic(get_shape("bench1"))
    m_total, n, k, g = 1024, 4096, 7168, 8
    assert t.a == m_total * k // 2
    assert t.b == g * n * k // 2
    assert t.sfa == m_total * k // 16
    assert t.sfb == g * n * k // 16
    assert t.c == m_total * n * 2
    assert t.flops == 2 * m_total * n * k
    assert t.bytes == 144_637_952


def test_single_group_and_padding():
    t = traffic([(72, 128, 256, 1)])
    assert (t.a, t.b, t.sfa, t.sfb, t.c, t.flops) == (72 * 128, 128 * 128, 72 * 16, 128 * 16, 72 * 128 * 2, 2 * 72 * 128 * 256)
    p = traffic([(72, 128, 256, 1)], padded_scales=True)
    assert p.sfa == 128 * 16 and p.sfb == 128 * 16
    # one row pads to 128 rows, K/16 = 5 columns pad to 8
    assert traffic([(1, 1, 16 * 5, 1)], padded_scales=True).sfa == 128 * 8
    assert traffic([(0, 128, 256, 1)]).flops == 0


def test_measured_ceilings_scale_floors():
    base = floor(get_shape("bench3"))
    half = floor(get_shape("bench3"), Ceilings(bandwidth=2.15e12, tensor_flops=395e12, source="test"))
    assert math.isclose(half.floor_bytes_us, 2 * base.floor_bytes_us)
    assert math.isclose(half.floor_flops_us, 2 * base.floor_flops_us)
    d = half.as_dict()
    assert d["ceiling_source"] == "test" and d["floor_us"] == half.floor_us
    with pytest.raises(ValueError):
        Ceilings(bandwidth=0)


def test_rates_and_peer_bytes():
    s = get_shape("bench4")
    f = floor(s)
    r = floors.rates(s, f.floor_flops_us)
    assert math.isclose(r["tflops"], 790.0)
    assert math.isnan(floors.rates(s, 0.0)["tflops"])
    # the peer moves bf16 A and B: four times NVFP4's operand bytes (without scales)
    t = traffic(s)
    assert floors.peer_bytes(s) == 4 * (t.a + t.b) + t.c


def test_shape_sets_and_table():
    assert [s.name for s in family_shapes("leaderboard-test")] == [f"lbtest{i}" for i in range(1, 11)]
    with pytest.raises(KeyError):
        get_shape("nope")
    with pytest.raises(ValueError):
        floors.shape_set("x", [1, 2], [1], 256)
    assert "bench1" in floors.table()
    assert get_shape("bench3").problem_sizes() == [[192, 3072, 4096, 1], [320, 3072, 4096, 1]]
