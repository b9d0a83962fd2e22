"""profiling.dispatch_sweep without a GPU: the builds it times, and the report on a synthetic sweep."""

import json
from dataclasses import replace

import pytest

from kernel.hopper import (DEFAULT_CONFIG, FEW_TILES_CONFIG, IN_FLIGHT_CONFIG, PRODUCTION_VARIANTS, SPLIT_WARP_CONFIG,
                           WIDE_BESIDE_240_CONFIG, WIDE_BESIDE_CONFIG, WIDE_Y_CONFIG)
from kernel.hopper.variants import DECLARED_VARIANTS
from kernel.hopper.dispatch import features
from profiling import dispatch_sweep as ds
from profiling.shape_suite import SUITE

IN, SW = IN_FLIGHT_CONFIG.label, SPLIT_WARP_CONFIG.label


def _doc(in_flight_wins):
    """A sweep of the suite where the in-flight build is 10 % faster wherever ``in_flight_wins(f)``
    and 10 % slower elsewhere; the per-shape default always ran the prepass build."""
    shapes = []
    for s in SUITE:
        f = features(s.sizes, 132).as_dict()
        sw = 10.0 + 0.1 * f["tiles"]
        inf = sw * (0.9 if in_flight_wins(f) else 1.1)
        shapes.append({"shape": s.name, "family": s.family, "features": f,
                       "builds": {IN: {"us": inf}, SW: {"us": sw}, DEFAULT_CONFIG.label: {"error": "RuntimeError: x"}},
                       "per_shape": {"label": SW, "us": sw}, "peer": {"us": 1.2 * sw}})
    return {"schema": ds.SCHEMA, "gpu": "test", "sms": 132, "date": "2026-12-05", "rule": ["r"],
            "builds": [IN, SW, DEFAULT_CONFIG.label], "shapes": shapes, "skipped": ["lbtest10"]}


def test_the_builds_it_times():
    assert ds._builds("production", []) == list(PRODUCTION_VARIANTS)
    rule = [SPLIT_WARP_CONFIG, FEW_TILES_CONFIG, WIDE_BESIDE_240_CONFIG, WIDE_BESIDE_CONFIG, IN_FLIGHT_CONFIG]
    assert ds._builds("rule", []) == rule
    extra = ds._builds("rule", [DEFAULT_CONFIG.label, SW])
    assert extra == rule + [DEFAULT_CONFIG]


def test_a_declared_variant_with_fields_changed_is_timed_beside_its_base():
    """``--variant LABEL:field=value``: a stage variant of a rule build, not declared anywhere, is
    one more build with the changed fields and its own label (the sweep's records are keyed by it)."""
    builds = ds._builds("rule", [f"{WIDE_Y_CONFIG.label}:num_ab_stages=4,fp16_buffers=3"])
    derived = builds[-1]
    assert len(builds) == 6 and derived not in DECLARED_VARIANTS
    assert (derived.num_ab_stages, derived.fp16_buffers) == (4, 3)
    assert replace(derived, num_ab_stages=3, fp16_buffers=4) == WIDE_Y_CONFIG
    assert "_s4_" in derived.label and derived.label != WIDE_Y_CONFIG.label


def test_the_report_finds_the_separating_thresholds():
    """The in-flight build faster for rounds <= 1 with K <= 2048: the best split is a box on
    rounds and K with no time lost, its thresholds between the measured shapes."""
    doc = _doc(lambda f: f["rounds"] <= 1 and f["k_max"] <= 2048)
    lines = ds.analyze(doc)
    text = "\n".join(lines)
    row = {ln.split("|")[1].strip(): [c.strip() for c in ln.split("|")[2:-1]] for ln in lines if ln.startswith("| ")}
    assert row["bench4"][0] == "…s3_wg2_b4_swap_fp16_tma_prmt_rs_w2_es_pdl" and row["bench4"][3] == "1.111"
    assert row["bench1"][0].endswith("_prec1xsw_t64_es") and row["bench1"][3] == "1.000"
    assert f"rule / fastest over {len(SUITE)} shapes" in text
    splits = ds.separating_splits(doc["shapes"], IN, SW)
    cost, best = splits[0]
    assert cost == 0.0 and "rounds <=" in best and "k_max <=" in best
    # a threshold lies between measured values: every in-flight winner inside, every other shape outside
    inside = [s for s in doc["shapes"] if s["features"]["rounds"] <= 1 and s["features"]["k_max"] <= 2048]
    assert {s["shape"] for s in inside} >= {"bench4", "ragged_n2880", "lbtest1"}
    alone = ds.per_feature_splits(doc["shapes"], IN, SW)
    assert alone[0][1].split()[0] in ("rounds", "k_max") and alone[0][0] > 0  # neither feature alone suffices


def test_one_feature_alone_when_it_suffices():
    doc = _doc(lambda f: f["groups"] <= 3)
    cost, best = ds.separating_splits(doc["shapes"], IN, SW)[0]
    assert cost == 0.0 and best == "groups <= 3.5"
    assert ds.per_feature_splits(doc["shapes"], IN, SW)[0] == (0.0, "groups <= 3.5")


def test_a_split_on_the_k_spread_and_a_sweep_recorded_before_it():
    """Where only the groups' K spread separates the builds, the report finds k_ratio; a sweep
    written before a feature existed (its records lack it) is still analyzed, on the features
    every record holds."""
    doc = _doc(lambda f: f["k_ratio"] > 1)
    assert ds.separating_splits(doc["shapes"], IN, SW)[0][0] == 0.0
    cost, best = ds.per_feature_splits(doc["shapes"], IN, SW)[0]
    assert cost == 0.0 and best == "k_ratio >= 1.25"  # between 1 (one K) and 1.5 (lbtest10: 768 / 512)
    for record in doc["shapes"]:
        del record["features"]["k_ratio"]
    assert all("k_ratio" not in text for _, text in ds.separating_splits(doc["shapes"], IN, SW))
    assert ds.analyze(doc)


def test_the_table_and_the_command_line(tmp_path, capsys):
    doc = _doc(lambda f: f["rounds"] <= 1)
    table = ds.sweep_table(doc)
    bench4 = next(ln for ln in table if ln.startswith("| bench4 |"))
    assert "| 2 | 128 | 0.97 | 0.97 | 1536 |" in bench4 and "FAILED" in bench4 and bench4.endswith("| A |")
    assert table[-1] == "not timed (--budget-s): lbtest10"
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(doc))
    assert ds.main(["--analyze", str(path)]) == 0
    out = capsys.readouterr().out
    assert "| shape | family | G | tiles |" in out and "each feature alone:" in out
    assert "| shape | family | default us | cuBLAS us | ratio | goal | met |" in out and "goals met: " in out


def test_without_a_hopper_gpu_it_says_so(capsys):
    from kernel.hopper import unavailable_reason

    if unavailable_reason() is None:
        pytest.skip("a Hopper GPU is present: the sweep would run")
    assert ds.main(["--quick"]) == 2
    assert "profiling.dispatch_sweep" in capsys.readouterr().err


def test_the_json_is_rewritten_after_every_shape_and_the_budget_stops_new_shapes(tmp_path, monkeypatch):
    import types

    clock = [1000.0]
    seen = []

    def fake_shape(shape, builds, samples, peer, sms):
        seen.append(json.loads(path.read_text())["shapes"] if path.exists() else None)
        clock[0] += 30.0  # each shape takes 30 s
        return {"shape": shape.name, "family": shape.family, "features": features(shape.sizes, sms).as_dict(),
                "builds": {b.label: {"us": 1.0} for b in builds}, "compiles_so_far": 2, "compile_seconds_so_far": 3.5}

    path = tmp_path / "sweep.json"
    monkeypatch.setattr(ds, "sweep_shape", fake_shape)
    monkeypatch.setattr(ds, "_machine", lambda: {"gpu": "test", "sms": 132, "rule": []})
    monkeypatch.setattr(ds, "time", types.SimpleNamespace(time=lambda: clock[0], strftime=lambda fmt: "today"))
    doc = ds.run(SUITE[:4], [SPLIT_WARP_CONFIG], 3, True, 45.0, str(path))
    # started at 0 s and 30 s; at 60 s the 45 s budget is spent
    assert [r["shape"] for r in doc["shapes"]] == ["bench1", "bench2"] and doc["skipped"] == ["bench3", "bench4"]
    assert seen[0] is None and [r["shape"] for r in seen[1]] == ["bench1"]
    assert json.loads(path.read_text()) == doc and doc["seconds"] == 60.0
    assert "compiles: 2 in 3.5 s; the whole sweep 60.0 s" in "\n".join(ds.sweep_table(doc))


def _goal_doc(gpu, default_over_peer, default_over_floor):
    """A sweep of the suite where the default runs ``default_over_peer(family)`` times cuBLAS's
    time and ``default_over_floor`` times the floor (floor 10 us on every shape)."""
    shapes = []
    for s in SUITE:
        us = 10.0 * default_over_floor
        shapes.append({"shape": s.name, "family": s.family, "features": features(s.sizes, 132).as_dict(),
                       "floor_us": 10.0, "builds": {SW: {"us": us}}, "per_shape": {"label": SW, "us": us},
                       "peer": {"us": us / default_over_peer(s.family)}})
    return {"schema": ds.SCHEMA, "gpu": gpu, "sms": 132, "builds": [SW], "shapes": shapes, "skipped": []}


def test_the_goals_hold_each_family_to_its_ratio_and_bench1_4_to_the_floor_on_an_h200():
    """0.85 of cuBLAS on the leaderboard's benchmarks, MoE and decode shapes; parity elsewhere;
    the bench1-4 geomean against the floor judged on an H200 only."""
    small = {"leaderboard-bench", "moe", "decode"}
    per_family = {s.family for s in SUITE}
    assert small <= per_family and per_family - small  # both kinds of goal are exercised

    at = ds.goals(_goal_doc("NVIDIA H200", lambda fam: 0.85 if fam in small else 1.0, 1.75))
    assert at[-1] == f"goals met: {len(SUITE) + 1} of {len(SUITE) + 1}" and not [ln for ln in at if "| NO |" in ln]
    assert any("of default / floor: 1.750" in ln and "(goal <= 1.75 on an H200: met)" in ln for ln in at)

    over = ds.goals(_goal_doc("NVIDIA H200", lambda fam: 0.86 if fam in small else 1.0, 1.76))
    missed = [ln.split(" | ")[0].strip("| ") for ln in over if ln.endswith("| NO |")]
    assert sorted(missed) == sorted(s.name for s in SUITE if s.family in small)
    assert any("NOT met" in ln for ln in over) and over[-1] == f"goals met: {len(SUITE) - len(missed)} of {len(SUITE) + 1}"

    dense_over = ds.goals(_goal_doc("NVIDIA H200", lambda fam: 0.5 if fam in small else 1.01, 1.0))
    assert {ln.split(" | ")[1] for ln in dense_over if ln.endswith("| NO |")} == per_family - small

    h100 = ds.goals(_goal_doc("NVIDIA H100 80GB HBM3", lambda fam: 0.5, 1.9))
    assert any("not judged on this GPU" in ln for ln in h100) and h100[-1] == f"goals met: {len(SUITE)} of {len(SUITE)}"


def test_the_goals_skip_what_was_not_timed():
    doc = _goal_doc("NVIDIA H200", lambda fam: 0.5, 1.0)
    doc["shapes"] = [r for r in doc["shapes"] if r["shape"] != "bench3"]
    doc["shapes"][0].pop("peer")
    lines = ds.goals(doc)
    assert any("not every one of bench1, bench2, bench3, bench4 has a default time" in ln for ln in lines)
    assert lines[-1] == f"goals met: {len(SUITE) - 2} of {len(SUITE) - 2}"
