"""``python -m properties.leaderboard`` on the CPU model and on planted submissions.

Each run is a real subprocess with its own spawned worker, as a user runs the tool. Correct
subjects pass with exit status 0; wrong ones fail their case with the leaderboard's mismatch
message and exit status 112; a submission that raises an unpicklable exception, hangs or kills
its process is reported as that case's failure within the time limit, never a hang of the tool.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = "properties/fixtures"
FAULTY = "properties/faulty_subjects"
# small cases (the leaderboard's first test case, and one with odd M and N for the faulty subjects)
TASK = """tests:
  - {"m": [96, 128], "n": [128, 256], "k": [256, 512], "g": 2, "seed": 1111}
  - {"m": [33, 64], "n": [17, 64], "k": [256, 256], "g": 2, "seed": 1111}
benchmarks:
  - {"m": [64, 72], "n": [128, 64], "k": [256, 256], "g": 2, "seed": 7}
"""


def _tool(tmp_path, submission: str, *args: str, timeout: float = 600) -> tuple[int, str, float]:
    task = tmp_path / "task.yml"
    task.write_text(TASK)
    start = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "properties.leaderboard", submission, "--task", str(task),
                             "--device", "cpu", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    return result.returncode, result.stdout, time.monotonic() - start


def _lines(out: str) -> dict[str, str]:
    return dict(re.findall(r"^([\w.\-]+): (.*)$", out, re.M))


@pytest.mark.parametrize("submission", ["model", f"{FIXTURES}/torch_reference_submission.py"])
def test_a_correct_subject_passes_test_mode(tmp_path, submission):
    code, out, _ = _tool(tmp_path, submission, "--mode", "test")
    lines = _lines(out)
    assert code == 0, out
    assert lines["test-count"] == "2" and lines["test.0.status"] == lines["test.1.status"] == "pass"
    assert lines["test.0.spec"] == "m: [96, 128]; n: [128, 256]; k: [256, 512]; g: 2; seed: 1111"
    assert lines["check"] == "pass"


def test_a_wrong_submission_fails_with_the_mismatch_message(tmp_path):
    code, out, _ = _tool(tmp_path, f"{FIXTURES}/torch_wrong_submission.py", "--mode", "test")
    lines = _lines(out)
    assert code == 112 and lines["check"] == "fail", out
    assert lines["test.0.status"] == "fail"
    assert lines["test.0.error"].startswith("mismatch found! custom implementation doesn't match reference")
    assert "Number of mismatched elements" in lines["test.0.error"]


def test_reading_the_plain_scales_as_device_tensors_fails(tmp_path):
    code, out, _ = _tool(tmp_path, f"{FIXTURES}/torch_host_scales_submission.py", "--mode", "test")
    lines = _lines(out)
    assert code == 112 and lines["test.0.status"] == "fail", out
    assert lines["test.0.error"].startswith("HostMemoryRead")


def test_an_unpicklable_exception_is_reported_not_hung(tmp_path):
    code, out, seconds = _tool(tmp_path, f"{FIXTURES}/unpicklable_error_submission.py", "--mode", "test",
                               "--timeout", "120")
    lines = _lines(out)
    assert code == 112 and lines["test.0.status"] == lines["test.1.status"] == "fail", out
    assert "KernelRefused: [device] expected a cuda tensor" in lines["test.0.error"]
    assert "cannot be pickled" in lines["test.0.error"]


def test_a_hang_is_reported_after_the_timeout_and_the_next_case_runs(tmp_path):
    code, out, seconds = _tool(tmp_path, f"{FAULTY}/hang_cpu.py", "--mode", "test", "--timeout", "20")
    lines = _lines(out)
    assert code == 112, out
    assert lines["test.0.status"] == "pass"  # even N: the model's result
    assert lines["test.1.status"] == "fail" and "timed out after 20 s" in lines["test.1.error"]
    assert seconds < 20 + 90, f"the tool took {seconds:.0f} s"


def test_a_crash_is_reported_and_the_next_case_gets_a_fresh_worker(tmp_path):
    task = tmp_path / "crash.yml"
    task.write_text(TASK.replace('"m": [96, 128]', '"m": [97, 128]'))  # odd M first: it crashes
    result = subprocess.run([sys.executable, "-m", "properties.leaderboard", f"{FAULTY}/segfault_cpu.py", "--task",
                             str(task), "--device", "cpu", "--mode", "test", "--timeout", "120"],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    lines = _lines(result.stdout)
    assert result.returncode == 112, result.stdout + result.stderr
    assert lines["test.0.status"] == "fail" and "process died" in lines["test.0.error"]
    assert lines["test.1.status"] == "fail"  # odd M in its first group as well
    assert lines["check"] == "fail"


def test_benchmark_mode_reports_the_evaluators_statistics_and_the_floor(tmp_path):
    """Three timed repeats (``--max-repeats 3``, the fewest the evaluator's stopping rule allows):
    the rule stops once the mean's relative error is under 0.1 %, which the CPU model's timings
    on a busy machine may never reach, and then the default 100 repeats take about 2 minutes."""
    code, out, _ = _tool(tmp_path, "model", "--mode", "benchmark", "--max-repeats", "3")
    lines = _lines(out)
    assert code == 0, out
    assert lines["benchmark-count"] == "1"
    runs, mean = int(lines["benchmark.0.runs"]), float(lines["benchmark.0.mean"])
    assert runs == 3 and mean > 0
    assert float(lines["benchmark.0.best"]) <= mean <= float(lines["benchmark.0.worst"])
    assert float(lines["benchmark.0.floor_us"]) > 0
    assert "| geomean |" in out


def test_a_missing_submission_is_a_usage_mistake(tmp_path):
    code, out, _ = _tool(tmp_path, "no_such_file.py", "--mode", "test")
    assert code == 2
    code, out, _ = _tool(tmp_path, "model", "--mode", "benchmark", "--max-repeats", "2")
    assert code == 2


def test_the_timing_loop_is_one_function_the_benchmarks_share():
    """properties.leaderboard.time_calls (what the tool's benchmark mode and bench_gpu.py's
    leaderboard column run): one call per input per repeat, one sample per repeat (the time over
    the inputs), the evaluator's stopping rule, and the first rejected repeat's message."""
    from properties.leaderboard import time_calls

    calls = []

    def kernel(data):
        calls.append(data)
        time.sleep(0.002)
        return [data]

    samples = time_calls(kernel, [1, 2, 3], device="cpu", max_repeats=5, max_time_ns=10e9)
    assert len(samples) == 5 and calls == [1, 2, 3] * 5  # 30 ms: the 100 ms minimum keeps it going
    assert all(1.5e6 < s < 50e6 for s in samples)  # ns per call
    calls.clear()
    verdicts = iter([None, "mismatch found!"])
    assert time_calls(kernel, [1], device="cpu", max_repeats=5, max_time_ns=10e9,
                      check=lambda outputs: next(verdicts)) == "mismatch found!"
    assert calls == [1, 1]
