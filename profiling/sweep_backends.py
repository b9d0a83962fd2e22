"""The parent side of an Nsight Compute sweep (``profiling.ncu_sweep``): driving the profiler.

* tool probes: :func:`ncu_version`, :func:`nsight_usable` (can nsight-python drive this ncu),
  :func:`query_available` (the metrics this ncu knows);
* :func:`run_group`: a stage in its own process group under a deadline, its output teed to a
  log, nothing of it left alive afterwards;
* the two backends: :func:`run_nsight_backend` (nsight-python re-running the sweep's nsight
  stage under ncu) and :func:`run_ncu_backend` (``ncu`` around the ncu-child stage, its report
  read back by :func:`actions_from_report`);
* the static report, run alongside in the background (:func:`start_static_report`,
  :func:`finish_static_report`).

The stages themselves are :mod:`profiling.sweep_stages`; the tables and files,
:mod:`profiling.ncu_report`. Nothing here imports torch, nsight-python or CuTe DSL.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Sequence

from profiling import metrics as M
from profiling import ncu_report as R
from profiling.preflight import NSIGHT_FIX
from profiling.sweep_stages import NVTX_DOMAIN, ROWS_NAME, log


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


def stage_argv(args, stage: str, work: Path) -> list[str]:
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
    rc, ended = run_group(stage_argv(args, "nsight", work), timeout, log_path)
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
    rc, ended = run_group(cmd + stage_argv(args, "ncu-child", work), timeout, log_path)
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
