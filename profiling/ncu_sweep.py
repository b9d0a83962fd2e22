"""Nsight Compute sweep of kernel variants over shape sets: ``python -m profiling.ncu_sweep``.

One run profiles every (variant, shape) case of one kernel family (Hopper on an sm_90 GPU,
Blackwell on sm_100) and writes, into ``--out``, at most five plain files readable without ncu:
``ncu_metrics.csv`` (every metric, one row per case), ``summary.md`` (one row per case, the
fastest variant per shape marked, static-report columns joined), ``ncu_panels.png`` (one panel
per metric, variants side by side), ``sweep.json`` (what ran, how, what failed) and
``ncu-log.txt`` (the tail of ncu's log). Reports, ncu-rep files and scratch stay in ``--work``.

How (see docs/profiling.md):

* backend ``nsight`` (default through ``auto``): nsight-python's ``nsight.analyze.kernel``
  with one config per case, ``runs`` repetitions, ``thermal_mode="off"``, clocks unlocked and
  caches flushed. Inside the profiled function the case is compiled, its device tables built and
  the kernel launched ``--warmup`` times *outside* the ``nsight.annotate`` range; only the one
  launch inside the range is profiled (ncu ``--nvtx-include``), all metrics in one ncu run.
* backend ``ncu``: the same cases driven by ``ncu`` directly (NVTX ranges ``cfg<i>r<run>`` in
  domain ``ncu_sweep``, ``--nvtx-include``), read back with Nsight Compute's ``ncu_report``
  module or, failing that, ``ncu --import --csv --page raw``.
* ``auto``: nsight, then ncu if nsight fails, then ncu with the core metric set; every stage
  runs in its own process group under a deadline, so a hang cannot use up the device time.
* ``--compile-only``: compile every case's kernel (no GPU needed; the Blackwell path here).

The tool is split by concern, one job per module:

* ``profiling.sweep_plan``: which (variant, shape) cases, in which order;
* ``profiling.sweep_stages``: the GPU side, one case at a time (compile, prepare, warm up outside
  the profiled range, launch inside it), the two profiled stages and ``--compile-only``;
* ``profiling.sweep_backends``: the parent side (tool probes, stage processes under a deadline,
  the nsight and ncu backends, reading ncu reports back, the static report alongside);
* ``profiling.ncu_report``: tables, plots and the output files;
* ``profiling.preflight``: missing tools as one line;
* this file: the command line and the orchestrator that strings them together.

Every process rebuilds the case list from the same arguments, so the nsight-python child (which
re-executes this file under ncu) sees the identical configs.
"""

from __future__ import annotations

import sys

if __package__ in (None, ""):
    # nsight-python re-executes sys.argv[0] (this file) as a script under ncu. Put the repository
    # root first on sys.path instead of profiling/, or ``import ncu_report`` inside nsight would
    # find profiling/ncu_report.py rather than Nsight Compute's module.
    from pathlib import Path as _Path

    sys.path[0] = str(_Path(__file__).resolve().parent.parent)

import argparse
import dataclasses
import datetime
import shlex
import shutil
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Sequence

from kernel.family import family_for_capability
from profiling import metrics as M
from profiling import ncu_report as R
from profiling.preflight import missing_gpu, missing_ncu, under_xdist
from profiling.sweep_backends import (  # noqa: F401  (nvtx_filter: the documented filter)
    finish_static_report, ncu_version, nsight_usable, nvtx_filter, query_available, run_ncu_backend,
    run_nsight_backend, stage_argv, start_static_report,
)
from profiling.sweep_plan import (  # noqa: F401  (re-exported: the plan is part of this tool's API)
    DEFAULT_SHAPES, FAMILIES, Case, SweepPlan, build_plan, case_records, config_axes, expand_grid, floor_for,
    parse_grid,
)
from profiling.sweep_stages import METRICS_NAME, STATUS_NAME, compile_only, log, read_status, stage_ncu_child, stage_nsight

LOG_NAME = "ncu-log.txt"


def resolve_arch(arch: str) -> str:
    if arch != "auto":
        return M.normalize_arch(arch)
    try:
        from kernel.device import cuda_capability

        cap = cuda_capability()
    except Exception:
        cap = None
    family = family_for_capability(cap)
    if family is not None:
        return family.arch
    raise SystemExit(f"--arch auto: no sm_90/sm_100 GPU here (capability {cap}); pass --arch sm_90a or sm_100a")


def parse_args(argv: Sequence[str] | None = None):
    p = argparse.ArgumentParser(prog="python -m profiling.ncu_sweep", description=__doc__.split("\n\n")[0])
    p.add_argument("--arch", default="auto", help="sm_90a (Hopper variants), sm_100a (Blackwell) or auto (this GPU)")
    p.add_argument("--variants", default="declared", choices=("declared", "static"),
                   help="DECLARED_VARIANTS (default) or STATIC_MATRIX of the family")
    p.add_argument("--variant", action="append", default=[], metavar="LABEL", help="only this variant (repeatable)")
    p.add_argument("--grid", action="append", default=[], metavar="FIELD=V1,V2",
                   help="cross the chosen variants with these config values (repeatable), e.g. num_ab_stages=2,3,4")
    p.add_argument("--shapes", default=",".join(DEFAULT_SHAPES), help="comma-separated shape sets of profiling.floors")
    p.add_argument("--out", default="profiling/runs/ncu", help="output folder (at most 8 plain files)")
    p.add_argument("--work", default=None, help="scratch folder for reports and logs (default: a temp dir)")
    p.add_argument("--backend", default="auto", choices=("auto", "nsight", "ncu"))
    p.add_argument("--metric-set", default="full", choices=("full", "core"))
    p.add_argument("--runs", type=int, default=1, help="profiled launches per case (ncu counters barely vary)")
    p.add_argument("--warmup", type=int, default=2, help="launches before the profiled one (the first compiles)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--deadline-s", type=float, default=420.0, help="wall-clock budget of the whole sweep")
    p.add_argument("--static-json", default="auto",
                   help="static-report JSON to join: a path, 'auto' (run profiling.static_report alongside) or 'none'")
    p.add_argument("--compile-only", action="store_true", help="compile every case, profile nothing (no GPU needed)")
    p.add_argument("--dry-run", action="store_true", help="print the cases and the ncu command, run nothing")
    p.add_argument("--_stage", default=None, help=argparse.SUPPRESS)
    p.add_argument("--_work", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.shape_list = [s.strip() for s in args.shapes.split(",") if s.strip()]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args._stage:  # a child process of the orchestrator (or nsight-python's child under ncu)
        args.arch_resolved = M.normalize_arch(args.arch)
        plan = build_plan(args.arch_resolved, args.variants, args.variant, args.grid, args.shape_list)
        work = Path(args._work)
        if args._stage == "nsight":
            stage_nsight(plan, args, work)
        elif args._stage == "ncu-child":
            stage_ncu_child(plan, args, work)
        else:
            raise SystemExit(f"unknown stage {args._stage}")
        return 0
    problem = usage_problem(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        return orchestrate(args)
    except SystemExit:
        raise
    except BaseException as exc:  # one shot on the GPU: always leave an explanation in --out
        tb = traceback.format_exc()
        print(tb, flush=True)
        meta = {"family": "?", "arch": args.arch, "backend": "none", "command": " ".join(map(shlex.quote, sys.argv)),
                "notes": [f"sweep aborted: {type(exc).__name__}: {exc}".replace("\n", " ")[:800]], "traceback": tb}
        try:
            R.write_outputs(Path(args.out), [], meta)
        except Exception:
            traceback.print_exc()
        return 2


def usage_problem(args) -> str | None:
    """A mistake or a missing tool, as one line with the fix, found before anything runs."""
    try:
        arch = resolve_arch(args.arch) if not (args.compile_only and args.arch == "auto") else None
        if arch:
            build_plan(arch, args.variants, args.variant, args.grid, args.shape_list)
    except SystemExit as exc:
        return str(exc)
    except (ValueError, KeyError) as exc:
        return str(exc).strip("'\"")
    if args.dry_run or args.compile_only:
        return None
    return under_xdist("profiling.ncu_sweep") or missing_ncu() or missing_gpu("profiling with ncu (--dry-run and --compile-only do not)")


def orchestrate(args) -> int:
    """Run the sweep; a temp work folder (no --work) is removed at the end."""
    temp_work = None if args.work else Path(tempfile.mkdtemp(prefix="ncu_sweep_"))
    try:
        return _orchestrate(args, Path(args.work) if args.work else temp_work)
    finally:
        if temp_work is not None:
            shutil.rmtree(temp_work, ignore_errors=True)


def _orchestrate(args, work: Path) -> int:
    t_start = time.monotonic()
    deadline = t_start + args.deadline_s
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    if args.compile_only and args.arch == "auto":
        raise SystemExit("--compile-only needs --arch sm_90a or sm_100a")
    args.arch_resolved = resolve_arch(args.arch)
    plan = build_plan(args.arch_resolved, args.variants, args.variant, args.grid, args.shape_list)
    work.mkdir(parents=True, exist_ok=True)
    out = Path(args.out)
    log(f"{plan.family} ({plan.arch}): {len(plan.configs)} variants x {len(plan.shapes)} shapes = "
        f"{len(plan.cases)} cases; {len(plan.skipped)} skipped; work {work}; out {out}")
    for v, s, why in plan.skipped:
        log(f"  skipped {v} {s}: {why}")
    meta: dict[str, Any] = {
        "family": plan.family, "arch": plan.arch, "started": started, "runs": args.runs, "warmup": args.warmup,
        "seed": args.seed, "distribution": "uniform", "command": " ".join(shlex.quote(a) for a in sys.argv),
        "cases": [dataclasses.asdict(c) for c in plan.cases], "skipped": plan.skipped, "notes": [],
        "floor_note": "Hopper: max(bytes/4.3 TB/s, FLOPs/790 TFLOP/s) (H200 ceilings measured 2026-11-29); "
                      "Blackwell: the organizers' B200 SOL",
    }
    metric_list = M.metric_names(plan.arch, args.metric_set)

    if args.dry_run:
        for c in plan.cases:
            print(f"  case {c.index}: {c.variant} {c.shape}")
        print("metrics:", ",".join(metric_list))
        print("direct ncu:", " ".join(["ncu", "--nvtx", "--nvtx-include", nvtx_filter(), "--metrics", "<above>"]
                                       + stage_argv(args, "ncu-child", work)))
        return 0

    status: dict[int, dict] = {}
    rows: list[dict] = []
    extra: dict[str, str] = {}
    log_path = work / "sweep.log"
    if args.compile_only:
        meta["backend"] = "compile-only"
        status = {r["index"]: r for r in compile_only(plan, args)}
        static, meta["static_note"] = {}, "not run in compile-only mode"
    else:
        static_handle = start_static_report(plan.arch, args, work)
        meta["ncu_version"] = ncu_version()
        available, how = query_available(plan.arch)
        metric_list, dropped = M.filter_available(metric_list, available)
        meta["metrics_requested"] = metric_list
        meta["metrics_dropped"] = dropped
        meta["metric_query"] = how
        log(f"ncu {meta['ncu_version']}; {len(metric_list)} metrics ({how}); dropped: {dropped or 'none'}")
        (work / METRICS_NAME).write_text("\n".join(metric_list))
        backends = {"auto": ["nsight", "ncu", "ncu-core"], "nsight": ["nsight"], "ncu": ["ncu", "ncu-core"]}[args.backend]
        why_not = nsight_usable(meta["ncu_version"])
        if why_not and "nsight" in backends:
            log(f"nsight backend skipped: {why_not}; using ncu directly")
            meta["notes"].append(f"nsight backend skipped: {why_not}")
            backends = [b for b in backends if b != "nsight"] or ["ncu"]
        reserve = 25.0
        for backend in backends:
            left = deadline - time.monotonic() - reserve
            if left < 30:
                meta["notes"].append(f"no time left for backend {backend}")
                break
            (work / STATUS_NAME).unlink(missing_ok=True)
            try:
                log(f"backend {backend}: {left:.0f} s left")
                if backend == "nsight":
                    rows = run_nsight_backend(plan, args, work, left, log_path)
                else:
                    mlist = metric_list if backend == "ncu" else [m for m in M.metric_names(plan.arch, "core") if m in metric_list or not available]
                    rows = run_ncu_backend(plan, args, work, mlist, left, log_path)
                    meta["metrics_requested"] = list(mlist)
                meta["backend"] = backend
                break
            except Exception as exc:
                msg = f"backend {backend} failed: {type(exc).__name__}: {exc}".replace("\n", " ")[:600]
                log(msg)
                traceback.print_exc(limit=4)
                meta["notes"].append(msg)
                rows = []
        status = read_status(work)
        static, meta["static_note"] = finish_static_report(static_handle, args, min(deadline, time.monotonic() + 60))
        if (work / "static_report.json").exists() and static:
            extra["static_report.json"] = (work / "static_report.json").read_text()
        extra[LOG_NAME] = R.tail_text(log_path, 400_000)
    meta["case_status"] = {str(k): v for k, v in sorted(status.items())}
    gpus = sorted({r.get("gpu") for r in rows if r.get("gpu")})
    meta["gpu"] = ", ".join(gpus) or None
    table = R.build_table(rows, case_records(plan, status), static)
    meta["wall_s"] = time.monotonic() - t_start
    written = R.write_outputs(out, table, meta, extra)
    problems = R.check_output_dir(out)
    log(f"wrote {', '.join(written)} to {out}" + (f"; PROBLEMS: {problems}" if problems else ""))
    print_table(table)
    measured = [r for r in table if r.get("status") == "ok" and R._finite(r.get("duration_us"))]
    if args.compile_only:
        return 0 if status and all(str(r["status"]).startswith("compiled") for r in status.values()) else 1
    return 0 if measured else 1


def print_table(table: Sequence[dict]) -> None:
    """The short table printed last."""
    print(f"{'shape':8} {'variant':44} {'us':>9} {'TFLOP/s':>8} {'xfloor':>7} {'tensor%':>8} {'dram%':>6}  best status")
    for r in sorted(table, key=lambda r: (r["shape"], r.get("duration_us") if R._finite(r.get("duration_us")) else 1e30)):
        def f(k, fmt):
            v = r.get(k)
            return format(v, fmt) if R._finite(v) else "-"
        print(f"{r['shape']:8} {r['variant'][:44]:44} {f('duration_us', '9.2f')} {f('tflops', '8.1f')} "
              f"{f('time_over_floor', '7.2f')} {f('tensor_active_pct', '8.1f')} {f('dram_pct', '6.1f')}  "
              f"{'*' if r.get('best') else ' '}    {str(r.get('status', ''))[:60]}")


if __name__ == "__main__":
    sys.exit(main())
