"""The Hopper per-shape dispatch table (kernel/hopper/dispatch.py): plain Python, no GPU."""

import importlib

import pytest

from kernel.hopper import (DECLARED_VARIANTS, FASTEST_CONFIG, IN_FLIGHT_CONFIG, PRODUCTION_VARIANTS, SPLIT_WARP_CONFIG,
                           config_problems)
from kernel.hopper.dispatch import DEFAULT_TABLE, STANDARD_SHAPES, DispatchTable, by_label, shape_key
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


def test_table_rejects_unknown_shapes_and_labels():
    with pytest.raises(KeyError):
        DispatchTable({"bench9": FASTEST_CONFIG.label}, fallback=FASTEST_CONFIG)
    with pytest.raises(KeyError):
        DispatchTable({"bench1": "h90_no_such_variant"}, fallback=FASTEST_CONFIG)
    assert by_label(FASTEST_CONFIG.label) == FASTEST_CONFIG


def test_table_falls_back_off_the_standard_shapes():
    table = DispatchTable({"bench3": IN_FLIGHT_CONFIG.label}, fallback=FASTEST_CONFIG)
    assert table.choose(sizes("bench3")) == IN_FLIGHT_CONFIG
    near = sizes("bench3")
    near[0] = (193, 3072, 4096, 1)
    assert table.choose(near) == FASTEST_CONFIG
    assert table.configs() == [FASTEST_CONFIG, IN_FLIGHT_CONFIG]


@pytest.mark.parametrize("name", sorted(STANDARD_SHAPES))
def test_default_table_names_declared_valid_production_variants(name):
    chosen = DEFAULT_TABLE.choose(sizes(name))
    assert chosen in DECLARED_VARIANTS and chosen in PRODUCTION_VARIANTS and config_problems(chosen) == []
    assert chosen.label == DEFAULT_TABLE.entries[name]
    # the group order of the call does not change the choice
    assert DEFAULT_TABLE.choose(list(reversed(sizes(name)))) == chosen
    # K a multiple of every chosen variant's stage depth
    assert STANDARD_SHAPES[name][2] % chosen.tile_k == 0


def test_the_default_runs_the_table_choice_and_only_production_variants():
    """``custom_kernel(data)`` without a config: DEFAULT_TABLE's choice for the shape (bench4 the
    build with two wgmma groups in flight, bench1-3 and any other shape the prepass build),
    remembered per size list, every choice a production variant; malformed data gets the
    fallback (whose validation raises the typed error)."""
    launch = importlib.import_module("kernel.hopper.launch")  # (kernel.hopper.launch is also a function name)

    assert all(c in PRODUCTION_VARIANTS for c in DEFAULT_TABLE.configs())
    for name in STANDARD_SHAPES:
        data = ([], [], [], [tuple(s) for s in sizes(name)])
        expected = IN_FLIGHT_CONFIG if name == "bench4" else SPLIT_WARP_CONFIG
        assert launch.default_config(data) == expected
        assert launch.default_config(data) is launch.default_config(data)
        reordered = ([], [], [], list(reversed(data[3])))
        assert launch.default_config(reordered) == expected
    assert launch.default_config(([], [], [], [(8, 8, 256, 1)])) == SPLIT_WARP_CONFIG
    # the pipeline's hook: PER_SHAPE becomes the choice, a variant stays itself
    hooks = launch.PIPELINE.hooks
    bench4 = ([], [], [], [tuple(s) for s in sizes("bench4")])
    assert hooks.choose(launch.PER_SHAPE, bench4) == IN_FLIGHT_CONFIG
    assert hooks.choose(SPLIT_WARP_CONFIG, bench4) is SPLIT_WARP_CONFIG
    for malformed in (None, (), ([], [], []), ([], [], [], [7]), ([], [], [], [("a", 1, 2, 3)])):
        assert launch.default_config(malformed) == DEFAULT_TABLE.fallback
