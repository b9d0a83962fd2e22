"""NVFP4 block-scaled grouped GEMM for Blackwell (sm_100a, tcgen05), in CuTe DSL.

C_g = (A_g * SFA_g) @ (B_g * SFB_g)^T for every group g: FP4 E2M1 operands, one FP8 E4M3 scale
per 16 K elements, fp32 accumulation in TMEM, fp16 output.

Public interface (shared by every kernel family of the harness):

* :class:`BlackwellConfig`, :func:`config_problems`, :data:`DEFAULT_CONFIG`,
  :data:`DECLARED_VARIANTS`, :data:`STATIC_MATRIX`, :func:`constraints`;
* :func:`unavailable_reason`, :func:`custom_kernel`;
* :func:`compile_for` (cached per config and group count; works on a CPU), :func:`prepare`
  (everything but the launch; ``dry_run=True`` takes CPU tensors), :data:`compile_cache`;
* :func:`static_build`: the hook ``profiling.static_report`` calls for each variant.

This package imports CuTe DSL only when a kernel is compiled or launched.
"""

from kernel.blackwell.config import (
    ARCH,
    DECLARED_VARIANTS,
    DEFAULT_CONFIG,
    EXPERIMENTAL_VARIANTS,
    PRODUCTION_VARIANTS,
    STATIC_MATRIX,
    BlackwellConfig,
    SmemBudget,
    TmemBudget,
    config_problems,
    constraints,
    max_ab_stages,
    smem_budget,
    threads_per_cta,
    tmem_budget,
)
from kernel.blackwell.host import (
    PIPELINE,
    Prepared,
    compile_cache,
    compile_for,
    custom_kernel,
    launch,
    prepare,
    static_build,
    table_cache,
    unavailable_reason,
)

FAMILY = "blackwell"

__all__ = [
    "ARCH",
    "DECLARED_VARIANTS",
    "DEFAULT_CONFIG",
    "EXPERIMENTAL_VARIANTS",
    "FAMILY",
    "PIPELINE",
    "PRODUCTION_VARIANTS",
    "STATIC_MATRIX",
    "BlackwellConfig",
    "Prepared",
    "SmemBudget",
    "TmemBudget",
    "compile_cache",
    "compile_for",
    "config_problems",
    "constraints",
    "custom_kernel",
    "launch",
    "max_ab_stages",
    "prepare",
    "smem_budget",
    "static_build",
    "table_cache",
    "threads_per_cta",
    "tmem_budget",
    "unavailable_reason",
]
