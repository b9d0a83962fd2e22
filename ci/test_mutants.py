"""The mutant catalog stays applicable, and the property suite catches every CPU mutant.

* fast (every CI run): each mutant's original text occurs exactly once in its target file, so
  a code change that moves or rewrites a mutated line fails here instead of silently turning
  the mutant into a no-op; the catalog is well formed;
* slow (``-m slow``, about 1 min on 2 cores; in a whole run it starts at collection and goes on
  beside the other tests, :class:`CpuMutantRun`): ``ci.mutation_runner`` applies every CPU mutant
  (model, plan, host, hopper-static, blackwell-static, harness) to a copy of the repository and
  runs its selection there, after checking the unmutated selections pass (each test once per
  option set: ``ci.mutation_runner.cpu_baselines``); every mutant must be caught and the working
  tree must be left as it was.
"""

from __future__ import annotations

import hashlib
import os
import shlex
from pathlib import Path

import pytest

from ci import mutation_runner
from ci.mutants import CPU_SUBJECTS, EQUIVALENT, MODEL_PROPERTY, MUTANTS, SUBJECTS

ROOT = Path(__file__).resolve().parents[1]
REQUIRED_KINDS = (
    "residue", "scale-factor index map", "stale pointer table", "group order", "last K tile",
    "accumulat", "stage index", "barrier", "upper", "prefix sum", "bf16", "per 32",
)


def test_catalog_is_well_formed():
    names = [m.name for m in MUTANTS]
    assert len(names) == len(set(names)), "duplicate mutant names"
    assert len(MUTANTS) >= 12
    for m in MUTANTS:
        assert m.subject in SUBJECTS, m
        assert m.original != m.replacement, m.name
        assert m.select, m.name
        for arg in mutation_runner.split_selection(m.select)[1]:
            assert (ROOT / arg.split("::")[0]).is_file(), f"{m.name}: selection {arg} does not exist"
    kinds = " ".join(m.kind for m in MUTANTS)
    missing = [k for k in REQUIRED_KINDS if k not in kinds]
    assert not missing, f"no mutant of these kinds: {missing}"
    assert {m.subject for m in MUTANTS} == set(SUBJECTS)
    assert set(EQUIVALENT) <= set(names), "an equivalence is recorded for a mutant not in the catalog"

# the harness checks whose planted bugs must be caught on the CPU (ci/mutants.py, harness section)
HARNESS_KINDS = ("bound loosened", "determinism check", "validation rule dropped", "plan corner",
                 "canary check skipped")


def test_the_harness_mutants_cover_each_harness_check():
    harness = [m for m in MUTANTS if m.subject == "harness"]
    kinds = " ".join(m.kind for m in harness)
    missing = [k for k in HARNESS_KINDS if k not in kinds]
    assert not missing, f"no harness mutant of these kinds: {missing}"
    assert "harness" in CPU_SUBJECTS and not any(m.needs_gpu for m in harness)


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_original_text_occurs_exactly_once(mutant):
    path = ROOT / mutant.target
    assert path.is_file(), f"{mutant.name}: target {mutant.target} does not exist"
    count = path.read_text().count(mutant.original)
    assert count == 1, (
        f"{mutant.name}: the original text occurs {count} times in {mutant.target}; the code changed: "
        "update the mutant in ci/mutants.py (same bug, current text)"
    )


def _digest(paths):
    return {p: hashlib.sha256((ROOT / p).read_bytes()).hexdigest() for p in paths}


def test_each_cpu_selection_runs_unmutated_once():
    """``--baseline`` for the CPU subjects: one unmutated run per subject and option set, of the
    union of its mutants' selections; no test path runs twice with the same options, and every
    mutant's selection is backed by one of those runs."""
    mutants = mutation_runner.select_mutants(["cpu"], [])
    bases = mutation_runner.cpu_baselines(mutants)
    unbacked = [m.name for m in mutants if not any(mutation_runner.backs(b, m) for b in bases)]
    assert not unbacked, unbacked
    runs = [(opts, path) for b in bases for opts, paths in [mutation_runner.split_selection(b.select)] for path in paths]
    assert len(runs) == len(set(runs))
    assert sum(path == MODEL_PROPERTY[0] for _, path in runs) == 1


class CpuMutantRun:
    """The CPU mutants and their unmutated baselines (``mutation_runner.run_all``) in a background
    thread. The conftest starts it as soon as collection selects
    :func:`test_every_cpu_mutant_is_caught`, one fewer job than cores (the tests before it use
    the other one), so its runs go on beside the rest of the suite; the test waits for it and
    judges it. Runs not started by the end of the pytest process are not started."""

    def __init__(self, jobs: int):
        import threading

        self.mutants = mutation_runner.select_mutants(["cpu"], [])
        self.before = _digest(sorted({m.target for m in MUTANTS}))
        self.stop = threading.Event()
        self.results: list | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(jobs,), name="cpu-mutant-run", daemon=True)
        self.thread.start()

    def _run(self, jobs: int) -> None:
        try:
            self.results = mutation_runner.run_all(self.mutants, jobs=jobs, baseline=True, carry=[], timeout=1200,
                                                   log=lambda msg: None, stop=self.stop)
        except BaseException as e:  # noqa: BLE001 - re-raised by the test
            self.error = e

    def wait(self) -> list:
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.results

    def close(self, timeout: float = 120) -> None:
        self.stop.set()
        self.thread.join(timeout)


_RUN: list[CpuMutantRun] = []


def start_cpu_mutant_run(jobs: int | None = None) -> CpuMutantRun:
    """The one :class:`CpuMutantRun` of this process, started now if it is not running yet."""
    if not _RUN:
        _RUN.append(CpuMutantRun(jobs if jobs is not None else os.cpu_count() or 1))
    return _RUN[0]


@pytest.mark.slow
def test_every_cpu_mutant_is_caught():
    run = start_cpu_mutant_run()
    assert {m.subject for m in run.mutants} == set(CPU_SUBJECTS)
    results = run.wait()
    assert _digest(sorted(run.before)) == run.before, "the runner modified the working tree"
    table = mutation_runner.markdown(results)
    baselines = [r for r in results if r.name.startswith("(baseline")]
    assert all(r.verdict == "passed" for r in baselines), f"an unmutated selection fails:\n{table}"
    survivors = [r for r in results if not r.name.startswith("(baseline") and r.verdict != "caught"]
    assert not survivors, "mutants not caught:\n" + table + "".join(
        f"\n\n{r.name}: {r.verdict} {r.detail}\n  {r.command}\n{r.output_tail[-1500:]}" for r in survivors
    )


def test_gpu_mutants_are_skipped_with_a_reason_without_a_gpu():
    if mutation_runner.gpu_reason() is None:
        pytest.skip("an sm_90 GPU is present: the Hopper mutants run here")
    hopper = [m for m in MUTANTS if m.subject == "hopper"]
    results = mutation_runner.run_all(hopper, jobs=1, baseline=False, carry=[], timeout=10, log=lambda msg: None)
    # concurrency mutants recorded as equivalent (unchanged cubin) are not run at all
    expected = [("equivalent" if m.variant and m.equivalent_because else "skipped")
                for m in hopper for _ in mutation_runner.modes_of(m)]
    assert [r.verdict for r in results] == expected
    assert all("sm_90" in r.detail for r in results if r.verdict == "skipped")
    assert all(r.detail.startswith("not run: ") for r in results if r.verdict == "equivalent")
    cmd, env = mutation_runner.pytest_command(hopper[0])
    assert "--subject=hopper" in cmd and "-x" in cmd and "no:cacheprovider" in shlex.join(cmd)


def test_docs_mutants_md_is_the_generated_catalog():
    """docs/mutants.md is ``python -m ci.mutants --markdown``: regenerate it when the catalog changes."""
    from pathlib import Path

    from ci.mutants import DOC_PATH, MUTANTS, markdown

    text = markdown()
    assert Path(DOC_PATH).read_text() == text
    assert all(f"| `{m.name}` |" in text for m in MUTANTS)
