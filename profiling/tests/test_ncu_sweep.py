"""The sweep's plan (which cases, in which order) and its orchestration, with a fake ``ncu``."""

import csv
import json
import os
import stat
import sys
from pathlib import Path

import pytest

from profiling import metrics as M
from profiling import ncu_report as R
from profiling import ncu_sweep as S


@pytest.fixture(autouse=True)
def _outside_an_xdist_worker(monkeypatch):
    """These tests drive the tool with fake ncu runs; its refusal inside a pytest-xdist worker
    (properties/test_xdist_plumbing.py) would stop them when the suite itself runs with -n."""
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)

DATA = Path(__file__).parent / "data"
A = "h90_m128n128k256_s3_wg1_fp16"
B = "h90_m64n128k256_s4_wg1_swap_fp16"


def test_plan_is_variants_times_shapes_in_a_fixed_order():
    from kernel.hopper.variants import DECLARED_VARIANTS

    plan = S.build_plan("sm_90a")
    assert plan.family == "hopper" and len(plan.shapes) == 4
    assert len(plan.cases) == len(DECLARED_VARIANTS) * 4
    assert [c.index for c in plan.cases] == list(range(len(plan.cases)))
    assert plan.config_tuples() == S.build_plan("sm_90a").config_tuples()  # what nsight's child re-derives
    assert plan.cases[0].variant == DECLARED_VARIANTS[0].label and plan.cases[0].shape == "bench1"


def test_plan_filters_labels_and_rejects_unknown_ones():
    plan = S.build_plan("sm_90a", labels=[B, A], shapes=["bench4"])
    assert plan.config_tuples() == [(B, "bench4"), (A, "bench4")]
    with pytest.raises(ValueError, match="unknown variant"):
        S.build_plan("sm_90a", labels=["nope"])


def test_grid_crosses_fields_and_drops_invalid_configs_with_reasons():
    plan = S.build_plan("sm_90a", labels=[A], grid=["num_ab_stages=2,3,9"], shapes=["bench3"])
    stages = sorted(plan.configs[c.variant].num_ab_stages for c in plan.cases)
    assert stages == [2, 3]  # 9 stages do not fit in shared memory
    assert len(plan.skipped) == 1 and "shared memory" in plan.skipped[0][2]
    with pytest.raises(ValueError, match="not a field"):
        S.build_plan("sm_90a", labels=[A], grid=["stages=2"])
    with pytest.raises(ValueError, match="FIELD="):
        S.parse_grid(["num_ab_stages"])


def test_blackwell_plan_builds_without_a_gpu_and_uses_the_b200_sol_floor():
    plan = S.build_plan("sm_100a", shapes=["bench1", "bench4"])
    assert plan.family == "blackwell" and plan.cases
    recs = S.case_records(plan)
    assert recs[0]["floor_us"] == 18.833 and "B200" in recs[0]["floor_source"]
    assert "tile_mnk" in recs[0]["axes"]


def test_hopper_floor_is_the_roofline_floor():
    from profiling import floors

    us, src = S.floor_for("sm_90a", floors.get_shape("bench1"))
    assert us == pytest.approx(76.1, abs=0.1) and "TB/s" in src


def test_nsight_python_1x_is_refused_with_old_ncu(monkeypatch):
    import importlib.metadata as md

    monkeypatch.setattr(md, "version", lambda name: "1.1.0")
    assert "2026.2.1" in S.nsight_usable("2025.3.1.0")
    assert S.nsight_usable("2026.2.1.0") is None


def test_keep_longest_combiner_picks_the_longer_duration():
    from profiling.sweep_stages import _keep_longest

    assert _keep_longest([10.0, 1.0], [30.0, 2.0]) == [30.0, 2.0]
    assert _keep_longest([30.0, 1.0], [10.0, 2.0]) == [30.0, 1.0]


FAKE_NCU = """\
#!{python}
# A stand-in for Nsight Compute's CLI: answers --version, --query-metrics, a profiling run
# (writes an empty report, runs nothing) and --import (prints a recorded raw CSV).
import os, sys
args = sys.argv[1:]
if "--version" in args:
    print("NVIDIA (R) Nsight Compute Command Line Profiler\\nVersion 2025.3.1.0 (build 1)")
elif "--query-metrics" in args:
    print('"Metric Name","Metric Type","Metric Unit","Metric Description"')
    for n in open(os.environ["FAKE_NCU_BASES"]).read().split():
        print('"%s","Counter","","d"' % n)
elif "--import" in args:
    sys.stdout.write(open(os.environ["FAKE_NCU_CSV"]).read())
else:
    with open(os.environ["FAKE_NCU_ARGS"], "w") as f:
        f.write("\\n".join(args))
    out = args[args.index("-o") + 1]
    open(out + ".ncu-rep", "wb").write(b"fake")
    print("==PROF== Disconnected")
"""


@pytest.fixture
def fake_ncu(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "ncu"
    exe.write_text(FAKE_NCU.format(python=sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    bases = {M.base_name(n) for n in M.metric_names("sm_90a")} - {"sm__maximum_warps_per_active_cycle_pct"}
    (tmp_path / "bases.txt").write_text("\n".join(sorted(bases) + [f"smsp__filler_{i}" for i in range(40)]))
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NCU_BASES", str(tmp_path / "bases.txt"))
    monkeypatch.setenv("FAKE_NCU_CSV", str(DATA / "ncu_raw_small.csv"))
    monkeypatch.setenv("FAKE_NCU_ARGS", str(tmp_path / "ncu_args.txt"))
    return tmp_path


def test_sweep_falls_back_to_direct_ncu_and_writes_every_output(fake_ncu, monkeypatch):
    pytest.importorskip("matplotlib")
    monkeypatch.setattr(S, "nsight_usable", lambda v: "nsight-python is not installed (test)")
    # the fake report is read through `ncu --import` (CSV), whatever ncu_report module this machine has
    monkeypatch.setitem(sys.modules, "ncu_report", None)
    monkeypatch.setattr(S, "missing_gpu", lambda what: None)  # the fake ncu runs no kernel
    out = fake_ncu / "out"
    rc = S.main(["--arch", "sm_90a", "--variant", A, "--variant", B, "--shapes", "bench3,bench4",
                 "--out", str(out), "--work", str(fake_ncu / "work"), "--deadline-s", "120",
                 "--static-json", str(DATA / "static_small.json")])
    assert rc == 0
    assert R.check_output_dir(out) == []
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [R.CSV_NAME, R.SUMMARY_NAME, R.PLOT_NAME, R.META_NAME, S.LOG_NAME])
    meta = json.loads((out / R.META_NAME).read_text())
    assert meta["backend"] == "ncu" and meta["ncu_version"] == "2025.3.1.0"
    assert meta["metrics_dropped"] == ["sm__maximum_warps_per_active_cycle_pct"]
    assert any("nsight backend skipped" in n for n in meta["notes"])
    rows = list(csv.DictReader(open(out / R.CSV_NAME)))
    assert [(r["variant"], r["shape"], r["best"]) for r in rows] == [
        (A, "bench3", "0"), (A, "bench4", "0"), (B, "bench3", "1"), (B, "bench4", "1")]
    assert rows[1]["duration_us"] == "35.104" and rows[0]["st_regs"] == "168"
    # what ncu was asked: the NVTX filter, flushed caches, unlocked clocks, the child stage
    ncu_args = (fake_ncu / "ncu_args.txt").read_text().split("\n")
    assert "--nvtx-include" in ncu_args and "--clock-control" in ncu_args
    assert ncu_args[ncu_args.index("--cache-control") + 1] == "all"
    metrics = ncu_args[ncu_args.index("--metrics") + 1].split(",")
    assert metrics[0] == M.DURATION and "sm__maximum_warps_per_active_cycle_pct" not in metrics
    assert ncu_args[ncu_args.index("--_stage") + 1] == "ncu-child"
    assert "HGMMA=32" in (out / R.SUMMARY_NAME).read_text()


def test_dry_run_prints_the_cases_and_runs_nothing(tmp_path, capsys):
    assert S.main(["--arch", "sm_90a", "--variant", A, "--shapes", "bench4", "--dry-run",
                   "--out", str(tmp_path / "out"), "--work", str(tmp_path / "w")]) == 0
    text = capsys.readouterr().out
    assert f"case 0: {A} bench4" in text and "--nvtx-include" in text
    assert not (tmp_path / "out").exists()


@pytest.mark.compile
def test_blackwell_compile_only_path_compiles_one_variant(tmp_path):
    from kernel.blackwell.config import DEFAULT_CONFIG

    # in a subprocess: CuTe DSL fixes its target arch at import, which would leak into other tests
    import subprocess

    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "profiling.ncu_sweep", "--arch", "sm_100a", "--compile-only",
                           "--variant", DEFAULT_CONFIG.label, "--shapes", "bench4", "--out", str(out),
                           "--work", str(tmp_path / "w")], capture_output=True, text=True, timeout=600)
    rows = list(csv.DictReader(open(out / R.CSV_NAME)))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert [r["status"].split(" ")[0] for r in rows] == ["compiled"]
    assert json.loads((out / R.META_NAME).read_text())["backend"] == "compile-only"


def test_temp_work_folder_is_removed_after_the_sweep(fake_ncu, monkeypatch):
    import tempfile

    monkeypatch.setitem(sys.modules, "ncu_report", None)
    monkeypatch.setattr(S, "nsight_usable", lambda v: "nsight-python is not installed (test)")
    monkeypatch.setattr(S, "missing_gpu", lambda what: None)
    temp_root = fake_ncu / "tmp"
    temp_root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp_root))
    S.main(["--arch", "sm_90a", "--variant", A, "--shapes", "bench4", "--out", str(fake_ncu / "out"),
            "--deadline-s", "120", "--static-json", "none"])
    assert (fake_ncu / "out" / "summary.md").exists()
    assert list(temp_root.iterdir()) == []


@pytest.mark.parametrize("argv, words", [
    (["--arch", "sm_90a"], ["ncu is not on PATH", "--dry-run"]),
    (["--arch", "sm_90a", "--variant", "nope"], ["nope", A]),
    (["--arch", "auto"], ["--arch sm_90a"]),
])
def test_usage_mistakes_and_missing_tools_are_one_line(argv, words, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no ncu
    monkeypatch.setattr(S, "missing_gpu", lambda what: None)
    rc = S.main(argv + ["--out", str(tmp_path / "out")])
    captured = capsys.readouterr()
    assert rc == 2
    lines = [l for l in captured.err.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    assert "Traceback" not in captured.out + captured.err
    for w in words:
        assert w in lines[0]
    assert not (tmp_path / "out").exists()


def test_no_gpu_is_one_line(fake_ncu, capsys):
    from kernel.device import cuda_capability

    if cuda_capability() is not None:
        pytest.skip("this machine has a GPU")
    rc = S.main(["--arch", "sm_90a", "--out", str(fake_ncu / "out")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.startswith("error: no CUDA GPU") and "\n" not in err


# ---- the split by concern ------------------------------------------------------------------------
SWEEP_MODULES = ("profiling.ncu_sweep", "profiling.sweep_plan", "profiling.sweep_stages",
                 "profiling.sweep_backends", "profiling.ncu_report")
# torch / CuTe DSL / nsight-python / nvtx: the GPU side's (a case that runs); matplotlib / pandas:
# the report's (the plot, nsight's DataFrame); ncu_report: Nsight Compute's module (reading a report)
HEAVY = ("torch", "cutlass", "nsight", "nvtx", "matplotlib", "pandas", "ncu_report")


@pytest.mark.parametrize("module", SWEEP_MODULES)
def test_each_sweep_module_imports_without_the_heavy_dependencies(module):
    """Each part imports alone, in a fresh interpreter, and pulls none of the heavy modules that
    only a running case, a plot or a report reader needs (the parent orchestrator never holds
    torch or a CUDA context while ncu profiles its child)."""
    import subprocess

    code = (f"import importlib, sys; importlib.import_module({module!r}); "
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "", f"{module} imported {proc.stdout.strip()}"


def test_the_file_runs_as_a_script_as_nsight_python_reruns_it(tmp_path):
    """nsight-python re-executes sys.argv[0] (profiling/ncu_sweep.py) as a script under ncu: the
    split modules must still resolve from the repository root, not from profiling/."""
    import subprocess

    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, str(root / "profiling" / "ncu_sweep.py"), "--arch", "sm_90a",
                           "--variant", A, "--shapes", "bench4", "--dry-run", "--out", str(tmp_path / "out"),
                           "--work", str(tmp_path / "w")], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert f"case 0: {A} bench4" in proc.stdout and "--_stage ncu-child" in proc.stdout
