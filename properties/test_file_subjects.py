"""File subjects (``--subject=path.py``) as a newcomer writes them, run through pytest itself.

* a correct plain-torch submission that does not validate its input passes every property (the
  invalid-input property is skipped for it, naming the VALIDATES flag);
* a wrong one fails, and the failure's repro line, run as printed, fails again;
* one that opts in with VALIDATES = True is held to the invalid-input property, and a failure of
  that property also ends with a repro line that fails again.

Each run uses the ``smoke`` profile (3 derandomized examples per property) to stay cheap.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
PROPERTY_FILE = "properties/test_subject_vs_oracle.py"
REPRO_LINE = re.compile(r"reproduce: (python3? -m (?:properties\.repro|pytest) [^\n]+)")


def _run(args: list[str], timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def _pytest(subject: str, *selection: str) -> subprocess.CompletedProcess:
    return _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "properties",
                 f"--subject={subject}", "--hypothesis-profile=smoke", *selection])


def _fixture(name: str) -> str:
    return str((FIXTURES / name).relative_to(ROOT))


def _replay(line: str) -> subprocess.CompletedProcess:
    argv = shlex.split(line)
    assert argv[0] in ("python", "python3")
    return _run([sys.executable, *argv[1:]])


def test_correct_submission_passes_every_property():
    result = _pytest(_fixture("torch_reference_submission.py"), PROPERTY_FILE, "-rs")
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-3000:]
    # every subject property passes; the only skips are the invalid-input property (the file
    # does not declare VALIDATES), the full-size corners a CPU subject leaves to GPU subjects, the
    # corners sized in rounds of a grid and the row-edge corner (a CPU file subject has neither)
    summary = re.search(r"\b(\d+) passed, (\d+) skipped in\b", out)
    assert summary and int(summary.group(1)) >= 9, out[-2000:]
    assert "failed" not in out.splitlines()[-1], out[-2000:]
    reasons = re.findall(r"^SKIPPED \[\d+\] \S+ (.*)$", out, re.M)
    assert any("does not declare VALIDATES = True" in r for r in reasons), out[-2000:]
    allowed = ("does not declare VALIDATES = True", "at full size runs on GPU subjects", "has no grid planner",
               "declares no row edges")
    assert all(any(a in r for a in allowed) for r in reasons), reasons


def test_wrong_submission_fails_with_a_repro_line_that_fails_again():
    result = _pytest(_fixture("torch_wrong_submission.py"), f"{PROPERTY_FILE}::test_subject_matches_oracle")
    out = result.stdout + result.stderr
    assert result.returncode == 1, out[-3000:]
    lines = REPRO_LINE.findall(out)
    assert lines, f"no repro line in the failure:\n{out[-3000:]}"
    replay = _replay(lines[-1])
    assert replay.returncode == 1 and "FAIL" in replay.stdout, replay.stdout[-2000:] + replay.stderr[-2000:]


def test_validating_submission_is_held_to_the_invalid_input_property():
    result = _pytest(_fixture("torch_validating_submission.py"),
                     f"{PROPERTY_FILE}::test_subject_rejects_invalid_problems")
    out = result.stdout + result.stderr
    assert result.returncode == 0 and re.search(r"\b1 passed\b", out), out[-3000:]


def test_false_validator_fails_the_invalid_input_property_with_a_repro_line():
    result = _pytest(_fixture("torch_false_validator_submission.py"),
                     f"{PROPERTY_FILE}::test_subject_rejects_invalid_problems")
    out = result.stdout + result.stderr
    assert result.returncode == 1, out[-3000:]
    lines = REPRO_LINE.findall(out)
    assert lines, f"no repro line in the failure:\n{out[-3000:]}"
    replay = _replay(lines[-1])
    assert replay.returncode == 1, replay.stdout[-2000:]
    assert "test_subject_rejects_invalid_problems" in replay.stdout and "failed" in replay.stdout


def test_reading_the_plain_scales_on_the_device_fails_on_the_leaderboard_layout():
    """The leaderboard keeps the plain scales in host memory: a submission that uses them as
    device tensors fails the corner built in that layout (a device mismatch on a GPU, a
    HostMemoryRead on a machine without one), with a repro line that fails again."""
    result = _pytest(_fixture("torch_host_scales_submission.py"),
                     f"{PROPERTY_FILE}::test_subject_matches_oracle_on_corners", "-k", "leaderboard_test_case")
    out = result.stdout + result.stderr
    assert result.returncode == 1 and re.search(r"\b1 failed\b", out), out[-3000:]
    assert "HostMemoryRead" in out or "Expected all tensors to be on the same device" in out, out[-3000:]
    lines = REPRO_LINE.findall(out)
    assert lines, f"no repro line in the failure:\n{out[-3000:]}"
    replay = _replay(lines[-1])
    assert replay.returncode == 1, replay.stdout[-2000:] + replay.stderr[-2000:]


@pytest.mark.parametrize("name", ["torch_reference_submission.py", "torch_wrong_submission.py"])
def test_only_an_explicit_flag_opts_a_file_into_input_validation(name):
    from properties.subjects import resolve_subject

    (variant,) = resolve_subject(_fixture(name))
    assert variant.validates_input is False
    (validating,) = resolve_subject(_fixture("torch_validating_submission.py"))
    assert validating.validates_input is True
