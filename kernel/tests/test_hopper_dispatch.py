"""The Hopper per-shape dispatch table (kernel/hopper/dispatch.py): plain Python, no GPU."""

import pytest

from kernel.hopper import DECLARED_VARIANTS, FASTEST_CONFIG, config_problems
from kernel.hopper.dispatch import MEASURED_TABLE, PROPOSED_TABLE, STANDARD_SHAPES, DispatchTable, by_label, shape_key
from oracle.speed import BENCHMARK_SHAPES


def sizes(name):
    ms, n, k = STANDARD_SHAPES[name]
    return [(m, n, k, 1) for m in ms]


def test_standard_shapes_are_the_benchmark_shapes():
    assert STANDARD_SHAPES == {k: (tuple(v[0]), v[1], v[2]) for k, v in BENCHMARK_SHAPES.items()}


def test_shape_key_ignores_group_order_and_l():
    assert shape_key([(80, 4096, 7168, 1), (40, 4096, 7168, 1)]) == ((40, 80), 4096, 7168)
    assert shape_key([(40, 4096, 7168), (80, 4096, 7168, 1)]) == ((40, 80), 4096, 7168)
    assert shape_key([(8, 128, 256, 1), (8, 256, 256, 1)]) == ((8, 8), None, 256)
    assert shape_key([(8, 128, 256, 1), (8, 128, 512, 1)]) == ((8, 8), 128, None)


@pytest.mark.parametrize("name", sorted(STANDARD_SHAPES))
def test_proposed_table_covers_every_standard_shape_with_a_declared_valid_variant(name):
    chosen = PROPOSED_TABLE.choose(sizes(name))
    assert chosen in DECLARED_VARIANTS and config_problems(chosen) == []
    assert chosen.label == PROPOSED_TABLE.entries[name]
    # the group order of the call does not change the choice
    assert PROPOSED_TABLE.choose(list(reversed(sizes(name)))) == chosen
    # K a multiple of every chosen variant's stage depth
    assert STANDARD_SHAPES[name][2] % chosen.tile_k == 0


def test_other_shapes_fall_back():
    assert PROPOSED_TABLE.choose([(128, 4096, 7168, 1)]) == FASTEST_CONFIG
    near = sizes("bench3")
    near[0] = (193, 3072, 4096, 1)
    assert PROPOSED_TABLE.choose(near) == FASTEST_CONFIG
    assert PROPOSED_TABLE.configs()[0] == FASTEST_CONFIG


def test_table_rejects_unknown_shapes_and_labels():
    with pytest.raises(KeyError):
        DispatchTable({"bench9": FASTEST_CONFIG.label})
    with pytest.raises(KeyError):
        DispatchTable({"bench1": "h90_no_such_variant"})
    assert by_label(FASTEST_CONFIG.label) == FASTEST_CONFIG


@pytest.mark.parametrize("name", sorted(STANDARD_SHAPES))
def test_measured_table_names_declared_valid_variants(name):
    from kernel.hopper.config import config_problems

    chosen = MEASURED_TABLE.choose(sizes(name))
    assert chosen.label == MEASURED_TABLE.entries[name] and config_problems(chosen) == []
    assert MEASURED_TABLE.choose([(128, 4096, 7168, 1)]) == MEASURED_TABLE.fallback


def test_the_default_runs_the_measured_choice_and_only_production_variants():
    """``custom_kernel(data)`` without a config: DEFAULT_TABLE's choice for the shape (bench4 the
    2-warpgroup tile, bench1-3 and any other shape the mixed-tail prepass tile, both with C staged
    through shared memory since session 6, the prepass tile's phase 1 staged too since session 7,
    its balanced split searched by the producer warp's 32 lanes since session 10, bench4's with
    programmatic dependent launch since session 12 and two wgmma groups in flight since session
    15), remembered per
    size list, every choice a production variant; malformed data gets the fallback (whose
    validation raises the typed error)."""
    import importlib

    launch = importlib.import_module("kernel.hopper.launch")  # (kernel.hopper.launch is also a function name)
    from kernel.hopper.config import (IN_FLIGHT_CONFIG as FASTEST_CONFIG,
                                      SPLIT_WARP_CONFIG as MIXED_TAIL_CONFIG, PRODUCTION_VARIANTS)
    from kernel.hopper.dispatch import DEFAULT_TABLE

    assert all(c in PRODUCTION_VARIANTS for c in DEFAULT_TABLE.configs())
    for name in STANDARD_SHAPES:
        data = ([], [], [], [tuple(s) for s in sizes(name)])
        expected = FASTEST_CONFIG if name == "bench4" else MIXED_TAIL_CONFIG
        assert launch.default_config(data) == expected
        assert launch.default_config(data) is launch.default_config(data)
        # the groups in another order: the same shape key, the same choice
        reordered = ([], [], [], list(reversed(data[3])))
        assert launch.default_config(reordered) == expected
    assert launch.default_config(([], [], [], [(8, 8, 256, 1)])) == MIXED_TAIL_CONFIG
    # the pipeline's hook: PER_SHAPE becomes the choice, a variant stays itself
    hooks = launch.PIPELINE.hooks
    bench4 = ([], [], [], [tuple(s) for s in sizes("bench4")])
    assert hooks.choose(launch.PER_SHAPE, bench4) == FASTEST_CONFIG
    assert hooks.choose(MIXED_TAIL_CONFIG, bench4) is MIXED_TAIL_CONFIG
    for malformed in (None, (), ([], [], []), ([], [], [], [7]), ([], [], [], [("a", 1, 2, 3)])):
        assert launch.default_config(malformed) == DEFAULT_TABLE.fallback


def test_the_lean_table_is_measured_but_not_the_default():
    """LEAN_TABLE (the lean-exit build on bench3/bench4) is kept for the measurement; the default
    stays the table of production variants only (PRODUCTION_VARIANTS holds one prepass build:
    two took the H200 main job past its time limit)."""
    from kernel.hopper.config import LEAN_EXIT_CONFIG, PRODUCTION_VARIANTS
    from kernel.hopper.dispatch import DEFAULT_TABLE, LEAN_TABLE

    assert LEAN_TABLE.choose([tuple(s[:3]) for s in sizes("bench3")]) == LEAN_EXIT_CONFIG
    assert LEAN_EXIT_CONFIG not in PRODUCTION_VARIANTS and LEAN_EXIT_CONFIG not in DEFAULT_TABLE.configs()
    assert sum(c.y_source == "prepass" for c in PRODUCTION_VARIANTS) == 1
    # the default since session 10 keeps that: the split-warp build in place of PHASE1_STAGED's,
    # whose table (the default of sessions 7-9) stays for the measurement
    from kernel.hopper.config import PHASE1_STAGED_CONFIG, SPLIT_WARP_CONFIG
    from kernel.hopper.dispatch import MEASURED_TABLE, PDL_TABLE, PHASE1_STAGED_TABLE, SPLIT_WARP_TABLE

    # (session 12: the same prepass build; bench4's build with programmatic dependent launch;
    # session 15: that build with two wgmma groups in flight, its twin no longer production)
    from kernel.hopper.config import FASTEST_STAGED_PDL_CONFIG, IN_FLIGHT_CONFIG
    from kernel.hopper.dispatch import IN_FLIGHT_TABLE

    assert DEFAULT_TABLE is MEASURED_TABLE is IN_FLIGHT_TABLE
    for table in (PDL_TABLE, IN_FLIGHT_TABLE):
        assert {k: v for k, v in table.entries.items() if k != "bench4"} == \
            {k: v for k, v in SPLIT_WARP_TABLE.entries.items() if k != "bench4"}
    assert PDL_TABLE.entries["bench4"] == SPLIT_WARP_TABLE.entries["bench4"] + "_pdl"
    assert IN_FLIGHT_TABLE.entries["bench4"] == IN_FLIGHT_CONFIG.label
    assert IN_FLIGHT_CONFIG in PRODUCTION_VARIANTS and FASTEST_STAGED_PDL_CONFIG not in PRODUCTION_VARIANTS
    assert {c for c in DEFAULT_TABLE.configs() if c.y_source == "prepass"} == {SPLIT_WARP_CONFIG}
    assert SPLIT_WARP_CONFIG in PRODUCTION_VARIANTS and PHASE1_STAGED_CONFIG not in PRODUCTION_VARIANTS
    assert PHASE1_STAGED_CONFIG not in DEFAULT_TABLE.configs()
    assert PHASE1_STAGED_TABLE.choose([tuple(s[:3]) for s in sizes("bench1")]) == PHASE1_STAGED_CONFIG
