"""profiling.preflight: each missing tool is one line that says how to get it."""

import importlib.metadata

import pytest

from profiling import preflight


def test_missing_tools_are_named_with_their_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(preflight.glob, "glob", lambda pattern: [])
    ncu = preflight.missing_ncu()
    assert "ncu is not on PATH" in ncu and "install Nsight Compute" in ncu and "\n" not in ncu
    san = preflight.missing_compute_sanitizer()
    assert "compute-sanitizer" in san and "install the CUDA toolkit" in san and "\n" not in san


def test_present_tools_are_not_reported(monkeypatch, tmp_path):
    for name in ("ncu", "compute-sanitizer"):
        exe = tmp_path / name
        exe.write_text("#!/bin/sh\n")
        exe.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert preflight.missing_ncu() is None and preflight.missing_compute_sanitizer() is None


def test_missing_nsight_python_names_the_version_to_install(monkeypatch):
    def absent(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", absent)
    line = preflight.missing_nsight_python()
    assert "nsight-python==0.9.6" in line and "\n" not in line


def test_missing_gpu_names_the_tool(monkeypatch):
    import kernel.device

    monkeypatch.setattr(kernel.device, "cuda_capability", lambda: None)
    assert preflight.missing_gpu("the sweep").startswith("no CUDA GPU") and "the sweep" in preflight.missing_gpu("the sweep")
    monkeypatch.setattr(kernel.device, "cuda_capability", lambda: (9, 0))
    assert preflight.missing_gpu("the sweep") is None


@pytest.mark.parametrize("tool", ["ablation", "timeline", "k_slope", "clock_probe"])
def test_hopper_gpu_tools_say_so_without_an_sm90_gpu(tool, monkeypatch, capsys):
    """Without an sm_90 GPU each timing tool exits 2 with one line naming itself and what to run
    instead, once its arguments are checked and before any CUDA work (not a torch traceback)."""
    import importlib

    import kernel.device
    from kernel.hopper.variants import SPLIT_WARP_CONFIG

    monkeypatch.setattr(kernel.device, "cuda_capability", lambda: None)
    mod = importlib.import_module(f"profiling.{tool}")
    assert mod.main(["--variant", SPLIT_WARP_CONFIG.label]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"python -m profiling.{tool}: ") and "sm_90" in err and "\n" not in err
    assert "profiling.static_report" in err
