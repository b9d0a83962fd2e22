"""profiling.shape_suite: the one declaration of the benchmarked shapes, and its invariants (CPU)."""

import pytest

from kernel import hopper
from kernel.hopper.dispatch import features
from oracle import leaderboard as lb
from profiling import floors
from profiling.shape_suite import FAMILIES, QUICK, SUITE, family_shapes, get_shape, group_counts, select

H100_SMS = 132


def test_names_unique_and_every_family_present():
    names = [s.name for s in SUITE]
    assert len(names) == len(set(names))
    assert all("-" not in n for n in names)  # benchmark ids end in -SHAPE
    assert {s.family for s in SUITE} == set(FAMILIES)
    assert all(s.provenance.strip() for s in SUITE)
    assert len(SUITE) <= 25  # the GPU time of timing the whole suite


def test_the_leaderboard_shapes_are_its_cases():
    assert [s.sizes for s in family_shapes("leaderboard-test")] == [c.sizes for c in lb.TEST_CASES]
    assert [s.sizes for s in family_shapes("leaderboard-bench")] == [c.sizes for c in lb.BENCHMARK_CASES]
    assert [s.name for s in family_shapes("leaderboard-bench")] == ["bench1", "bench2", "bench3", "bench4"]
    assert [s.name for s in family_shapes("leaderboard-test")] == [f"lbtest{i}" for i in range(1, 11)]


@pytest.mark.parametrize("config", hopper.PRODUCTION_VARIANTS, ids=lambda c: c.label)
def test_every_shape_satisfies_the_production_builds_constraints(config):
    c = hopper.constraints(config)
    for s in SUITE:
        assert s.num_groups <= c.max_groups, s.name
        assert all(k % c.k_granularity == 0 and k > 0 for _, _, k, _ in s.sizes), s.name
        assert all(max(m, n, k) <= c.max_dim and l == 1 for m, n, k, l in s.sizes), s.name


def test_few_group_counts_and_the_quick_subset():
    """A Hopper build compiles once per group count: the suite keeps to six, --quick to five."""
    assert group_counts(SUITE) == [1, 2, 3, 4, 8, 32]
    quick = select("quick")
    assert [s.name for s in quick] == list(QUICK) and group_counts(quick) == [1, 2, 3, 8, 32]
    assert {s.family for s in quick} == set(FAMILIES) - {"leaderboard-test"}


def test_the_families_have_the_shapes_they_promise():
    tiles = {s.name: features(s.sizes, H100_SMS).tiles for s in SUITE}
    assert max(tiles.values()) > H100_SMS and sum(t > 4 * H100_SMS for t in tiles.values()) >= 3
    assert any(t < H100_SMS for t in tiles.values())
    for s in family_shapes("moe"):
        assert 8 <= s.num_groups <= 64
        assert all(1 <= m <= 256 and 2048 <= n <= 7168 and 2048 <= k <= 7168 for m, n, k, _ in s.sizes), s.name
    assert any(s.num_groups >= 16 for s in family_shapes("moe"))
    for s in family_shapes("dense"):
        assert s.num_groups == 1 and s.sizes[0][0] >= 1024
    for s in family_shapes("decode"):
        assert all(1 <= m <= 16 for m, _, _, _ in s.sizes), s.name
    ragged = family_shapes("ragged")
    assert any(n % 128 for s in ragged for _, n, _, _ in s.sizes)
    assert all(any(m % 128 for m, _, _, _ in s.sizes) for s in ragged)
    assert any(len({n for _, n, _, _ in s.sizes}) > 1 and len({k for _, _, k, _ in s.sizes}) > 1 for s in ragged)


def test_lookup_and_selection():
    assert floors.get_shape("bench3") is get_shape("bench3")
    with pytest.raises(KeyError):
        get_shape("bench9")
    assert select("suite") == list(SUITE)
    assert [s.name for s in select("bench4, decode, bench4")] == ["bench4", "decode_dsv3_up", "decode_mixtral_down"]
    assert select("moe") == list(family_shapes("moe"))
    with pytest.raises(KeyError):
        family_shapes("tiny")
