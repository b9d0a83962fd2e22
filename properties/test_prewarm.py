"""Compile ahead (properties.prewarm, the worker's ``warm`` message): a warmed worker's first example
of a warmed group count starts without compiling; an example that arrives while the worker warms
waits for at most the compile in progress; the plugin warms the run's variants in order, never
more workers than the runner keeps alive; the group counts cover the draws and the corners."""

from __future__ import annotations

import time
from types import SimpleNamespace

from properties.faulty_subjects.slow_compile_cpu import COMPILE_S, HANG_COMPILE_GROUPS
from properties.isolation import IsolatedRunner, IsolationSettings
from properties.prewarm import Prewarmer, variants_in_run_order, warm_group_counts
from properties.strategies import Example, corner_examples
from properties.subjects import resolve_subject

SLOW = "properties/faulty_subjects/slow_compile_cpu.py"
SETTINGS = IsolationSettings(mode="always", timeout_s=20.0, compile_timeout_s=20.0, startup_timeout_s=60.0)
ONE_GROUP = Example(((8, 16, 64, 1),), 3, "uniform", "separate")  # even N: slow_compile_cpu answers


def test_a_warmed_group_count_needs_no_compile_at_its_first_example():
    with IsolatedRunner(SLOW, "slow_compile_cpu", settings=SETTINGS) as runner:
        assert runner.warm([1])
        time.sleep(COMPILE_S + 1.5)  # the worker compiled 1 group meanwhile
        outcome = runner.check(ONE_GROUP, rerun=False)
    assert outcome.kind == "pass", outcome.report()
    assert outcome.warm and outcome.compile_s < COMPILE_S / 2, outcome.compile_s


def test_without_warming_the_first_example_compiles():
    with IsolatedRunner(SLOW, "slow_compile_cpu", settings=SETTINGS) as runner:
        outcome = runner.check(ONE_GROUP, rerun=False)
    assert outcome.kind == "pass" and not outcome.warm and outcome.compile_s >= COMPILE_S, outcome.report()


def test_an_example_stops_the_warming_after_the_compile_in_progress():
    with IsolatedRunner(SLOW, "slow_compile_cpu", settings=SETTINGS) as runner:
        # the example (1 group) arrives while 2 groups compile; 3 groups would never finish
        # compiling (HANG_COMPILE_GROUPS), so a worker that went on warming would never answer
        assert runner.warm([2, HANG_COMPILE_GROUPS])
        outcome = runner.check(ONE_GROUP, rerun=False)
    assert outcome.kind == "pass", outcome.report()
    # the compile of 2 groups in progress, then the example's own
    assert COMPILE_S <= outcome.compile_s < 2 * COMPILE_S + 1.0, outcome.compile_s
    assert not outcome.warm


def test_group_counts_cover_the_draws_then_the_corners():
    for variant in resolve_subject("hopper"):
        counts = warm_group_counts(variant)
        assert counts[:variant.limits.max_groups] == tuple(range(1, variant.limits.max_groups + 1))
        corners = {len(e.sizes) for e in corner_examples(variant.constraints, planner=variant.planner).values()}
        assert corners <= set(counts), (variant.label, sorted(corners - set(counts)))
        assert len(set(counts)) == len(counts) and max(counts) <= variant.constraints.max_groups


class _FakeRunner:
    """Counts live workers the way IsolatingRunner does: one per warmed or released variant."""

    def __init__(self, max_live_workers=3):
        self.max_live_workers = max_live_workers
        self.live: list[str] = []
        self.warmed: list[tuple[str, tuple]] = []

    def should_isolate(self, variant):
        return variant.device == "cuda"

    def live_workers(self):
        return len(self.live)

    def prewarm(self, variant, counts):
        self.live.append(variant.test_id)
        self.warmed.append((variant.test_id, counts))
        return True

    def release(self, test_id):
        self.live.remove(test_id)


def _variant(name, device="cuda", max_groups=2):
    from kernel.validation import KernelConstraints
    from properties.subjects import SizeLimits

    return SimpleNamespace(test_id=name, device=device, skip_reason=None,
                           limits=SizeLimits(max_groups=max_groups, max_m=64, max_n=64, max_k_blocks=2),
                           constraints=KernelConstraints(k_granularity=64), planner=None)


def test_the_plugin_warms_in_run_order_within_the_live_worker_limit(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # off inside xdist workers
    monkeypatch.delenv("NVFP4_PREWARM", raising=False)
    a, b, c, cpu = _variant("a"), _variant("b"), _variant("c"), _variant("m", device="cpu")
    items = [SimpleNamespace(v=v) for v in (None, a, a, cpu, b, a, c, b)]
    assert [v.test_id for v in variants_in_run_order(items, lambda i: i.v)] == ["a", "m", "b", "c"]
    runner = _FakeRunner(max_live_workers=3)
    plugin = Prewarmer(runner, lambda i: i.v)
    session = SimpleNamespace(items=items, config=SimpleNamespace(option=SimpleNamespace(collectonly=False)))
    plugin.pytest_collection_finish(session)
    assert plugin.warmed == ["a", "b"]  # max_live_workers - 1 alive; the CPU variant runs in process
    plugin.pytest_runtest_teardown(None)
    assert plugin.warmed == ["a", "b"]  # nobody released yet
    runner.release("a")
    plugin.pytest_runtest_teardown(None)
    assert plugin.warmed == ["a", "b", "c"]
    assert runner.warmed[0] == ("a", warm_group_counts(a))
    monkeypatch.setenv("NVFP4_PREWARM", "0")
    off = Prewarmer(_FakeRunner(), lambda i: i.v)
    off.pytest_collection_finish(session)
    assert off.warmed == []
