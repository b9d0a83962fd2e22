"""Mutation testing: does the property suite catch the planted bugs of ci/mutants.py?

    python -m ci.mutation_runner [--subject=cpu|all|model|plan|hopper|blackwell-static ...]
                                 [--mutant=NAME ...] [--section=all|sync] [--jobs=N] [--jobs-per-gpu=K] [--baseline]
                                 [--timeout=S] [--deadline=S] [--modes=plain,perturbed,sanitizer]
                                 [--max-examples=N] [--markdown=PATH] [--json=PATH] [--keep] [--cold] [--carry=PATH ...]
    python -m ci.mutation_runner --sass-equivalence [--section=sync]   (CPU: cubin unchanged?)

Concurrency / memory-safety mutants (``ci.mutants.SYNC_MUTANTS``, ``--section=sync``) carry a
variant and get three verdicts, each from its own run in its own copy: ``plain`` (the main
property, ``--perturb=off``), ``perturbed`` (the main property on perturbed builds:
``properties/test_perturbed_properties.py``, ``--perturb=only``) and ``sanitizer``
(``python -m ci.sanitize`` with memcheck, racecheck, synccheck and initcheck over its fixed ragged
cases; caught when a tool reports an error or a case fails under it). ``--sass-equivalence``
compiles each of them on the CPU, mutated and not, and reports whether the variant's SASS
changed: an unchanged cubin is the proof an "equivalent" verdict needs.

For each selected mutant: copy the repository (``git ls-files`` plus untracked files git does
not ignore; ignored paths named by ``--carry``, e.g. ``.device``, are symlinked) into a fresh
temporary directory, apply the mutant there (the working tree is never touched), and run the
mutant's pytest selection in that copy::

    python -m pytest -x -q -p no:cacheprovider -p ci.mutant_plugin --hypothesis-profile=ci SELECTION

(``ci.mutant_plugin`` keeps the ci profile but skips shrinking, and logs every Hypothesis test
case; ``properties/checks.py`` logs every checked example to ``NVFP4_EXAMPLE_LOG``). The CPU
subjects' runs are forks of one warm interpreter (``ci.warm_pytest``: torch, numpy, Hypothesis
and pytest imported once, nothing of the project), each in its copy as a fresh
``python -m pytest`` there would be; ``--cold`` starts a fresh interpreter for each.

Verdicts: ``caught`` (pytest failed: the first failing test is named, with the number of
examples that test ran up to and including the first failing one), ``SURVIVED`` (everything
passed), ``timeout``, ``error`` (pytest could not run: exit status other than 0/1), ``skipped``
(a GPU mutant without an sm_90 GPU), ``baseline-failed`` (``--baseline``: the unmutated
selection already fails, so a failure proves nothing). Exit status 1 when any mutant that ran
was not caught.

Subjects ``cpu`` = model + plan + blackwell-static (what CI runs: ci/test_mutants.py);
``hopper`` needs the H200 (``source .device/env.sh`` first; see docs/mutants.md).

GPU runs (the ``hopper`` subject's property and sanitizer runs; not the CPU ``static`` verdicts)
are spread over the visible GPUs (``properties.gpu_pool``: ``CUDA_VISIBLE_DEVICES`` or every GPU
of the machine): each gets one GPU as its ``CUDA_VISIBLE_DEVICES``, the least loaded (round-robin
among equals), and at most ``--jobs-per-gpu`` (default 1) run on one GPU at a time; ``--jobs``
stays the cap on all runs together. CPU subjects run as before, ``--jobs`` at a time.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from fnmatch import fnmatch
from pathlib import Path

from ci.mutants import CPU_SUBJECTS, HOPPER_VARIANT, MUTANTS, PERTURBED_PROPERTY, SUBJECTS, SYNC_MUTANTS, Mutant
from properties import gpu_pool

ROOT = Path(__file__).resolve().parents[1]
PYTEST_BASE = ["-x", "-q", "-p", "no:cacheprovider", "-p", "ci.mutant_plugin", "--hypothesis-profile=ci"]
# GPU runs: an example that hangs (a missing barrier can deadlock) is killed this long after its
# launch (properties.isolation: the run phase's limit starts at the worker's "launch" message; the
# compile phase before it has its own limit, NVFP4_COMPILE_TIMEOUT)
HOPPER_OPTIONS = ["--example-timeout=30"]
# each task's CPU threads capped (torch, numpy and BLAS would otherwise each start one thread per
# core: 8 tasks x 2 processes x 16 threads on 16 cores); the compiles are single-threaded anyway
TASK_THREADS = "2"
HOPPER_ENV = {"NVFP4_COMPILE_TIMEOUT": "150", "CUTE_DSL_ARCH": "sm_90a", "OMP_NUM_THREADS": TASK_THREADS,
              "MKL_NUM_THREADS": TASK_THREADS, "OPENBLAS_NUM_THREADS": TASK_THREADS}
PERTURBED_OPTIONS = ["--example-timeout=30"]
MODES = ("plain", "perturbed", "sanitizer")
# one pytest process gives a concurrency mutant both property verdicts (plain, perturbed): the
# two properties in one selection (--perturb=on), each judged by its own FAILED / PASSED line
PROPS = "props"
PLAIN_PROPERTY = "properties/test_subject_vs_oracle.py::test_subject_matches_oracle"
# run with the plain property in a concurrency mutant's props run (its failure is a plain catch):
# the production build's tensor maps rewritten in place between back-to-back launches (TMA
# variants; skips in the others at once)
MAP_REWRITE_PROPERTY = "properties/test_tensor_map_rewrite.py::test_tensor_maps_rewritten_in_place_between_launches"
# a property example that got no answer within the hang watchdog (properties.isolation)
_HANG_RE = re.compile(r"SubjectTimedOut|TIMEOUT on \d+ groups")
# CPU verdict of a concurrency mutant: its variant compiled on the CPU, the SASS ordering rules
# (test_hopper_sync_sites) and the poison-site rules of its perturbed build
# (test_hopper_perturbed_sass); runs without a GPU
STATIC_MODE = "static"
# (test_hopper_compile.py: the SASS structure and ci.ptx_convergence on the PTX of the build)
STATIC_SELECT = ["kernel/tests/test_hopper_sync_sites.py", "kernel/tests/test_hopper_perturbed_sass.py",
                 "kernel/tests/test_hopper_compile.py"]
# the sanitizer verdict: ci.sanitize's default tools (initcheck's only reports were torch's own
# scratch reads, ci/sanitize.py) over a fixed small case set of one group count (3 groups: one
# compile per sanitized process), and only where it can add something: for a mutant that
# neither property caught (and for the two unmutated baselines)
SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck")
SANITIZER_CASES = ("ragged", "empty_group")
SANITIZER_PROCESS_TIMEOUT = 120  # seconds per sanitized process (one tool per runner task)
_FAILED_RE = re.compile(r"^(FAILED|ERROR) (\S+)", re.M)


@dataclass
class Result:
    name: str
    subject: str
    kind: str
    verdict: str
    mode: str = "plain"  # plain, perturbed or sanitizer (MODES)
    caught_by: str = ""
    examples: int | None = None  # examples the catching test ran, up to and including the first failing one
    checked_examples: int | None = None  # check_example calls in the whole run (NVFP4_EXAMPLE_LOG)
    wall_s: float = 0.0
    command: str = ""
    detail: str = ""
    output_tail: str = field(default="", repr=False)


# without git (a copied tree on the GPU machine): everything but these (what .gitignore ignores)
_SKIP_DIRS = {".git", "__pycache__", ".hypothesis", ".pytest_cache", ".benchmarks", ".device", ".whl", "build", "out"}


def repo_files(root: Path = ROOT) -> list[str]:
    """Tracked plus untracked-not-ignored files (git), or, where there is no git repository,
    every file outside the ignored folders."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=root, check=True, capture_output=True,
        ).stdout.decode()
        return [p for p in out.split("\0") if p and (root / p).is_file()]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for dirpath, dirnames, filenames in os.walk(root):
            rel_dir = Path(dirpath).relative_to(root)
            dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS and not d.endswith(".egg-info")
                           and (rel_dir / d).as_posix() != "profiling/runs"]
            files += [(rel_dir / f).as_posix() for f in filenames
                      if not f.endswith((".pyc", ".ncu-rep")) and (Path(dirpath) / f).is_file()]
        return sorted(files)


def make_copy(dest: Path, files: list[str], carry: list[str], root: Path = ROOT) -> None:
    for rel in files:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / rel, target)
    for rel in carry:
        src = root / rel
        if src.exists() and not (dest / rel).exists():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(src, dest / rel)


def gpu_reason() -> str | None:
    """Why the Hopper mutants cannot run here (None when an sm_90 GPU is present)."""
    try:
        from kernel.device import cuda_capability

        cap = cuda_capability()
    except Exception as e:  # noqa: BLE001 - any import problem means no GPU run
        return f"cannot query the GPU: {e}"
    if cap is None or cap[0] != 9:
        return f"needs an sm_90 (H200) GPU; this machine has {'none' if cap is None else f'sm_{cap[0]}{cap[1]}'}"
    return None


def perturbed_select(variant: str) -> list[str]:
    return [PERTURBED_PROPERTY, "--subject=hopper", f"--variant={variant}", "--perturb=only"]


def sanitizer_command(variant: str, tools: tuple[str, ...] = SANITIZER_TOOLS) -> list[str]:
    cmd = [sys.executable, "-m", "ci.sanitize", "--subject=hopper", f"--variant={variant}", "--require",
           f"--jobs={len(tools)}", f"--timeout={SANITIZER_PROCESS_TIMEOUT}"]
    return cmd + [f"--tool={t}" for t in tools] + [f"--case={c}" for c in SANITIZER_CASES]


def props_select(variant: str) -> list[str]:
    """Both property verdicts of a concurrency mutant in one process."""
    return [PLAIN_PROPERTY, PERTURBED_PROPERTY, MAP_REWRITE_PROPERTY, "--subject=hopper", f"--variant={variant}",
            "--perturb=on", "-rA"]


def pytest_command(mutant_or_subject, mode: str = "plain") -> tuple[list[str], dict[str, str]]:
    subject = mutant_or_subject.subject if isinstance(mutant_or_subject, Mutant) else mutant_or_subject
    select = list(mutant_or_subject.select) if isinstance(mutant_or_subject, Mutant) else list(_SUBJECT_SELECT[subject])
    variant = mutant_or_subject.variant if isinstance(mutant_or_subject, Mutant) else ""
    if mode == "sanitizer":
        return sanitizer_command(variant), dict(HOPPER_ENV)
    if mode.startswith("sanitizer:"):
        return sanitizer_command(variant, (mode.split(":", 1)[1],)), dict(HOPPER_ENV)
    if mode == "perturbed":
        select = perturbed_select(variant)
    if mode == PROPS:
        cmd = [sys.executable, "-m", "pytest", *[a for a in PYTEST_BASE if a != "-x"], *props_select(variant),
               *HOPPER_OPTIONS]
        return cmd, dict(HOPPER_ENV)
    if mode == STATIC_MODE:
        cmd = [sys.executable, "-m", "pytest", *PYTEST_BASE, *STATIC_SELECT, "-k", variant]
        return cmd, {"CUTE_DSL_ARCH": "sm_90a"}
    cmd = [sys.executable, "-m", "pytest", *PYTEST_BASE, *select]
    env = {}
    if subject == "hopper":
        # perturbed: a new palette entry or group count compiles inside the example
        cmd += HOPPER_OPTIONS if mode != "perturbed" else PERTURBED_OPTIONS
        env.update(HOPPER_ENV)
    return cmd, env


def _subject_select() -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for m in MUTANTS:
        out.setdefault(m.subject, m.select)
    return out


_SUBJECT_SELECT = _subject_select()


def _count_examples(obs_path: Path, failing_test: str) -> int | None:
    """Hypothesis test cases of the failing property up to and including its first failure."""
    if not obs_path.exists() or not failing_test:
        return None
    func = failing_test.split("::")[-1].split("[")[0]
    n = 0
    for line in obs_path.read_text().splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        prop = str(rec.get("property", ""))
        if prop != failing_test and prop.split("::")[-1].split("[")[0].split(".")[-1] != func:
            continue
        n += 1
        if rec.get("status") == "failed":
            return n
    return None


def split_selection(select) -> tuple[tuple[str, ...], list[str]]:
    """(options, test paths and node ids) of a pytest selection (the value after ``-k`` or ``-m``
    is part of the options)."""
    opts, paths, args = [], [], iter(select)
    for a in args:
        if a in ("-k", "-m"):
            opts += [a, next(args)]
        elif a.startswith("-"):
            opts.append(a)
        else:
            paths.append(a)
    return tuple(opts), paths


def _within(path: str, other: str) -> bool:
    """Whether pytest's ``other`` (a path or node id) selects part of what ``path`` selects."""
    return other == path or other.startswith(path + "::") or other.startswith(path + "[")


def cpu_baselines(mutants: list[Mutant]) -> list[Mutant]:
    """The unmutated runs that back the CPU mutants' verdicts: per subject and option set, one
    run of the union of its mutants' test paths and node ids, less those that an earlier run with
    the same options already runs (the model mutants' main property is the plan mutants' too).
    Each is a :class:`Mutant` record with no edit, named ``(baseline SUBJECT [OPTIONS])``."""
    groups: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for m in sorted((m for m in mutants if m.subject in CPU_SUBJECTS and not m.variant),
                    key=lambda m: SUBJECTS.index(m.subject)):
        opts, paths = split_selection(m.select)
        for path in paths:
            if not any(o == opts and any(_within(q, path) for q in qs) for (_, o), qs in groups.items()):
                groups.setdefault((m.subject, opts), []).append(path)
    return [Mutant(f"(baseline {' '.join((subject, *opts))})", "no mutation: the selection must pass", "", "", "x",
                   subject, (*paths, *opts)) for (subject, opts), paths in groups.items()]


def backs(base: Mutant, m: Mutant) -> bool:
    """Whether the unmutated run ``base`` (:func:`cpu_baselines`) runs part of ``m``'s selection."""
    b_opts, b_paths = split_selection(base.select)
    opts, paths = split_selection(m.select)
    return b_opts == opts and any(_within(q, p) or _within(p, q) for q in b_paths for p in paths)


def _baseline_name(subject: str, of: Mutant | None) -> str:
    if of is not None and not of.variant:
        return of.name  # a CPU baseline (cpu_baselines)
    return f"(baseline {of.variant if of else subject})"


def run_one(mutant: Mutant | None, subject: str, *, carry: list[str], timeout: float, keep: bool,
            files: list[str], mode: str = "plain", baseline_of: Mutant | None = None, gpu: str | None = None,
            warm=None) -> Result:
    """One mutant (or, ``mutant=None``, the unmutated baseline of ``subject``; with
    ``baseline_of``, of that mutant's variant and mode) in a fresh copy; ``gpu``: the run's
    ``CUDA_VISIBLE_DEVICES``; ``warm``: a :class:`ci.warm_pytest.WarmPytest` that runs the pytest
    runs of the CPU subjects (no environment of their own, no GPU) as forks of one warm
    interpreter instead of fresh ones."""
    name = mutant.name if mutant else _baseline_name(subject, baseline_of)
    kind = mutant.kind if mutant else "no mutation: the selection must pass"
    tmp = Path(tempfile.mkdtemp(prefix=f"mutant-{name.strip('()').replace(' ', '-')}-"))
    start = time.perf_counter()
    try:
        make_copy(tmp, files, carry)
        if mutant:
            before = (tmp / mutant.target).read_text()
            mutant.apply(tmp)
            if (tmp / mutant.target).read_text() == before:
                return Result(name, subject, kind, "error", detail="the mutation changed nothing")
        cmd, extra_env = pytest_command(mutant or baseline_of or subject, mode)
        obs, log = tmp / ".mutant-observations.jsonl", tmp / ".mutant-examples.log"
        env = dict(os.environ, **extra_env)
        if gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = gpu
        env.update(
            PYTHONPATH=os.pathsep.join(filter(None, [str(tmp), os.environ.get("PYTHONPATH")])),
            PYTHONDONTWRITEBYTECODE="1",
            NVFP4_MUTANT_OBS=str(obs),
            NVFP4_EXAMPLE_LOG=str(log),
        )
        shown = " ".join(cmd[1:]).replace(sys.executable, "python")
        try:
            if warm is not None and cmd[1:3] == ["-m", "pytest"] and not extra_env and gpu is None:
                code, stdout, stderr = warm.run(cmd[3:], tmp, env, timeout)
                if code is None:
                    raise subprocess.TimeoutExpired(cmd, timeout, stdout, stderr)
                proc = subprocess.CompletedProcess(cmd, code, stdout, stderr)
            else:
                proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            out = "".join((x or b"").decode(errors="replace") if isinstance(x, bytes) else (x or "")
                          for x in (e.stdout, e.stderr))
            wall = round(time.perf_counter() - start, 1)
            modes = ("plain", "perturbed") if mode == PROPS else (mode,)
            results = [Result(name, subject, kind, "timeout", mode=md, wall_s=wall, command=f"python {shown}",
                              detail=f"no verdict within {timeout:.0f} s", output_tail=out[-3000:]) for md in modes]
            return results if mode == PROPS else results[0]
        wall = round(time.perf_counter() - start, 1)
        output = proc.stdout + proc.stderr
        if mode == PROPS:
            return _props_results(name, subject, kind, mutant, output, proc.returncode, wall, f"python {shown}", obs)
        checked = None
        if log.exists():
            lines = log.read_text().splitlines()
            fails = [i for i, l in enumerate(lines) if l.startswith("fail")]
            checked = (fails[0] + 1) if fails else len(lines)
        res = Result(name, subject, kind, "", mode=mode, wall_s=wall, command=f"python {shown}",
                     checked_examples=checked, output_tail=output[-4000:])
        if mode == "sanitizer" or mode.startswith("sanitizer:"):
            # ci.sanitize's exit status, not pytest's: the runner's sanitizer tasks are one per
            # tool ("sanitizer:TOOL"); judged as pytest runs, a clean baseline (exit 0, no
            # "N passed" line) read as "error: nothing ran" and a mutant's timed-out tool as caught
            return _sanitizer_verdict(res, proc.returncode, output, mutant is not None)
        if proc.returncode == 0:
            res.verdict = "SURVIVED" if mutant else "passed"
            summary = [l for l in output.splitlines() if re.search(r"\d+ (passed|skipped)", l)]
            res.detail = summary[-1].strip("= ") if summary else ""
            if mutant is not None and mutant.equivalent_because:
                res.verdict, res.detail = "equivalent", f"{mutant.equivalent_because} ({res.detail})"
            if mutant is None and "passed" not in res.detail:
                res.verdict, res.detail = "error", f"nothing ran: {res.detail}"
        elif proc.returncode == 1:
            hit = _FAILED_RE.search(output)
            res.caught_by = hit.group(2) if hit else "?"
            res.verdict = ("caught" if hit and hit.group(1) == "FAILED" else "caught (error)") if mutant else "FAILED"
            res.examples = _count_examples(obs, res.caught_by)
            reason = re.search(r"^(?:FAILED|ERROR) \S+ - (.*)$", output, re.M)
            res.detail = reason.group(1)[:300] if reason else ""
            if mutant and res.verdict == "caught" and _HANG_RE.search(res.detail):
                res.verdict = "caught (hang)"
        else:
            res.verdict = "error"
            res.detail = f"pytest exit status {proc.returncode}"
        return res
    finally:
        if keep:
            print(f"[mutation] kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def _props_results(name, subject, kind, mutant, output, code, wall, command, obs) -> list[Result]:
    """The plain and the perturbed verdict of one ``props`` run (both properties, one process):
    each from its own test's FAILED / PASSED / SKIPPED line. A failing example that got no answer
    within the hang watchdog is ``caught (hang)``."""
    out = []
    for mode, test in (("plain", PLAIN_PROPERTY), ("perturbed", PERTURBED_PROPERTY)):
        func = test.split("::")[-1]
        res = Result(name, subject, kind, "", mode=mode, wall_s=wall, command=command, output_tail=output[-4000:])
        failed = re.search(rf"^(FAILED|ERROR) (\S+::{func}\[\S*)(?: - (.*))?$", output, re.M)
        if mode == "plain" and not failed:  # the map-rewrite property counts as plain
            extra = MAP_REWRITE_PROPERTY.split("::")[-1]
            failed = re.search(rf"^(FAILED|ERROR) (\S+::{extra}\[\S*)(?: - (.*))?$", output, re.M)
        passed = re.search(rf"^PASSED \S+::{func}\[", output, re.M)
        skipped = re.search(rf"^SKIPPED .*{func}", output, re.M)
        if failed:
            res.caught_by = failed.group(2)
            res.detail = (failed.group(3) or "")[:300]
            if mutant is None:
                res.verdict = "FAILED"
            elif failed.group(1) == "ERROR":
                res.verdict = "caught (error)"
            else:
                res.verdict = "caught (hang)" if _HANG_RE.search(res.detail) else "caught"
            res.examples = _count_examples(obs, res.caught_by)
        elif passed:
            res.verdict = "SURVIVED" if mutant is not None else "passed"
            if mutant is not None and mutant.equivalent_because:
                res.verdict, res.detail = "equivalent", mutant.equivalent_because
        elif skipped:
            res.verdict, res.detail = "skipped", "the property skipped"
        else:
            res.verdict, res.detail = "error", f"no result line for {func} (pytest exit status {code})"
        out.append(res)
    return out


def _sanitizer_verdict(res: Result, code: int, output: str, mutated: bool) -> Result:
    """ci.sanitize's exit status: 0 clean, 1 something found, 2 skipped (no sanitizer / GPU)."""
    found = [l.strip() for l in output.splitlines()
             if re.match(r"^(memcheck|racecheck|synccheck|initcheck)\s", l) and (" FAIL" in l or " ERROR" in l
                                                                                   or not re.search(r"\s0\s+(ERROR SUMMARY|timed|no summary)", l))]
    clean = re.search(r"(\d+) of (\d+) sanitized processes clean", output)
    rows = [l.split() for l in output.splitlines() if re.match(rf"^({'|'.join(SANITIZER_TOOLS)})\s", l)]
    reported = sorted({r[0] for r in rows if len(r) > 4 and r[4].isdigit() and int(r[4]) > 0}
                      | {r[0] for r in rows if re.search(r"ERROR SUMMARY [1-9]", " ".join(r))})
    case_failed = sorted({r[0] for r in rows if len(r) > 3 and r[3] in ("FAIL", "ERROR")})
    timed_out = sorted({r[0] for r in rows if "timed out" in " ".join(r)})
    if code == 0:
        res.verdict = "SURVIVED" if mutated else "passed"
    elif code == 1 and not reported and not case_failed and timed_out:
        # a sanitized process that ran out of time proves nothing (instrumentation is slow)
        res.verdict = "timeout"
        res.caught_by = ""
    elif code == 1:
        res.verdict = "caught" if mutated else "FAILED"
        res.caught_by = ("compute-sanitizer " + ",".join(reported) if reported else
                         "a case failed under " + ",".join(case_failed) if case_failed else "compute-sanitizer")
    else:
        res.verdict = "skipped" if "SKIP" in output else "error"
    res.detail = (clean.group(0) if clean else "") + ("; " + " | ".join(found[:4]) if found and code == 1 else "")
    if res.verdict == "error":
        res.detail = f"ci.sanitize exit status {code}" + (f"; {res.detail}" if res.detail else "") + (
            "" if output.strip() else "; no output")
    return res


def select_mutants(subjects: list[str], names: list[str]) -> list[Mutant]:
    wanted: set[str] = set()
    for s in subjects:
        wanted |= set(CPU_SUBJECTS) if s == "cpu" else set(SUBJECTS) if s == "all" else {s}
    unknown = wanted - set(SUBJECTS)
    if unknown:
        raise SystemExit(f"unknown subjects {sorted(unknown)}; known: cpu, all, {', '.join(SUBJECTS)}")
    chosen = [m for m in MUTANTS if m.subject in wanted]
    if names:
        missing = [pat for pat in names if not any(fnmatch(m.name, pat) for m in MUTANTS)]
        if missing:
            raise SystemExit(f"unknown mutants {sorted(missing)}")
        chosen = [m for m in chosen if any(fnmatch(m.name, pat) for pat in names)]
    return chosen


def modes_of(m: Mutant, modes: tuple[str, ...] = MODES) -> tuple[str, ...]:
    """The verdicts a mutant gets: three for the concurrency mutants (a variant), else plain."""
    return tuple(modes) if m.variant else ("plain",)


def _key(subject: str, mode: str, variant: str) -> tuple[str, str, str]:
    return (subject, mode, variant)


def _exec_modes(m: Mutant, modes: tuple[str, ...]) -> list[str]:
    """The processes a mutant's verdicts need: ``props`` (plain and perturbed in one pytest
    process) or each alone, ``static``; the sanitizer's tasks (one per tool) come after."""
    if not m.variant:
        return ["plain"]
    out = [PROPS] if "plain" in modes and "perturbed" in modes else [md for md in ("plain", "perturbed") if md in modes]
    return out + ([STATIC_MODE] if STATIC_MODE in modes else [])


def _merge_sanitizer(name: str, subject: str, kind: str, tool_results: list[Result]) -> Result:
    """One sanitizer verdict from its tools' tasks: caught by any tool, else timeout / SURVIVED."""
    verdicts = [r.verdict for r in tool_results]
    tools = [r.mode.split(":", 1)[1] for r in tool_results]
    merged = Result(name, subject, kind, "", mode="sanitizer", wall_s=max((r.wall_s for r in tool_results), default=0.0),
                    command=" ; ".join(r.command for r in tool_results))
    caught = [(t, r) for t, r in zip(tools, tool_results) if r.verdict.startswith("caught")]
    if caught:
        merged.verdict = "caught"
        merged.caught_by = "; ".join(f"{t}: {r.caught_by}" for t, r in caught)
    elif "FAILED" in verdicts:
        merged.verdict = "FAILED"
        merged.caught_by = "; ".join(f"{t}: {r.caught_by}" for t, r in zip(tools, tool_results) if r.verdict == "FAILED")
    else:
        for v in ("error", "timeout", "not-run", "skipped"):
            if v in verdicts:
                merged.verdict = v
                break
        else:
            merged.verdict = verdicts[0] if verdicts else "not-run"
    merged.detail = ", ".join(f"{t} {v}" for t, v in zip(tools, verdicts))
    # every tool's output tail where it did not come out clean (an error's above all: the JSON
    # record is the only trace of why), so the merged verdict never loses it
    merged.output_tail = "\n".join(f"--- {t} [{r.verdict}] {r.detail}\n{r.output_tail[-2000:]}"
                                    for t, r in zip(tools, tool_results)
                                    if r.verdict not in ("passed", "SURVIVED", "not-run"))
    if verdicts and all(v == "not-run" for v in verdicts) and tool_results[0].detail:
        merged.detail = tool_results[0].detail  # why none ran (a hang, or a property caught it)
    return merged


def task_priority(m: Mutant | None, subject: str, mode: str, of: Mutant | None) -> int:
    """Queue order of a runner task (lower first; FIFO among equals): what takes longest and can
    change a verdict first, so a device budget cuts the short or the argued-unobservable tasks.
    0 baseline property runs, 1 concurrency property runs, 2 sanitizer tasks, 3 the value mutants
    (and CPU tasks), 4 the mutants of ``ci.mutants.UNOBSERVABLE`` (property and sanitizer)."""
    from ci.mutants import UNOBSERVABLE

    if m is not None and m.name in UNOBSERVABLE:
        return 4
    if mode.startswith("sanitizer"):
        return 2
    if m is None:
        return 0
    return 1 if m.variant else 3


def task_needs_gpu(item) -> bool:
    """Whether a runner task ``(mutant, subject, mode, baseline_of)`` runs on a GPU: the GPU
    subjects' runs, except the CPU-compiled ``static`` verdict."""
    _m, subject, mode, _of = item
    return subject not in CPU_SUBJECTS and mode != STATIC_MODE


class _PriorityPool:
    """``jobs`` worker threads over a priority queue (lower :func:`task_priority` first, FIFO among
    equals). Tasks may submit more tasks from their ``done`` callback; :meth:`join` returns when
    the queue is empty and no task runs. (A ThreadPoolExecutor runs strictly FIFO: the sanitizer
    tasks, submitted as property runs finish, would queue behind every value mutant.)

    With ``slots`` (:class:`properties.gpu_pool.GpuSlots`), a task for which ``needs_gpu(item)``
    starts only when a GPU has a free slot, and runs as ``fn(item, gpu)``; until then the best
    task that needs no GPU goes first. Every other task runs as ``fn(item, None)``."""

    def __init__(self, jobs: int, priority, slots: gpu_pool.GpuSlots | None = None, needs_gpu=task_needs_gpu):
        import itertools
        import threading

        self.jobs, self.priority = jobs, priority
        self.slots, self.needs_gpu = slots, needs_gpu
        self._heap: list = []
        self._count = itertools.count()
        self._cv = threading.Condition()
        self._running = 0
        self._threads: list = []
        self.errors: list = []

    def submit(self, fn, item, done=None):
        import heapq
        from concurrent.futures import Future

        fut: Future = Future()
        with self._cv:
            heapq.heappush(self._heap, (self.priority(item), next(self._count), fn, item, done, fut))
            self._cv.notify()
        return fut

    def _pick(self):
        """The first queued task that can start now (under the lock), removed from the queue."""
        import heapq

        gpu_free = self.slots is None or self.slots.free()
        best = None
        for entry in self._heap:
            if (gpu_free or not self.needs_gpu(entry[3])) and (best is None or entry[:2] < best[:2]):
                best = entry
        if best is not None:
            self._heap.remove(best)
            heapq.heapify(self._heap)
        return best

    def _worker(self):
        while True:
            with self._cv:
                while True:
                    entry = self._pick()
                    if entry is not None or not self._running:
                        break
                    self._cv.wait()  # nothing queued, or only GPU tasks and every GPU busy
                if entry is None:  # nothing queued, nothing running: no task can add more
                    self._cv.notify_all()
                    return
                _, _, fn, item, done, fut = entry
                gpu = self.slots.take() if self.slots is not None and self.needs_gpu(item) else None
                self._running += 1
            try:
                fut.set_result(fn(item, gpu))
            except BaseException as e:  # noqa: BLE001 - surfaced by join
                fut.set_exception(e)
            if gpu is not None:
                with self._cv:
                    self.slots.give(gpu)
                    self._cv.notify_all()
            try:
                if done is not None:
                    done(fut)
            except BaseException as e:  # noqa: BLE001 - re-raised by join
                self.errors.append(e)
            finally:
                with self._cv:
                    self._running -= 1
                    self._cv.notify_all()

    def start(self):
        import threading

        self._threads = [threading.Thread(target=self._worker, daemon=True) for _ in range(self.jobs)]
        for t in self._threads:
            t.start()

    def join(self):
        for t in self._threads:
            t.join()
        if self.errors:
            raise self.errors[0]


def run_all(mutants: list[Mutant], *, jobs: int, baseline: bool, carry: list[str], timeout: float,
            keep: bool = False, log=print, deadline_s: float | None = None,
            modes: tuple[str, ...] = MODES, jobs_per_gpu: int = 1, gpus: list[str] | None = None,
            warm: bool = True, stop=None) -> list[Result]:
    """Run the mutants (and with ``baseline`` each subject unmutated, first; for the concurrency
    mutants each variant and verdict) ``jobs`` processes at a time.

    A concurrency mutant's two property verdicts come from one pytest process (``props``); its
    sanitizer verdict from one task per tool, started when its property run is done, and not at
    all when that run showed a hang (a sanitized kernel that never ends can only time out; the
    cell says so). Mutants recorded as equivalent (``ci.mutants.EQUIVALENT``: the compiled code
    does not change) are not run. Order (:func:`task_priority`; the longest runs first, the
    short ones fill the end): baselines, concurrency property runs, sanitizer tasks as property
    runs finish (ahead of anything still queued below them), the value mutants (plain property,
    caught on their first examples), and last the concurrency mutants recorded as unobservable
    (``ci.mutants.UNOBSERVABLE``) with their sanitizer tasks. ``deadline_s``: total wall budget; a
    run gets at most what is left, and runs that would start with less than 20 s left are
    reported as ``not-run``. GPU runs (:func:`task_needs_gpu`) get a GPU each from ``gpus``
    (default: the visible ones, ``properties.gpu_pool``), at most ``jobs_per_gpu`` per GPU at once.
    ``warm`` (where the platform can fork): the CPU subjects' pytest runs are forks of one warm
    interpreter (:mod:`ci.warm_pytest`) rather than fresh ones. ``stop`` (a
    :class:`threading.Event`): once set, runs not yet started are reported as ``not-run``."""
    import threading

    t0 = time.perf_counter()
    files = repo_files()
    reason = gpu_reason() if any(m.needs_gpu for m in mutants) else None
    if gpus is None and reason is None and any(m.needs_gpu for m in mutants):
        gpus = gpu_pool.gpus_from_env()
    slots = gpu_pool.GpuSlots(gpus, jobs_per_gpu) if gpus and reason is None else None
    if slots is not None:
        log(f"[mutation] GPU runs on {', '.join(slots.gpus)}, at most {jobs_per_gpu} per GPU at a time")
    tools = tuple(SANITIZER_TOOLS) if "sanitizer" in modes else ()
    lock = threading.Lock()
    done: list[tuple[Result, tuple]] = []
    futures: list = []
    results: dict[tuple[str, str], Result] = {}
    sync_variants = {m.variant for m in mutants if m.variant}

    def gpu_skip(m: Mutant, mode: str) -> bool:
        return m.needs_gpu and reason is not None and mode != STATIC_MODE

    def task(item, gpu=None):
        m, s, mode, of = item
        limit = timeout if s != "hopper" else min(timeout, 240)
        if mode.startswith("sanitizer"):  # one sanitized process, plus the copy and the start
            limit = min(limit, SANITIZER_PROCESS_TIMEOUT + 20)
        name = m.name if m else _baseline_name(s, of)
        if stop is not None and stop.is_set():
            return [Result(name, s, m.kind if m else "", "not-run", mode=md, detail="stopped")
                    for md in (("plain", "perturbed") if mode == PROPS else (mode,))]
        if deadline_s is not None:
            left = deadline_s - (time.perf_counter() - t0)
            if left < 20:
                kind = m.kind if m else ""
                rs = [Result(name, s, kind, "not-run", mode=md, detail=f"--deadline {deadline_s:g} s reached")
                      for md in (("plain", "perturbed") if mode == PROPS else (mode,))]
                log(f"[mutation] {name} [{mode}]: not run (deadline)")
                return rs
            limit = min(limit, left)
        r = run_one(m, s, carry=carry, timeout=limit, keep=keep, files=files, mode=mode, baseline_of=of, gpu=gpu,
                    warm=server[0] if server and s in CPU_SUBJECTS else None)
        rs = r if isinstance(r, list) else [r]
        on = f", GPU {gpu}" if gpu is not None else ""
        for x in rs:
            log(f"[mutation] {x.name} [{x.mode}]: {x.verdict} {x.caught_by} ({x.wall_s:.1f} s{on})")
        return rs

    pool = _PriorityPool(max(1, jobs), priority=lambda item: task_priority(*item), slots=slots)

    def submit(item):
        def finished(fut):
            rs = fut.result()
            with lock:
                done.extend((r, item) for r in rs)
            m, s, mode, of = item
            # the sanitizer's tasks follow a concurrency mutant's property run, unless it hung
            if tools and mode in (PROPS, "plain", "perturbed") and (m is not None and m.variant or of is not None and of.variant):
                hung = [r for r in rs if r.verdict == "caught (hang)"]
                caught = [r for r in rs if r.verdict.startswith("caught")] if m is not None else []
                for tool in tools:
                    if hung or caught:
                        why = (f"the mutant hangs ({hung[0].mode} property: caught (hang)); "
                               "a sanitized run of it could only time out") if hung else (
                            f"caught by the {caught[0].mode} property: the sanitizer adds nothing")
                        skip = Result(rs[0].name, s, rs[0].kind, "not-run", mode=f"sanitizer:{tool}", detail=why)
                        with lock:
                            done.append((skip, (m, s, f"sanitizer:{tool}", of)))
                    else:
                        submit((m, s, f"sanitizer:{tool}", of))
        fut = pool.submit(task, item, done=finished)
        with lock:
            futures.append(fut)

    first: list = []
    if baseline:
        seen = set()
        first += [(None, b.subject, "plain", b) for b in cpu_baselines(mutants)]
        for m in sorted(mutants, key=lambda m: SUBJECTS.index(m.subject)):
            if m.subject in CPU_SUBJECTS and not m.variant:
                continue  # cpu_baselines
            for mode in _exec_modes(m, modes):
                if gpu_skip(m, mode):
                    continue
                if m.subject == "hopper" and not m.variant and HOPPER_VARIANT in sync_variants and PROPS in _exec_modes(
                        next(x for x in mutants if x.variant == HOPPER_VARIANT), modes):
                    continue  # the default variant's props baseline is the value mutants' baseline too
                key = (m.subject, mode, m.variant)
                if key not in seen:
                    seen.add(key)
                    first.append((None, m.subject, mode, m if m.variant else None))
    sync_tasks, other_tasks = [], []
    for m in mutants:
        if m.variant and m.equivalent_because:
            for md in [x for x in modes if x in MODES or x == STATIC_MODE]:
                results[m.name, md] = Result(m.name, m.subject, m.kind, "equivalent", mode=md,
                                             detail=f"not run: {m.equivalent_because}")
            continue
        for mode in _exec_modes(m, modes):
            if gpu_skip(m, mode):
                for md in (("plain", "perturbed") if mode == PROPS else (mode,)):
                    results[m.name, md] = Result(m.name, m.subject, m.kind, "skipped", mode=md, detail=reason)
                continue
            (sync_tasks if m.variant else other_tasks).append((m, m.subject, mode, None))
        if m.variant and tools and not [md for md in ("plain", "perturbed") if md in modes]:
            if gpu_skip(m, "sanitizer"):
                results[m.name, "sanitizer"] = Result(m.name, m.subject, m.kind, "skipped", mode="sanitizer", detail=reason)
            else:
                sync_tasks += [(m, m.subject, f"sanitizer:{t}", None) for t in tools]
        elif m.variant and tools and gpu_skip(m, "sanitizer"):
            results[m.name, "sanitizer"] = Result(m.name, m.subject, m.kind, "skipped", mode="sanitizer", detail=reason)
    for item in first + sync_tasks + other_tasks:
        submit(item)
    server = []
    if warm and hasattr(os, "fork") and any(m.subject in CPU_SUBJECTS and not m.variant for m in mutants):
        from ci.warm_pytest import WarmPytest

        server.append(WarmPytest())
    try:
        pool.start()
        pool.join()
    finally:
        for w in server:
            w.close()
    for f in futures:
        f.result()  # a task that raised

    # sanitizer tools -> one verdict per mutant (and per baseline variant)
    by_tool: dict[tuple[str, tuple], list[Result]] = {}
    merged_done: list[tuple[Result, tuple]] = []
    for r, item in done:
        if r.mode.startswith("sanitizer:"):
            m, s, _mode, of = item
            by_tool.setdefault((r.name, (m, s, of)), []).append(r)
        else:
            merged_done.append((r, item))
    for (name, (m, s, of)), rs in by_tool.items():
        rs.sort(key=lambda r: SANITIZER_TOOLS.index(r.mode.split(":", 1)[1]))
        merged_done.append((_merge_sanitizer(name, s, rs[0].kind, rs), (m, s, "sanitizer", of)))

    base, cpu_base = {}, []
    for r, (m, s, mode, of) in merged_done:
        if m is None and s in CPU_SUBJECTS and of is not None and not of.variant:
            base[of.name] = r
            cpu_base.append((of, r))
        elif m is None:
            base[_key(s, r.mode, of.variant if of else "")] = r
    for r, (m, s, mode, _of) in merged_done:
        if m is None:
            continue
        if s in CPU_SUBJECTS and not m.variant:
            # the unmutated runs of m's selection: a failing one first, else an inconclusive one
            backing = sorted((b for of, b in cpu_base if backs(of, m)),
                             key=lambda b: (b.verdict != "FAILED", b.verdict == "passed"))
            b = backing[0] if backing else None
        else:
            variant = m.variant or (HOPPER_VARIANT if m.subject == "hopper" and _key("hopper", "plain", HOPPER_VARIANT) in base
                                    and _key("hopper", "plain", "") not in base else "")
            b = base.get(_key(s, r.mode, variant))
        if b is not None and b.verdict == "FAILED" and r.verdict.startswith("caught"):
            r.verdict, r.detail = "baseline-failed", f"the unmutated selection fails too: {b.caught_by} {b.detail}"
        elif b is not None and b.verdict != "passed":
            r.detail = f"(baseline inconclusive: {b.verdict}) {r.detail}"
        results[m.name, r.mode] = r
    ordered = [results[m.name, mode] for m in mutants for mode in modes_of(m, modes) if (m.name, mode) in results]
    return [*base.values(), *ordered]


def sync_markdown(results: list[Result], equivalence: dict[str, str] | None = None) -> str:
    """One row per concurrency mutant: its three verdicts side by side (and the CPU SASS check)."""
    by: dict[str, dict[str, Result]] = {}
    kinds: dict[str, str] = {}
    for r in results:
        if r.name.startswith("hopper_sync_") or r.name.startswith("(baseline h90"):
            by.setdefault(r.name, {})[r.mode] = r
            kinds[r.name] = r.kind
    variants = {m.name: m.variant for m in SYNC_MUTANTS}

    def cell(r: Result | None) -> str:
        if r is None:
            return "-"
        if r.verdict == "not-run" and r.detail.startswith(("caught by", "the mutant hangs")):
            return "not needed (hang)" if r.detail.startswith("the mutant") else f"not needed ({r.detail.split(':')[0]})"
        ex = f", {r.examples} ex" if r.examples else (f", {r.checked_examples} checks" if r.checked_examples and r.verdict.startswith("caught") else "")
        return f"{r.verdict}{ex}, {r.wall_s:.0f} s"

    head = ("| mutant | variant | bug | plain | perturbed | sanitizer | static (CPU) | SASS (CPU) |\n"
            "| --- | --- | --- | --- | --- | --- | --- | --- |")
    rows = []
    for name, modes in by.items():
        variant = variants.get(name, name.removeprefix("(baseline ").rstrip(")"))
        sass_cell = (equivalence or {}).get(name, "")
        rows.append(f"| `{name}` | {variant} | {kinds[name]} | {cell(modes.get('plain'))} | "
                    f"{cell(modes.get('perturbed'))} | {cell(modes.get('sanitizer'))} | "
                    f"{cell(modes.get(STATIC_MODE))} | {sass_cell} |")
    return "\n".join([head, *rows])


def sync_summary(results: list[Result], equivalent: set[str] = frozenset()) -> dict:
    """Caught counts over the non-equivalent concurrency mutants, per verdict and together."""
    names = [m.name for m in SYNC_MUTANTS if m.name not in equivalent and any(r.name == m.name for r in results)]
    caught = {mode: {r.name for r in results if r.mode == mode and r.verdict.startswith("caught")} for mode in MODES}
    either = caught["plain"] | caught["perturbed"] | caught["sanitizer"]
    return {
        "mutants": len(names),
        "plain": len(caught["plain"] & set(names)),
        "perturbed": len(caught["perturbed"] & set(names)),
        "sanitizer": len(caught["sanitizer"] & set(names)),
        "plain_or_sanitizer": len((caught["plain"] | caught["sanitizer"]) & set(names)),
        "any": len(either & set(names)),
        "only_perturbed": sorted((caught["perturbed"] - caught["plain"]) & set(names)),
    }


def sass_equivalence(mutants: list[Mutant], *, jobs: int = 1, log=print) -> dict[str, str]:
    """CPU only: compile each mutant's variant in a mutated copy and compare its SASS with the
    unmutated variant's (ci.sass_identity, that one label). ``unchanged`` is the proof of an
    equivalent mutant. Each variant compiles unmutated once, however many of its mutants are
    given; the unmutated and the mutated compiles all run ``jobs`` at a time."""
    files = repo_files()

    def dump(mutant: Mutant | None, label: str) -> str:
        tmp = Path(tempfile.mkdtemp(prefix="mutant-sass-"))
        make_copy(tmp, files, [])
        if mutant:
            mutant.apply(tmp)
        out = tmp / ".sass"
        env = dict(os.environ, PYTHONPATH=str(tmp), PYTHONDONTWRITEBYTECODE="1", CUTE_DSL_ARCH="sm_90a")
        try:
            subprocess.run([sys.executable, "-m", "ci.sass_identity", "dump", str(out), "--family=hopper",
                            f"--label={label}"], cwd=tmp, env=env, check=True, capture_output=True)
            return (out / f"{label}.sass").read_text()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    chosen = [m for m in mutants if m.variant]
    labels = sorted({m.variant for m in chosen})
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        base = {label: pool.submit(dump, None, label) for label in labels}

        def mutated(m: Mutant) -> str | Exception:
            try:
                return dump(m, m.variant)
            except (subprocess.CalledProcessError, FileNotFoundError) as e:
                return e

        texts = {m.name: pool.submit(mutated, m) for m in chosen}
        out = {}
        for m in chosen:
            text = texts[m.name].result()
            if isinstance(text, Exception):
                out[m.name] = f"does not compile ({type(text).__name__})"
                continue
            out[m.name] = "unchanged" if text == base[m.variant].result() else "changed"
            log(f"[sass] {m.name}: {out[m.name]}")
        return out


def markdown(results: list[Result]) -> str:
    head = "| mutant | subject | bug | verdict | caught by | examples | wall s |\n| --- | --- | --- | --- | --- | --- | --- |"
    rows = []
    for r in results:
        ex = "" if r.examples is None else str(r.examples)
        if r.examples is None and r.checked_examples is not None and r.verdict.startswith("caught"):
            ex = f"{r.checked_examples} (checks)"
        by = f"`{r.caught_by}`" if r.caught_by else (
            r.detail if r.verdict in ("skipped", "error", "timeout", "equivalent") else ""
        )
        name = r.name if r.mode == "plain" else f"{r.name} [{r.mode}]"
        rows.append(f"| `{name}` | {r.subject} | {r.kind} | {r.verdict} | {by} | {ex} | {r.wall_s:.1f} |")
    return "\n".join([head, *rows])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--subject", action="append", default=[], help="cpu (default), all, or one of " + ", ".join(SUBJECTS))
    p.add_argument("--mutant", action="append", default=[], help="only these mutants (repeatable; shell patterns, e.g. '*__prod')")
    p.add_argument("--section", choices=("all", "sync"), default="all",
                   help="sync: only the concurrency / memory-safety mutants (ci.mutants.SYNC_MUTANTS)")
    p.add_argument("--modes", default=",".join(MODES),
                   help="verdicts of the concurrency mutants, comma-separated subset of "
                   + ",".join((*MODES, STATIC_MODE)) + " (static: CPU)")
    p.add_argument("--sass-equivalence", action="store_true",
                   help="CPU: compile each concurrency mutant's variant and report whether its SASS changed")
    p.add_argument("--sync-markdown", type=Path, help="write the three-verdict table of the concurrency mutants here")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="mutants run in parallel (default: cores)")
    p.add_argument("--jobs-per-gpu", type=int, default=1,
                   help="GPU runs at once on one GPU (default 1); GPU runs are spread over the visible GPUs "
                   "(CUDA_VISIBLE_DEVICES), --jobs caps all runs together")
    p.add_argument("--baseline", action="store_true",
                   help="also run the selections unmutated (CPU subjects: per subject and option set, the union "
                   "of its mutants' selections, each test once)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per mutant run (Hopper: at most 240)")
    p.add_argument("--deadline", type=float, default=None, help="total wall seconds for all runs (GPU budgets)")
    p.add_argument("--carry", action="append", default=None, help="ignored paths to symlink into each copy (default .device)")
    p.add_argument("--max-examples", type=int, default=None,
                   help="at most this many examples per property in each mutant run (default: the ci profile's 50)")
    p.add_argument("--markdown", type=Path)
    p.add_argument("--json", type=Path)
    p.add_argument("--keep", action="store_true", help="keep the mutated copies")
    p.add_argument("--cold", action="store_true",
                   help="start every CPU run in a fresh interpreter (default: forks of one warm one, ci.warm_pytest)")
    a = p.parse_args(argv)
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    if a.section == "sync":
        mutants = [m for m in SYNC_MUTANTS if not a.mutant or any(fnmatch(m.name, pat) for pat in a.mutant)]
    else:
        mutants = select_mutants(a.subject or ["cpu"], a.mutant)
    if a.sass_equivalence:
        eq = sass_equivalence([m for m in mutants if m.variant], jobs=a.jobs, log=log)
        for name, verdict in eq.items():
            print(f"{name}: {verdict}")
        if a.json:
            a.json.write_text(json.dumps(eq, indent=1))
        return 0
    if a.jobs_per_gpu < 1:
        raise SystemExit(f"--jobs-per-gpu must be at least 1, not {a.jobs_per_gpu}")
    modes = tuple(x for x in a.modes.split(",") if x)
    unknown_modes = set(modes) - set(MODES) - {STATIC_MODE}
    if unknown_modes:
        raise SystemExit(f"unknown modes {sorted(unknown_modes)}; known: {', '.join(MODES)}")
    if a.max_examples:
        os.environ["NVFP4_MUTANT_MAX_EXAMPLES"] = str(a.max_examples)  # read by ci.mutant_plugin in each run
    log(f"[mutation] {len(mutants)} mutants, {a.jobs} jobs, baseline={a.baseline}, max examples {a.max_examples or 'profile'}")
    start = time.perf_counter()
    results = run_all(mutants, jobs=a.jobs, baseline=a.baseline, carry=a.carry if a.carry is not None else [".device"],
                      timeout=a.timeout, keep=a.keep, log=log, deadline_s=a.deadline, modes=modes,
                      jobs_per_gpu=a.jobs_per_gpu, warm=not a.cold)
    table = markdown(results)
    print(table)
    total = time.perf_counter() - start
    if any(m.variant for m in mutants):
        from ci.mutants import EQUIVALENT

        sync_table = sync_markdown(results, {n: "unchanged (equivalent)" for n in EQUIVALENT})
        summary = sync_summary(results, set(EQUIVALENT))
        print("\n" + sync_table)
        print(f"\nconcurrency mutants (non-equivalent): {summary}")
        if a.sync_markdown:
            a.sync_markdown.write_text(sync_table + f"\n\nSummary: {json.dumps(summary)}\n")
    print(f"\n{sum(r.verdict.startswith('caught') for r in results)} caught of "
          f"{sum(1 for r in results if not r.name.startswith('(baseline') and r.verdict != 'skipped')} run; "
          f"{total:.0f} s wall")
    if a.markdown:
        a.markdown.write_text(table + "\n")
    if a.json:
        a.json.write_text(json.dumps({"wall_s": round(total, 1), "results": [asdict(r) for r in results]}, indent=1))
    bad = [r for r in results if r.verdict not in ("caught", "caught (error)", "skipped", "passed", "not-run")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
