"""Nsight Compute sweep of kernel variants over shape sets: ``python -m profiling.ncu_sweep``.

One run profiles every (variant, shape) case of one kernel family (Hopper on an sm_90 GPU,
Blackwell on sm_100) and writes, into ``--out``, at most five plain files readable without ncu:
``ncu_metrics.csv`` (every metric, one row per case), ``summary.md`` (one row per case, the
fastest variant per shape marked, static-report columns joined), ``ncu_panels.png`` (one panel
per metric, variants side by side), ``sweep.json`` (what ran, how, what failed) and
``ncu-log.txt`` (the tail of ncu's log). Reports, ncu-rep files and scratch stay in ``--work``.

How (see profiling/PROFILING.md):

* backend ``nsight`` (default through ``auto``): nsight-python's ``nsight.analyze.kernel``
  with one config per case, ``runs`` repetitions, ``thermal_mode="off"``, clocks unlocked and
  caches flushed. Inside the profiled function the case is compiled, its device tables built and
  the kernel launched ``--warmup`` times *outside* the ``nsight.annotate`` range; only the one
  launch inside the range is profiled (ncu ``--nvtx-include``), all metrics in one ncu run.
* backend ``ncu``: the same cases driven by ``ncu`` directly (NVTX ranges ``cfg<i>r<run>`` in
  domain ``ncu_sweep``, ``--nvtx-include``), read back with Nsight Compute's ``ncu_report``
  module or, failing that, ``ncu --import --csv --page raw``.
* ``auto``: nsight, then ncu if nsight fails, then ncu with the core metric set; every stage
  runs in its own process group under a deadline, so a hang cannot eat the device session.
* ``--compile-only``: compile every case's kernel (no GPU needed; the Blackwell path here).

The module is split by concern: ``profiling.sweep_plan`` (which cases), ``profiling.preflight``
(missing tools as one line), ``profiling.ncu_report`` (tables, plots, output files) and this
file (the GPU-side stages, the backends, the orchestrator and the command line).

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
import importlib
import importlib.util
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Sequence

from kernel.family import family_for_capability
from profiling import floors
from profiling import metrics as M
from profiling import ncu_report as R
from profiling.preflight import NSIGHT_FIX, missing_gpu, missing_ncu
from profiling.sweep_plan import (  # noqa: F401  (re-exported: the plan is part of this tool's API)
    DEFAULT_SHAPES, FAMILIES, Case, SweepPlan, build_plan, case_records, config_axes, expand_grid, floor_for,
    parse_grid,
)

NVTX_DOMAIN = "ncu_sweep"
LOG_NAME = "ncu-log.txt"
STATUS_NAME = "status.jsonl"
ROWS_NAME = "stage_rows.json"
METRICS_NAME = "metrics.txt"


def log(msg: str) -> None:
    print(f"[ncu_sweep {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---- the GPU side: one case at a time ------------------------------------------------------
class CaseRunner:
    """Compiles, prepares and warms up a case outside the profiled range; launches it inside."""

    def __init__(self, plan: SweepPlan, seed: int, warmup: int, work: Path):
        self.plan, self.seed, self.warmup = plan, seed, warmup
        self.status_path = work / STATUS_NAME
        self.inputs: dict[str, Any] = {}
        self.launchers: dict[int, Any] = {}
        self.current = None
        self.module = None
        self.done = 0

    def _module(self):
        if self.module is None:
            self.module = importlib.import_module(self.plan.module_name)
        return self.module

    def _record(self, case: Case, **fields) -> None:
        with open(self.status_path, "a") as f:
            f.write(json.dumps({"index": case.index, "variant": case.variant, "shape": case.shape, **fields}) + "\n")

    def prepare(self, case: Case) -> None:
        import torch

        t0 = time.perf_counter()
        self.current = None
        if case.index in self.launchers:
            self.current = self.launchers[case.index]
            return
        try:
            module = self._module()
            if case.shape not in self.inputs:
                from oracle import make_inputs

                shape = floors.get_shape(case.shape)
                self.inputs[case.shape] = make_inputs(shape.problem_sizes(), self.seed, distribution="uniform",
                                                      device="cuda")
            data = self.inputs[case.shape]
            cfg = self.plan.configs[case.variant]
            prepared = module.prepare(data, cfg)  # every family: the shared host pipeline's contract
            fn = lambda: module.launch(prepared)  # noqa: E731  (returns the c tensors)
            for _ in range(max(1, self.warmup)):
                outputs = fn()
            torch.cuda.synchronize()
            nan = sum(int(torch.isnan(c).sum()) for c in outputs)
            total = sum(c.numel() for c in outputs)
            self.current = fn
            self.launchers[case.index] = fn
            status = "ok" if nan == 0 else f"ok ({nan}/{total} outputs NaN after warm-up)"
            self._record(case, status="ok", prepare_s=round(time.perf_counter() - t0, 2), note=status)
            self.done += 1
            log(f"case {case.index + 1}/{len(self.plan.cases)} {case.variant} {case.shape}: "
                f"ready in {time.perf_counter() - t0:.1f} s" + ("" if nan == 0 else f", {nan} NaN outputs"))
        except Exception as exc:  # keep the sweep going: the range gets a placeholder kernel
            msg = f"failed: {type(exc).__name__}: {exc}".replace("\n", " ")[:400]
            self._record(case, status=msg, prepare_s=round(time.perf_counter() - t0, 2))
            log(f"case {case.index + 1}/{len(self.plan.cases)} {case.variant} {case.shape}: {msg}")
            traceback.print_exc(limit=3)

    def launch(self) -> None:
        """The profiled launch; a failed case launches one tiny placeholder kernel instead, so that
        every range holds one kernel (nsight-python needs the same count everywhere)."""
        import torch

        if self.current is not None:
            try:
                self.current()
            except Exception as exc:
                log(f"profiled launch failed: {exc!r}")
                self._placeholder()
        else:
            self._placeholder()
        try:
            torch.cuda.synchronize()
        except Exception as exc:  # a sticky CUDA error: later cases will report it too
            log(f"synchronize failed: {exc!r}")

    @staticmethod
    def _placeholder() -> None:
        import torch

        try:
            torch.zeros(1, device="cuda")
        except Exception as exc:
            log(f"placeholder launch failed: {exc!r}")


def read_status(work: Path) -> dict[int, dict]:
    out: dict[int, dict] = {}
    path = work / STATUS_NAME
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            out[int(rec["index"])] = rec  # the last record of a case wins
    return out


def _keep_longest(lhs, rhs):
    """nsight-python combiner for a range with several kernels: keep the longest one's metrics
    (the duration is the first metric)."""
    return lhs if float(lhs[0]) >= float(rhs[0]) else rhs


# ---- stages --------------------------------------------------------------------------------
def stage_nsight(plan: SweepPlan, args, work: Path) -> None:
    """nsight-python. Runs twice: as the parent (launches ncu, extracts) and, under ncu, as the
    child (NSPY_NCU_PROFILE set: runs the cases, then nsight exits the process)."""
    import inspect

    import nsight

    metric_list = (work / METRICS_NAME).read_text().split()
    in_child = "NSPY_NCU_PROFILE" in os.environ
    runner = CaseRunner(plan, args.seed, args.warmup, work) if in_child else None
    cases = {(c.variant, c.shape): c for c in plan.cases}

    def ncu_sweep_case(variant, shape):
        case = cases[(variant, shape)]
        runner.prepare(case)
        with nsight.annotate("ncu_sweep_case"):
            runner.launch()

    options = dict(configs=plan.config_tuples(), runs=args.runs, metrics=metric_list, thermal_mode="off",
                   clock_control="none", cache_control="all", replay_mode="kernel",
                   combine_kernel_metrics=_keep_longest, output_prefix=str(work) + "/nsight-", output_csv=True)
    params = inspect.signature(nsight.analyze.kernel).parameters
    if "output" in params:  # 0.9.x; 1.x has `verbosity` instead
        options["output"] = "verbose"
    options = {k: v for k, v in options.items() if k in params}
    result = nsight.analyze.kernel(**options)(ncu_sweep_case)()
    if in_child:  # nsight exits the child itself; be sure nothing else runs here
        os._exit(0)
    df = result.to_dataframe()
    rows = R.rows_from_nsight(df, plan.arch)
    (work / ROWS_NAME).write_text(json.dumps(rows))
    log(f"nsight-python: {len(rows)} cases extracted")


def stage_ncu_child(plan: SweepPlan, args, work: Path) -> None:
    """Under ncu (direct backend): every case and run in its own NVTX range cfg<i>r<run>."""
    runner = CaseRunner(plan, args.seed, args.warmup, work)
    try:
        import nvtx

        def rng(name):
            return nvtx.annotate(name, domain=NVTX_DOMAIN)
    except ImportError:
        import contextlib

        import torch

        @contextlib.contextmanager
        def rng(name):
            torch.cuda.nvtx.range_push(name)
            try:
                yield
            finally:
                torch.cuda.nvtx.range_pop()

    for case in plan.cases:
        for run in range(args.runs):
            runner.prepare(case)
            with rng(f"cfg{case.index}r{run}"):
                runner.launch()
    log(f"child done: {runner.done} of {len(plan.cases)} cases ready")


def nvtx_filter() -> str:
    if importlib.util.find_spec("nvtx") is not None:
        return f"regex:{NVTX_DOMAIN}@cfg[0-9]+r[0-9]+/"
    return "regex:cfg[0-9]+r[0-9]+/"


def actions_from_report(path: Path, metric_list: Sequence[str]) -> list[dict]:
    """Per-kernel records from an ncu-rep: Nsight Compute's ncu_report module, else CSV export."""
    try:
        import ncu_report  # Nsight Compute's module (extras/python), on PYTHONPATH via env.sh

        ctx = ncu_report.load_report(str(path))
        actions = []
        for ri in range(ctx.num_ranges()):
            rng = ctx.range_by_idx(ri)
            for ai in range(rng.num_actions()):
                act = rng.action_by_idx(ai)
                name = None
                try:
                    state = act.nvtx_state()
                    for did in state.domains():
                        for r in state.domain_by_id(did).push_pop_ranges():
                            if R.RANGE_NAME.fullmatch(r):
                                name = r
                except Exception:
                    pass
                have = set(act.metric_names())
                vals = {m: R._num(act[m].value()) for m in metric_list if m in have}
                gpu = str(act["device__attribute_display_name"].value()) if "device__attribute_display_name" in have else ""
                actions.append({"id": len(actions), "kernel": act.name(), "gpu": gpu, "range": name, "metrics": vals})
        if not any(a["metrics"] for a in actions):
            raise RuntimeError(f"it read {len(actions)} kernels and no metric values from {path.name}")
        return actions
    except Exception as exc:
        log(f"ncu_report module unusable ({exc!r}); exporting CSV with ncu --import")
    base = ["ncu", "--import", str(path), "--csv", "--page", "raw", "--metrics", ",".join(metric_list)]
    for extra in (["--print-units", "base", "--print-nvtx-rename", "kernel"], ["--print-nvtx-rename", "kernel"], []):
        proc = subprocess.run(base + extra, capture_output=True, text=True, timeout=120)
        if proc.returncode == 0 and proc.stdout.strip():
            return R.parse_raw_csv(proc.stdout)
    raise RuntimeError(f"ncu --import failed: {proc.stderr[-500:]}")


# ---- the orchestrator ----------------------------------------------------------------------
def ncu_version() -> str | None:
    exe = shutil.which("ncu")
    if not exe:
        return None
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"Version\s+([\d.]+)", out)
    return m.group(1) if m else out.strip().splitlines()[-1] if out.strip() else None


def version_tuple(v: str | None) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v or ""))[:4]


def nsight_usable(ncu_ver: str | None) -> str | None:
    """None if nsight-python can drive this ncu, else why not."""
    try:
        from importlib.metadata import version

        nv = version("nsight-python")
    except Exception:
        if importlib.util.find_spec("nsight") is None:
            return f"nsight-python is not installed ({NSIGHT_FIX})"
        nv = "0"
    if version_tuple(nv)[:1] >= (1,) and version_tuple(ncu_ver) < (2026, 2, 1):
        return f"nsight-python {nv} needs ncu >= 2026.2.1, this ncu is {ncu_ver}"
    return None


def query_available(arch: str) -> tuple[set[str], str]:
    exe = shutil.which("ncu")
    if not exe:
        return set(), "no ncu"
    for extra in ([], ["--chips", M.NCU_CHIPS[arch]]):
        try:
            proc = subprocess.run([exe, "--query-metrics", "--csv", *extra], capture_output=True, text=True, timeout=90)
        except (OSError, subprocess.SubprocessError):
            continue
        names = M.parse_query_metrics(proc.stdout)
        if len(names) >= 50:
            return names, "ncu --query-metrics " + " ".join(["--csv", *extra])
    return set(), "ncu --query-metrics gave nothing usable; no metric filtered"


def run_group(cmd: Sequence[str], timeout: float, log_path: Path, env: dict | None = None) -> tuple[int, str]:
    """Run ``cmd`` in its own process group, stdout+stderr teed to our stdout and ``log_path``.
    Kills the whole group at the deadline. Returns (returncode, how it ended)."""
    log(f"$ {' '.join(shlex.quote(c) for c in cmd)}")
    with open(log_path, "ab") as logf:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
        deadline = time.monotonic() + max(1.0, timeout)
        import selectors

        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        ended = "exit"
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                ended = f"killed after {timeout:.0f} s"
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                break
            if sel.select(timeout=min(left, 1.0)):
                chunk = proc.stdout.read1(65536) if hasattr(proc.stdout, "read1") else proc.stdout.readline()
                if not chunk:
                    break
                sys.stdout.buffer.write(chunk)
                sys.stdout.flush()
                logf.write(chunk)
            elif proc.poll() is not None:
                rest = proc.stdout.read()
                if rest:
                    sys.stdout.buffer.write(rest)
                    logf.write(rest)
                break
        sel.close()
        try:
            rc = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            rc = proc.wait()
        # nothing of the stage may outlive it (an orphaned profiled process would hold the GPU)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    log(f"stage ended: {ended}, rc={rc}")
    return rc, ended


def _stage_argv(args, stage: str, work: Path) -> list[str]:
    argv = [sys.executable, "-m", "profiling.ncu_sweep", "--arch", args.arch_resolved, "--variants", args.variants,
            "--shapes", ",".join(args.shape_list), "--runs", str(args.runs), "--warmup", str(args.warmup),
            "--seed", str(args.seed), "--_stage", stage, "--_work", str(work)]
    for l in args.variant:
        argv += ["--variant", l]
    for g in args.grid:
        argv += ["--grid", g]
    return argv


def run_nsight_backend(plan, args, work: Path, timeout: float, log_path: Path) -> list[dict]:
    (work / ROWS_NAME).unlink(missing_ok=True)
    rc, ended = run_group(_stage_argv(args, "nsight", work), timeout, log_path)
    for p in sorted(work.glob("nsight-ncu-output-*.log")):
        with open(log_path, "ab") as f:
            f.write(b"\n--- nsight-python ncu log " + p.name.encode() + b" ---\n" + p.read_bytes()[-100_000:])
    if not (work / ROWS_NAME).exists():
        raise RuntimeError(f"nsight-python stage produced no rows ({ended}, rc={rc})")
    return json.loads((work / ROWS_NAME).read_text())


def run_ncu_backend(plan, args, work: Path, metric_list: Sequence[str], timeout: float, log_path: Path) -> list[dict]:
    report = work / "direct.ncu-rep"
    report.unlink(missing_ok=True)
    cmd = ["ncu", "--target-processes", "all", "--nvtx", "--nvtx-include", nvtx_filter(),
           "--metrics", ",".join(metric_list), "--cache-control", "all", "--clock-control", "none",
           "--replay-mode", "kernel", "-f", "-o", str(report.with_suffix(""))]
    rc, ended = run_group(cmd + _stage_argv(args, "ncu-child", work), timeout, log_path)
    if not report.exists():
        raise RuntimeError(f"direct ncu produced no report ({ended}, rc={rc})")
    actions = actions_from_report(report, metric_list)
    expected = [f"cfg{c.index}r{r}" for c in plan.cases for r in range(args.runs)]
    actions = R.assign_ranges_by_order(actions, expected)
    return R.rows_from_actions(actions, plan.config_tuples(), plan.arch)


def start_static_report(arch: str, args, work: Path):
    if args.static_json not in ("auto",):
        return None
    if importlib.util.find_spec("profiling.static_report") is None:
        return None
    out = work / "static_report.json"
    cmd = [sys.executable, "-m", "profiling.static_report", "--arch", arch, "--json", str(out)]
    log(f"static report in the background: {' '.join(cmd)}")
    logf = open(work / "static_report.log", "wb")
    return subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, start_new_session=True), out


def finish_static_report(handle, args, deadline: float) -> tuple[dict, str]:
    if args.static_json == "none":
        return {}, "not requested"
    if handle is None:
        if args.static_json not in ("auto",):
            st = R.load_static(args.static_json)
            return st, f"{args.static_json} ({len(st)} variants)" if st else f"{args.static_json}: unreadable or empty"
        return {}, "profiling.static_report not available"
    proc, out = handle
    try:
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return {}, "python -m profiling.static_report ran out of time"
    st = R.load_static(out)
    if not st:
        return {}, f"python -m profiling.static_report failed (rc={proc.returncode})"
    return st, f"python -m profiling.static_report --arch {args.arch_resolved} ({len(st)} variants)"


def compile_only(plan: SweepPlan, args) -> list[dict]:
    """Compile each (variant, group count) the cases need; rows carry the compile status."""
    os.environ.setdefault("CUTE_DSL_ARCH", plan.arch)
    module = importlib.import_module(plan.module_name)
    compile_fn = getattr(module, "compile_for", None)
    results: dict[tuple[str, int], str] = {}
    groups = {s.name: s.num_groups for s in plan.shapes}
    for label, cfg in plan.configs.items():
        for g in sorted({groups[c.shape] for c in plan.cases if c.variant == label}):
            t0 = time.perf_counter()
            if compile_fn is None:
                results[(label, g)] = f"not compiled: {plan.module_name} has no compile_for(config, num_groups)"
                continue
            try:
                compile_fn(cfg, g)
                results[(label, g)] = f"compiled ({time.perf_counter() - t0:.1f} s, {g} groups)"
            except Exception as exc:
                results[(label, g)] = f"compile failed: {type(exc).__name__}: {exc}".replace("\n", " ")[:300]
            log(f"{label} G={g}: {results[(label, g)]}")
    return [{"index": c.index, "status": results[(c.variant, groups[c.shape])]} for c in plan.cases]


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
    return missing_ncu() or missing_gpu("profiling with ncu (--dry-run and --compile-only do not)")


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
        "floor_note": "Hopper: max(bytes/4.3 TB/s, FLOPs/790 TFLOP/s) (H200 ceilings, profiling/REFERENCE.md); "
                      "Blackwell: the organizers' B200 SOL",
    }
    metric_list = M.metric_names(plan.arch, args.metric_set)

    if args.dry_run:
        for c in plan.cases:
            print(f"  case {c.index}: {c.variant} {c.shape}")
        print("metrics:", ",".join(metric_list))
        print("direct ncu:", " ".join(["ncu", "--nvtx", "--nvtx-include", nvtx_filter(), "--metrics", "<above>"]
                                       + _stage_argv(args, "ncu-child", work)))
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
