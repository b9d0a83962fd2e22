"""Fault isolation: run a subject's checks in a worker process, with a time limit per phase.

An illegal memory access poisons a CUDA context for good and a kernel that never returns blocks
its process for good; in-process, either would end a fuzzing run or fail every later example.
Here each example is sent to a worker process (a fresh process, so a fresh CUDA context; see
``_worker_context``) that runs :func:`properties.checks.check_example_in_process` and
answers with one :class:`Outcome`:

* ``pass``;
* ``fail``: a wrong result (the ``SubjectCheckFailed`` text); the worker is kept;
* ``fault``: the worker died (exit code, signal) or the subject raised a CUDA error, or left the
  context broken; the worker is gone or told to exit, and the next example gets a new one;
* ``timeout``: a hang: no answer within the limit of the phase the example was in; the worker is
  killed (SIGKILL) and replaced;
* ``error``: the subject raised something else (a Python exception, the context still healthy);
  the worker is kept.

An example goes through up to three phases (:data:`PHASES`), each with its own limit:

* ``start``: a new worker imports the harness and resolves the subject (``startup_timeout_s``;
  a worker that cannot start is a :class:`WorkerStartError`, not a failed example);
* ``compile``: the worker creates its CUDA context and compiles the variant for the example's
  group count (a kernel family's ``compile_for``, which fills the compile cache the launch
  reads; a cache hit once compiled), then tells the parent ``("launch", ...)``
  (``compile_timeout_s``: generous, CuTe DSL compiles take tens of seconds);
* ``run``: inputs, oracle, the launches and the checks (``timeout_s``, 60 s by default): a
  kernel that deadlocks on its first launch is reported this long after that launch. A subject
  with no ``compile_for`` (a file subject, an entry point wrapped by the tensor-pipe stressor)
  may compile inside its launch: on a GPU, the run phase of its first example of each group
  count in a worker gets ``compile_timeout_s`` more.

A worker is reused across examples until it faults or hangs, so the start-up cost (imports,
CUDA context, CuTe DSL compiles) is paid once per failure, not once per example. While the
tests of one variant run, the workers of the next ones can compile ahead
(:meth:`IsolatingRunner.prewarm`, a ``("warm", group counts)`` message the worker answers with
nothing; properties.prewarm schedules it), so their compiles overlap this variant's examples
on the host's other cores. An example that
hung is not launched again by the same runner (Hypothesis replays a failing example before it
reports it): the recorded hang is returned at once. Every outcome carries the one-line
reproduction. Through :class:`IsolatingRunner` (what ``check_example`` uses once it is
installed) a non-pass outcome raises a ``SubjectCheckFailed`` subclass, so Hypothesis sees an
ordinary failure of that example and goes on shrinking or drawing; :meth:`IsolatingRunner.running`
says which example runs now, in which phase (``properties.progress_plugin`` prints it when an
example takes long).

Which subjects are isolated: ``IsolatingRunner(settings)``, the ``properties.checks.ExampleRunner``
the conftest (and ``properties.repro``) install, decides per variant from its settings:
``--isolate=auto`` (default: GPU subjects), ``always``, ``never`` (pytest option, or
``NVFP4_ISOLATE``, read by :func:`settings_from_env`); the run-phase limit is
``--example-timeout`` / ``NVFP4_EXAMPLE_TIMEOUT`` seconds, the compile-phase limit
``--compile-timeout`` / ``NVFP4_COMPILE_TIMEOUT``. Only variants that ``resolve_subject`` can
rebuild in the worker (``SubjectVariant.source`` set) can be isolated; variants built in code
(``properties.wrong_subjects``) always run in the calling process.

Command line, a fuzzing campaign that reports every example and goes on::

    python -m properties.isolation --subject=S [--variant=L] [--sizes='[[m,n,k,1],...]' ...]
        [--draw=N] [--seed=7] [--timeout=T] [--compile-timeout=C]
"""

from __future__ import annotations

from kernel.errors import PicklableError
import argparse
import collections
import dataclasses
import faulthandler
import functools
import multiprocessing
import os
import signal
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from properties.checks import ExampleRunner, check_example_in_process
from properties.failures import SubjectCheckFailed, SubjectErrored, SubjectFaulted, SubjectTimedOut
from properties.strategies import Example
from properties.subjects import SubjectVariant, resolve_subject

MODES = ("auto", "always", "never")
KINDS = ("pass", "fail", "fault", "timeout", "error")
PHASES = ("start", "compile", "run")  # an isolated example's phases (the module docstring)


class WorkerStartError(PicklableError, RuntimeError):
    """The worker could not import or resolve the subject: no example can run."""


_RAISES = {"fault": SubjectFaulted, "timeout": SubjectTimedOut, "error": SubjectErrored, "fail": SubjectCheckFailed}


@dataclass(frozen=True)
class IsolationSettings:
    mode: str = "auto"
    timeout_s: float = 60.0  # the run phase: from the worker's launch message to its answer
    compile_timeout_s: float = 300.0  # the compile phase: CUDA context and CuTe DSL JIT compiles
    startup_timeout_s: float = 300.0  # a new worker's imports and subject


def settings_from_env(**overrides) -> IsolationSettings:
    """Settings from NVFP4_ISOLATE / NVFP4_EXAMPLE_TIMEOUT / NVFP4_COMPILE_TIMEOUT, then the
    ``overrides`` that are not None (command-line options)."""
    mode = os.environ.get("NVFP4_ISOLATE", "auto")
    if mode not in MODES:
        raise ValueError(f"NVFP4_ISOLATE={mode!r}: use one of {MODES}")
    base = IsolationSettings()
    settings = IsolationSettings(
        mode=mode,
        timeout_s=float(os.environ.get("NVFP4_EXAMPLE_TIMEOUT", base.timeout_s)),
        compile_timeout_s=float(os.environ.get("NVFP4_COMPILE_TIMEOUT", base.compile_timeout_s)),
    )
    settings = dataclasses.replace(settings, **{k: v for k, v in overrides.items() if v is not None})
    if settings.mode not in MODES:
        raise ValueError(f"isolation mode {settings.mode!r}: use one of {MODES}")
    return settings


def repro_line(variant_source: str, label: str, example: Example, kind: str = "fail",
               timeout_s: float | None = None, compile_timeout_s: float | None = None) -> str:
    """The example's reproduction; a fault or a hang replays isolated (with the same run-phase
    limit, and for a hang in the compile phase the same compile limit), so the replay reports it
    instead of dying, or waiting forever, itself."""
    line = example.repro(variant_source, label)
    if kind in ("fault", "timeout"):
        line += " --isolate=always"
    if kind == "timeout" and timeout_s is not None:
        line += f" --timeout={timeout_s:g}"
    if kind == "timeout" and compile_timeout_s is not None:
        line += f" --compile-timeout={compile_timeout_s:g}"
    return line


@dataclass(frozen=True)
class RunningExample:
    """The example a runner is checking now (``IsolatingRunner.running``): ``phase`` is one of
    :data:`PHASES` for an isolated example, ``"in process"`` otherwise; times are
    ``time.monotonic()`` values."""

    variant: SubjectVariant
    example: Example
    started: float
    phase: str
    phase_started: float
    compile_s: float | None = None  # the compile phase's seconds, once the run phase began


@dataclass
class Outcome:
    kind: str  # one of KINDS
    test_id: str
    example: Example
    detail: str  # failure report, exception text, "killed by SIGSEGV", ...
    repro: str
    seconds: float  # from handing the example to the worker to the outcome
    worker_pid: int | None
    stages: dict = dataclasses.field(default_factory=dict)  # the worker's seconds per checks.STAGES
    warm: bool = False  # the worker had run this group count before (no compile in this example)
    phase: str = ""  # the phase the example ended in ("compile" or "run"; "" when it never got that far)
    compile_s: float | None = None  # seconds of the compile phase (None: it did not end)

    @property
    def ok(self) -> bool:
        return self.kind == "pass"

    def headline(self) -> str:
        ex = self.example
        what = self.detail.strip().splitlines()[0] if self.detail.strip() else ""
        return (f"{self.kind.upper():7s} {self.test_id} {[list(s) for s in ex.sizes]} "
                f"seed={ex.seed} {ex.distribution} {ex.layout} ({self.seconds:.1f} s, worker {self.worker_pid})"
                + (f": {what}" if what and self.kind != "fail" else ""))

    def report(self) -> str:
        """What a failure prints: how it failed, the details, the one-line reproduction."""
        if self.kind == "fail":  # the SubjectCheckFailed text already ends with its reproduction
            return self.detail
        return (f"{self.test_id} {self.kind.upper()} on {len(self.example.sizes)} groups "
                f"{[list(s) for s in self.example.sizes]} ({self.example.distribution}, {self.example.layout}, "
                f"seed {self.example.seed}): {self.detail.rstrip()}\nreproduce: {self.repro}")

    def raise_for_failure(self) -> None:
        if self.kind != "pass":
            raise _RAISES[self.kind](self.report())


# ---------------------------------------------------------------------------------------------
# the worker (runs in the child process)


def _context_error(variant: SubjectVariant) -> str | None:
    """None when the CUDA context still works, else the error it reports."""
    if variant.device != "cuda":
        return None
    try:
        import torch

        torch.cuda.synchronize()
        torch.zeros(1, device="cuda").add_(1).item()
    except Exception as exc:  # noqa: BLE001 - any failure here means the context is gone
        return f"{type(exc).__name__}: {exc}"
    return None


def _looks_like_device_fault(exc: BaseException) -> bool:
    text = f"{type(exc).__name__}: {exc}"
    return any(s in text for s in ("CUDA error", "AcceleratorError", "CUDA_ERROR", "cudaError",
                                   "illegal memory access", "device-side assert"))


def _compile_hook(run):
    """The ``compile_for(config, num_groups, ...)`` of ``run``'s module, where ``run`` is a kernel
    family's entry point (``functools.partial`` with ``config=``, and ``perturbation=`` for a
    harness build); None otherwise."""
    if not isinstance(run, functools.partial) or "config" not in run.keywords:
        return None
    hook = getattr(run.func, "__globals__", {}).get("compile_for")
    if hook is None:
        hook = getattr(sys.modules.get(getattr(run.func, "__module__", ""), None), "compile_for", None)
    return hook if callable(hook) else None


def _open_device(variant: SubjectVariant) -> None:
    """Create the worker's CUDA context now (the compile phase), not in the first launch."""
    if variant.device != "cuda":
        return
    try:
        import torch

        torch.zeros(1, device="cuda")
    except Exception:  # noqa: BLE001 - the example itself reports whatever this was
        pass


def _precompile(variant: SubjectVariant, num_groups: int) -> bool:
    """Compile ``variant`` for ``num_groups`` groups before the example runs: the module's
    ``compile_for`` fills the same compile cache the launch reads (a cache hit once compiled).
    True when it did; False when the subject has no such hook or the compile raised (the
    example then reports what it was)."""
    compile_for = _compile_hook(variant.run)
    if compile_for is None:
        return False
    extra = {}
    if variant.run.keywords.get("perturbation") is not None:
        extra["perturbation"] = variant.run.keywords["perturbation"]
    try:
        compile_for(variant.run.keywords["config"], num_groups, **extra)
    except Exception:  # noqa: BLE001 - the example itself reports whatever this was
        return False
    return True


WARM = "warm"  # the parent's ("warm", group counts) message: compile ahead, no answer


def _warm(conn, variant: SubjectVariant, counts, warmed: set[int]) -> None:
    """Open the device and compile ``variant`` for each of ``counts`` before any example asks
    for them, stopping as soon as a message waits (an example is never held up by more than the
    one compile in progress); compiled counts go into ``warmed``."""
    if not warmed:
        _open_device(variant)
    for count in counts:
        if conn.poll(0):
            return
        if count not in warmed and _precompile(variant, count):
            warmed.add(count)


def _worker_main(conn, source: str, label: str) -> None:
    faulthandler.enable()  # a segfault prints the Python stack on the worker's stderr
    try:
        matches = [v for v in resolve_subject(source, "all") if v.label == label]
        if not matches:
            raise LookupError(f"subject {source!r} declares no variant {label!r}")
        variant = matches[0]
        if variant.skip_reason:
            raise RuntimeError(f"variant {variant.test_id} cannot run here: {variant.skip_reason}")
    except BaseException:  # noqa: BLE001 - reported to the parent
        conn.send(("start_error", traceback.format_exc()))
        return
    conn.send(("ready", os.getpid()))
    seen_group_counts: set[int] = set()
    warmed: set[int] = set()  # group counts compiled ahead by a ("warm", counts) message
    seen_runs: set[tuple[str, int]] = set()  # (variant label, group count) launched in this worker
    while True:
        try:
            message = conn.recv()
        except EOFError:  # the parent went away
            return
        if message is None:
            return
        if message[0] == WARM:
            _warm(conn, variant, message[1], warmed)
            continue
        example, rerun, *named = message
        if named and named[0] != (source, label):
            # another run-time perturbation of the same build (properties.perturbed.build_name):
            # its variant differs only in the perturbation the launch passes as data
            source, label = named[0]
            variant = next(v for v in resolve_subject(source, "all") if v.label == label)
        # the compile phase: CUDA context, JIT compile; then the parent's watchdog switches to
        # the run phase's limit
        warm = len(example.sizes) in seen_group_counts or len(example.sizes) in warmed
        if not seen_group_counts and not warmed:
            _open_device(variant)
        seen_group_counts.add(len(example.sizes))
        precompiled = _precompile(variant, len(example.sizes))
        # without a compile hook (a file subject, a wrapped entry point) the first launch of a
        # (variant, group count) may compile inside the launch
        first_run = (label, len(example.sizes)) not in seen_runs
        seen_runs.add((label, len(example.sizes)))
        conn.send(("launch", variant.device == "cuda" and first_run and not precompiled))
        stages: dict[str, float] = {}
        try:
            check_example_in_process(variant, example, rerun=rerun, stages=stages)
        except SubjectCheckFailed as exc:
            broken = _context_error(variant)
            if broken:
                conn.send(("fault", f"CUDA context broken after the check: {broken}\n{exc}", stages, warm))
                os._exit(3)
            conn.send(("fail", str(exc), stages, warm))
        except BaseException as exc:  # noqa: BLE001 - everything else is reported, never raised
            text = f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"
            broken = _context_error(variant)
            if broken or _looks_like_device_fault(exc):
                conn.send(("fault", text if not broken else f"{text}(context check: {broken})", stages, warm))
                os._exit(3)  # no CUDA teardown: it can hang on a broken context
            conn.send(("error", text, stages, warm))
        else:
            conn.send(("pass", "", stages, warm))


# ---------------------------------------------------------------------------------------------
# the parent side


# Workers are forked from a fork server that has imported torch and the harness but never touched
# CUDA (so every worker still creates its own, fresh context), which makes a replacement worker
# cost a fork instead of an interpreter start. Where fork servers do not exist: spawn.
_PRELOAD = ["torch", "oracle", "properties.checks", "properties.subjects"]


def _worker_context():
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(_PRELOAD)
        return context
    return multiprocessing.get_context("spawn")


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "the worker stopped answering"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"the worker was killed by {name} (exit code {code})"
    return f"the worker exited with code {code}"


class IsolatedRunner:
    """One subject variant in a worker process; :meth:`check` runs one example and never raises
    for the subject's sake (only :class:`WorkerStartError` when the worker cannot start)."""

    def __init__(self, source: str, label: str, *, device: str = "cpu", test_id: str | None = None,
                 settings: IsolationSettings | None = None):
        self.source = source
        self.label = label
        self.device = device
        self.test_id = test_id or f"{Path(source).stem if source.endswith('.py') else source}:{label}"
        self.settings = settings or IsolationSettings()
        self._context = _worker_context()
        self._process = None
        self._conn = None
        self._hung: dict[tuple, Outcome] = {}  # (variant, example, rerun) -> the hang it reported
        self.workers_started = 0
        # (phase, time.monotonic() it began, compile seconds before a run phase); None between
        # examples. Read from other threads (progress output): replaced whole, never mutated.
        self.phase: tuple[str, float, float | None] | None = None

    @property
    def worker_pid(self) -> int | None:
        return self._process.pid if self._process is not None and self._process.is_alive() else None

    def _enter(self, phase: str | None, compile_s: float | None = None) -> float:
        now = time.monotonic()
        self.phase = None if phase is None else (phase, now, compile_s)
        return now

    def _start(self) -> None:
        parent, child = self._context.Pipe(duplex=True)
        process = self._context.Process(target=_worker_main, args=(child, self.source, self.label),
                                        name=f"nvfp4-worker-{self.label}", daemon=True)
        process.start()
        child.close()
        self._process, self._conn = process, parent
        self.workers_started += 1
        if not parent.poll(self.settings.startup_timeout_s):
            self._kill()
            raise WorkerStartError(f"{self.test_id}: the worker did not start within "
                                   f"{self.settings.startup_timeout_s:.0f} s")
        try:
            kind, payload = parent.recv()
        except EOFError:
            code = self._reap()
            raise WorkerStartError(f"{self.test_id}: {_describe_exit(code)} while starting") from None
        if kind != "ready":
            self._kill()
            raise WorkerStartError(f"{self.test_id}: the worker could not load the subject:\n{payload}")

    def _reap(self, grace_s: float = 5.0) -> int | None:
        """Wait for a dying worker; kill it if it lingers; return its exit code."""
        process = self._process
        self._process = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if process is None:
            return None
        process.join(grace_s)
        if process.is_alive():
            process.kill()
            process.join(grace_s)
        return process.exitcode

    def _kill(self) -> int | None:
        if self._process is not None and self._process.is_alive():
            self._process.kill()
        return self._reap()

    def _receive(self, limit_s: float):
        """The worker's next message, or None when none came within ``limit_s`` (EOFError when
        the worker died)."""
        return self._conn.recv() if self._conn.poll(limit_s) else None

    def check(self, example: Example, *, rerun: bool = True, as_variant: tuple[str, str] | None = None) -> Outcome:
        """``as_variant``: (source, label) of the variant to check, where it is not this worker's
        own but shares its build (a run-time perturbation of another seed)."""
        self._as = as_variant if as_variant is not None else (self.source, self.label)
        hung = self._hung.get((self._as, example, rerun))
        if hung is not None:
            return dataclasses.replace(hung, seconds=0.0, worker_pid=None, detail=(
                f"{hung.detail.rstrip()}\n(not launched again: this example hung {hung.seconds:.0f} s "
                f"earlier in this run, in worker {hung.worker_pid})"))
        try:
            self._enter("start")
            self._ensure_started()
            return self._check(example, rerun)
        finally:
            self._enter(None)

    def _ensure_started(self) -> None:
        """A live worker: the running one, or a new one (WorkerStartError when it cannot start)."""
        if self._process is None or not self._process.is_alive():
            self._reap(0)
            self._start()

    def warm(self, counts) -> bool:
        """Start the worker now (if it is not running) and have it compile this variant for each
        of ``counts`` groups in the background, while the parent goes on with other tests; the
        first example that arrives stops the warming after the compile in progress. False when
        the worker could not start (its first example reports why)."""
        try:
            self._ensure_started()
            self._conn.send((WARM, tuple(int(c) for c in counts)))
        except (WorkerStartError, BrokenPipeError, EOFError, OSError):
            return False
        return True

    def _check(self, example: Example, rerun: bool) -> Outcome:
        settings = self.settings
        pid = self._process.pid
        start = self._enter("compile")
        compile_s = None
        limit = settings.compile_timeout_s
        try:
            self._conn.send((example, rerun, self._as))
            message = self._receive(limit)
            if message is not None and message[0] == "launch":
                compile_s = time.monotonic() - start
                self._enter("run", compile_s)
                limit = settings.timeout_s + (settings.compile_timeout_s if message[1] else 0.0)
                message = self._receive(limit)
        except (BrokenPipeError, EOFError, OSError):  # the worker is gone
            code = self._reap()
            return self._outcome("fault", _describe_exit(code), example, start, pid, compile_s=compile_s)
        if message is None:
            self._kill()
            if compile_s is None:
                detail = (f"hang in the compile phase: no launch within {limit:g} s (CUDA context and JIT "
                          f"compile for {len(example.sizes)} groups not done); the worker was killed")
            else:
                detail = (f"hang in the run phase: no answer within {limit:g} s of the launch (after a "
                          f"{compile_s:.1f} s compile phase); the worker was killed")
                if limit > settings.timeout_s:
                    detail += (f" (this subject has no compile_for: the limit includes the "
                               f"{settings.compile_timeout_s:g} s compile allowance)")
            outcome = self._outcome("timeout", detail, example, start, pid, compile_s=compile_s)
            self._hung[(self._as, example, rerun)] = outcome
            return outcome
        kind, detail, stages, warm = message
        if kind == "fault":
            code = self._reap()
            detail = f"{detail.rstrip()}\n({_describe_exit(code)} after reporting it; a new worker takes the next example)"
        return self._outcome(kind, detail, example, start, pid, stages=stages, warm=warm, compile_s=compile_s)

    def _outcome(self, kind, detail, example, start, pid, stages=None, warm=False, compile_s=None) -> Outcome:
        source, label = getattr(self, "_as", None) or (self.source, self.label)
        phase = "" if self.phase is None else self.phase[0]
        repro = repro_line(source, label, example, kind, self.settings.timeout_s,
                           self.settings.compile_timeout_s if phase == "compile" else None)
        return Outcome(kind, self.test_id, example, detail, repro, time.monotonic() - start, pid,
                       dict(stages or {}), warm, phase, compile_s)

    def close(self) -> None:
        if self._process is not None and self._process.is_alive() and self._conn is not None:
            try:
                self._conn.send(None)
            except OSError:
                pass
            self._reap(10.0)
        else:
            self._reap(0)

    def __enter__(self) -> "IsolatedRunner":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class IsolatingRunner(ExampleRunner):
    """The example runner of a pytest session: variants that ``should_isolate`` run in their
    (reused) worker, the rest in this process. A run keeps one worker per variant, so each
    (variant, group count) compiles once per run as long as the worker lives; beyond
    ``max_live_workers`` (each GPU worker holds a CUDA context and its compiled kernels) the least
    recently used worker is closed."""

    def __init__(self, settings: IsolationSettings | None = None, *, max_live_workers: int = 4):
        super().__init__()
        self.settings = settings or settings_from_env()
        self.max_live_workers = max_live_workers
        self._workers: "collections.OrderedDict[tuple[str, str], IsolatedRunner]" = collections.OrderedDict()
        # (variant, example, time.monotonic() it began, its worker or None in process) while one runs
        self._current: tuple[SubjectVariant, Example, float, IsolatedRunner | None] | None = None
        self.last_outcome: Outcome | None = None  # of the last isolated example

    def should_isolate(self, variant: SubjectVariant) -> bool:
        if self.settings.mode == "never" or not variant.source:
            return False
        return self.settings.mode == "always" or variant.device == "cuda"

    def worker_for(self, variant: SubjectVariant) -> IsolatedRunner:
        # run-time perturbations of one build share its worker (and its compiled kernels)
        from properties.perturbed import build_name

        key = (build_name(variant.source), build_name(variant.label))
        worker = self._workers.pop(key, None) or IsolatedRunner(
            variant.source, variant.label, device=variant.device, test_id=variant.test_id, settings=self.settings)
        self._workers[key] = worker
        while len(self._workers) > self.max_live_workers:
            self._workers.popitem(last=False)[1].close()
        return worker

    def live_workers(self) -> int:
        return len(self._workers)

    def prewarm(self, variant: SubjectVariant, counts) -> bool:
        """Start ``variant``'s worker and let it compile ``counts`` ahead (:meth:`IsolatedRunner.warm`);
        False for a variant that runs in this process or whose worker could not start."""
        if not self.should_isolate(variant):
            return False
        return self.worker_for(variant).warm(counts)

    def release(self, variant: SubjectVariant) -> None:
        """Close ``variant``'s worker now (its tests are done)."""
        from properties.perturbed import build_name

        worker = self._workers.pop((build_name(variant.source), build_name(variant.label)), None)
        if worker is not None:
            worker.close()

    def run(self, variant: SubjectVariant, example: Example, *, rerun: bool, stages: dict) -> bool:
        started = time.monotonic()
        if not self.should_isolate(variant):
            self._current = (variant, example, started, None)
            try:
                return super().run(variant, example, rerun=rerun, stages=stages)
            finally:
                self._current = None
        worker = self.worker_for(variant)
        self._current = (variant, example, started, worker)
        try:
            outcome = worker.check(example, rerun=rerun, as_variant=(variant.source, variant.label))
        finally:
            self._current = None
        self.last_outcome = outcome
        stages.update(outcome.stages)
        worked = sum(outcome.stages.values())
        if outcome.seconds > worked:
            stages["round_trip"] = outcome.seconds - worked
        outcome.raise_for_failure()
        return outcome.warm

    def running(self) -> RunningExample | None:
        """The example being checked now and its phase, or None (safe to call from another thread)."""
        current = self._current
        if current is None:
            return None
        variant, example, started, worker = current
        if worker is None:
            return RunningExample(variant, example, started, "in process", started)
        phase = worker.phase
        if phase is None:  # between the worker's phases
            return RunningExample(variant, example, started, "start", started)
        return RunningExample(variant, example, started, phase[0], phase[1], phase[2])

    def close(self) -> None:
        while self._workers:
            self._workers.popitem()[1].close()


# ---------------------------------------------------------------------------------------------
# command line: a campaign over explicit and drawn examples, every outcome reported


def _drawn_examples(variant: SubjectVariant, count: int, seed: int) -> list[Example]:
    """``count`` examples from the property strategy, reproducibly (no shrinking: a campaign)."""
    from hypothesis import HealthCheck, Phase, given, seed as hseed, settings

    from properties.strategies import examples

    drawn: list[Example] = []

    @hseed(seed)
    @settings(max_examples=count, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(examples(variant))
    def collect(example):
        drawn.append(example)

    collect()
    return drawn[:count]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--subject", default="auto")
    parser.add_argument("--variant", default=None, help="variant label (default: the first declared)")
    parser.add_argument("--sizes", action="append", default=[], help="an explicit example's [[m, n, k, 1], ...] "
                        "(repeatable; run in order, before the drawn ones)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the explicit examples and of the draw")
    parser.add_argument("--distribution", default="uniform")
    parser.add_argument("--layout", default="separate")
    parser.add_argument("--draw", type=int, default=0, help="also run N examples drawn by the property strategy")
    defaults = settings_from_env()
    parser.add_argument("--timeout", type=float, default=defaults.timeout_s,
                        help="seconds an example's run phase may take, from its launch")
    parser.add_argument("--compile-timeout", type=float, default=defaults.compile_timeout_s,
                        help="seconds an example's compile phase may take (CUDA context, JIT compiles)")
    parser.add_argument("--no-rerun", action="store_true", help="skip the determinism rerun")
    args = parser.parse_args(argv)

    import ast

    name = args.subject
    variants = resolve_subject(name, "production" if args.variant is None else "all")
    chosen = [v for v in variants if args.variant in (None, v.label)][:1]
    if not chosen:
        print(f"no variant {args.variant!r} in subject {name}: {[v.label for v in variants]}", file=sys.stderr)
        return 2
    variant = chosen[0]
    if variant.skip_reason:
        print(f"SKIP {variant.test_id}: {variant.skip_reason}")
        return 0
    examples = [Example(tuple(tuple(int(x) for x in s) for s in ast.literal_eval(text)), args.seed,
                        args.distribution, args.layout) for text in args.sizes]
    if args.draw:
        examples += _drawn_examples(variant, args.draw, args.seed)
    settings = dataclasses.replace(defaults, timeout_s=args.timeout, compile_timeout_s=args.compile_timeout)
    outcomes: list[Outcome] = []
    with IsolatedRunner(variant.source, variant.label, device=variant.device, test_id=variant.test_id,
                        settings=settings) as runner:
        for i, example in enumerate(examples):
            outcome = runner.check(example, rerun=not args.no_rerun)
            outcomes.append(outcome)
            print(f"#{i:<3d} {outcome.headline()}", flush=True)
            if not outcome.ok:
                print("     " + outcome.report().replace("\n", "\n     "), flush=True)
        started = runner.workers_started
    counts = collections.Counter(o.kind for o in outcomes)
    print(f"\n{len(outcomes)} examples of {variant.test_id}: "
          + ", ".join(f"{counts[k]} {k}" for k in KINDS if counts[k]) + f"; {started} worker(s) started")
    return 0 if all(o.ok for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
