"""The concurrency / memory-safety mutants (ci.mutants.SYNC_MUTANTS) and their three verdicts.

CPU only: the catalog's shape, the commands of each verdict, the three-verdict table and its
summary; and (``-m slow``, about 30 s) that every equivalence recorded for them is still an
unchanged cubin.
"""

from __future__ import annotations

import pytest

from ci import mutation_runner as mr
from ci.mutants import EQUIVALENT, PERTURBED_PROPERTY, SYNC_MUTANTS, SYNC_VARIANTS


def test_at_least_ten_sync_mutants_on_each_of_the_two_variants():
    per_variant = {v: [m for m in SYNC_MUTANTS if m.variant == v] for v in SYNC_VARIANTS.values()}
    assert all(len(ms) >= 10 for ms in per_variant.values()), {v: len(ms) for v, ms in per_variant.items()}
    assert all(m.subject == "hopper" and m.needs_gpu for m in SYNC_MUTANTS)
    kinds = " ".join(m.kind for m in SYNC_MUTANTS)
    for word in ("fence", "barrier", "phase", "ring wrap", "tail", "accumulator", "tensor-map", "release", "arrive count"):
        assert word in kinds, f"no sync mutant of kind {word!r}"


def test_each_verdict_runs_its_own_command():
    m = SYNC_MUTANTS[0]
    plain, _ = mr.pytest_command(m, "plain")
    perturbed, _ = mr.pytest_command(m, "perturbed")
    sanitizer, env = mr.pytest_command(m, "sanitizer")
    assert "--perturb=off" in plain and f"--variant={m.variant}" in plain
    assert PERTURBED_PROPERTY in perturbed and "--perturb=only" in perturbed and f"--variant={m.variant}" in perturbed
    assert sanitizer[1:3] == ["-m", "ci.sanitize"] and f"--variant={m.variant}" in sanitizer
    assert {f"--tool={t}" for t in mr.SANITIZER_TOOLS} <= set(sanitizer) and "--require" in sanitizer
    assert env["CUTE_DSL_ARCH"] == "sm_90a"
    assert mr.modes_of(m) == mr.MODES and mr.modes_of(mr.MUTANTS[0]) == ("plain",)


def _r(name, mode, verdict):
    return mr.Result(name, "hopper", "k", verdict, mode=mode)


def test_summary_counts_per_verdict_and_what_only_perturbation_caught():
    a, b, c = (m.name for m in SYNC_MUTANTS[:3])
    results = [
        _r(a, "plain", "caught"), _r(a, "perturbed", "caught"), _r(a, "sanitizer", "SURVIVED"),
        _r(b, "plain", "SURVIVED"), _r(b, "perturbed", "caught"), _r(b, "sanitizer", "SURVIVED"),
        _r(c, "plain", "SURVIVED"), _r(c, "perturbed", "SURVIVED"), _r(c, "sanitizer", "caught"),
    ]
    s = mr.sync_summary(results)
    assert (s["mutants"], s["plain"], s["perturbed"], s["sanitizer"], s["any"]) == (3, 1, 2, 1, 3)
    assert s["only_perturbed"] == [b] and s["plain_or_sanitizer"] == 2
    assert mr.sync_summary(results, {b})["mutants"] == 2
    table = mr.sync_markdown(results)
    assert table.count("\n") == 1 + 3 and "caught" in table.splitlines()[3]


def test_sanitizer_verdicts_from_exit_status():
    out = "memcheck  h90  edges  PASS  0  ERROR SUMMARY 0, 3 s\n3 of 4 sanitized processes clean\n"
    assert mr._sanitizer_verdict(_r("x", "sanitizer", ""), 1, out, True).verdict == "caught"
    assert mr._sanitizer_verdict(_r("x", "sanitizer", ""), 0, out, True).verdict == "SURVIVED"
    assert mr._sanitizer_verdict(_r("x", "sanitizer", ""), 2, "SKIP ci.sanitize: no device", True).verdict == "skipped"
    assert mr._sanitizer_verdict(_r("x", "sanitizer", ""), 0, out, False).verdict == "passed"


@pytest.mark.slow
@pytest.mark.compile
def test_recorded_equivalences_are_unchanged_cubins():
    """An "equivalent" verdict needs its proof to stay true: the mutated variant compiles to the
    same SASS (about 30 s: one variant, mutated and not). The other concurrency mutants change
    their variant's SASS (python -m ci.mutation_runner --section=sync --sass-equivalence,
    recorded in properties/MUTANTS.md)."""
    equivalent = [m for m in SYNC_MUTANTS if m.name in EQUIVALENT]
    assert equivalent
    eq = mr.sass_equivalence(equivalent, jobs=2, log=lambda msg: None)
    assert all(eq[m.name] == "unchanged" for m in equivalent), eq
