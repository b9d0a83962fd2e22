"""Compile ahead: the isolation workers of the variants a run will test next compile their
kernels while the current variant's examples run.

A GPU variant's first example of each group count waits for a CuTe DSL compile in its worker (a
few seconds each, on the host's CPU; the GPU sits idle). A run tests its variants one after
another, so without help those compiles add up in series. This plugin starts the workers of the
first variants of the run at the end of collection and sends each the group counts its tests will
need (:func:`warm_group_counts`); each worker compiles them in the background, on its own core,
until its first example arrives (properties.isolation: the ``warm`` message). When a variant's
worker is released, the next variant in the run order is warmed, so at most
``max_live_workers - 1`` workers are alive at once.

Nothing changes for what is checked: the same examples run in the same workers; a kernel compiled
ahead is the one the example would have compiled (the same compile cache). Variants that run in
this process (CPU subjects, built-in wrong subjects) are not warmed. ``NVFP4_PREWARM=0`` turns it
off; it is off inside pytest-xdist workers (each would warm variants another worker runs).
"""

from __future__ import annotations

import os

import pytest

from properties.strategies import corner_examples

ENV = "NVFP4_PREWARM"


def warm_group_counts(variant) -> tuple[int, ...]:
    """The group counts the property suite compiles ``variant`` for, in the order they are likely
    needed: every count the random draws use (1..limits.max_groups), then the corners' counts."""
    drawn = list(range(1, variant.limits.max_groups + 1))
    try:
        corners = corner_examples(variant.constraints, planner=variant.planner)
    except Exception:  # noqa: BLE001 - a corner that cannot be built is reported by its own test
        corners = {}
    extra = sorted({len(e.sizes) for e in corners.values()} - set(drawn))
    limit = variant.constraints.max_groups
    return tuple(c for c in drawn + extra if 1 <= c <= limit)


def variants_in_run_order(items, variant_of) -> list:
    """The distinct subject variants of ``items`` (by test id), in the order their first test runs."""
    seen: dict[str, object] = {}
    for item in items:
        variant = variant_of(item)
        if variant is not None and variant.test_id not in seen:
            seen[variant.test_id] = variant
    return list(seen.values())


def enabled() -> bool:
    return os.environ.get(ENV, "1") != "0" and not os.environ.get("PYTEST_XDIST_WORKER")


class Prewarmer:
    """The pytest plugin (registered by the root conftest beside the progress plugin)."""

    def __init__(self, runner, variant_of):
        self.runner = runner
        self.variant_of = variant_of
        self.pending: list = []
        self.warmed: list[str] = []  # test ids, in the order they were sent to warm

    def _limit(self) -> int:
        return max(1, getattr(self.runner, "max_live_workers", 2) - 1)

    def fill(self) -> None:
        """Warm the next pending variants while fewer than the limit of workers are alive."""
        live = getattr(self.runner, "live_workers", None)
        while self.pending and (live() if live else 0) < self._limit():
            variant = self.pending.pop(0)
            if self.runner.prewarm(variant, warm_group_counts(variant)):
                self.warmed.append(variant.test_id)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session):
        if not enabled() or not hasattr(self.runner, "prewarm") or session.config.option.collectonly:
            return
        should = getattr(self.runner, "should_isolate", lambda v: False)
        self.pending = [v for v in variants_in_run_order(session.items, self.variant_of)
                        if not v.skip_reason and should(v)]
        self.fill()

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_teardown(self, item):
        if self.pending:
            self.fill()
