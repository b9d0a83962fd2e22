"""Planted wrong result (CPU): the first element of the first non-empty output is off by one
fp16 step when some group has an odd M. A plain check failure: the worker survives it."""

import torch

from kernel import model
from kernel.validation import validate_problem
from properties.subjects import SizeLimits

CONSTRAINTS = model.constraints()
LIMITS = SizeLimits(max_groups=3, max_m=70, max_n=70, max_k_blocks=2)


def wrong_on(sizes) -> bool:
    return any(m % 2 for m, _, _, _ in sizes)


def custom_kernel(data):
    groups = validate_problem(data, CONSTRAINTS)
    out = model.custom_kernel(data)
    if wrong_on([g.size for g in groups]):
        for c in out:
            if c.numel():
                bits = c.view(torch.int16)
                bits[0, 0, 0] = bits[0, 0, 0] ^ 0x0400  # flip an exponent bit: far outside any bound
                break
    return out
