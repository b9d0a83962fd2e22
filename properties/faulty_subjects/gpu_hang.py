"""Planted hang (GPU): when some group has an odd N, launches a device-side spin of 2^62 clock
cycles (``torch.cuda._sleep``: decades) before the correct result, so the check's synchronize never
returns. Imports on a CPU machine."""

from properties.faulty_subjects import gpu_common as _common

CONSTRAINTS = _common.CONSTRAINTS
LIMITS = _common.LIMITS
SPIN_CYCLES = 1 << 62


def hangs_on(sizes) -> bool:
    return any(n % 2 for _, n, _, _ in sizes)


def custom_kernel(data):
    import torch

    if hangs_on(_common.sizes_of(data)):
        torch.cuda._sleep(SPIN_CYCLES)
    return _common.correct_result(data)
