"""Planted fault (GPU, CuTe DSL): when some group has an odd M, a one-thread CuTe DSL kernel stores
one fp16 2^40 elements (2 TiB) past the first non-empty C: an illegal memory access that breaks the
CUDA context. Otherwise the exact result. Imports on a CPU machine (CuTe DSL is imported when the
fault runs); ``python -m properties.faulty_subjects.gpu_oob_cute --compile`` compiles the kernel
for sm_90a without a GPU."""

import functools
import os
import sys

from properties.faulty_subjects import gpu_common as _common

CONSTRAINTS = _common.CONSTRAINTS
LIMITS = _common.LIMITS
FAR_ELEMENTS = 1 << 40


def faults_on(sizes) -> bool:
    return any(m % 2 for m, _, _, _ in sizes)


@functools.lru_cache(maxsize=None)
def _compiled_store_far():
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_ptr

    @cute.kernel
    def store_far(base: cute.Pointer, offset: cutlass.Int64):
        tidx, _, _ = cute.arch.thread_idx()
        if tidx == 0:
            far = cute.make_tensor(base + offset, cute.make_layout(1))
            far[0] = cutlass.Float16(1.0)

    @cute.jit
    def launch(base: cute.Pointer, offset: cutlass.Int64):
        store_far(base, offset).launch(grid=[1, 1, 1], block=[32, 1, 1])

    def ptr(address: int):
        return make_ptr(cutlass.Float16, address, cute.AddressSpace.gmem, assumed_align=2)

    compiled = cute.compile(launch, ptr(1 << 20), cutlass.Int64(FAR_ELEMENTS))
    return lambda address: compiled(ptr(address), cutlass.Int64(FAR_ELEMENTS))


def custom_kernel(data):
    out = _common.correct_result(data)
    if faults_on(_common.sizes_of(data)):
        target = next(c for c in out if c.numel())
        _compiled_store_far()(target.data_ptr())
    return out


if __name__ == "__main__" and "--compile" in sys.argv:
    os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
    _compiled_store_far()
    print("compiled the out-of-bounds store for", os.environ["CUTE_DSL_ARCH"])
