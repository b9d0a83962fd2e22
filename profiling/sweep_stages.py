"""What runs on the GPU side of an Nsight Compute sweep (``profiling.ncu_sweep``): one case at a time.

* :class:`CaseRunner` compiles, prepares and warms up a case *outside* the profiled range and
  launches it inside, through the shared host pipeline's ``prepare``/``launch`` of the case's
  family; every case's outcome goes to ``status.jsonl`` in the work folder (:func:`read_status`);
* :func:`stage_nsight` (nsight-python's parent and, under ncu, its child) and
  :func:`stage_ncu_child` (under a direct ``ncu``) are the two profiled stages; they run in a
  process of their own, started by :mod:`profiling.sweep_backends`;
* :func:`compile_only` compiles every case's kernel (``--compile-only``: no GPU needed).

torch, nsight-python and CuTe DSL are imported where a case runs, never at import.
"""

from __future__ import annotations

import importlib
import json
import os
import time
import traceback
from pathlib import Path
from typing import Any

from profiling import floors
from profiling import ncu_report as R
from profiling.sweep_plan import Case, SweepPlan

# files of the work folder shared by the stages and the orchestrator
NVTX_DOMAIN = "ncu_sweep"
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


# ---- the profiled stages ----------------------------------------------------------------------
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
