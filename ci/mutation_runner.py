"""Mutation testing: does the property suite catch the planted bugs of ci/mutants.py?

    python -m ci.mutation_runner [--subject=cpu|all|model|plan|hopper|blackwell-static ...]
                                 [--mutant=NAME ...] [--jobs=N] [--baseline] [--timeout=S]
                                 [--markdown=PATH] [--json=PATH] [--keep] [--carry=PATH ...]

For each selected mutant: copy the repository (``git ls-files`` plus untracked files git does
not ignore; ignored paths named by ``--carry``, e.g. ``.device``, are symlinked) into a fresh
temporary directory, apply the mutant there (the working tree is never touched), and run the
mutant's pytest selection in that copy::

    python -m pytest -x -q -p no:cacheprovider -p ci.mutant_plugin --hypothesis-profile=ci SELECTION

(``ci.mutant_plugin`` keeps the ci profile but skips shrinking, and logs every Hypothesis test
case; ``properties/checks.py`` logs every checked example to ``NVFP4_EXAMPLE_LOG``).

Verdicts: ``caught`` (pytest failed: the first failing test is named, with the number of
examples that test ran up to and including the first failing one), ``SURVIVED`` (everything
passed), ``timeout``, ``error`` (pytest could not run: exit status other than 0/1), ``skipped``
(a GPU mutant without an sm_90 GPU), ``baseline-failed`` (``--baseline``: the unmutated
selection already fails, so a failure proves nothing). Exit status 1 when any mutant that ran
was not caught.

Subjects ``cpu`` = model + plan + blackwell-static (what CI runs: ci/test_mutants.py);
``hopper`` needs the H200 (``source .device/env.sh`` first; see properties/MUTANTS.md).
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
from pathlib import Path

from ci.mutants import CPU_SUBJECTS, MUTANTS, SUBJECTS, Mutant

ROOT = Path(__file__).resolve().parents[1]
PYTEST_BASE = ["-x", "-q", "-p", "no:cacheprovider", "-p", "ci.mutant_plugin", "--hypothesis-profile=ci"]
# GPU runs: an example that hangs (a missing barrier can deadlock) is killed after this long
HOPPER_OPTIONS = ["--example-timeout=40"]
HOPPER_ENV = {"NVFP4_FIRST_EXAMPLE_EXTRA": "90", "CUTE_DSL_ARCH": "sm_90a"}
_FAILED_RE = re.compile(r"^(FAILED|ERROR) (\S+)", re.M)


@dataclass
class Result:
    name: str
    subject: str
    kind: str
    verdict: str
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


def pytest_command(mutant_or_subject) -> tuple[list[str], dict[str, str]]:
    subject = mutant_or_subject.subject if isinstance(mutant_or_subject, Mutant) else mutant_or_subject
    select = list(mutant_or_subject.select) if isinstance(mutant_or_subject, Mutant) else list(_SUBJECT_SELECT[subject])
    cmd = [sys.executable, "-m", "pytest", *PYTEST_BASE, *select]
    env = {}
    if subject == "hopper":
        cmd += HOPPER_OPTIONS
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


def run_one(mutant: Mutant | None, subject: str, *, carry: list[str], timeout: float, keep: bool,
            files: list[str]) -> Result:
    """One mutant (or, ``mutant=None``, the unmutated baseline of ``subject``) in a fresh copy."""
    name = mutant.name if mutant else f"(baseline {subject})"
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
        cmd, extra_env = pytest_command(mutant or subject)
        obs, log = tmp / ".mutant-observations.jsonl", tmp / ".mutant-examples.log"
        env = dict(os.environ, **extra_env)
        env.update(
            PYTHONPATH=os.pathsep.join(filter(None, [str(tmp), os.environ.get("PYTHONPATH")])),
            PYTHONDONTWRITEBYTECODE="1",
            NVFP4_MUTANT_OBS=str(obs),
            NVFP4_EXAMPLE_LOG=str(log),
        )
        shown = " ".join(cmd[1:]).replace(sys.executable, "python")
        try:
            proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            return Result(name, subject, kind, "timeout", wall_s=round(time.perf_counter() - start, 1),
                          command=f"python {shown}", detail=f"no verdict within {timeout:.0f} s",
                          output_tail=out[-3000:])
        wall = round(time.perf_counter() - start, 1)
        output = proc.stdout + proc.stderr
        checked = None
        if log.exists():
            lines = log.read_text().splitlines()
            fails = [i for i, l in enumerate(lines) if l.startswith("fail")]
            checked = (fails[0] + 1) if fails else len(lines)
        res = Result(name, subject, kind, "", wall_s=wall, command=f"python {shown}", checked_examples=checked,
                     output_tail=output[-4000:])
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
        else:
            res.verdict = "error"
            res.detail = f"pytest exit status {proc.returncode}"
        return res
    finally:
        if keep:
            print(f"[mutation] kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def select_mutants(subjects: list[str], names: list[str]) -> list[Mutant]:
    wanted: set[str] = set()
    for s in subjects:
        wanted |= set(CPU_SUBJECTS) if s == "cpu" else set(SUBJECTS) if s == "all" else {s}
    unknown = wanted - set(SUBJECTS)
    if unknown:
        raise SystemExit(f"unknown subjects {sorted(unknown)}; known: cpu, all, {', '.join(SUBJECTS)}")
    chosen = [m for m in MUTANTS if m.subject in wanted]
    if names:
        missing = set(names) - {m.name for m in MUTANTS}
        if missing:
            raise SystemExit(f"unknown mutants {sorted(missing)}")
        chosen = [m for m in chosen if m.name in names]
    return chosen


def run_all(mutants: list[Mutant], *, jobs: int, baseline: bool, carry: list[str], timeout: float,
            keep: bool = False, log=print, deadline_s: float | None = None) -> list[Result]:
    """Run the mutants (and with ``baseline`` each subject unmutated, first) ``jobs`` at a time.
    ``deadline_s``: total wall budget; a run gets at most what is left, and runs that would start
    with less than 20 s left are reported as ``not-run``."""
    t0 = time.perf_counter()
    files = repo_files()
    reason = gpu_reason() if any(m.needs_gpu for m in mutants) else None
    results: dict[str, Result] = {}
    runnable = []
    for m in mutants:
        if m.needs_gpu and reason:
            results[m.name] = Result(m.name, m.subject, m.kind, "skipped", detail=reason)
        else:
            runnable.append(m)
    subjects = sorted({m.subject for m in runnable}, key=SUBJECTS.index)
    tasks = [(None, s) for s in subjects] if baseline else []
    tasks += [(m, m.subject) for m in runnable]

    def task(item):
        m, s = item
        limit = timeout if s != "hopper" else min(timeout, 240)
        if deadline_s is not None:
            left = deadline_s - (time.perf_counter() - t0)
            if left < 20:
                name = m.name if m else f"(baseline {s})"
                r = Result(name, s, m.kind if m else "", "not-run", detail=f"--deadline {deadline_s:g} s reached")
                log(f"[mutation] {r.name}: not run (deadline)")
                return r
            limit = min(limit, left)
        r = run_one(m, s, carry=carry, timeout=limit, keep=keep, files=files)
        log(f"[mutation] {r.name}: {r.verdict} {r.caught_by} ({r.wall_s:.1f} s)")
        return r

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        done = list(pool.map(task, tasks))
    base = {r.subject: r for r in done if r.name.startswith("(baseline")}
    for r in done:
        if r.name.startswith("(baseline"):
            continue
        b = base.get(r.subject)
        if b is not None and b.verdict == "FAILED" and r.verdict.startswith("caught"):
            r.verdict, r.detail = "baseline-failed", f"the unmutated selection fails too: {b.caught_by} {b.detail}"
        elif b is not None and b.verdict != "passed":
            r.detail = f"(baseline inconclusive: {b.verdict}) {r.detail}"
        results[r.name] = r
    ordered = [results[m.name] for m in mutants]
    return [*base.values(), *ordered]


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
        rows.append(f"| `{r.name}` | {r.subject} | {r.kind} | {r.verdict} | {by} | {ex} | {r.wall_s:.1f} |")
    return "\n".join([head, *rows])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--subject", action="append", default=[], help="cpu (default), all, or one of " + ", ".join(SUBJECTS))
    p.add_argument("--mutant", action="append", default=[], help="only these mutants (repeatable)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="mutants run in parallel (default: cores)")
    p.add_argument("--baseline", action="store_true", help="also run each subject's selection unmutated")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per mutant run (Hopper: at most 240)")
    p.add_argument("--deadline", type=float, default=None, help="total wall seconds for all runs (GPU budgets)")
    p.add_argument("--carry", action="append", default=None, help="ignored paths to symlink into each copy (default .device)")
    p.add_argument("--markdown", type=Path)
    p.add_argument("--json", type=Path)
    p.add_argument("--keep", action="store_true", help="keep the mutated copies")
    a = p.parse_args(argv)
    mutants = select_mutants(a.subject or ["cpu"], a.mutant)
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    log(f"[mutation] {len(mutants)} mutants, {a.jobs} jobs, baseline={a.baseline}")
    start = time.perf_counter()
    results = run_all(mutants, jobs=a.jobs, baseline=a.baseline, carry=a.carry if a.carry is not None else [".device"],
                      timeout=a.timeout, keep=a.keep, log=log, deadline_s=a.deadline)
    table = markdown(results)
    print(table)
    total = time.perf_counter() - start
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
