"""What a subject variant is: its entry point, its constraints, how large its problems are drawn.

A leaf module (no import of ``properties.subjects`` or ``properties.perturbed``), so that
``properties.subjects`` can resolve ``BASE~TAG`` names through ``properties.perturbed`` while
``properties.perturbed`` builds on :class:`SubjectVariant`. ``properties.subjects`` re-exports both
classes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from kernel.validation import KernelConstraints


@dataclass(frozen=True)
class SizeLimits:
    """How large the strategies draw problems for a subject (speed, not correctness)."""

    max_groups: int = 6
    max_m: int = 300
    max_n: int = 300
    max_k_blocks: int = 6  # K is drawn as k_granularity * [1, max_k_blocks]


@dataclass(frozen=True)
class SubjectVariant:
    subject: str
    label: str
    run: Callable[[Any], list] = field(compare=False)
    constraints: KernelConstraints
    limits: SizeLimits
    skip_reason: str | None = None
    # the --subject value that resolves to this variant again (in a worker process, in a repro
    # line); "" for variants built in code (properties.wrong_subjects), which cannot be re-resolved
    source: str = field(default="", compare=False)
    # raises InvalidProblemError on bad input (test_subject_rejects_invalid_problems runs only then)
    validates_input: bool = True

    @property
    def repro_subject(self) -> str:
        return self.source or self.subject

    @property
    def device(self) -> str:
        return self.constraints.device_type

    @property
    def test_id(self) -> str:
        return f"{self.subject}:{self.label}"
