"""The fault-isolating runner on CPU: planted subjects that segfault, hang or answer wrongly on some
shapes are reported (which example, how, the one-line reproduction) and the run goes on with a
fresh worker; a hang is reported within the limit of the phase it hung in (compile, run), a
slow compile is not a hang, and the progress output names an example that runs long; the GPU
planted subjects import here and are skipped with the reason."""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from properties import isolation
from properties.checks import ExampleRunner, SubjectCheckFailed, check_example, install_runner, installed_runner
from properties.faulty_subjects.slow_compile_cpu import COMPILE_S
from properties.isolation import (IsolatedRunner, IsolationSettings, RunningExample, SubjectFaulted,
                                  SubjectTimedOut, WorkerStartError)
from properties.progress_plugin import ProgressPlugin
from properties.strategies import Example
from properties.subjects import resolve_subject
from properties.wrong_subjects import wrong_variant

ROOT = Path(__file__).resolve().parent.parent
FAULTY = "properties/faulty_subjects"
FAST = IsolationSettings(mode="always", timeout_s=20.0, compile_timeout_s=60.0, startup_timeout_s=60.0)


def _example(*sizes, seed=3) -> Example:
    return Example(tuple(sizes), seed, "uniform", "separate")


GOOD = _example((8, 16, 64, 1), (4, 6, 128, 1))
GOOD_2 = _example((6, 10, 128, 1), seed=4)
ODD_M = _example((8, 16, 64, 1), (9, 6, 64, 1))  # segfault_cpu / wrong_result_cpu fire on an odd M
ODD_N = _example((8, 17, 64, 1))  # hang_cpu fires on an odd N


def _runner(name: str, settings: IsolationSettings = FAST) -> IsolatedRunner:
    return IsolatedRunner(f"{FAULTY}/{name}.py", name, settings=settings)


def _run_repro(line: str) -> subprocess.CompletedProcess:
    argv = shlex.split(line)
    assert argv[:3] == ["python", "-m", "properties.repro"], line
    return subprocess.run([sys.executable, *argv[1:]], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_a_segfault_fails_its_example_only():
    with _runner("segfault_cpu") as runner:
        first, fault, after = (runner.check(e) for e in (GOOD, ODD_M, GOOD_2))
        assert runner.workers_started == 2
    assert [first.kind, fault.kind, after.kind] == ["pass", "fault", "pass"], fault.report()
    assert "SIGSEGV" in fault.detail
    assert first.worker_pid == fault.worker_pid != after.worker_pid  # reused until it died, then replaced
    report = fault.report()
    assert "segfault_cpu:segfault_cpu FAULT on 2 groups [[8, 16, 64, 1], [9, 6, 64, 1]]" in report
    assert report.endswith(f"reproduce: {fault.repro}")
    assert fault.repro == (f"python -m properties.repro --subject={FAULTY}/segfault_cpu.py --variant=segfault_cpu "
                           "--sizes='[[8, 16, 64, 1], [9, 6, 64, 1]]' --seed=3 --distribution=uniform "
                           "--layout=separate --isolate=always")
    replay = _run_repro(fault.repro)
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert "FAULT on 2 groups" in replay.stdout and "SIGSEGV" in replay.stdout


def test_a_hang_times_out_and_the_next_example_passes():
    with _runner("hang_cpu", IsolationSettings(mode="always", timeout_s=2.0)) as runner:
        first, hang, after = (runner.check(e) for e in (GOOD, ODD_N, GOOD_2))
        assert runner.workers_started == 2
    assert [first.kind, hang.kind, after.kind] == ["pass", "timeout", "pass"], hang.report()
    assert 2.0 <= hang.seconds < 10.0
    assert "no answer within 2 s" in hang.detail
    assert hang.repro.endswith("--isolate=always --timeout=2")
    replay = _run_repro(hang.repro)
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert "TIMEOUT on 1 groups [[8, 17, 64, 1]]" in replay.stdout


# slow_compile_cpu: compile_for takes COMPILE_S per new group count, the launch hangs on an odd N
PHASED = IsolationSettings(mode="always", timeout_s=2.0, compile_timeout_s=30.0, startup_timeout_s=60.0)
VERDICT_MARGIN_S = 1.5  # from the phase's limit to the outcome: the kill and the reap
THREE_GROUPS = _example((8, 16, 64, 1), (4, 6, 128, 1), (6, 10, 64, 1))  # its compile never ends


def test_a_hang_at_the_first_launch_after_a_slow_compile_is_reported_within_the_run_limit():
    assert COMPILE_S > PHASED.timeout_s  # so a compile counted against the run limit would fail
    with _runner("slow_compile_cpu", PHASED) as runner:
        hang, after = runner.check(ODD_N, rerun=False), runner.check(GOOD_2, rerun=False)
        again = runner.check(ODD_N, rerun=False)
        assert runner.workers_started == 2
    assert (hang.kind, hang.phase) == ("timeout", "run"), hang.report()
    assert hang.compile_s >= COMPILE_S  # the whole compile ran under its own limit
    launch_to_verdict = hang.seconds - hang.compile_s
    assert PHASED.timeout_s <= launch_to_verdict < PHASED.timeout_s + VERDICT_MARGIN_S, hang.seconds
    assert "hang in the run phase: no answer within 2 s of the launch (after a 3.0 s compile phase)" in hang.detail
    assert hang.report().endswith(f"reproduce: {hang.repro}")
    assert hang.repro.endswith("--sizes='[[8, 17, 64, 1]]' --seed=3 --distribution=uniform --layout=separate "
                               "--isolate=always --timeout=2")
    # a slow compile within its limit is no hang: the fresh worker compiles again and passes
    assert (after.kind, after.phase) == ("pass", "run") and after.compile_s >= COMPILE_S, after.report()
    assert after.worker_pid != hang.worker_pid
    # Hypothesis replays a failing example before reporting it: the hang is not waited for twice
    assert again.kind == "timeout" and again.seconds == 0.0 and "not launched again" in again.detail
    replay = _run_repro(hang.repro)
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert "TIMEOUT on 1 groups [[8, 17, 64, 1]]" in replay.stdout and "hang in the run phase" in replay.stdout


def test_a_compile_that_never_ends_is_a_hang_in_the_compile_phase():
    settings = dataclasses.replace(PHASED, compile_timeout_s=2.0)
    with _runner("slow_compile_cpu", settings) as runner:
        hang = runner.check(THREE_GROUPS, rerun=False)
    assert (hang.kind, hang.phase, hang.compile_s) == ("timeout", "compile", None), hang.report()
    assert settings.compile_timeout_s <= hang.seconds < settings.compile_timeout_s + VERDICT_MARGIN_S
    assert "hang in the compile phase: no launch within 2 s" in hang.detail
    assert hang.repro.endswith("--isolate=always --timeout=2 --compile-timeout=2")
    assert hang.report().endswith(f"reproduce: {hang.repro}")


class _RunnerWithNow(ExampleRunner):
    now: RunningExample | None = None

    def running(self):
        return self.now


def test_progress_names_a_slow_example_once_per_phase_and_interval(monkeypatch):
    monkeypatch.setenv("NVFP4_SLOW_EXAMPLE_S", "5")
    monkeypatch.setenv("NVFP4_PROGRESS_S", "30")
    runner = _RunnerWithNow()
    plugin = ProgressPlugin(runner)
    written = []
    monkeypatch.setattr(plugin, "_write", written.append)
    variant = resolve_subject(f"{FAULTY}/slow_compile_cpu.py")[0]
    runner.now = RunningExample(variant, ODD_N, started=100.0, phase="compile", phase_started=100.0)
    assert plugin.announce_slow_example(104.0) is None  # a quick example prints nothing
    line = plugin.announce_slow_example(105.5)
    assert line == ("[nvfp4 progress] slow_compile_cpu:slow_compile_cpu: example running 6 s (compile phase 6 s): "
                    "1 groups [[8, 17, 64, 1]] seed=3 uniform separate")
    assert plugin.announce_slow_example(120.0) is None  # not again within the interval
    assert "example running 36 s (compile phase 36 s)" in plugin.announce_slow_example(136.0)
    runner.now = RunningExample(variant, ODD_N, 100.0, "run", phase_started=140.0, compile_s=40.0)
    assert plugin.announce_slow_example(144.0) is None
    assert "example running 46 s (run phase 6 s, after a 40.0 s compile phase)" in plugin.announce_slow_example(146.0)
    runner.now = None
    assert plugin.announce_slow_example(300.0) is None
    assert len(written) == 3


def test_pytest_shows_the_slow_and_the_hung_example_while_the_test_runs(tmp_path):
    """A pytest run (its own process, output captured as usual) of two examples on
    slow_compile_cpu: a compile of COMPILE_S, then a launch that hangs. The progress lines name
    both examples and the hang's reproduce line comes before the test's failure report."""
    (tmp_path / "test_inner.py").write_text(
        "from properties.checks import check_example\n"
        "from properties.strategies import Example\n\n\n"
        "def test_compile_then_hang(subject_variant):\n"
        "    check_example(subject_variant, Example(((8, 16, 64, 1),), 3, 'uniform', 'separate'), rerun=False)\n"
        "    check_example(subject_variant, Example(((8, 17, 64, 1),), 4, 'uniform', 'separate'), rerun=False)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               NVFP4_SLOW_EXAMPLE_S="1")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-q", "test_inner.py",
         f"--subject={ROOT / FAULTY / 'slow_compile_cpu.py'}", "--isolate=always", "--example-timeout=2",
         "--compile-timeout=30"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert re.search(r"slow_compile_cpu:slow_compile_cpu test_compile_then_hang: example running \d+ s "
                     r"\(compile phase \d+ s\): 1 groups \[\[8, 16, 64, 1\]\] seed=3 uniform separate", out), out
    assert re.search(r"example running \d+ s \(run phase \d+ s, after a 0\.0 s compile phase\): "
                     r"1 groups \[\[8, 17, 64, 1\]\] seed=4", out), out
    hang = out.index("[nvfp4 progress] TIMEOUT slow_compile_cpu:slow_compile_cpu [[8, 17, 64, 1]] seed=4")
    assert "hang in the run phase: no answer within 2 s of the launch" in out[hang:].splitlines()[0]
    repro = out.index("[nvfp4 progress] reproduce: python -m properties.repro ", hang)
    assert repro < out.index("= FAILURES =")


def test_a_wrong_result_is_a_plain_failure_and_keeps_the_worker():
    with _runner("wrong_result_cpu") as runner:
        outcomes = [runner.check(e) for e in (GOOD, ODD_M, GOOD_2)]
        assert runner.workers_started == 1
    assert [o.kind for o in outcomes] == ["pass", "fail", "pass"], outcomes[1].report()
    assert len({o.worker_pid for o in outcomes}) == 1
    assert "wrong_result_cpu:wrong_result_cpu failed on 2 groups" in outcomes[1].detail
    assert outcomes[1].detail.rstrip().endswith(outcomes[1].repro)


@pytest.fixture
def isolate_always():
    saved = installed_runner()
    runner = install_runner(isolation.IsolatingRunner(
        IsolationSettings(mode="always", timeout_s=2.0)))
    yield runner
    install_runner(saved)  # closes the test's workers


def test_check_example_routes_through_the_worker(isolate_always):
    variant = resolve_subject(f"{FAULTY}/segfault_cpu.py")[0]
    assert isolate_always.should_isolate(variant)
    check_example(variant, GOOD)
    with pytest.raises(SubjectFaulted, match=r"SIGSEGV(.|\n)*reproduce: python -m properties\.repro .*--isolate=always$"):
        check_example(variant, ODD_M)
    check_example(variant, GOOD_2)  # a fresh worker: the fault did not end the run
    hang = resolve_subject(f"{FAULTY}/hang_cpu.py")[0]
    with pytest.raises(SubjectTimedOut, match="no answer within 2 s"):
        check_example(hang, ODD_N, rerun=False)
    assert issubclass(SubjectTimedOut, SubjectCheckFailed)  # what the property tests and repro catch


def test_hypothesis_sees_a_fault_as_a_failing_example(isolate_always):
    variant = resolve_subject(f"{FAULTY}/segfault_cpu.py")[0]
    ran = []

    @settings(max_examples=30, derandomize=True, database=None, deadline=None, phases=[Phase.generate])
    @given(st.integers(1, 40), st.integers(1, 40), st.integers(0, 2**31 - 1))
    def prop(m, n, seed):
        example = _example((m, n, 64, 1), seed=seed)
        ran.append(example)
        check_example(variant, example, rerun=False)

    with pytest.raises(SubjectFaulted, match="--isolate=always"):
        prop()
    faulted = [e for e in ran if e.sizes[0][0] % 2]
    assert faulted, "the draw never hit an odd M"
    assert all(e.sizes[0][0] % 2 == 0 for e in ran[: ran.index(faulted[0])])  # the passes came first


def test_in_process_subjects_are_not_isolated_by_default():
    def runner(mode):
        return isolation.IsolatingRunner(isolation.settings_from_env(mode=mode))

    auto = runner("auto")
    assert not auto.should_isolate(resolve_subject("model")[0])
    assert not auto.should_isolate(resolve_subject(f"{FAULTY}/segfault_cpu.py")[0])
    for name in ("gpu_oob_cute", "gpu_oob_torch", "gpu_hang"):
        assert auto.should_isolate(resolve_subject(f"{FAULTY}/{name}.py")[0])
    assert not runner("always").should_isolate(wrong_variant("writes_past_c"))  # built in code: no source
    assert not runner("never").should_isolate(resolve_subject(f"{FAULTY}/gpu_hang.py")[0])
    with pytest.raises(ValueError):
        runner("sometimes")


def test_the_import_graph_has_no_circle():
    """checks never imports isolation (isolation imports checks): one direction only."""
    import ast

    tree = ast.parse((ROOT / "properties" / "checks.py").read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {f"{n.module}.{a.name}" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
                 for a in n.names}
    assert not any("isolation" in name for name in imported), imported


def test_runner_reports_stages_and_warm_examples(isolate_always):
    """Observers see every example: outcome, the worker's stage times, and warm only when the
    worker ran that group count before (so examples/s after compiles counts no compile)."""
    variant = resolve_subject(f"{FAULTY}/wrong_result_cpu.py")[0]
    seen = []
    isolate_always.observers.append(seen.append)
    check_example(variant, GOOD, rerun=False)
    check_example(variant, GOOD_2, rerun=False)
    with pytest.raises(SubjectCheckFailed):
        check_example(variant, ODD_M, rerun=False)
    assert [r.outcome for r in seen] == ["pass", "pass", "fail"]
    assert [r.warm for r in seen[:2]] == [False, len(GOOD_2.sizes) == len(GOOD.sizes)]
    assert set(seen[0].stages) >= {"inputs", "transfers", "oracle", "subject", "checks"}
    assert all(t >= 0 for t in seen[0].stages.values())


def test_a_subject_that_cannot_load_is_a_start_error(tmp_path):
    broken = tmp_path / "broken_subject.py"
    broken.write_text("raise ImportError('planted import failure')\n")
    runner = IsolatedRunner(str(broken), "broken_subject", settings=FAST)
    with pytest.raises(WorkerStartError, match="planted import failure"):
        runner.check(GOOD)
    runner.close()


@pytest.mark.parametrize("name", ["gpu_oob_cute", "gpu_oob_torch", "gpu_hang"])
def test_gpu_faulty_subjects_load_everywhere(name):
    (variant,) = resolve_subject(f"{FAULTY}/{name}.py")
    assert variant.device == "cuda"
    from kernel.device import cuda_capability

    if cuda_capability() is None:
        assert "needs a CUDA device" in variant.skip_reason


@pytest.mark.compile
def test_gpu_oob_kernel_compiles_for_sm90():
    env = dict(os.environ, CUTE_DSL_ARCH="sm_90a")
    done = subprocess.run([sys.executable, "-m", "properties.faulty_subjects.gpu_oob_cute", "--compile"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "compiled the out-of-bounds store for sm_90a" in done.stdout
