"""compute-sanitizer over a small matrix: tools x kernel variants x ragged cases, one table.

    python -m ci.sanitize [--subject=hopper] [--variant=L ...] [--tool=memcheck ...] [--case=NAME ...]
                          [--jobs=N] [--timeout=S] [--kernel-name=FILTER] [--require]

For each (tool, variant) one process runs under ``compute-sanitizer --tool TOOL``: this module in
``--driver`` mode, which checks every case in turn (``check_example_in_process``: the oracle, the
canaries, no rerun) between printed markers, so each sanitizer report is attributed to its case.
The process's "ERROR SUMMARY: N errors" is the verdict; a case that fails its check, a process
that dies or times out, or a missing summary also fail. Exit status: 0 clean (or skipped: no GPU,
no compute-sanitizer; ``--require`` makes a skip exit 2), 1 when anything was found.

The sanitized process runs in-process (``NVFP4_ISOLATE=never``) with torch's caching allocator
off (``PYTORCH_NO_CUDA_MEMORY_CACHING=1``), so every tensor is its own allocation and memcheck
sees a write past one. CuTe DSL compiles the kernel inside the sanitized process: the cases are
small so that racecheck and synccheck stay within minutes.

What the tools can see in these kernels (docs/mutants.md, "Concurrency and memory-safety
mutants", has the measured verdicts): they instrument the memory instructions a thread executes
(LDS/STS/LDG/STG/LDGSTS). TMA copies (UTMALDG, written by the copy engine, attributed to no
thread) and wgmma's shared-memory operand reads (HGMMA, through descriptors) are not thread
accesses, so racecheck has no access to pair with them; mbarrier protocols are not what synccheck
checks (it checks barrier use). ``ci.mutation_runner`` uses this module as its third verdict
(``--tool`` each of memcheck, racecheck, synccheck, initcheck, ``--variant`` the mutant's).
A perturbed subject (``hopper~TAG``, properties/perturbed.py) can be sanitized too.

initcheck (not a default tool). Before compare() changed, initcheck reported 6582 uninitialized
device reads on the fastest Hopper variant, all in the ``ragged`` case and attributed to the
host frame ``oracle/compare.py:77``: ``torch.topk`` over the flattened "badness" of one group,
run on the GPU. Evidence that they were torch's, not the kernel's nor the harness's buffers:

* the launching host frame was the topk call, a kernel of torch's, not the subject's launch;
* PyTorch's CUDA topk takes its multi-block path (``mbtopk``, aten/src/ATen/native/cuda/
  TensorTopK.cu, ``should_use_multiblock``: one slice of 20000 elements or more) only for
  ``ragged``'s 129 x 200 = 25800-element group; every other case's groups are below 20000
  (edges 8320 and 8192, empty_group 12288) and reported nothing. That path reads scratch
  buffers it allocates uninitialized;
* every buffer the harness hands a kernel is initialized: inputs (``torch.full`` for packed
  layouts, gaps and the blocked scales' padding), outputs (canary-filled, NaN-poisoned).

compare() now ranks the worst elements only for a group that has violations, and on the CPU,
so a passing check launches no topk on the device. Expected: initcheck clean on the
production variants (``python -m ci.sanitize --tool=initcheck --case=ragged --case=edges
--case=empty_group --variant=LABEL``); a report that remains is the kernel's or a new one.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
DEFAULT_TOOLS = ("memcheck", "racecheck", "synccheck")
# K: multiples of 256 (every Hopper variant's tile_k divides it); M ragged around the tile edges
CASES = {
    "edges": [[65, 128, 256, 1], [128, 64, 512, 1]],
    "ragged": [[1, 8, 256, 1], [129, 200, 256, 1], [40, 72, 512, 1]],
    "shared_n": [[7, 136, 256, 1], [64, 136, 256, 1], [200, 136, 256, 1], [33, 136, 256, 1]],
    "empty_group": [[0, 128, 256, 1], [96, 128, 256, 1], [50, 0, 256, 1]],
}
DEFAULT_CASES = ("edges", "ragged", "empty_group")
TOOL_OPTIONS = {"memcheck": ["--leak-check", "no"], "racecheck": [], "synccheck": [], "initcheck": []}
SEED = 1
MARK = "@@sanitize-case"
SETUP = "(setup)"
# memcheck and synccheck end with "ERROR SUMMARY: N errors"; racecheck (compute-sanitizer
# 2025.x) with "RACECHECK SUMMARY: H hazards displayed (N errors, W warnings)"
_SUMMARY = re.compile(r"ERROR SUMMARY:\s*(\d+)\s+error|RACECHECK SUMMARY:.*?\((\d+)\s+error")
_RECORD = re.compile(r"^=+ (?! )(?!ERROR SUMMARY|COMPUTE-SANITIZER|RACECHECK SUMMARY|LEAK SUMMARY|Warning)\S")


# ---------------------------------------------------------------------------------------------
# the driver: runs inside compute-sanitizer


def _driver(subject: str, label: str, cases: list[str]) -> int:
    from properties.checks import check_example_in_process
    from properties.strategies import Example
    from properties.subjects import resolve_subject

    (variant,) = [v for v in resolve_subject(subject, "all") if v.label == label]
    status = 0
    for name in cases:
        sizes = tuple(tuple(s) for s in CASES[name])
        print(f"{MARK} {name} begin", flush=True)
        try:
            check_example_in_process(variant, Example(sizes, SEED, "uniform", "separate"), rerun=False)
            verdict = "PASS"
        except AssertionError as exc:
            verdict, status = f"FAIL {str(exc).splitlines()[0]}", 1
        except Exception as exc:  # noqa: BLE001 - a CUDA error here is what the sanitizer explains
            verdict, status = f"ERROR {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}", 1
        print(f"{MARK} {name} end {verdict}", flush=True)
    return status


# ---------------------------------------------------------------------------------------------
# parsing the sanitized process's output


@dataclass
class CaseResult:
    case: str
    verdict: str = "NOT RUN"  # PASS, FAIL ..., ERROR ..., NOT RUN
    records: list[str] = field(default_factory=list)  # sanitizer error records in this case


@dataclass
class RunResult:
    tool: str
    variant: str
    cases: list[CaseResult]
    summary_errors: int | None  # None: no "ERROR SUMMARY" line (the sanitizer did not finish)
    returncode: int | None
    seconds: float
    setup_records: list[str] = field(default_factory=list)
    tail: str = ""

    @property
    def ok(self) -> bool:
        return (self.summary_errors == 0 and not self.setup_records
                and all(c.verdict == "PASS" and not c.records for c in self.cases))


def parse_output(text: str, cases: list[str]) -> tuple[dict[str, CaseResult], list[str], int | None]:
    """Per case its verdict and the sanitizer records printed while it ran; records outside any
    case (start-up, JIT, exit); the ERROR SUMMARY count (None when absent)."""
    results = {name: CaseResult(name) for name in cases}
    current, outside, summary = None, [], None
    for line in text.splitlines():
        if line.startswith(MARK):
            parts = line.split(maxsplit=3)
            name, what = parts[1], parts[2]
            if what == "begin":
                current = name
            else:
                results.setdefault(name, CaseResult(name)).verdict = parts[3] if len(parts) > 3 else "?"
                current = None
            continue
        match = _SUMMARY.search(line)
        if match:
            summary = int(match.group(1) or match.group(2))
            continue
        if _RECORD.match(line):
            record = line.lstrip("= ").strip()
            (results[current].records if current in results else outside).append(record)
    return results, outside, summary


# ---------------------------------------------------------------------------------------------
# the parent


def find_sanitizer() -> str | None:
    from profiling.preflight import find_compute_sanitizer

    return find_compute_sanitizer()


def skip_reason(sanitizer: str | None) -> str | None:
    """One line with the fix (profiling.preflight), or None when the sanitizer can run."""
    from profiling.preflight import missing_compute_sanitizer, missing_gpu

    if sanitizer is None:
        return missing_compute_sanitizer()
    return missing_gpu("compute-sanitizer")


def run_one(sanitizer: str, tool: str, subject: str, label: str, cases: list[str], timeout_s: float,
            kernel_name: str | None) -> RunResult:
    cmd = [sanitizer, "--tool", tool, *TOOL_OPTIONS[tool], "--report-api-errors", "no"]
    if kernel_name:
        cmd += ["--kernel-name", kernel_name]
    cmd += [sys.executable, "-m", "ci.sanitize", "--driver", f"--subject={subject}", f"--variant={label}",
            *(f"--case={c}" for c in cases)]
    env = dict(os.environ, NVFP4_ISOLATE="never", PYTORCH_NO_CUDA_MEMORY_CACHING="1", PYTHONUNBUFFERED="1")
    start = time.monotonic()
    try:
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                              timeout=timeout_s, errors="replace")
        text, code = done.stdout, done.returncode
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout or ""
        text = (out.decode(errors="replace") if isinstance(out, bytes) else out) + f"\n(timed out after {timeout_s:.0f} s)"
        code = None
    results, outside, summary = parse_output(text, cases)
    return RunResult(tool, label, [results[c] for c in cases], summary, code, time.monotonic() - start,
                     outside, "\n".join(text.splitlines()[-25:]))


def format_table(runs: list[RunResult]) -> str:
    rows = [("tool", "variant", "case", "check", "sanitizer records", "process")]
    for run in runs:
        process = ("timed out" if run.returncode is None else
                   f"ERROR SUMMARY {run.summary_errors}" if run.summary_errors is not None else
                   f"no summary (exit {run.returncode})") + f", {run.seconds:.0f} s"
        if run.setup_records:
            rows.append((run.tool, run.variant, SETUP, "-", str(len(run.setup_records)), process))
        for case in run.cases:
            rows.append((run.tool, run.variant, case.case, case.verdict[:40], str(len(case.records)), process))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--subject", default="hopper")
    parser.add_argument("--variant", action="append", default=[], help="variant label (repeatable; "
                        "default: the first --max-variants declared)")
    parser.add_argument("--max-variants", type=int, default=2)
    parser.add_argument("--tool", action="append", default=[], choices=TOOLS,
                        help=f"repeatable; default: {', '.join(DEFAULT_TOOLS)}")
    parser.add_argument("--case", action="append", default=[], choices=sorted(CASES),
                        help=f"repeatable; default: {', '.join(DEFAULT_CASES)}")
    parser.add_argument("--jobs", type=int, default=1, help="sanitized processes at a time")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per sanitized process")
    parser.add_argument("--kernel-name", default=None, help="passed to compute-sanitizer --kernel-name "
                        "(e.g. kns=SUBSTRING) to check only those kernels")
    parser.add_argument("--require", action="store_true", help="exit 2 instead of 0 when skipped")
    parser.add_argument("--driver", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    cases = args.case or list(DEFAULT_CASES)

    if args.driver:
        return _driver(args.subject, args.variant[0], cases)

    sanitizer = find_sanitizer()
    reason = skip_reason(sanitizer)
    if reason:
        print(f"SKIP ci.sanitize: {reason}")
        return 2 if args.require else 0

    variants, chosen, missing = choose_variants(args.subject, args.variant, args.max_variants)
    if missing:
        print(f"no variant {sorted(missing)} in {args.subject}: {[v.label for v in variants]}", file=sys.stderr)
        return 2
    runnable = [v for v in chosen if not v.skip_reason]
    for v in chosen:
        if v.skip_reason:
            print(f"SKIP {v.test_id}: {v.skip_reason}")
    if not runnable:
        return 2 if args.require else 0
    tools = args.tool or list(DEFAULT_TOOLS)
    jobs = [(tool, v) for tool in tools for v in runnable]
    print(f"{sanitizer}: {len(jobs)} sanitized processes ({', '.join(tools)} x "
          f"{', '.join(v.label for v in runnable)}), cases {', '.join(cases)}", flush=True)
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        runs = list(pool.map(lambda job: run_one(sanitizer, job[0], v_source(job[1]), job[1].label, cases,
                                                 args.timeout, args.kernel_name), jobs))
    for run in runs:
        if not run.ok:
            print(f"\n--- {run.tool} x {run.variant}:")
            for where, records in [(SETUP, run.setup_records)] + [(c.case, c.records) for c in run.cases]:
                for record in records[:5]:
                    print(f"  [{where}] {record}")
            print("  last lines of its output:\n    " + run.tail.replace("\n", "\n    "))
    print()
    print(format_table(runs))
    bad = [r for r in runs if not r.ok]
    print(f"\n{len(runs) - len(bad)} of {len(runs)} sanitized processes clean")
    return 1 if bad else 0


def choose_variants(subject: str, labels: list[str], max_variants: int):
    """``(variants searched, chosen, labels not found)``: the named labels from the subject's whole
    declared matrix (experimental variants included: a mutant's variant need not be a production
    one), else its first ``max_variants`` production variants."""
    from properties.subjects import resolve_subject

    variants = resolve_subject(subject, "all" if labels else "production")
    chosen = [v for v in variants if v.label in labels] if labels else variants[:max_variants]
    return variants, chosen, set(labels) - {v.label for v in chosen}


def v_source(variant) -> str:
    return variant.repro_subject


if __name__ == "__main__":
    sys.exit(main())
