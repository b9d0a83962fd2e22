"""What GPU, if any, this process can run kernels on."""

from __future__ import annotations

import functools


@functools.lru_cache(maxsize=None)
def cuda_capability() -> tuple[int, int] | None:
    """Compute capability of the current CUDA device, or None without a usable GPU."""
    try:
        import torch

        if not torch.cuda.is_available():
            return None
        return torch.cuda.get_device_capability()
    except Exception:  # a broken driver is "no GPU" for the purpose of choosing subjects
        return None


def unavailable_reason(required_major: int, arch_name: str) -> str | None:
    """None when a device of compute capability ``required_major``.x is present, else why not."""
    cap = cuda_capability()
    if cap is None:
        return f"no CUDA device on this machine ({arch_name} kernel needs one)"
    if cap[0] != required_major:
        return f"this GPU is sm_{cap[0]}{cap[1]}; the {arch_name} kernel needs sm_{required_major}x"
    return None


@functools.lru_cache(maxsize=None)
def sm_count() -> int:
    import torch

    return torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
