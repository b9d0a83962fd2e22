"""profiling.ablation's build handling (the timing itself needs the H200)."""

import importlib
import json

import pytest

import oracle
from kernel.compile_cache import CompileCache
from kernel.errors import UnsupportedConfigError
from kernel.hopper.ablation import Ablation
from profiling import ablation

hopper_launch = importlib.import_module("kernel.hopper.launch")  # the module (kernel.hopper.launch is also a function)

SPLIT = "h90_m128n128k256_s4_wg2_dq1b4_swap_fp16_tma_prmt_rs"
COOP = "h90_m128n128k256_s3_wg1_fp16"


def test_ablate_adds_the_split_parts_of_split_configs_and_no_epilogue_of_every_config():
    builds = ablation.parse_builds([SPLIT, COOP], [], ablate=True)
    assert [b.label for b in builds[:2]] == [SPLIT, COOP] and all(b.ablation is None for b in builds[:2])
    n = len(ablation.ABLATIONS)
    split = builds[2:2 + n]
    assert sorted(b.label for b in split) == sorted(f"{SPLIT}~ablate-{a}" for a in ablation.ABLATIONS)
    assert {b.ablation for b in split} == {Ablation(a) for a in ablation.ABLATIONS}
    assert all(b.config is builds[0].config for b in split), "an ablated build keeps its variant's config"
    # every config's no_epilogue twin (what writing C costs)
    assert [b.label for b in builds[2 + n:]] == [f"{SPLIT}~ablate-no_epilogue", f"{COOP}~ablate-no_epilogue"]
    assert [b.config for b in builds[2 + n:]] == [builds[0].config, builds[1].config]
    assert [b.label for b in ablation.parse_builds([SPLIT, COOP], [], ablate=False)] == [SPLIT, COOP]


def test_parts_restrict_the_ablated_twins():
    builds = ablation.parse_builds([SPLIT, COOP], [], ablate=True, parts=["no_epilogue"])
    assert [b.label for b in builds] == [SPLIT, COOP, f"{SPLIT}~ablate-no_epilogue", f"{COOP}~ablate-no_epilogue"]
    with pytest.raises(SystemExit, match="--parts"):
        ablation.parse_builds([SPLIT], [], ablate=True, parts=["no_stores"])
    with pytest.raises(SystemExit, match="--parts"):
        ablation.parse_builds([SPLIT], [], ablate=False, parts=["no_epilogue"])


def test_configs_from_json_are_checked():
    (b,) = ablation.parse_builds([], [json.dumps({"tile_n": 256, "consumer_warpgroups": 2, "num_ab_stages": 2})], False)
    assert b.label == "h90_m128n256k256_s2_wg2_fp16" and b.ablation is None
    with pytest.raises(UnsupportedConfigError):
        ablation.parse_builds([], [json.dumps({"tile_n": 256})], False)  # 256 accumulators per thread
    with pytest.raises(ValueError, match="ablate"):  # the axis left the config: a JSON config cannot smuggle it in
        ablation.parse_builds([], [json.dumps({"ablate": "no_fence"})], False)


def test_unknown_label_is_refused():
    with pytest.raises(SystemExit, match="unknown variant"):
        ablation.parse_builds(["h90_nope"], [], False)


def test_the_tool_builds_the_ablated_kernel_through_the_build_option(monkeypatch):
    """prepare_build hands the ablation to the family's build (its own compile-cache entry);
    the unablated build of the same config is the production entry."""
    built = []
    monkeypatch.setattr(hopper_launch.PIPELINE.hooks, "build",
                        lambda config, g, dump_dir=None, perturbation=None, ablation=None:
                        built.append((config.label, g, perturbation, ablation)) or object())
    monkeypatch.setattr(hopper_launch.PIPELINE, "compile_cache", CompileCache("ablation-tool-test"))
    data = oracle.make_inputs([(64, 128, 256, 1), (128, 256, 256, 1)], seed=1, device="cpu")
    prod, no_fence = ablation.parse_builds([SPLIT], [], ablate=True)[:2]
    p = ablation.prepare_build(prod, data, dry_run=True, compile=True)
    q = ablation.prepare_build(no_fence, data, dry_run=True, compile=True)
    assert built == [(SPLIT, 2, None, None), (SPLIT, 2, None, Ablation("no_fence"))]
    assert p.ablation is None and q.ablation == Ablation("no_fence") and p.compiled is not q.compiled
    keys = set(hopper_launch.PIPELINE.compile_cache.keys())
    assert (prod.config, 2) in keys and len(keys) == 2


def test_build_timeout_report_marks_missing_and_timed_out_cells(capsys, tmp_path):
    """--build-timeout: no timer without it; the partial report a firing timer
    writes shows TIMEOUT for the hung build and "-" for what never ran, and keeps the rows."""
    import argparse
    import json

    from profiling import ablation

    args = argparse.Namespace(shapes="bench1,bench4", json=str(tmp_path / "rows.json"), build_timeout=0.0)
    assert ablation._watchdog(args, [], [], "bench1", "x") is None

    class B:
        def __init__(self, label):
            self.label = label

    rows = [{"shape": "bench1", "label": "a", "us": 12.34}, {"shape": "bench1", "label": "b", "us": None, "problem": "TIMEOUT"}]
    ablation._report(args, rows, [B("a"), B("b")])
    out = capsys.readouterr().out
    assert "| `a` | 12.3 | - |" in out and "| `b` | TIMEOUT | - |" in out
    assert json.loads((tmp_path / "rows.json").read_text()) == rows
