"""What a subject variant is: its entry point, its constraints, how large its problems are drawn.

A leaf module (no import of ``properties.subjects`` or ``properties.perturbed``), so that
``properties.subjects`` can resolve ``BASE~TAG`` names through ``properties.perturbed`` while
``properties.perturbed`` builds on :class:`SubjectVariant`. ``properties.subjects`` re-exports both
classes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from kernel.plan import LaunchPlan, Schedule, make_plan
from kernel.validation import KernelConstraints


@dataclass(frozen=True)
class SizeLimits:
    """How large the strategies draw problems for a subject (speed, not correctness)."""

    max_groups: int = 6
    max_m: int = 300
    max_n: int = 300
    max_k_blocks: int = 6  # K is drawn as k_granularity * [1, max_k_blocks]


@dataclass(frozen=True)
class GridPlanner:
    """How a subject cuts a problem into tiles and persistent CTAs: the arguments its host
    pipeline passes to :func:`kernel.plan.make_plan` (tile shape, CTA cap on this machine,
    schedule). The strategies count a drawn problem's tiles, rounds and idle CTAs with
    :meth:`plan`, the plan the subject itself runs (properties/test_grid_strategies.py checks
    that they agree)."""

    tile_m: int
    tile_n: int
    tile_k: int
    max_ctas: int | None  # the persistent grid's cap; None: one CTA per tile
    schedule: Schedule = "contiguous"
    # the SMs a one-CTA-per-tile grid (max_ctas None) runs in waves over: the GPU's, else an
    # H100's or H200's 132
    sms: int = 132

    @property
    def ctas(self) -> int:
        """CTAs one round of the grid runs: the cap, else the SM count (waves of a one-CTA-per-tile grid)."""
        return self.max_ctas if self.max_ctas is not None else self.sms

    def plan(self, sizes: Sequence[Sequence[int]]) -> LaunchPlan:
        return make_plan(sizes, tile_m=self.tile_m, tile_n=self.tile_n, tile_k=self.tile_k,
                         max_ctas=self.max_ctas, schedule=self.schedule)


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
    # how it plans a launch (None: not known, e.g. a CPU file subject): sizes the multi-round
    # draws and corners (properties.strategies.multi_round_sizes)
    planner: GridPlanner | None = None

    @property
    def repro_subject(self) -> str:
        return self.source or self.subject

    @property
    def device(self) -> str:
        return self.constraints.device_type

    @property
    def test_id(self) -> str:
        return f"{self.subject}:{self.label}"
