"""The Hopper per-shape dispatch rule (kernel/hopper/dispatch.py): plain Python, no GPU."""

import ast
import importlib
import inspect
from collections.abc import Mapping

import pytest

from kernel.hopper import (DECLARED_VARIANTS, DEFAULT_CONFIG, FEW_TILES_CONFIG, IN_FLIGHT_CONFIG, PRODUCTION_VARIANTS,
                           SPLIT_WARP_CONFIG, WIDE_BESIDE_240_CONFIG, WIDE_BESIDE_CONFIG, config_problems)
from kernel.hopper import dispatch
from kernel.hopper.dispatch import DEFAULT_RULE, Bound, Clause, DispatchRule, by_label, features
from oracle import leaderboard as lb
from profiling.shape_suite import SUITE, get_shape

H100_SMS = 132  # H100 SXM and H200
H100_PCIE_SMS = 114

IN = IN_FLIGHT_CONFIG.label
SW = SPLIT_WARP_CONFIG.label
FT = FEW_TILES_CONFIG.label
WY = WIDE_BESIDE_CONFIG.label
WY240 = WIDE_BESIDE_240_CONFIG.label
# The rule's choice on every suite shape at 132 SMs, written from the documented thresholds
# (FEW_TILES_CONFIG for rounds <= 0.42 and K <= 3840; WIDE_BESIDE_CONFIG for a mean M >= 2176 over
# >= 4 rounds, on 240-row Y tiles where those need no more blocks; IN_FLIGHT_CONFIG for rounds <= 2.3 and K <= 3840; SPLIT_WARP_CONFIG otherwise) and
# each shape's tiles (128 x 128), largest K and mean M, worked out by hand:
EXPECTED = {
    "bench1": SW,  # 352 tiles: 2.67 rounds
    "bench2": SW,  # 728 tiles: 5.52 rounds
    "bench3": SW,  # 120 tiles: 0.91 rounds, but K 4096
    "bench4": IN,  # 128 tiles: 0.97 rounds, K 1536
    "moe_dsv3_up": SW,  # 1088 tiles
    "moe_dsv3_down": SW,  # 1904 tiles
    "moe_2048x1408_up": SW,  # 748 tiles: 5.67 rounds
    "moe_mixtral_up": SW,  # 616 tiles
    "dense_4096": WY,  # 1024 tiles: 7.76 rounds, M 4096
    "dense_dsv3_shared": WY,  # 1024 tiles, M 4096
    "dense_2320": WY240,  # 608 tiles: 4.61 rounds, M 2320: ten blocks of 240 or 256 rows
    "decode_dsv3_up": SW,  # 1024 tiles (32 groups x 1 x 32), mean M 8
    "decode_mixtral_down": IN,  # 256 tiles: 1.94 rounds, K 3584
    "ragged_n2880": IN,  # 92 tiles: 0.70 rounds, K 2048
    "ragged_mixed": SW,  # 154 tiles: 1.17 rounds, but K 7168
    **{f"lbtest{i}": FT for i in range(1, 11)},  # 3 to 20 tiles (at most 0.15 rounds), K at most 768
}


def sizes(name):
    return [tuple(s) for s in get_shape(name).sizes]


def test_the_expected_table_covers_the_suite():
    assert set(EXPECTED) == {s.name for s in SUITE}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_rule_choice_on_every_suite_shape(name):
    chosen = DEFAULT_RULE.choose(sizes(name), sms=H100_SMS)
    assert chosen.label == EXPECTED[name]
    assert chosen in PRODUCTION_VARIANTS and config_problems(chosen) == []
    # the group order of the call does not change the choice
    assert DEFAULT_RULE.choose(list(reversed(sizes(name))), sms=H100_SMS) == chosen
    # K of every group a multiple of the chosen build's stage depth
    assert all(k % chosen.tile_k == 0 for _, _, k, _ in sizes(name))


def test_features_by_hand():
    f = features(sizes("bench1"), H100_SMS)
    # M 80,176,128,72,64,248,96,160 -> 1+2+1+1+1+2+1+2 = 11 M tiles, N 4096 -> 32 N tiles
    assert (f.groups, f.tiles, f.k_max, f.k_ratio, f.m_max) == (8, 352, 7168, 1.0, 248)
    assert features(sizes("ragged_mixed"), H100_SMS).k_ratio == 7168 / 2048
    assert f.rounds == pytest.approx(352 / 132) and f.tail == pytest.approx(88 / 132)
    assert f.m_mean == 128 and f.m_ratio == pytest.approx(248 / 128)
    # a whole number of rounds leaves the last one full; empty groups own no tile and no M
    f = features([(128, 128 * 66, 256, 1), (0, 512, 256, 1), (64, 0, 512, 1)], 66)
    assert (f.tiles, f.rounds, f.tail, f.groups, f.m_max, f.m_mean, f.k_max) == (66, 1.0, 1.0, 3, 128, 128, 512)
    assert features([(0, 0, 256, 1)], 132).tail == 0.0
    with pytest.raises(ValueError):
        features([(1, 1, 256, 1)], 0)
    with pytest.raises(KeyError):
        Bound("not_a_feature", hi=1)


def test_y_fit_by_hand():
    """The smallest Y tile height (192..256, steps of 16) that keeps every group's 256-row block
    count, worked out by hand."""
    from kernel.hopper.dispatch import y_fit

    # 2320 = 9 x 256 + 16: ten blocks; 10 x 224 = 2240 < 2320 <= 10 x 240
    assert features(sizes("dense_2320"), H100_SMS).y_fit == 240
    assert features(sizes("dense_4096"), H100_SMS).y_fit == 256  # 16 x 240 = 3840 < 4096
    assert y_fit([2100]) == 240  # nine blocks: 9 x 224 = 2016 < 2100 <= 9 x 240
    assert y_fit([2200]) == 256  # nine blocks: 9 x 240 = 2160 < 2200
    assert y_fit([800]) == 208  # four blocks: 4 x 192 = 768 < 800 <= 4 x 208 (five of 192 would
    # be one more block than 256-row tiles need)
    assert y_fit([1000]) == 256  # four blocks: 4 x 240 = 960 < 1000
    assert y_fit([257]) == 192 and y_fit([512]) == 256 and y_fit([480]) == 240
    # every group must fit: the largest group's need wins, empty groups ask nothing
    assert y_fit([2100, 2200]) == 256 and y_fit([2100, 0, 200]) == 240


def test_the_sm_count_is_a_parameter():
    """decode_mixtral_down's 256 tiles are 1.94 rounds on 132 SMs (the per-tile build) and 2.25 on
    an H100 PCIe's 114, still inside; 111 SMs make 2.31 rounds (the fallback). A machine without a
    GPU plans for 132."""
    shape = sizes("decode_mixtral_down")
    assert DEFAULT_RULE.choose(shape, sms=H100_SMS) == IN_FLIGHT_CONFIG
    assert DEFAULT_RULE.choose(shape, sms=H100_PCIE_SMS) == IN_FLIGHT_CONFIG
    assert DEFAULT_RULE.choose(shape, sms=112) == IN_FLIGHT_CONFIG  # 2.286 rounds
    assert DEFAULT_RULE.choose(shape, sms=111) == SPLIT_WARP_CONFIG  # 2.306 rounds
    # the bounds are inclusive: 230 tiles on 100 SMs is exactly 2.3 rounds
    exact = [(128, 128 * 230, 1024, 1)]
    assert DEFAULT_RULE.choose(exact, sms=100) == IN_FLIGHT_CONFIG
    assert DEFAULT_RULE.choose(exact, sms=99) == SPLIT_WARP_CONFIG
    assert dispatch.DEFAULT_SMS == 132


def test_the_choice_follows_features_not_shapes():
    """Any problem in the in-flight region gets the in-flight build, one group or many, and a
    problem next to one inside with more K or more rounds does not; below 0.42 rounds the 64-row
    X tiles, and groups of thousands of rows over 4 rounds or more the 256-row Y tile."""
    one_group = [(512, 4096, 1024, 1)]  # 4 x 32 = 128 tiles, K 1024
    assert DEFAULT_RULE.choose(one_group, sms=H100_SMS) == IN_FLIGHT_CONFIG
    near = [(127, 4096, 1536, 1), (383, 4096, 1536, 1)]  # bench4's tiles with other M
    assert DEFAULT_RULE.choose(near, sms=H100_SMS) == IN_FLIGHT_CONFIG
    assert DEFAULT_RULE.choose([(128, 4096, 3840, 1), (384, 4096, 3840, 1)], sms=H100_SMS) == IN_FLIGHT_CONFIG
    assert DEFAULT_RULE.choose([(128, 4096, 4096, 1), (384, 4096, 4096, 1)], sms=H100_SMS) == SPLIT_WARP_CONFIG
    # 303 tiles = 2.295 rounds on 132 SMs is inside, 304 (2.303) is not
    assert DEFAULT_RULE.choose([(128, 128 * 303, 1536, 1)], sms=H100_SMS) == IN_FLIGHT_CONFIG
    assert DEFAULT_RULE.choose([(128, 128 * 304, 1536, 1)], sms=H100_SMS) == SPLIT_WARP_CONFIG
    # a single tiny group has too few tiles: the 64-row X tiles; 55 tiles = 0.4167 rounds too, 56 not
    assert DEFAULT_RULE.choose([(1, 1, 256, 1)], sms=H100_SMS) == FEW_TILES_CONFIG
    assert DEFAULT_RULE.choose([(128, 128 * 55, 1024, 1)], sms=H100_SMS) == FEW_TILES_CONFIG
    assert DEFAULT_RULE.choose([(128, 128 * 56, 1024, 1)], sms=H100_SMS) == IN_FLIGHT_CONFIG
    # ... unless its K is past the in-flight builds' bound
    assert DEFAULT_RULE.choose([(128, 128 * 10, 4096, 1)], sms=H100_SMS) == SPLIT_WARP_CONFIG
    # dense: a mean M of 2176 rows over 4 rounds or more; fewer rows or fewer rounds do not
    assert DEFAULT_RULE.choose([(2176, 128 * 31, 2048, 1)], sms=H100_SMS) == SPLIT_WARP_CONFIG  # 17 x 31 = 527: 3.99
    assert DEFAULT_RULE.choose([(2176, 128 * 32, 2048, 1)], sms=H100_SMS) == WIDE_BESIDE_CONFIG  # 544 tiles: 4.12
    assert DEFAULT_RULE.choose([(2175, 128 * 32, 7168, 1)], sms=H100_SMS) == SPLIT_WARP_CONFIG
    assert DEFAULT_RULE.choose([(4096, 128 * 16, 7168, 1)], sms=H100_SMS) == SPLIT_WARP_CONFIG  # 512 tiles: 3.88
    # the mean over groups: two of 4096 rows and one of 64 (mean 2752) still take it
    assert DEFAULT_RULE.choose([(4096, 4096, 4096, 1), (4096, 4096, 4096, 1), (64, 4096, 4096, 1)],
                               sms=H100_SMS) == WIDE_BESIDE_CONFIG
    # 240-row Y tiles where every group needs no more of them than of 256 rows: 3600 rows are 15
    # blocks either way, 3601 need 16 of 240 (15 of 256); 2176 rows need 10 of 240 (9 of 256)
    assert DEFAULT_RULE.choose([(3600, 4096, 4096, 1)], sms=H100_SMS) == WIDE_BESIDE_240_CONFIG
    assert DEFAULT_RULE.choose([(3601, 4096, 4096, 1)], sms=H100_SMS) == WIDE_BESIDE_CONFIG
    assert DEFAULT_RULE.choose([(3600, 4096, 4096, 1), (2320, 4096, 4096, 1)], sms=H100_SMS) == WIDE_BESIDE_240_CONFIG
    assert DEFAULT_RULE.choose([(3600, 4096, 4096, 1), (2176, 4096, 4096, 1)], sms=H100_SMS) == WIDE_BESIDE_CONFIG
    # ... but not when the groups' K differ (its schedule counts tiles, not K): the snake split's build
    assert DEFAULT_RULE.choose([(4096, 4096, 4096, 1), (4096, 4096, 2048, 1), (64, 4096, 4096, 1)],
                               sms=H100_SMS) == SPLIT_WARP_CONFIG


def test_rules_take_declared_labels_and_the_first_clause_wins():
    with pytest.raises(KeyError):
        DispatchRule((Clause("h90_no_such_variant", ()),), fallback=SPLIT_WARP_CONFIG)
    assert by_label(IN) == IN_FLIGHT_CONFIG
    rule = DispatchRule((Clause(IN, (Bound("groups", hi=2),)), Clause(SW, (Bound("groups", hi=4),))),
                        fallback=IN_FLIGHT_CONFIG)
    assert rule.choose([(1, 1, 256, 1)] * 2, sms=132) == IN_FLIGHT_CONFIG
    assert rule.choose([(1, 1, 256, 1)] * 3, sms=132) == SPLIT_WARP_CONFIG
    assert rule.choose([(1, 1, 256, 1)] * 5, sms=132) == IN_FLIGHT_CONFIG
    assert rule.configs() == [IN_FLIGHT_CONFIG, SPLIT_WARP_CONFIG]
    assert DEFAULT_RULE.describe()[-1] == f"otherwise -> {SW}"
    assert all(c in PRODUCTION_VARIANTS for c in DEFAULT_RULE.configs())
    # and the production variants are what the rule can pick, plus the simplest pipeline (the
    # mutant catalog's reference): nothing the main job runs is unreachable from custom_kernel
    assert set(PRODUCTION_VARIANTS) == set(DEFAULT_RULE.configs()) | {DEFAULT_CONFIG}


def _shape_like(value) -> bool:
    """A problem-size key: a tuple of ints or of int tuples, or a leaderboard shape's name."""
    if isinstance(value, str):
        return value.startswith(("bench", "lbtest"))
    if isinstance(value, tuple):
        return any(isinstance(x, (int, tuple)) and not isinstance(x, bool) for x in value)
    return False


def test_the_dispatch_module_has_no_exact_shape_key():
    """No mapping in the module (or in the rule) is keyed by sizes or shape names, and its source
    builds no dict whose keys are tuples or shape names: the choice cannot be a look-up."""
    for name, value in vars(dispatch).items():
        if isinstance(value, Mapping):
            assert not any(_shape_like(k) for k in value), f"dispatch.{name} is keyed by shapes"
    for name, value in vars(DEFAULT_RULE).items():
        if isinstance(value, Mapping):
            assert not any(_shape_like(k) for k in value), f"DEFAULT_RULE.{name} is keyed by shapes"
    tree = ast.parse(inspect.getsource(dispatch))
    docstrings = {id(body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and (body := node.body)
                  and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key in node.keys:
                assert not isinstance(key, ast.Tuple), f"a dict literal keyed by tuples at line {node.lineno}"
                if isinstance(key, ast.Constant):
                    assert not _shape_like(key.value), f"a dict literal keyed by {key.value!r}"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            assert "bench" not in node.value and "lbtest" not in node.value, f"a shape named in code: {node.value!r}"
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert not names & {"STANDARD_SHAPES", "BENCHMARK_SHAPES", "shape_key"}


def test_the_leaderboard_tool_and_the_production_path_pick_todays_builds():
    """``python -m properties.leaderboard hopper --mode benchmark`` runs kernel.hopper's
    ``custom_kernel`` on the leaderboard's benchmark cases: the prepass build on bench1-3, the
    in-flight build on bench4 (a CPU machine plans for 132 SMs), through default_config and the
    pipeline's hook alike, remembered per size list; malformed data gets the fallback."""
    from properties.leaderboard import load_custom_kernel

    import kernel.hopper

    launch = importlib.import_module("kernel.hopper.launch")  # (kernel.hopper.launch is also a function name)
    assert load_custom_kernel("hopper") is kernel.hopper.custom_kernel is launch.custom_kernel
    assert dispatch.device_sms() == 132
    expected = [SPLIT_WARP_CONFIG, SPLIT_WARP_CONFIG, SPLIT_WARP_CONFIG, IN_FLIGHT_CONFIG]
    for case, want in zip(lb.BENCHMARK_CASES, expected):
        data = ([], [], [], [list(s) for s in case.sizes])
        assert launch.default_config(data) == want
        assert launch.default_config(data) is launch.default_config(data)
        assert launch.default_config(([], [], [], list(reversed(data[3])))) == want
        assert launch.PIPELINE.hooks.choose(launch.PER_SHAPE, data) == want
        assert launch.PIPELINE.hooks.choose(SPLIT_WARP_CONFIG, data) is SPLIT_WARP_CONFIG
    assert [get_shape(f"bench{i}").sizes for i in range(1, 5)] == [c.sizes for c in lb.BENCHMARK_CASES]
    assert launch.default_config(([], [], [], [(8, 8, 256, 1)])) == FEW_TILES_CONFIG  # one tile, little K
    assert launch.default_config(([], [], [], [(128, 128 * 100, 256, 1)])) == IN_FLIGHT_CONFIG  # 0.76 rounds
    for malformed in (None, (), ([], [], []), ([], [], [], [7]), ([], [], [], [("a", 1, 2, 3)])):
        assert launch.default_config(malformed) == DEFAULT_RULE.fallback
    assert all(c in DECLARED_VARIANTS for c in DEFAULT_RULE.configs())
