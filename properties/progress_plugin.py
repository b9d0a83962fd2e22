"""Pytest plugin: progress and timing of the checked examples, per subject variant.

Registered by the conftest with the pytest session's :class:`properties.checks.ExampleRunner`, it

* orders the tests of each module so that every variant's tests run one after another, and
  closes a variant's worker after its last test: a worker (its CUDA context, its compiled
  kernels) lives through all tests of its variant, so each (variant, group count) is compiled
  once per run, also when ``--variant=all`` runs more variants than live workers;
* prints a progress line per variant every ``NVFP4_PROGRESS_S`` seconds (default 30) while it
  runs and when its tests are done: examples, examples/s, failures so far;
* skips, with the reason shown, the remaining tests of a variant that has used up
  ``NVFP4_VARIANT_BUDGET_S`` seconds (unset: no budget);
* prints last a table per variant: examples, examples/s after compiles (examples whose
  (variant, group count) had run before in the same process), and the mean milliseconds per
  stage of those examples (inputs, transfers, oracle, subject, checks, worker round trip).
"""

from __future__ import annotations

import os
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


def _variant_of(item):
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("subject_variant") if callspec is not None else None


class ProgressPlugin:
    def __init__(self, runner: ExampleRunner):
        self.runner = runner
        self.tallies: dict[str, VariantTally] = {}
        self.interval_s = float(os.environ.get("NVFP4_PROGRESS_S", "30"))
        budget = os.environ.get("NVFP4_VARIANT_BUDGET_S")
        self.budget_s = float(budget) if budget else None
        self._last_item_of: dict[str, str] = {}  # test id of a variant -> nodeid of its last test
        self._current: VariantTally | None = None
        self._test_start = 0.0
        self._reporter = None
        runner.observers.append(self._observe)

    # ---- ordering and worker lifetime
    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session, config, items):
        first_seen: dict[tuple, int] = {}

        def key(indexed):
            index, item = indexed
            variant = _variant_of(item)
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
            variant = _variant_of(item)
            if variant is not None:
                self._last_item_of[variant.test_id] = item.nodeid

    def pytest_runtest_setup(self, item):
        variant = _variant_of(item)
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
        variant = _variant_of(item)
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
        now = time.perf_counter()
        if now - tally.last_line >= self.interval_s:
            tally.last_line = now
            live = tally.seconds + (now - self._test_start if self._test_start else 0.0)
            snapshot = VariantTally(**{**tally.__dict__, "seconds": live})
            self._write(snapshot.line("running"))

    def _write(self, line: str) -> None:
        if self._reporter is None:
            self._reporter = self._config.pluginmanager.get_plugin("terminalreporter") if self._config else None
        if self._reporter is not None:
            self._reporter.write_line(line)

    _config = None

    def pytest_configure(self, config):
        self._config = config

    def pytest_unconfigure(self, config):
        self.runner.close()

    # ---- the table
    def pytest_terminal_summary(self, terminalreporter):
        rows = [t for t in self.tallies.values() if t.examples]
        if not rows:
            return
        terminalreporter.section("nvfp4 examples per variant (stages: mean ms per example after compiles)")
        for line in stage_table(rows):
            terminalreporter.write_line(line)


def stage_table(tallies: list[VariantTally]) -> list[str]:
    """One row per variant: examples, failures, rates, mean ms per stage of its warm examples."""
    stages = list(STAGES) + [ROUND_TRIP]
    head = f"{'variant':44s} {'examples':>8s} {'failed':>6s} {'ex/s':>6s} {'warm':>5s} {'warm ex/s':>9s} " + \
        " ".join(f"{s:>9s}" for s in stages)
    lines = [head]
    for t in tallies:
        per = [1e3 * t.warm_stages.get(s, 0.0) / t.warm_examples if t.warm_examples else 0.0 for s in stages]
        lines.append(f"{t.test_id[:44]:44s} {t.examples:8d} {t.failures:6d} {t.rate():6.1f} {t.warm_examples:5d} "
                     f"{t.warm_rate():9.1f} " + " ".join(f"{ms:9.1f}" for ms in per))
    return lines
