"""The Hopper (sm_90a) port: NVFP4 grouped GEMM dequantized in shared memory, wgmma fp16, fp32 acc.

Importing this package does not import CuTe DSL; ``compile_for`` and the launch do, lazily.
"""

from kernel.errors import UnsupportedConfigError
from kernel.hopper.config import HopperConfig, check_config, config_problems, smem_bytes
from kernel.hopper.variants import (
    DECLARED_VARIANTS,
    DEFAULT_CONFIG,
    EXPERIMENTAL_VARIANTS,
    FASTEST_CONFIG,
    FEW_TILES_CONFIG,
    IN_FLIGHT_CONFIG,
    PRODUCTION_VARIANTS,
    SPLIT_WARP_CONFIG,
    STATIC_MATRIX,
    WIDE_BESIDE_240_CONFIG,
    WIDE_BESIDE_CONFIG,
    WIDE_Y_CONFIG,
)
from kernel.hopper.launch import (
    ARCH,
    PIPELINE,
    Prepared,
    compile_cache,
    compile_for,
    constraints,
    custom_kernel,
    default_config,
    launch,
    prepare,
    static_build,
    unavailable_reason,
)

__all__ = [
    "ARCH",
    "EXPERIMENTAL_VARIANTS",
    "FASTEST_CONFIG",
    "FEW_TILES_CONFIG",
    "WIDE_Y_CONFIG",
    "WIDE_BESIDE_CONFIG",
    "WIDE_BESIDE_240_CONFIG",
    "IN_FLIGHT_CONFIG",
    "SPLIT_WARP_CONFIG",
    "PIPELINE",
    "PRODUCTION_VARIANTS",
    "static_build",
    "DECLARED_VARIANTS",
    "DEFAULT_CONFIG",
    "STATIC_MATRIX",
    "HopperConfig",
    "Prepared",
    "UnsupportedConfigError",
    "check_config",
    "compile_cache",
    "compile_for",
    "config_problems",
    "constraints",
    "custom_kernel",
    "default_config",
    "launch",
    "prepare",
    "smem_bytes",
    "unavailable_reason",
]
