"""Pytest plugin: progress and timing of the checked examples, per subject variant.

Registered by the conftest with the pytest session's :class:`properties.checks.ExampleRunner`, it

* orders the tests of each module so that every variant's tests run one after another, and
  closes a variant's worker after its last test: a worker (its CUDA context, its compiled
  kernels) lives through all tests of its variant, so each (variant, group count) is compiled
  once per run, also when ``--variant=all`` runs more variants than live workers;
* prints a progress line per variant every ``NVFP4_PROGRESS_S`` seconds (default 30) while it
  runs and when its tests are done: examples, examples/s, failures so far;
* names the example that runs now once it has been in one phase (compile, run: see
  ``properties.isolation``) for ``NVFP4_SLOW_EXAMPLE_S`` seconds (default 5), and again every
  ``NVFP4_PROGRESS_S`` seconds while it stays there: a user watching a run sees which example is
  stuck where (a quick example prints nothing); a hang or a fault prints its verdict and its
  reproduce line the moment the runner reports it, before Hypothesis ends the test;
* skips, with the reason shown, the remaining tests of a variant that has used up
  ``NVFP4_VARIANT_BUDGET_S`` seconds (unset: no budget);
* prints last a table per variant: examples, examples/s after compiles (examples whose
  (variant, group count) had run before in the same process), and the mean milliseconds per
  stage of those examples (inputs, transfers, oracle, subject, checks, worker round trip).
  Under pytest-xdist (``properties.xdist_plugin``) each worker hands its tallies to the
  controller, which prints the one table, with a worker column (``gw0 (GPU 0)``).

pytest captures file descriptor 1 while a test runs, so what the terminal reporter writes then
shows only with a failure; these lines go to a duplicate of the terminal's descriptor taken at
configure time (:class:`LiveLines`) and are seen as they happen. An xdist worker's descriptor 1
is not the terminal, so a worker writes these lines to its standard error (the terminal's), each
led by the worker's id.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass, field

import pytest

from properties.checks import STAGES, ExampleReport, ExampleRunner

ROUND_TRIP = "round_trip"


@dataclass
class VariantTally:
    test_id: str
    started: float = field(default_factory=time.perf_counter)
    seconds: float = 0.0  # time inside its tests
    examples: int = 0
    failures: int = 0  # failed examples (a shrinking Hypothesis test counts each failing replay)
    failed_tests: int = 0
    warm_examples: int = 0
    warm_seconds: float = 0.0
    warm_stages: dict = field(default_factory=dict)
    last_line: float = field(default_factory=time.perf_counter)

    def add(self, report: ExampleReport) -> None:
        self.examples += 1
        self.failures += report.outcome != "pass"
        if report.warm and report.outcome == "pass":
            self.warm_examples += 1
            self.warm_seconds += report.seconds
            for stage, seconds in report.stages.items():
                self.warm_stages[stage] = self.warm_stages.get(stage, 0.0) + seconds

    def rate(self) -> float:
        return self.examples / self.seconds if self.seconds else 0.0

    def warm_rate(self) -> float:
        return self.warm_examples / self.warm_seconds if self.warm_seconds else 0.0

    def line(self, state: str) -> str:
        return (f"[nvfp4 progress] {self.test_id} {state}: {self.examples} examples in {self.seconds:.1f} s "
                f"({self.rate():.1f}/s; {self.warm_rate():.1f}/s after compiles), {self.failures} failed examples, "
                f"{self.failed_tests} failed tests")


def slow_example_line(running, now: float, test_name: str = "") -> str:
    """What the progress output says about an example that runs long: variant, test, how long,
    which phase, and the example (group sizes, seed, distribution, layout)."""
    ex = running.example
    where = f"{running.phase} phase {now - running.phase_started:.0f} s"
    if running.compile_s is not None:
        where += f", after a {running.compile_s:.1f} s compile phase"
    return (f"[nvfp4 progress] {running.variant.test_id}{' ' + test_name if test_name else ''}: example running "
            f"{now - running.started:.0f} s ({where}): {len(ex.sizes)} groups {[list(s) for s in ex.sizes]} "
            f"seed={ex.seed} {ex.distribution} {ex.layout}")


class LiveLines:
    """Whole lines to the terminal, also while a test runs (module docstring); from any thread.
    ``fd``: write to a duplicate of this descriptor, each line after ``prefix``, without following
    the terminal reporter's column (an xdist worker: its standard error); default standard output."""

    def __init__(self, config, fd: int | None = None, prefix: str = ""):
        self._config = config
        self._lock = threading.Lock()
        self._broke_at: int | None = None  # the reporter's column where a line of ours last began
        self._prefix = prefix
        self._follow_reporter = fd is None
        try:
            self._fd = os.dup(sys.stdout.fileno() if fd is None else fd)
        except (AttributeError, OSError, ValueError):  # no real stdout (pytest run in process)
            self._fd = None

    def write(self, line: str) -> None:
        reporter = self._config.pluginmanager.get_plugin("terminalreporter")
        line = self._prefix + line
        with self._lock:
            if self._fd is None:
                if reporter is not None:
                    reporter.write_line(line)
                return
            newline = False
            if self._follow_reporter:
                # after a row of test results (the reporter's line not ended): begin on a line of our own
                column = getattr(getattr(reporter, "_tw", None), "width_of_current_line", 0) or 0
                newline = bool(column) and column != self._broke_at
                self._broke_at = column or None
            os.write(self._fd, (("\n" if newline else "") + line + "\n").encode(errors="replace"))

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def variant_of(item):
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("subject_variant") if callspec is not None else None


class ProgressPlugin:
    def __init__(self, runner: ExampleRunner):
        self.runner = runner
        self.tallies: dict[str, VariantTally] = {}
        self.interval_s = float(os.environ.get("NVFP4_PROGRESS_S", "30"))
        budget = os.environ.get("NVFP4_VARIANT_BUDGET_S")
        self.budget_s = float(budget) if budget else None
        self.slow_s = float(os.environ.get("NVFP4_SLOW_EXAMPLE_S", "5"))
        self.tick_s = min(1.0, self.slow_s / 2) if self.slow_s > 0 else 1.0
        self._last_item_of: dict[str, str] = {}  # test id of a variant -> nodeid of its last test
        self._current: VariantTally | None = None
        self._test_name = ""
        self._test_start = 0.0
        self._lines: LiveLines | None = None
        self._worker_id: str | None = None  # an xdist worker's id (gw0, ...); None in the controller or alone
        self.worker_tallies: list[tuple[str, VariantTally]] = []  # the controller's: (worker label, tally)
        self._announced: tuple[tuple, float] | None = None  # (example and phase, when last named)
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None
        runner.observers.append(self._observe)

    # ---- ordering and worker lifetime
    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session, config, items):
        first_seen: dict[tuple, int] = {}

        def key(indexed):
            index, item = indexed
            variant = variant_of(item)
            module = item.nodeid.split("::")[0]
            if variant is None:
                return (module, -1, index)
            order = first_seen.setdefault((module, variant.test_id), index)
            return (module, order, index)

        modules = {}
        for i, item in enumerate(items):
            modules.setdefault(item.nodeid.split("::")[0], i)
        ordered = sorted(enumerate(items), key=lambda pair: (modules[pair[1].nodeid.split("::")[0]], *key(pair)[1:]))
        items[:] = [item for _, item in ordered]
        for item in items:
            variant = variant_of(item)
            if variant is not None:
                self._last_item_of[variant.test_id] = item.nodeid

    def pytest_runtest_setup(self, item):
        self._test_name = getattr(item, "originalname", item.name)  # the variant is named apart
        variant = variant_of(item)
        if variant is None:
            self._current = None
            return
        tally = self.tallies.setdefault(variant.test_id, VariantTally(variant.test_id))
        self._current = tally
        if self.budget_s is not None and tally.seconds >= self.budget_s:
            pytest.skip(f"{variant.test_id} used its time budget (NVFP4_VARIANT_BUDGET_S={self.budget_s:g} s)")
        self._test_start = time.perf_counter()

    def pytest_runtest_logreport(self, report):
        if report.when == "call" and report.failed and self._current is not None:
            self._current.failed_tests += 1

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item):
        yield
        variant = variant_of(item)
        if variant is None or self._current is None:
            return
        tally = self._current
        if self._test_start:
            tally.seconds += time.perf_counter() - self._test_start
            self._test_start = 0.0
        if self._last_item_of.get(variant.test_id) == item.nodeid:
            release = getattr(self.runner, "release", None)
            if release is not None:
                release(variant)
            if tally.examples:
                self._write(tally.line("done"))

    # ---- progress
    def _observe(self, report: ExampleReport) -> None:
        tally = self.tallies.setdefault(report.variant.test_id, VariantTally(report.variant.test_id))
        tally.add(report)
        if report.outcome in ("timeout", "fault"):
            # the verdict now: Hypothesis may take a while (replay, shrinking) before the test fails
            outcome = getattr(self.runner, "last_outcome", None)
            if outcome is not None and outcome.example == report.example:
                self._write(f"[nvfp4 progress] {outcome.headline()}")
                self._write(f"[nvfp4 progress] reproduce: {outcome.repro}")
        now = time.perf_counter()
        if now - tally.last_line >= self.interval_s:
            tally.last_line = now
            live = tally.seconds + (now - self._test_start if self._test_start else 0.0)
            snapshot = VariantTally(**{**tally.__dict__, "seconds": live})
            self._write(snapshot.line("running"))

    def announce_slow_example(self, now: float | None = None) -> str | None:
        """Name the running example when it has been in its phase for ``slow_s`` seconds, then
        every ``interval_s`` while it stays there; returns the line written, if any."""
        running = getattr(self.runner, "running", None)
        current = running() if running is not None else None
        if current is None:
            return None
        now = time.monotonic() if now is None else now
        if now - current.phase_started < self.slow_s:
            return None
        key = (current.variant.test_id, current.example, current.started, current.phase)
        if self._announced is not None and self._announced[0] == key and now - self._announced[1] < self.interval_s:
            return None
        self._announced = (key, now)
        line = slow_example_line(current, now, self._test_name)
        self._write(line)
        return line

    def _watch(self) -> None:
        while not self._stop.wait(self.tick_s):
            try:
                self.announce_slow_example()
            except Exception:  # noqa: BLE001 - progress output never breaks a run
                pass

    def _write(self, line: str) -> None:
        if self._lines is not None:
            self._lines.write(line)

    def pytest_configure(self, config):
        workerinput = getattr(config, "workerinput", None)
        if workerinput is not None:
            self._worker_id = str(workerinput.get("workerid", "gw?"))
            self._lines = LiveLines(config, fd=2, prefix=f"[{self._worker_id}] ")
        else:
            self._lines = LiveLines(config)
        if self.slow_s > 0 and hasattr(self.runner, "running"):
            self._watcher = threading.Thread(target=self._watch, name="nvfp4-progress", daemon=True)
            self._watcher.start()

    def pytest_unconfigure(self, config):
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join(5.0)
        self.runner.close()
        if self._lines is not None:
            self._lines.close()

    # ---- the table
    def tally_records(self) -> list[dict]:
        """This process's tallies as plain data (what an xdist worker sends to the controller)."""
        keep = ("test_id", "seconds", "examples", "failures", "failed_tests", "warm_examples", "warm_seconds",
                "warm_stages")
        return [{k: getattr(t, k) for k in keep} for t in self.tallies.values() if t.examples]

    def add_worker_tallies(self, worker: str, records: list[dict]) -> None:
        """A worker's :meth:`tally_records`, shown in the controller's table under ``worker``."""
        for record in records:
            self.worker_tallies.append((worker, VariantTally(**{**record, "warm_stages": dict(record["warm_stages"])})))

    def pytest_terminal_summary(self, terminalreporter):
        if self._worker_id is not None:
            return  # the controller prints the table, with this worker's rows
        rows = [t for t in self.tallies.values() if t.examples]
        if not rows and not self.worker_tallies:
            return
        terminalreporter.section("nvfp4 examples per variant (stages: mean ms per example after compiles)")
        if self.worker_tallies:
            merged = sorted(self.worker_tallies, key=lambda pair: _worker_order(pair[0]))
            lines = stage_table([t for _, t in merged] + rows, workers=[w for w, _ in merged] + ["-"] * len(rows))
        else:
            lines = stage_table(rows)
        for line in lines:
            terminalreporter.write_line(line)


def _worker_order(label: str) -> tuple:
    """gw2 before gw10."""
    head = label.split(" ", 1)[0]
    digits = head.lstrip("gw")
    return (0, int(digits), label) if head.startswith("gw") and digits.isdigit() else (1, 0, label)


def stage_table(tallies: list[VariantTally], workers: list[str] | None = None) -> list[str]:
    """One row per variant: examples, failures, rates, mean ms per stage of its warm examples;
    with ``workers`` (one label per tally), a worker column after the variant."""
    stages = list(STAGES) + [ROUND_TRIP]
    width = max([len("worker"), *(len(w) for w in workers)]) if workers else 0
    worker_head = f" {'worker':{width}s}" if workers else ""
    head = f"{'variant':44s}{worker_head} {'examples':>8s} {'failed':>6s} {'ex/s':>6s} {'warm':>5s} {'warm ex/s':>9s} " + \
        " ".join(f"{s:>9s}" for s in stages)
    lines = [head]
    for i, t in enumerate(tallies):
        per = [1e3 * t.warm_stages.get(s, 0.0) / t.warm_examples if t.warm_examples else 0.0 for s in stages]
        worker = f" {workers[i]:{width}s}" if workers else ""
        lines.append(f"{t.test_id[:44]:44s}{worker} {t.examples:8d} {t.failures:6d} {t.rate():6.1f} {t.warm_examples:5d} "
                     f"{t.warm_rate():9.1f} " + " ".join(f"{ms:9.1f}" for ms in per))
    return lines
