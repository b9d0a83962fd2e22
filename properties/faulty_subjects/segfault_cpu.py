"""Planted fault (CPU): writes to address 0, killing its process with SIGSEGV, when some group has
an odd M; otherwise the CPU model's correct result. Run it only isolated (``--isolate=always``)."""

import ctypes

from kernel import model
from kernel.validation import validate_problem
from properties.subjects import SizeLimits

CONSTRAINTS = model.constraints()
LIMITS = SizeLimits(max_groups=3, max_m=70, max_n=70, max_k_blocks=2)


def faults_on(sizes) -> bool:
    return any(m % 2 for m, _, _, _ in sizes)


def custom_kernel(data):
    groups = validate_problem(data, CONSTRAINTS)
    if faults_on([g.size for g in groups]):
        ctypes.memset(0, 0, 8)  # a store to the null page: SIGSEGV
    return model.custom_kernel(data)
