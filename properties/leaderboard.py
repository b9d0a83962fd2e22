"""Run a submission through the public leaderboard's protocol on this machine, before submitting.

    python -m properties.leaderboard SUBMISSION --mode test|benchmark|leaderboard
        [--task task.yml] [--seed SECRET] [--timeout S] [--rtol R --atol A] [--device cuda|cpu]
        [--max-repeats N]

SUBMISSION is a Python file defining ``custom_kernel(data)`` (what the leaderboard imports as
``submission.py``) or one of this project's kernels by name: ``hopper``, ``blackwell``, ``model``
(the CPU model). What it reproduces of the leaderboard's evaluator (``oracle.leaderboard``):

* the cases: the problem's test and benchmark lists (built in, or read from ``--task``), each
  case's seed combined with ``--seed`` as the evaluator combines it with its secret seed;
* the inputs: the leaderboard layout and value distribution (plain scales in host memory);
* one worker process, started with ``spawn``, that imports the submission and runs every case;
* test mode: one call per test case on a copy of the inputs, then the check;
* benchmark mode: 15 inputs per case, one checked call on each, then repeated timing: the L2
  cleared (the evaluator allocates and fills 64 GB; here as much of that as the GPU has free),
  CUDA events around 15 eager calls, one sample per repeat, until 3 repeats and 100 ms have run
  and the mean's relative error is under 0.1 %, or the time budget is spent (benchmark mode:
  a warm-up benchmark of the first case, then every case, 100 repeats and 10 s at most;
  leaderboard mode: a warm-up of every case, then every case rechecked on each repeat,
  30 s at most, stopping at the first failure; ``--max-repeats`` lowers the repeat limits, the
  evaluator's rule still needing 3 repeats);
* the check: ``rtol`` and ``atol`` of the problem (1e-3 each), against the exact reference.

It prints the evaluator's ``key: value`` lines (times in ns, as the evaluator logs them) and,
beside each benchmark, this harness's own CUDA-graph replay time of the same 15 inputs and the
floor at the reference H200 ceilings (profiling.floors), then a table. Unlike the evaluator, a
submission that raises, crashes its process or runs past ``--timeout`` seconds on a case is
reported as that case's failure, and the run goes on: an exception that cannot be pickled (which
hangs the evaluator's pool) is named as such. Exit status: 0 when every case passed, 112 when
one failed (the evaluator's), 2 for a usage mistake.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import math
import multiprocessing
import os
import pickle
import sys
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from oracle import leaderboard as lb

MODES = ("test", "benchmark", "leaderboard")
KERNEL_NAMES = ("hopper", "blackwell", "model")
FAILED = 112
USAGE = 2
EVALUATOR_L2_CLEAR_FLOATS = 16000 * 1024 * 1024  # the evaluator's randn((16000, 1024, 1024))


# ------------------------------------------------------------------ the worker process

def load_custom_kernel(submission: str) -> Callable:
    """``custom_kernel`` of a submission file, or of one of this project's kernels by name."""
    if submission in KERNEL_NAMES:
        module = importlib.import_module(f"kernel.{submission}")
        return module.custom_kernel
    spec = importlib.util.spec_from_file_location("submission", submission)
    module = importlib.util.module_from_spec(spec)
    sys.modules["submission"] = module
    spec.loader.exec_module(module)
    if not callable(getattr(module, "custom_kernel", None)):
        raise AttributeError(f"{submission} defines no custom_kernel(data)")
    return module.custom_kernel


@dataclass
class Stats:
    """The evaluator's statistics of one benchmark, in ns."""

    runs: int
    mean: float
    std: float
    err: float
    best: float
    worst: float


def stats_of(durations: list[float]) -> Stats:
    runs, mean = len(durations), sum(durations) / len(durations)
    std = math.sqrt(sum((d - mean) ** 2 for d in durations) / (runs - 1)) if runs > 1 else 0.0
    return Stats(runs, mean, std, std / math.sqrt(runs), float(min(durations)), float(max(durations)))


def should_stop(durations: list[float], repeat: int, elapsed_ns: float, max_time_ns: float) -> bool:
    """The evaluator's stopping rule, checked after each repeat."""
    if repeat <= 1 or elapsed_ns <= 1e8:
        return False
    s = stats_of(durations)
    return s.err / s.mean < 0.001 or s.mean * s.runs > max_time_ns or elapsed_ns > 120e9


def clear_l2(device: str) -> None:
    """The evaluator's L2 clear before each timed repeat: a large normal-filled allocation (its
    ``randn((16000, 1024, 1024))``, here at most 90 % of the free memory)."""
    if device != "cuda":
        return
    import torch

    free, _ = torch.cuda.mem_get_info()
    floats = min(EVALUATOR_L2_CLEAR_FLOATS, int(free * 0.9) // 4)
    dummy = torch.randn((floats,), device="cuda")
    del dummy


def _sync(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def _mark(device: str):
    if device == "cuda":
        import torch

        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event
    return time.perf_counter_ns()


def _elapsed_ns(device: str, t0, t1) -> float:
    if device == "cuda":
        t1.synchronize()
        return t0.elapsed_time(t1) * 1e6
    return float(t1 - t0)


def time_calls(custom_kernel: Callable, inputs: list, *, device: str, max_repeats: int, max_time_ns: float,
               check: Callable[[list], str | None] | None = None) -> list[float] | str:
    """The evaluator's timing loop: each repeat synchronizes, clears the L2, and times one
    ``custom_kernel`` call per input between two CUDA events (a host clock on the CPU); its
    sample is that time over the number of inputs (ns). Stops by :func:`should_stop` or after
    ``max_repeats``. Returns the samples, or the message of the first repeat whose outputs
    ``check`` rejects."""
    durations, start = [], time.perf_counter_ns()
    for repeat in range(max_repeats):
        _sync(device)
        clear_l2(device)
        t0 = _mark(device)
        outputs = [custom_kernel(d) for d in inputs]
        t1 = _mark(device)
        durations.append(_elapsed_ns(device, t0, t1) / len(inputs))
        if check is not None and (message := check(outputs)):
            return message
        if should_stop(durations, repeat, time.perf_counter_ns() - start, max_time_ns):
            break
    return durations


class _Worker:
    """What runs in the spawned process: the submission, the inputs and the timing."""

    def __init__(self, submission: str, device: str, rtol: float, atol: float):
        import torch

        torch.manual_seed(42)
        self.torch = torch
        self.device = device
        self.rtol, self.atol = rtol, atol
        self.custom_kernel = load_custom_kernel(submission)

    def sync(self):
        _sync(self.device)

    def check(self, data, output) -> tuple[bool, str]:
        return lb.check_outputs(data, output, rtol=self.rtol, atol=self.atol)

    def test(self, case: lb.Case, seed: int):
        import oracle

        data = lb.generate_input(case, seed, self.device)
        self.sync()
        output = self.custom_kernel(oracle.clone_data(data))
        self.sync()
        return self.check(data, output)

    def benchmark(self, case: lb.Case, seed: int, recheck: bool, max_repeats: int, max_time_ns: float,
                  extras: bool):
        import oracle

        seeds = lb.benchmark_seeds(lb.Case(case.m, case.n, case.k, case.g, seed))
        inputs = [lb.generate_input(case, s, self.device) for s in seeds]
        outputs = [self.custom_kernel(oracle.clone_data(d)) for d in inputs]
        self.sync()
        for data, output in zip(inputs, outputs):
            good, message = self.check(data, output)
            if not good:
                return message

        def recheck_all(outputs):
            for data, output in zip(inputs, outputs):
                good, message = self.check(data, output)
                if not good:
                    return message
            return None

        durations = time_calls(self.custom_kernel, inputs, device=self.device, max_repeats=max_repeats,
                               max_time_ns=max_time_ns, check=recheck_all if recheck else None)
        if isinstance(durations, str):
            return durations
        result = {"stats": asdict(stats_of(durations))}
        if extras:
            result.update(self._extras(case, inputs))
        return result

    def _extras(self, case: lb.Case, inputs) -> dict:
        """This harness's graph-replay time of the same inputs and the reference floor."""
        from profiling import floors

        extras = {"floor_us": floors.floor_us(case.sizes)}
        if self.device == "cuda":
            from profiling.timing import time_device

            timing = time_device([lambda d=d: self.custom_kernel(d) for d in inputs], samples=20)
            extras["replay_us"] = timing.stats.median
            extras["replay_method"] = timing.method
        return extras


def _worker_main(conn, submission: str, device: str, rtol: float, atol: float) -> None:
    """The worker's loop: one request in, one reply out, until the pipe closes."""
    os.environ.setdefault("CUTE_DSL_DISABLE_FILE_CACHING", "1")  # as the evaluator sets it
    try:
        worker = _Worker(submission, device, rtol, atol)
    except BaseException as exc:  # noqa: BLE001 - a submission that cannot load is a verdict
        conn.send(_raised(exc))
        return
    conn.send(("ready",))
    while True:
        try:
            method, args = conn.recv()
        except EOFError:
            return
        try:
            conn.send(("ok", getattr(worker, method)(*args)))
        except BaseException as exc:  # noqa: BLE001
            conn.send(_raised(exc))


def _raised(exc: BaseException) -> tuple:
    """A reply naming a raised exception; whether it survives pickling (the evaluator's pool
    ships the exception itself to the parent, and waits forever when it cannot unpickle it)."""
    try:
        pickle.loads(pickle.dumps(exc))
        picklable = True
    except Exception:  # noqa: BLE001
        picklable = False
    return ("raised", f"{type(exc).__name__}: {exc}", picklable, traceback.format_exc(limit=8))


# ------------------------------------------------------------------ the parent

STARTING = "starting the submission"


class CaseFailed(Exception):
    """A case ended without a result: its one-line message (the report's error line) and, when the
    submission raised, the worker's traceback (printed to stderr)."""

    def __init__(self, message: str, trace: str = ""):
        super().__init__(message)
        self.trace = trace


class Runner:
    """The parent side: one worker process at a time, restarted after a crash or a time-out."""

    def __init__(self, submission: str, device: str, rtol: float, atol: float, timeout_s: float, log=print):
        self.args = (submission, device, rtol, atol)
        self.timeout_s = timeout_s
        self.log = log
        self.process = None
        self.conn = None

    def _start(self):
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker_main, args=(child, *self.args), daemon=True)
        self.process.start()
        child.close()
        self._reply(STARTING)

    def _reply(self, what: str):
        if not self.conn.poll(self.timeout_s):
            self.stop()
            raise CaseFailed(f"timed out after {self.timeout_s:g} s while {what} (on the leaderboard "
                             f"the evaluator would wait until its own limit)")
        try:
            reply = self.conn.recv()
        except EOFError:
            self.process.join(5)
            code = self.process.exitcode
            self.stop()
            raise CaseFailed(f"the submission's process died while {what} (exit code {code})") from None
        if reply[0] == "raised":
            _, message, picklable, trace = reply
            if not picklable:
                message += (" [this exception cannot be pickled: the public evaluator's pool would "
                            "wait forever for this case]")
            if what == STARTING:
                self.stop()
            raise CaseFailed(message, trace)
        return reply[1] if reply[0] == "ok" else None

    def call(self, method: str, *args):
        if self.process is None or not self.process.is_alive():
            self._start()
        self.conn.send((method, args))
        return self._reply(f"running {method}")

    def stop(self):
        if self.process is not None:
            if self.process.is_alive():
                self.process.kill()
            self.process.join(10)
        self.process, self.conn = None, None


def _reported(exc: CaseFailed) -> str:
    """The error line of a failed case; the traceback, if any, goes to stderr."""
    if exc.trace:
        print(exc.trace.rstrip(), file=sys.stderr, flush=True)
    return " ".join(str(exc).split("\n"))


def _case_seed(case: lb.Case, secret: int | None) -> int:
    return case.seed if secret is None else lb.combine_seeds(case.seed, secret)


def run_tests(runner: Runner, cases, secret, log) -> int:
    passed = True
    log("test-count", len(cases))
    for i, case in enumerate(cases):
        log(f"test.{i}.spec", case.spec)
        try:
            good, message = runner.call("test", case, _case_seed(case, secret))
        except CaseFailed as exc:
            good, message = False, _reported(exc)
        if good:
            log(f"test.{i}.status", "pass")
            if message:
                log(f"test.{i}.message", message)
        else:
            passed = False
            log(f"test.{i}.status", "fail")
            log(f"test.{i}.error", message)
    log("check", "pass" if passed else "fail")
    return 0 if passed else FAILED


def _benchmark(runner: Runner, case, secret, recheck, repeats, max_time_ns, extras):
    try:
        return runner.call("benchmark", case, _case_seed(case, secret), recheck, repeats, max_time_ns, extras)
    except CaseFailed as exc:
        return _reported(exc)


def run_benchmarks(runner: Runner, cases, secret, log, mode: str, max_repeats: int = 100) -> tuple[int, list]:
    rows = []
    if mode == "benchmark":
        _benchmark(runner, cases[0], secret, False, min(100, max_repeats), 10e7, False)  # the evaluator's warm-up
        plan = [(case, False, min(100, max_repeats), 10e9) for case in cases]
    else:
        for case in cases:
            _benchmark(runner, case, secret, False, min(50, max_repeats), 5e8, False)
        plan = [(case, True, min(100, max_repeats), 30e9) for case in cases]
    log("benchmark-count", len(cases))
    passed = True
    for i, (case, recheck, repeats, max_time_ns) in enumerate(plan):
        log(f"benchmark.{i}.spec", case.spec)
        result = _benchmark(runner, case, secret, recheck, repeats, max_time_ns, True)
        if isinstance(result, dict):
            for key, value in result["stats"].items():
                log(f"benchmark.{i}.{key}", value)
            for key in ("replay_us", "floor_us"):
                if key in result:
                    log(f"benchmark.{i}.{key}", f"{result[key]:.2f}")
            rows.append((case, result))
        else:
            passed = False
            log(f"benchmark.{i}.status", "fail")
            log(f"benchmark.{i}.error", result)
            rows.append((case, None))
            if mode == "leaderboard":
                break
    log("check", "pass" if passed else "fail")
    return (0 if passed else FAILED), rows


def summary_table(rows) -> str:
    """One line per benchmark: the leaderboard's mean, the graph replay, the floor, their ratios."""
    lines = ["| case | leaderboard mean us | graph replay us | floor us | mean / floor |",
             "| --- | --- | --- | --- | --- |"]
    means = []
    for case, result in rows:
        name = f"g={case.g} n={case.n[0]} k={case.k[0]}"
        if result is None:
            lines.append(f"| {name} | failed | | | |")
            continue
        mean_us = result["stats"]["mean"] / 1e3
        means.append(mean_us)
        replay = f"{result['replay_us']:.2f}" if "replay_us" in result else "n/a"
        lines.append(f"| {name} | {mean_us:.2f} | {replay} | {result['floor_us']:.2f} | "
                     f"{mean_us / result['floor_us']:.2f}x |")
    if means and len(means) == len(rows):
        geo = math.exp(sum(map(math.log, means)) / len(means))
        lines.append(f"| geomean | {geo:.2f} | | | |")
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m properties.leaderboard", description=__doc__.split("\n\n")[0])
    p.add_argument("submission", help=f"a .py file defining custom_kernel(data), or one of {', '.join(KERNEL_NAMES)}")
    p.add_argument("--mode", choices=MODES, required=True)
    p.add_argument("--task", help="a task.yml-style file with tests: and benchmarks: lists (default: the problem's)")
    p.add_argument("--seed", type=int, default=None, help="a secret seed, combined with each case's as the evaluator does")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds a case may take (default 300)")
    p.add_argument("--rtol", type=float, default=lb.RTOL)
    p.add_argument("--atol", type=float, default=lb.ATOL)
    p.add_argument("--device", choices=("cuda", "cpu"), default=None,
                   help="where the inputs live (default: cuda when a GPU is present, else cpu)")
    p.add_argument("--max-repeats", type=int, default=100,
                   help="timed repeats per benchmark at most (default: the evaluator's 100; at least 3)")
    return p


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.max_repeats < 3:
        parser.error("--max-repeats must be at least 3 (the evaluator's rule times 3 repeats before it can stop)")
    if args.submission not in KERNEL_NAMES and not Path(args.submission).is_file():
        print(f"ERROR: submission {args.submission} is not a file nor one of {', '.join(KERNEL_NAMES)}",
              file=sys.stderr)
        return USAGE
    cases = dict(lb.SECTIONS)
    if args.task:
        try:
            cases.update(lb.read_cases(args.task))
        except (OSError, ValueError) as exc:
            print(f"ERROR: {exc}", file=sys.stderr)
            return USAGE
    device = args.device
    if device is None:
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"

    def log(key, value):
        print(f"{key}: {value}", flush=True)

    runner = Runner(args.submission, device, args.rtol, args.atol, args.timeout)
    try:
        if args.mode == "test":
            return run_tests(runner, cases["tests"], args.seed, log)
        status, rows = run_benchmarks(runner, cases["benchmarks"], args.seed, log, args.mode, args.max_repeats)
        print(summary_table(rows), flush=True)
        return status
    finally:
        runner.stop()


if __name__ == "__main__":
    sys.exit(main())
