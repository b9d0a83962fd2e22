"""Typed errors shared by every kernel: tests expect on the type, never on message text."""

from __future__ import annotations


def rebuild_error(cls: type, message: str, state: dict) -> BaseException:
    """Unpickle an error of the harness: its class, its message and its fields, without calling
    its ``__init__`` (whose signature is the class's own business)."""
    error = cls.__new__(cls, message)
    BaseException.__init__(error, message)
    error.__dict__.update(state)
    return error


class PicklableError:
    """Mixin for exception classes whose ``__init__`` takes other arguments than the message.

    ``BaseException`` pickles itself as ``cls(*self.args)``, which calls ``__init__`` with the
    formatted message alone: a class with a signature of its own then fails to unpickle, and a
    ``multiprocessing`` pool whose worker raised it loses its result thread and waits forever.
    This mixin pickles the class, the message and the instance's fields instead, so the error
    crosses a process boundary with its message and fields intact. Every exception class of the
    project derives from it (``kernel/tests/test_errors_pickle.py`` enumerates them)."""

    def __reduce__(self):
        return rebuild_error, (type(self), str(self), dict(self.__dict__))


class HarnessError(PicklableError, Exception):
    """Base class of every error the harness raises on purpose."""


class InvalidProblemError(HarnessError, ValueError):
    """A problem (the leaderboard tuple) breaks a rule of the kernel that was asked to run it.

    Raised by :func:`kernel.validation.validate_problem` before any launch. ``group`` is the
    caller's group index (``None`` for a rule about the whole problem), ``tensor`` names the
    tensor (``a``, ``b``, ``c``, ``sfa``, ``sfb``, ``sfa_blocked``, ``sfb_blocked``,
    ``problem_sizes``) and ``rule`` is a short stable identifier of the broken rule.
    """

    def __init__(self, rule: str, detail: str, *, group: int | None = None, tensor: str | None = None):
        self.rule = rule
        self.group = group
        self.tensor = tensor
        self.detail = detail
        where = []
        if group is not None:
            where.append(f"group {group}")
        if tensor is not None:
            where.append(f"tensor {tensor}")
        prefix = ", ".join(where)
        super().__init__(f"[{rule}] {prefix + ': ' if prefix else ''}{detail}")


class UnsupportedConfigError(HarnessError, ValueError):
    """A kernel configuration cannot be built; ``reasons`` lists every rule it breaks."""

    def __init__(self, label: str, reasons: list[str]):
        self.label = label
        self.reasons = list(reasons)
        super().__init__(f"config {label} is not supported: " + "; ".join(self.reasons))


class DeviceUnavailableError(HarnessError, RuntimeError):
    """The kernel cannot run on this machine (no GPU, or a GPU of another architecture)."""


class ProtocolViolation(HarnessError, RuntimeError):
    """A harness build's happens-before checker saw the kernel break a synchronization rule
    (kernel.perturbation ``Perturbation.checks``): raised by the host after the launch, with the
    decoded record (``record``: kernel.perturbation.CheckRecord) and the build's ``label``. The
    outputs of that launch must not be trusted, whatever they hold."""

    def __init__(self, label: str, record):
        self.label = label
        self.record = record
        super().__init__(f"{label}: the kernel broke its synchronization protocol\n{record.describe()}")
