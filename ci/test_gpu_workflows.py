"""The GPU workflow scripts (ci/gpu_*.sh) on a CPU: syntax, the shared header, usage, refusal
without a GPU, and the header's step / summary helpers."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CI = ROOT / "ci"
HEADER = CI / "gpu_env.sh"
WORKFLOWS = sorted(p for p in CI.glob("gpu_*.sh") if p != HEADER)
SOURCE_LINE = 'source "$(dirname "${BASH_SOURCE[0]}")/gpu_env.sh"'
BASH = shutil.which("bash")

pytestmark = pytest.mark.skipif(BASH is None, reason="needs bash")


def _run(args, env=None, timeout=120, **kw):
    return subprocess.run([BASH, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout, **kw)


def _env_without_gpu(tmp_path, fake_smi=False):
    """No nvidia-smi (or a fake one that prints an H100's line) and no CUDA device for torch: what
    a CPU machine, or a GPU machine with every device hidden, looks like."""
    smi = tmp_path / "nvidia-smi"
    if fake_smi:
        smi.write_text("#!/bin/sh\necho 'NVIDIA H100 80GB HBM3, 550.54.15'\n")
        smi.chmod(0o755)
    return dict(os.environ, NVIDIA_SMI=str(smi), CUDA_VISIBLE_DEVICES="", OUT=str(tmp_path / "out"))


def test_the_workflows_are_the_expected_few():
    assert [p.name for p in WORKFLOWS] == ["gpu_check.sh", "gpu_long.sh", "gpu_mutants.sh",
                                           "gpu_profile.sh", "gpu_speed.sh"]
    assert not list(CI.glob("h200_*.sh"))


@pytest.mark.parametrize("script", [HEADER, *WORKFLOWS], ids=lambda p: p.name)
def test_parses(script):
    done = _run(["-n", str(script)])
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("script", WORKFLOWS, ids=lambda p: p.name)
def test_header_comment_and_shared_header(script):
    text = script.read_text()
    lines = text.splitlines()
    assert lines[0] == "#!/usr/bin/env bash"
    assert lines[1] == f"# Usage: bash ci/{script.name}" or lines[1].startswith(f"# Usage: bash ci/{script.name} ")
    comment = "\n".join(line for line in lines[1:] if line.startswith("#"))
    assert "Run time on one H100/H200" in comment
    assert "Exit status" in comment
    assert SOURCE_LINE in text, "every workflow sources the shared header"
    assert re.search(r"^gpu_init \"\$@\"$", text, re.M)
    assert text.rstrip().endswith("gpu_finish"), "the summary table and the exit status come last"
    # what the product says about itself (house rules): no work-session talk, no
    # issue numbers, no card hard-wired (an H100 runs these as well as an H200)
    assert not re.search(r"\bsession\b|\bissue \d|#\d", text, re.I)
    assert "h200_" not in text


@pytest.mark.parametrize("script", WORKFLOWS, ids=lambda p: p.name)
def test_help_prints_the_header_and_misuse_exits_2(script, tmp_path):
    env = _env_without_gpu(tmp_path)
    shown = _run([str(script), "--help"], env=env)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"Usage: bash ci/{script.name}")
    wrong = _run([str(script), "--no-such-option"], env=env)
    assert wrong.returncode == 2
    assert "unknown option --no-such-option" in wrong.stderr
    assert f"Usage: bash ci/{script.name}" in wrong.stderr


@pytest.mark.parametrize("script", WORKFLOWS, ids=lambda p: p.name)
def test_refuses_without_nvidia_smi(script, tmp_path):
    done = _run([str(script)], env=_env_without_gpu(tmp_path))
    assert done.returncode == 3, done.stdout + done.stderr
    assert "nvidia-smi: needs an NVIDIA sm_90 (H100/H200) or sm_100 GPU" in done.stderr
    assert "== " not in done.stdout, "no step may start without a GPU"


def test_refuses_when_torch_sees_no_sm90_or_sm100_device(tmp_path):
    """nvidia-smi answers (its line is printed and kept), but torch sees no device: exit 3 before
    any step."""
    env = _env_without_gpu(tmp_path, fake_smi=True)
    done = _run([str(CI / "gpu_check.sh")], env=env, timeout=300)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "NVIDIA H100 80GB HBM3, 550.54.15" in done.stdout
    assert (tmp_path / "out" / "gpu.txt").read_text().startswith("NVIDIA H100")
    assert "no sm_90 / sm_100 GPU usable here" in done.stderr
    assert "== " not in done.stdout


def _with_header(tmp_path, body):
    script = tmp_path / "workflow.sh"
    script.write_text(f"#!/usr/bin/env bash\n# Usage: bash workflow.sh\nsource {HEADER}\n{body}\n")
    return _run([str(script)], env=dict(os.environ, OUT=str(tmp_path / "out"), STEP_TAIL="2"))


def test_step_logs_times_and_summarizes(tmp_path):
    done = _with_header(tmp_path, "step good echo fine\nstep bad sh -c 'echo one; echo two; echo three; exit 5'\n"
                                  "step slow timeout 1 sleep 5\ngpu_finish")
    assert done.returncode == 1, done.stdout + done.stderr
    out = tmp_path / "out"
    assert (out / "good.log").read_text() == "fine\n"
    assert (out / "bad.log").read_text() == "one\ntwo\nthree\n"  # the whole output in the log...
    assert "one" not in done.stdout.splitlines() and "two\nthree\n" in done.stdout  # ...its STEP_TAIL lines
    rows = re.findall(r"^\| (\w+) \| (\d+) \| (\d+) \| (\w+) \|$", (out / "summary.md").read_text(), re.M)
    assert [(name, rc, verdict) for name, _, rc, verdict in rows] == [
        ("good", "0", "ok"), ("bad", "5", "FAIL"), ("slow", "124", "TIMEOUT")]
    assert "steps: 3," in done.stdout and "FAILED" in done.stdout


def test_all_steps_passing_exit_0(tmp_path):
    done = _with_header(tmp_path, "step a true\nstep b echo ok\ngpu_finish")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "steps: 2," in done.stdout and "all passed" in done.stdout


def test_unknown_labels_are_misuse(tmp_path):
    done = _with_header(tmp_path, "FAMILY=hopper\ngpu_check_labels no_such_label_x\necho reached")
    assert done.returncode == 2
    assert "no_such_label_x" in done.stderr and "reached" not in done.stdout
    from kernel.family import get_family

    label = get_family("hopper").default_config.label
    ok = _with_header(tmp_path, f"FAMILY=hopper\ngpu_check_labels {label} '{label}~no_epilogue'\necho reached")
    assert ok.returncode == 0 and "reached" in ok.stdout, ok.stderr
