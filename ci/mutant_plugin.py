"""pytest plugin for mutant runs (``-p ci.mutant_plugin``, loaded by ci.mutation_runner).

* keeps the loaded Hypothesis profile (``--hypothesis-profile=ci``: 50 derandomized examples)
  but drops the shrink phase: a mutant is caught by its first failing example, and shrinking it
  would only cost time (GPU compiles, on the H200);
* with ``NVFP4_MUTANT_MAX_EXAMPLES=N`` (``ci.mutation_runner --max-examples``), at most N examples
  per property instead of the profile's (a device budget; derandomized, so a smaller N runs a
  prefix-like subset of the same examples, not the same prefix guaranteed);
* with ``NVFP4_MUTANT_OBS=path``, appends one JSON line per Hypothesis test case (Hypothesis'
  observability callback): ``{"property", "status"}``, so the runner can say after how many
  examples a mutant was caught, for every property (not only those that call check_example);
  without Hypothesis' line coverage of each test case, which the record does not use.
"""

from __future__ import annotations

import json
import os

import pytest


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    from hypothesis import Phase, settings

    cap = os.environ.get("NVFP4_MUTANT_MAX_EXAMPLES")
    extra = {"max_examples": min(int(cap), settings.default.max_examples)} if cap else {}
    settings.register_profile(
        "mutant-run", parent=settings.default, phases=[p for p in settings.default.phases if p != Phase.shrink],
        **extra,
    )
    settings.load_profile("mutant-run")
    path = os.environ.get("NVFP4_MUTANT_OBS")
    if path:
        from hypothesis.internal import observability
        from hypothesis.internal.observability import add_observability_callback

        # the record needs the test case's status only: no line coverage (Hypothesis traces
        # every line of every test case for it, which on Python 3.11 makes the CPU model's
        # examples about 40 times slower)
        observability.OBSERVABILITY_COLLECT_COVERAGE = False

        def record(obs, *args):
            if getattr(obs, "type", None) != "test_case":
                return
            with open(path, "a") as f:
                f.write(json.dumps({"property": obs.property, "status": obs.status,
                                    "how": obs.how_generated}) + "\n")

        add_observability_callback(record, all_threads=True)
