"""Planted hang (CPU): never returns when some group has an odd N; otherwise the CPU model's
correct result. Run it only isolated (``--isolate=always``, with a time limit)."""

import threading

from kernel import model
from kernel.validation import validate_problem
from properties.subjects import SizeLimits

CONSTRAINTS = model.constraints()
LIMITS = SizeLimits(max_groups=3, max_m=70, max_n=70, max_k_blocks=2)


def hangs_on(sizes) -> bool:
    return any(n % 2 for _, n, _, _ in sizes)


def custom_kernel(data):
    groups = validate_problem(data, CONSTRAINTS)
    if hangs_on([g.size for g in groups]):
        threading.Event().wait()  # nobody sets it
    return model.custom_kernel(data)
