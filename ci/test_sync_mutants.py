"""The concurrency / memory-safety mutants (ci.mutants.SYNC_MUTANTS) and their three verdicts.

CPU only: the catalog's shape, the commands of each verdict, the three-verdict table and its
summary; and (``-m slow``, about 15 s) that every equivalence recorded for them is still an
unchanged cubin.
"""

from __future__ import annotations

import pytest

from ci import mutation_runner as mr
from ci.mutants import EQUIVALENT, PERTURBED_PROPERTY, SYNC_MUTANTS, SYNC_VARIANTS


def test_at_least_ten_sync_mutants_on_each_whole_pipeline():
    """default, rs, prod, few and wide: ten or more each (their whole pipelines); w2: the edits of
    what only that build has (it shares the rest with rs)."""
    per_variant = {k: [m for m in SYNC_MUTANTS if m.variant == v] for k, v in SYNC_VARIANTS.items()}
    assert all(len(per_variant[k]) >= 10 for k in ("default", "rs", "prod", "few", "wide")), \
        {k: len(v) for k, v in per_variant.items()}
    assert len(per_variant["w2"]) >= 3
    from kernel.hopper import DECLARED_VARIANTS

    assert set(SYNC_VARIANTS.values()) <= {c.label for c in DECLARED_VARIANTS}
    assert all(m.subject == "hopper" and m.needs_gpu for m in SYNC_MUTANTS)
    kinds = " ".join(m.kind for m in SYNC_MUTANTS)
    for word in ("fence", "barrier", "phase", "ring wrap", "tail", "accumulator", "tensor-map", "release", "arrive count",
                 "divergent barrier (a hang)"):
        assert word in kinds, f"no sync mutant of kind {word!r}"


def test_the_prod_mutants_target_what_the_default_dispatch_runs():
    """The "prod" key is the variant the default dispatch runs on bench1-3 and wherever no clause
    of its rule holds: its mutants are the ones that judge the production phase 1, Y ring, balanced
    schedule and staged epilogue. A new default must move this key (and get its own run)."""
    from kernel.hopper.dispatch import DEFAULT_RULE

    prod = SYNC_VARIANTS["prod"]
    assert DEFAULT_RULE.fallback.label == prod
    assert DEFAULT_RULE.choose([(m, 4096, 7168) for m in (80, 176, 128, 72, 64, 248, 96, 160)], sms=132).label == prod
    names = {m.name for m in SYNC_MUTANTS if m.variant == prod}
    for bug in ("phase1_wait_one_short", "y_ring_empty_count_short", "staged_slots_no_proxy_fence",
                "epilogue_no_publish_barrier", "balanced_share_skips_a_light_tile"):
        assert f"hopper_sync_{bug}__prod" in names


def test_every_production_build_has_sync_mutants():
    """Every build the default dispatch may run (kernel.hopper PRODUCTION_VARIANTS, and whatever
    DEFAULT_RULE returns) is a SYNC_VARIANTS key's variant with concurrency mutants that change its
    SASS (none of them all recorded equivalent): a new production build fails here until the
    catalog targets it."""
    from kernel.hopper import PRODUCTION_VARIANTS
    from kernel.hopper.dispatch import DEFAULT_RULE

    builds = {c.label for c in PRODUCTION_VARIANTS} | {c.label for c in DEFAULT_RULE.configs()}
    assert builds <= set(SYNC_VARIANTS.values()), sorted(builds - set(SYNC_VARIANTS.values()))
    for label in builds:
        live = [m for m in SYNC_MUTANTS if m.variant == label and m.name not in EQUIVALENT]
        assert len(live) >= 3, (label, [m.name for m in live])


def test_the_few_tiles_and_wide_y_mutants_target_their_dispatch_builds():
    """"few", "beside240" and "beside" are the builds of the default dispatch's clauses before its
    last (64-row X tiles below half a round; the 240- and 256-row Y tiles for groups of thousands of
    rows), "wide" the 256-row build with phase 1 before the tiles, each with the mutants of the code
    it compiles: few the in-flight mainloop, the TMA producer and the staged epilogue; wide phase
    1's completion barrier, the Y ring, the staged epilogue and the idle CTA's early X stages;
    beside and beside240 the chunk flags, beside240 also the Y ring, the epilogue and the cut at
    its height."""
    from kernel.hopper import FEW_TILES_CONFIG, WIDE_BESIDE_240_CONFIG, WIDE_BESIDE_CONFIG, WIDE_Y_CONFIG

    assert (SYNC_VARIANTS["few"], SYNC_VARIANTS["wide"]) == (FEW_TILES_CONFIG.label, WIDE_Y_CONFIG.label)
    assert (SYNC_VARIANTS["beside"], SYNC_VARIANTS["beside240"]) == (WIDE_BESIDE_CONFIG.label,
                                                                    WIDE_BESIDE_240_CONFIG.label)
    names = {m.name for m in SYNC_MUTANTS}
    for bug in ("in_flight_three_buffers", "no_publish_barrier", "tx_count_short", "tensormap_acquire_missing",
                "epilogue_no_reuse_barrier"):
        assert f"hopper_sync_{bug}__few" in names
    for bug in ("phase1_wait_one_short", "y_ring_empty_count_short", "staged_slots_no_proxy_fence",
                "epilogue_no_publish_barrier", "idle_cta_early_x_stages", "tile_wait_lax"):
        assert f"hopper_sync_{bug}__wide" in names
    for bug in ("beside_producer_no_wait", "beside_flags_not_reset", "y_ring_tx_count_short",
                "epilogue_no_publish_barrier", "split_halves_overlap"):
        assert f"hopper_sync_{bug}__beside240" in names


def test_mutant_patterns_select_by_shell_pattern():
    chosen = mr.select_mutants(["hopper"], ["hopper_sync_*__prod"])
    assert chosen and all(m.name.endswith("__prod") for m in chosen)
    with pytest.raises(SystemExit):
        mr.select_mutants(["hopper"], ["no_such_mutant_*"])


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
    same SASS (about 15 s on 2 cores: each variant compiled once unmutated, once per mutant). The other concurrency mutants change
    their variant's SASS (python -m ci.mutation_runner --section=sync --sass-equivalence,
    recorded in docs/mutants.md)."""
    equivalent = [m for m in SYNC_MUTANTS if m.name in EQUIVALENT]
    assert equivalent
    eq = mr.sass_equivalence(equivalent, jobs=2, log=lambda msg: None)
    assert all(eq[m.name] == "unchanged" for m in equivalent), eq


HANG_MUTANT = "hopper_sync_epilogue_barrier_per_warp_pair__prod"


@pytest.mark.compile
def test_the_hang_mutant_compiles_and_changes_the_sass():
    """The catalog's hang: every consumer warpgroup of the production variant deadlocks at its
    first epilogue barrier, on the first launch (on an H200 its property verdicts are
    "caught (hang)", reported by the isolation's run-phase limit). On the CPU (about 15 s): the
    mutated variant compiles and its SASS is not production's."""
    (mutant,) = [m for m in SYNC_MUTANTS if m.name == HANG_MUTANT]
    assert mutant.variant == SYNC_VARIANTS["prod"] and "(a hang)" in mutant.kind
    assert mr.sass_equivalence([mutant], jobs=1, log=lambda msg: None) == {HANG_MUTANT: "changed"}


def test_one_process_gives_both_property_verdicts_and_a_hang_is_a_catch():
    m = SYNC_MUTANTS[0]
    cmd, env = mr.pytest_command(m, mr.PROPS)
    assert "--perturb=on" in cmd and "-x" not in cmd and mr.PLAIN_PROPERTY in cmd and PERTURBED_PROPERTY in cmd
    assert env["NVFP4_COMPILE_TIMEOUT"] and "--example-timeout=30" in cmd
    out = (f"PASSED {mr.PLAIN_PROPERTY}[hopper:{m.variant}]\n"
           f"FAILED {PERTURBED_PROPERTY}[hopper:{m.variant}] - properties.failures.SubjectTimedOut: "
           f"hopper:x TIMEOUT on 3 groups [[1, 2, 256, 1]]: hang in the run phase: no answer within 30 s of the launch\n")
    plain, pert = mr._props_results(m.name, "hopper", m.kind, m, out, 1, 9.0, "cmd", mr.Path("/nonexistent"))
    assert (plain.mode, plain.verdict) == ("plain", "SURVIVED")
    assert (pert.mode, pert.verdict) == ("perturbed", "caught (hang)")
    out2 = out.replace("SubjectTimedOut", "SubjectCheckFailed").replace("TIMEOUT on", "wrong values on")
    assert mr._props_results(m.name, "hopper", m.kind, m, out2, 1, 9.0, "c", mr.Path("/x"))[1].verdict == "caught"
    base = mr._props_results("(baseline)", "hopper", "", None, out2, 1, 9.0, "c", mr.Path("/x"))
    assert [r.verdict for r in base] == ["passed", "FAILED"]
    missing = mr._props_results(m.name, "hopper", m.kind, m, "", 2, 1.0, "c", mr.Path("/x"))
    assert [r.verdict for r in missing] == ["error", "error"]
    s = mr.sync_summary([plain, pert])
    assert s["perturbed"] == 1 and s["plain"] == 0 and s["only_perturbed"] == [m.name]


def test_the_map_rewrite_property_runs_with_the_plain_one_and_its_failure_is_a_plain_catch():
    """properties/test_tensor_map_rewrite.py (tensor maps rewritten in place at one address
    between back-to-back launches) runs in every props process (it skips at once in variants
    without tensor maps); its failure is a plain catch, its skip leaves the plain verdict alone."""
    m = next(m for m in SYNC_MUTANTS if m.name == "hopper_sync_tensormap_acquire_missing__rs")
    cmd, _ = mr.pytest_command(m, mr.PROPS)
    assert mr.MAP_REWRITE_PROPERTY in cmd
    rewrite = mr.MAP_REWRITE_PROPERTY
    out = (f"PASSED {mr.PLAIN_PROPERTY}[hopper:{m.variant}]\n"
           f"PASSED {PERTURBED_PROPERTY}[hopper:{m.variant}]\n"
           f"FAILED {rewrite}[hopper:{m.variant}] - AssertionError: read the wrong tensors\n")
    plain, pert = mr._props_results(m.name, "hopper", m.kind, m, out, 1, 9.0, "cmd", mr.Path("/nonexistent"))
    assert (plain.verdict, pert.verdict) == ("caught", "SURVIVED") and "test_tensor_map_rewrite" in plain.caught_by
    skipped = out.replace(f"FAILED {rewrite}[hopper:{m.variant}] - AssertionError: read the wrong tensors",
                          f"SKIPPED [1] properties/test_tensor_map_rewrite.py:50: no tensor maps")
    assert [r.verdict for r in mr._props_results(m.name, "hopper", m.kind, m, skipped, 0, 9.0, "c",
                                                 mr.Path("/x"))] == ["SURVIVED", "SURVIVED"]


def test_a_sanitized_process_that_only_ran_out_of_time_is_not_a_catch():
    timed = "racecheck  h90  edges  NOT RUN  0  timed out, 150 s\n0 of 1 sanitized processes clean\n"
    assert mr._sanitizer_verdict(_r("x", "sanitizer:racecheck", ""), 1, timed, True).verdict == "timeout"
    found = "memcheck  h90  ragged  PASS  3  ERROR SUMMARY 3, 9 s\n0 of 1 sanitized processes clean\n"
    r = mr._sanitizer_verdict(_r("x", "sanitizer:memcheck", ""), 1, found, True)
    assert r.verdict == "caught" and "memcheck" in r.caught_by
    failed = "synccheck  h90  ragged  FAIL wrong  0  ERROR SUMMARY 0, 9 s\n0 of 1 sanitized processes clean\n"
    r = mr._sanitizer_verdict(_r("x", "sanitizer:synccheck", ""), 1, failed, True)
    assert r.verdict == "caught" and "failed under synccheck" in r.caught_by
    parts = [mr.Result("x", "hopper", "k", v, mode=f"sanitizer:{t}", caught_by=c)
             for t, v, c in (("memcheck", "SURVIVED", ""), ("racecheck", "timeout", ""), ("synccheck", "caught", "y"))]
    merged = mr._merge_sanitizer("x", "hopper", "k", parts)
    assert merged.mode == "sanitizer" and merged.verdict == "caught" and merged.caught_by == "synccheck: y"
    assert mr._merge_sanitizer("x", "hopper", "k", parts[:2]).verdict == "timeout"
    assert mr._merge_sanitizer("x", "hopper", "k", parts[:1]).verdict == "SURVIVED"


def test_sanitizer_runs_only_where_no_property_caught_the_mutant(monkeypatch):
    """The sanitizer verdict is spent where it can add something: a mutant that a property caught
    (or that hangs) gets ``not-run`` with the reason; a survivor and the baselines get one task per
    tool over the fixed small case set."""
    caught, survivor = SYNC_MUTANTS[0], SYNC_MUTANTS[2]
    ran = []

    def fake_run_one(m, subject, *, mode, baseline_of=None, **_):
        ran.append((m.name if m else f"base:{baseline_of.variant}", mode))
        name = m.name if m else f"(baseline {baseline_of.variant})"
        if mode == mr.PROPS:
            v = "caught" if m is caught else ("SURVIVED" if m else "passed")
            return [mr.Result(name, subject, "k", v, mode="plain"), mr.Result(name, subject, "k", "SURVIVED" if m else "passed", mode="perturbed")]
        return mr.Result(name, subject, "k", "SURVIVED" if m else "passed", mode=mode)

    monkeypatch.setattr(mr, "run_one", fake_run_one)
    monkeypatch.setattr(mr, "gpu_reason", lambda: None)
    monkeypatch.setattr(mr, "repo_files", lambda: [])
    results = mr.run_all([caught, survivor], jobs=2, baseline=True, carry=[], timeout=100, log=lambda *_: None)
    sanitized = {(n, md) for n, md in ran if md.startswith("sanitizer:")}
    assert {md for n, md in sanitized if n == survivor.name} == {f"sanitizer:{t}" for t in mr.SANITIZER_TOOLS}
    assert not [n for n, _ in sanitized if n == caught.name]
    assert {n for n, _ in sanitized if n.startswith("base:")} == {f"base:{caught.variant}", f"base:{survivor.variant}"}
    cell = next(r for r in results if r.name == caught.name and r.mode == "sanitizer")
    assert cell.verdict == "not-run" and cell.detail.startswith("caught by the plain property")
    cmd, env = mr.pytest_command(survivor, "sanitizer:racecheck")
    assert [f"--case={c}" for c in mr.SANITIZER_CASES] == [a for a in cmd if a.startswith("--case=")]
    assert env["OMP_NUM_THREADS"] == mr.TASK_THREADS


def test_schedule_runs_long_tasks_first_and_the_unobservable_last(monkeypatch):
    """One job, so the start order is the queue order (ci.mutation_runner.task_priority): the
    baselines' property runs, the concurrency mutants' property runs, each survivor's sanitizer
    tasks as soon as its property run is done (ahead of the value mutants, which are short and
    fill the end), and last the mutants recorded as unobservable."""
    from ci.mutants import MUTANTS, UNOBSERVABLE

    survivor = next(m for m in SYNC_MUTANTS if m.name not in UNOBSERVABLE and m.name not in EQUIVALENT)
    unobservable = next(m for m in SYNC_MUTANTS if m.name in UNOBSERVABLE)
    value = next(m for m in MUTANTS if m.subject == "hopper" and not m.variant)
    started = []

    def fake_run_one(m, subject, *, mode, baseline_of=None, **_):
        started.append((m.name if m else "baseline", mode.split(":")[0]))
        name = m.name if m else f"(baseline {baseline_of.variant if baseline_of else subject})"
        if mode == mr.PROPS:
            v = "SURVIVED" if m else "passed"
            return [mr.Result(name, subject, "k", v, mode="plain"), mr.Result(name, subject, "k", v, mode="perturbed")]
        return mr.Result(name, subject, "k", "caught" if m is value else ("SURVIVED" if m else "passed"), mode=mode)

    monkeypatch.setattr(mr, "run_one", fake_run_one)
    monkeypatch.setattr(mr, "gpu_reason", lambda: None)
    monkeypatch.setattr(mr, "repo_files", lambda: [])
    mr.run_all([value, unobservable, survivor], jobs=1, baseline=True, carry=[], timeout=100, log=lambda *_: None)
    order = [n for n, _ in started]
    assert [md for n, md in started if n == "baseline"][0] == mr.PROPS and order[0] == "baseline"
    first_survivor_sanitizer = started.index((survivor.name, "sanitizer"))
    assert started.index((survivor.name, mr.PROPS)) < first_survivor_sanitizer < started.index((value.name, "plain"))
    assert order.index(unobservable.name) > order.index(value.name)
    assert all(n == unobservable.name or n == "baseline" for n in order[order.index(unobservable.name):])
    assert sum(md == "sanitizer" for n, md in started if n == survivor.name) == len(mr.SANITIZER_TOOLS)


_CLEAN = """/usr/local/cuda/bin/compute-sanitizer: 1 sanitized processes (memcheck x V), cases ragged, empty_group

tool      variant  case         check  sanitizer records  process
memcheck  V        ragged       PASS   0                  ERROR SUMMARY 0, 20 s
memcheck  V        empty_group  PASS   0                  ERROR SUMMARY 0, 20 s

1 of 1 sanitized processes clean"""
_TIMED_OUT = """tool       variant  case    check    sanitizer records  process
racecheck  V        ragged  NOT RUN  0                  timed out, 120 s

0 of 1 sanitized processes clean"""


@pytest.mark.parametrize("mutated, code, out, verdict", [
    (False, 0, _CLEAN, "passed"),           # was "error: nothing ran" (judged as a pytest run)
    (True, 0, _CLEAN, "SURVIVED"),
    (True, 1, _TIMED_OUT, "timeout"),       # was "caught": a tool that ran out of time proves nothing
    (False, 2, "", "error"),                # a status ci.sanitize never returns on its own: kept, with why
])
def test_a_sanitizer_task_is_judged_by_ci_sanitize_s_exit_status(monkeypatch, mutated, code, out, verdict):
    """The runner's sanitizer tasks (mode ``sanitizer:TOOL``, one per tool) run ci.sanitize and are
    judged by its exit status (0 clean, 1 found, 2 skipped), baselines and mutants alike; before,
    they fell through to the pytest rules, so every clean baseline read ``error`` (no ``N passed``
    line: "nothing ran"), the first H200 catalog run's two baseline rows. An ``error`` keeps the
    output tail, in the tool's record and in the merged sanitizer verdict."""
    import sys as _sys

    m = next(x for x in SYNC_MUTANTS if not x.equivalent_because)
    script = f"import sys; sys.stdout.write({out!r}); sys.exit({code})"
    monkeypatch.setattr(mr, "pytest_command", lambda *a, **k: ([_sys.executable, "-c", script], {}))
    r = mr.run_one(m if mutated else None, "hopper", carry=[], timeout=60, keep=False, files=["ci/__init__.py", m.target],
                   mode="sanitizer:racecheck", baseline_of=None if mutated else m)
    assert r.verdict == verdict, (r.verdict, r.detail)
    if out:
        assert out.splitlines()[-1] in r.output_tail
    if verdict == "error":
        assert f"exit status {code}" in r.detail and "no output" in r.detail
    merged = mr._merge_sanitizer(r.name, "hopper", r.kind, [r])
    assert merged.verdict == verdict
    if verdict not in ("passed", "SURVIVED"):
        assert f"racecheck [{verdict}]" in merged.output_tail and r.detail in merged.output_tail


def test_map_rewrite_property_skips_after_the_variant_already_failed():
    """A hung mutant must not also wait out the map-rewrite property's subprocess limit: once a
    subject property failed on the same variant in this process, the property skips at once
    (which keeps a hanging mutant's props run under the runner's timeout)."""
    import types

    import pytest

    from conftest import failed_on
    from properties.test_tensor_map_rewrite import test_tensor_maps_rewritten_in_place_between_launches as prop

    variant = types.SimpleNamespace(subject="hopper", label="h90_m128n128k256_s4_wg2_swap_fp16_tma_prmt_rs")
    config = types.SimpleNamespace()
    failed_on(config).append(("hopper", variant.label, "properties/test_subject_vs_oracle.py::test_x[a]"))
    with pytest.raises(pytest.skip.Exception, match="already failed"):
        prop(variant, types.SimpleNamespace(config=config))
    # another variant's failure does not count: the property goes on (here: to its own skips)
    other = types.SimpleNamespace(subject="hopper", label="h90_m128n128k256_s3_wg1_fp16")
    with pytest.raises(pytest.skip.Exception) as info:
        prop(other, types.SimpleNamespace(config=config))
    assert "already failed" not in str(info.value)
