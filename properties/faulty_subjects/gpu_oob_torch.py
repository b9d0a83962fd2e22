"""Planted fault (GPU, torch): when some group has an odd M, torch fills a 2-element fp16 view
whose second element lies 1 TiB past the first non-empty C (built through
``__cuda_array_interface__``, which torch does not bound-check): an illegal memory access that
breaks the CUDA context. Otherwise the exact result. Imports on a CPU machine."""

from properties.faulty_subjects import gpu_common as _common

CONSTRAINTS = _common.CONSTRAINTS
LIMITS = _common.LIMITS
FAR_BYTES = 1 << 40


def faults_on(sizes) -> bool:
    return any(m % 2 for m, _, _, _ in sizes)


class _FarView:
    """Two fp16 elements: one at ``address``, one FAR_BYTES past it."""

    def __init__(self, address: int):
        self.__cuda_array_interface__ = {
            "data": (address, False),
            "shape": (2,),
            "strides": (FAR_BYTES,),
            "typestr": "<f2",
            "version": 2,
        }


def custom_kernel(data):
    import torch

    out = _common.correct_result(data)
    if faults_on(_common.sizes_of(data)):
        target = next(c for c in out if c.numel())
        far = torch.as_tensor(_FarView(target.data_ptr()))
        far.fill_(1.0)
    return out
