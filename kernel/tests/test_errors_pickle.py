"""Every exception class of the project survives pickling and a spawned process pool's round trip.

A multiprocessing pool ships a worker's exception to the parent by pickling it. An exception
whose ``__init__`` takes other arguments than its message used to fail to unpickle there, and
the pool then waited forever (the leaderboard's evaluator hung on InvalidProblemError). The
classes are found by importing every module of the project's packages, so a new class that
forgets ``kernel.errors.PicklableError`` fails here.
"""

from __future__ import annotations

import importlib
import multiprocessing
import pickle
import pkgutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("kernel", "oracle", "properties", "profiling", "ci")


def _project_modules() -> list[str]:
    names = []
    for package in PACKAGES:
        for info in pkgutil.walk_packages([str(ROOT / package)], prefix=f"{package}."):
            leaf = info.name.rsplit(".", 1)[-1]
            if leaf.startswith(("test_", "bench_")) or ".tests" in info.name or "fixtures" in info.name \
                    or "faulty_subjects" in info.name or leaf == "__main__":
                continue
            names.append(info.name)
    return sorted(names)


def _exception_classes() -> dict[str, type]:
    found = {}
    for name in _project_modules():
        module = importlib.import_module(name)
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, BaseException) and value.__module__ == name:
                found[f"{name}.{value.__qualname__}"] = value
    return found


def _record():
    from kernel.perturbation import CHECK_RULES, CheckRecord

    rule = CHECK_RULES[0][0]
    return CheckRecord((rule,), {rule: 2}, rule, 4, 5, 6)


# one instance of each class, built with its own signature; a new class needs an entry here
SAMPLES = {
    "kernel.errors.HarnessError": lambda c: c("something the harness refused"),
    "kernel.errors.InvalidProblemError": lambda c: c("device", "expected a cuda tensor, got cpu", group=0, tensor="sfa"),
    "kernel.errors.UnsupportedConfigError": lambda c: c("h90_x", ["too much shared memory", "bad tile"]),
    "kernel.errors.DeviceUnavailableError": lambda c: c("no sm_90 GPU"),
    "kernel.errors.ProtocolViolation": lambda c: c("h90_x~delays", _record()),
    "kernel.tables.GuardEntryRead": lambda c: c("pointers", 9, 4),
    "oracle.host_memory.HostMemoryRead": lambda c: c("mul: a plain scale tensor is in host memory"),
    "profiling.sass.ToolMissing": lambda c: c("nvdisasm not found"),
    "profiling.static_report.FamilyMissing": lambda c: c("blackwell"),
    "profiling.timeline_plot.TimelineCsvError": lambda c: c("no rows"),
    "properties.failures.SubjectCheckFailed": lambda c: c("mismatch\nreproduce: python -m properties.repro"),
    "properties.failures.SubjectFaulted": lambda c: c("illegal memory access"),
    "properties.failures.SubjectTimedOut": lambda c: c("no verdict in 60 s"),
    "properties.failures.SubjectErrored": lambda c: c("raised KeyError"),
    "properties.isolation.WorkerStartError": lambda c: c("worker did not start"),
    "properties.gpu_pool.TooManyWorkers": lambda c: c("2 workers for 1 visible GPU (0) at 1 worker per GPU"),
    "properties.leaderboard.CaseFailed": lambda c: c("timed out", "Traceback ..."),
    "properties.subjects.UnknownSubjectError": lambda c: c("unknown subject 'x'"),
    "properties.usage.UsageMistake": lambda c: c("--variant needs a label"),
}


def _samples() -> list[BaseException]:
    return [SAMPLES[name](cls) for name, cls in sorted(_exception_classes().items())]


def _same(a: BaseException, b: BaseException) -> bool:
    return type(a) is type(b) and str(a) == str(b) and vars(a) == vars(b)


def test_every_exception_class_has_a_sample():
    classes = _exception_classes()
    assert len(classes) >= 15, sorted(classes)  # the discovery itself works
    missing = sorted(set(classes) - set(SAMPLES))
    assert not missing, f"add a sample instance to SAMPLES for {missing}"
    stale = sorted(set(SAMPLES) - set(classes))
    assert not stale, f"SAMPLES names classes that no longer exist: {stale}"


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_pickle_round_trip_keeps_message_and_fields(name):
    classes = _exception_classes()
    if name not in classes:
        pytest.fail(f"{name} is not an exception class of the project any more")
    error = SAMPLES[name](classes[name])
    again = pickle.loads(pickle.dumps(error))
    assert _same(error, again), (vars(error), vars(again), str(error), str(again))


def _raise(error: BaseException):
    raise error


def test_errors_raised_in_a_spawned_pool_reach_the_parent_intact():
    """What the leaderboard's evaluator does: ``pool.apply`` in a spawned pool of one worker."""
    errors = _samples()
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        for error in errors:
            result = pool.apply_async(_raise, (error,))
            with pytest.raises(BaseException) as info:
                result.get(timeout=60)
            assert _same(info.value, error), (type(info.value), str(info.value), str(error))
