"""What the planted GPU subjects share: constraints, size limits and a correct result (the exact
oracle, computed on the device and copied into the caller's C)."""

import oracle
from kernel.validation import KernelConstraints, validate_problem
from properties.subjects import SizeLimits

CONSTRAINTS = KernelConstraints(k_granularity=64, max_groups=16, device_type="cuda")
LIMITS = SizeLimits(max_groups=4, max_m=200, max_n=200, max_k_blocks=4)


def correct_result(data):
    groups = validate_problem(data, CONSTRAINTS)
    for g, ref in zip(groups, oracle.reference(data)):
        g.c.copy_(ref)
    return [g.c for g in groups]


def sizes_of(data):
    return [tuple(s) for s in data[3]]
