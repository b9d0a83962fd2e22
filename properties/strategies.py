"""Hypothesis strategies: problem sets, value distributions, pointer layouts, invalid problems.

Every example is an :class:`Example`: plain sizes, a seed and two names. The tensors are built
from it by ``oracle.make_inputs`` through a seeded ``torch.Generator``, so an example prints as
one line and replays bit for bit on any machine (see ``Example.repro``).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from hypothesis import strategies as st

import oracle
from properties.subjects import SizeLimits, SubjectVariant
from kernel.validation import KernelConstraints

# sizes around the tile edges the kernels use (64, 128, 256 rows or columns)
EDGE_SIZES = (1, 2, 8, 63, 64, 65, 127, 128, 129, 191, 192, 255, 256, 257)


@dataclass(frozen=True)
class Example:
    sizes: tuple[tuple[int, int, int, int], ...]
    seed: int
    distribution: str
    layout: str

    def repro(self, subject: str, variant: str | None = None) -> str:
        args = [
            "python -m properties.repro",
            f"--subject={shlex.quote(subject)}",
            *([f"--variant={shlex.quote(variant)}"] if variant else []),
            f"--sizes={shlex.quote(repr([list(s) for s in self.sizes]))}",
            f"--seed={self.seed}",
            f"--distribution={self.distribution}",
            f"--layout={self.layout}",
        ]
        return " ".join(args)


def _dim(limit: int, allow_zero: bool) -> st.SearchStrategy[int]:
    edges = [e for e in EDGE_SIZES if e <= limit]
    choices = [st.sampled_from(edges), st.integers(1, limit)]
    if allow_zero:
        choices.append(st.just(0))
    return st.one_of(*choices)


@st.composite
def problem_sizes(
    draw,
    constraints: KernelConstraints,
    limits: SizeLimits,
    layout: str = "separate",
) -> tuple[tuple[int, int, int, int], ...]:
    """A valid problem set for ``constraints``, ragged per group, biased to tile edges."""
    num_groups = draw(st.integers(1, min(limits.max_groups, constraints.max_groups)))
    gran = constraints.k_granularity
    k_of = st.integers(1, limits.max_k_blocks).map(lambda b: b * gran)
    m_of = _dim(limits.max_m, allow_zero=True)
    n_of = _dim(limits.max_n, allow_zero=True)
    shared_m = draw(_dim(limits.max_m, allow_zero=False)) if layout == "shared_a" else None
    shared_n = draw(_dim(limits.max_n, allow_zero=False)) if layout == "shared_b" else None
    shared_k = draw(k_of) if layout in ("shared_a", "shared_b") else None
    sizes = []
    for _ in range(num_groups):
        m = shared_m if shared_m is not None else draw(m_of)
        n = shared_n if shared_n is not None else draw(n_of)
        k = shared_k if shared_k is not None else draw(k_of)
        sizes.append((m, n, k, 1))
    # at least one group with work, so every example exercises the kernel
    if all(m == 0 or n == 0 for m, n, _, _ in sizes):
        m, n, k, l = sizes[0]
        sizes[0] = (max(m, 1), max(n, 1), k, l)
    return tuple(sizes)


@st.composite
def examples(draw, variant: SubjectVariant, distributions=None, layouts=None) -> Example:
    layout = draw(st.sampled_from(layouts or oracle.LAYOUTS))
    sizes = draw(problem_sizes(variant.constraints, variant.limits, layout))
    distribution = draw(st.sampled_from(distributions or oracle.DISTRIBUTIONS))
    seed = draw(st.integers(0, 2**31 - 1))
    return Example(sizes, seed, distribution, layout)


@dataclass(frozen=True)
class InvalidExample:
    """A valid example plus one broken rule; ``rule`` is what the typed error must name."""

    base: Example
    breakage: str
    rule: str
    group: int | None


# breakage name -> the InvalidProblemError.rule it must raise
BREAKAGES = {
    "k_not_multiple": "k_granularity",
    "l_not_one": "l_is_one",
    "too_many_groups": "too_many_groups",
    "no_groups": "no_groups",
    "wrong_dtype_a": "dtype",
    "wrong_shape_b": "shape",
    "transposed_c": "strides",
    "misaligned_a": "alignment",
    "c_aliases_a": "aliasing",
    "c_overlaps_c": "aliasing",
    "wrong_device": "device",
}


@st.composite
def invalid_examples(draw, variant: SubjectVariant) -> InvalidExample:
    base = draw(examples(variant, distributions=["uniform"], layouts=["separate"]))
    breakage = draw(st.sampled_from(sorted(BREAKAGES)))
    group = draw(st.integers(0, len(base.sizes) - 1))
    if breakage in ("too_many_groups", "no_groups"):
        group = None
    return InvalidExample(base, breakage, BREAKAGES[breakage], group)
