"""Fixed, named cases for the GPU kernels, run through the property suite's checks.

The Hypothesis properties draw problems at random; these pin the cases a kernel engineer
reaches for first (the standard shapes, ragged edges, an empty group, many groups, rows whose
N is not a multiple of 8) for every declared variant of each family. Each case goes through
``properties.checks.check_example``: NaN-poisoned, canary-guarded outputs, the oracle's bound,
bitwise equality on exact sums, a bitwise-identical rerun, the caller's group order; a failure
prints the one-line reproduction. Skipped at collection where the family's GPU is absent.
"""

from __future__ import annotations

import pytest

from properties.checks import check_example
from properties.strategies import Example
from properties.subjects import resolve_subject

CASES = {
    "bench3": [(192, 3072, 4096, 1), (320, 3072, 4096, 1)],
    "bench4": [(128, 4096, 1536, 1), (384, 4096, 1536, 1)],
    "ragged": [(40, 136, 256, 1), (200, 72, 512, 1), (1, 1, 256, 1)],
    "edges": [(1, 8, 256, 1), (129, 257, 256, 1), (255, 24, 768, 1), (0, 40, 256, 1)],
    "n_not_8": [(200, 130, 768, 1), (64, 7, 256, 1)],
    "many_groups": [(8 * g + 1, 64 + 24 * g, 256 * (1 + g % 3), 1) for g in range(11)],
}
# (distribution, layout) per case: the standard shapes on realistic data, the rest on the hardest
RUNS = {"bench3": ("gaussian", "separate"), "bench4": ("leaderboard", "packed_c")}
DEFAULT_RUN = ("uniform", "views")


def _variants():
    params = []
    for family in ("hopper", "blackwell"):
        for v in resolve_subject(family):
            marks = [pytest.mark.gpu, pytest.mark.sm90 if family == "hopper" else pytest.mark.sm100]
            if v.skip_reason:
                marks.append(pytest.mark.skip(reason=v.skip_reason))
            params.append(pytest.param(v, id=v.test_id, marks=marks))
    return params


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("variant", _variants())
def test_fixed_case(variant, case):
    sizes = tuple(CASES[case])
    if any(k % variant.constraints.k_granularity for _, _, k, _ in sizes):
        pytest.skip(f"{case}: K is not a multiple of {variant.constraints.k_granularity}")
    distribution, layout = RUNS.get(case, DEFAULT_RUN)
    check_example(variant, Example(sizes, seed=sum(map(ord, case)), distribution=distribution, layout=layout))
