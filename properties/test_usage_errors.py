"""Each usage mistake of the property suite is one line with the fix, and no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TRACEBACK_MARKERS = ("Traceback", "INTERNALERROR", 'File "')


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def _one_error_line(result: subprocess.CompletedProcess) -> str:
    out = result.stdout + result.stderr
    assert not any(m in out for m in TRACEBACK_MARKERS), out[-2000:]
    errors = [line for line in out.splitlines() if line.lower().startswith("error:")]
    assert len(errors) == 1, out[-2000:]
    return errors[0]


PYTEST_MISTAKES = {
    "missing_file": (["--subject=no_such_submission.py"], ["no_such_submission.py", "does not exist"]),
    "unknown_subject": (["--subject=hoper"], ["unknown subject 'hoper'", "model", "hopper", "blackwell", "auto"]),
    "unknown_variant": (["--subject=model", "--variant=model-nope"],
                        ["no variant 'model-nope'", "model-t128x128x256-contiguous-ctas8", "--list-variants"]),
}


@pytest.mark.parametrize("mistake", sorted(PYTEST_MISTAKES))
def test_pytest_usage_mistake_is_one_line(mistake):
    args, must_contain = PYTEST_MISTAKES[mistake]
    result = _run("-m", "pytest", "-p", "no:cacheprovider", "properties/test_plan_properties.py", *args)
    assert result.returncode == pytest.ExitCode.USAGE_ERROR
    line = _one_error_line(result)
    for text in must_contain:
        assert text in line, line


REPRO_MISTAKES = {
    "missing_file": (["--subject=no_such_submission.py"], ["does not exist"]),
    "unknown_variant": (["--subject=model", "--variant=..."], ["no variant '...'", "valid labels"]),
    "bad_sizes": (["--subject=model", "--sizes=[[1, 2"], ["--sizes", "[m, n, k, l]"]),
}


@pytest.mark.parametrize("mistake", sorted(REPRO_MISTAKES))
def test_repro_usage_mistake_is_one_line(mistake):
    args, must_contain = REPRO_MISTAKES[mistake]
    base = {"--sizes": "--sizes=[[64, 64, 256, 1]]", "--seed": "--seed=1"}
    for a in args:
        base.pop(a.split("=")[0], None)
    result = _run("-m", "properties.repro", *args, *base.values())
    assert result.returncode == 2
    line = _one_error_line(result)
    for text in must_contain:
        assert text in line, line


def test_repro_exits_non_zero_when_nothing_can_run():
    from kernel.device import cuda_capability

    if cuda_capability() is not None:
        pytest.skip("a GPU is present: the hopper/blackwell subject may run here")
    result = _run("-m", "properties.repro", "--subject=blackwell", "--sizes=[[64, 64, 256, 1]]", "--seed=1")
    assert result.returncode == 3
    assert "nothing ran" in _one_error_line(result)


def test_list_variants_names_every_declared_variant_once():
    from kernel import model
    from kernel.family import families

    result = _run("-m", "pytest", "-p", "no:cacheprovider", "--list-variants")
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    want = [("model", c.label) for c in model.DECLARED_VARIANTS]
    for family in families():
        want += [(family.name, c.label) for c in family.declared_variants]
    for subject, label in want:
        hits = [line for line in lines if line.split()[:2] == [subject, label]]
        assert len(hits) == 1, (subject, label)
        assert len(hits[0].split()) > 3, hits[0]  # scope and a description follow
    production = {(f.name, c.label) for f in families() for c in f.production_variants}
    for line in lines:
        words = line.split()
        if len(words) > 2 and (words[0], words[1]) in production:
            assert words[2] == "[production]", line


def test_an_experimental_variant_label_is_a_valid_selection():
    """--variant=LABEL runs experimental variants too (README, ci/gpu_check.sh, ci/gpu_speed.sh):
    the usage check must look the label up in the whole declared matrix, not the production set."""
    from kernel.hopper import EXPERIMENTAL_VARIANTS
    from properties.usage import UsageMistake, check_selection

    check_selection("hopper", [EXPERIMENTAL_VARIANTS[-1].label])
    with pytest.raises(UsageMistake):
        check_selection("hopper", ["h90_no_such_variant"])
