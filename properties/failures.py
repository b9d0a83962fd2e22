"""The failures a checked example can raise: every one is an AssertionError, so Hypothesis and
pytest see a failing example, and its message ends with a one-line reproduction."""

from __future__ import annotations

from kernel.errors import PicklableError


class SubjectCheckFailed(PicklableError, AssertionError):
    """The subject's result broke a check (properties.checks)."""

    kind = "fail"


class SubjectFaulted(SubjectCheckFailed):
    """The subject crashed its process or broke its CUDA context on this example."""

    kind = "fault"


class SubjectTimedOut(SubjectCheckFailed):
    """A hang: the subject's example did not end its compile phase, or did not answer after its
    launch, within that phase's limit (properties.isolation); the message names the phase."""

    kind = "timeout"


class SubjectErrored(SubjectCheckFailed):
    """The subject raised an unexpected exception on this example (context still healthy)."""

    kind = "error"
