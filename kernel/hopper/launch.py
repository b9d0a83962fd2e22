"""Host flow of the Hopper kernel: validate -> plan -> tables -> compile (cached) -> launch.

Compiled once per ``(config, num_groups)``: shapes, pointers, tile totals and the CTA count are
run-time values read from the device tables.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch

from kernel import device as devmod
from kernel.compile_cache import CompileCache
from kernel.errors import DeviceUnavailableError
from kernel.hopper.config import DEFAULT_CONFIG, HopperConfig, check_config, smem_bytes
from kernel.plan import LaunchPlan, make_plan
from kernel.tables import GUARD_BYTE, GUARD_ROWS, DeviceTables, TableCache, guarded
from kernel.tensor_maps import TensorMapCache
from kernel.validation import GroupTensors, KernelConstraints, validate_problem

ARCH = "sm_90a"
compile_cache: CompileCache = CompileCache("hopper")
table_cache = TableCache()
tensor_map_cache = TensorMapCache()


def constraints(config: HopperConfig = DEFAULT_CONFIG, *, device_type: str = "cuda") -> KernelConstraints:
    """K must be a multiple of the stage depth ``tile_k`` (128 or 256)."""
    return KernelConstraints(k_granularity=config.tile_k, device_type=device_type)


def unavailable_reason() -> str | None:
    return devmod.unavailable_reason(9, "Hopper sm_90a")


def _import_cutlass():
    # the compile names its target explicitly (compile_options), so CUTE_DSL_ARCH only needs a
    # default for processes that import cutlass first through this family
    os.environ.setdefault("CUTE_DSL_ARCH", ARCH)
    import cuda.bindings.driver as cuda  # noqa: F401
    import cutlass  # noqa: F401
    import cutlass.cute as cute  # noqa: F401


def compile_options(dump_dir: str | os.PathLike | None = None) -> str:
    """An explicit target makes the result independent of CUTE_DSL_ARCH (one process can compile
    several families); ``dump_dir`` keeps the cubin for static inspection."""
    opts = f"--gpu-arch {ARCH}"
    if dump_dir is not None:
        opts += f" --keep-cubin --dump-dir {os.fspath(dump_dir)}"
    return opts


def _build(config: HopperConfig, num_groups: int, dump_dir: str | os.PathLike | None = None, perturbation=None):
    _import_cutlass()
    import cuda.bindings.driver as cuda
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_ptr

    from kernel.hopper.kernel import HopperNvfp4GroupedGemm

    gemm = HopperNvfp4GroupedGemm(config, num_groups, perturbation)
    fake32 = make_ptr(cutlass.Int32, 16, cute.AddressSpace.gmem, assumed_align=16)
    fake32b = make_ptr(cutlass.Int32, 16, cute.AddressSpace.gmem, assumed_align=16)
    fake64 = make_ptr(cutlass.Int64, 16, cute.AddressSpace.gmem, assumed_align=16)
    fake_maps = make_ptr(cutlass.Uint8, 64, cute.AddressSpace.gmem, assumed_align=64)
    return cute.compile(
        gemm, fake32, fake32b, fake64, fake_maps, cutlass.Int32(1), cuda.CUstream(0), options=compile_options(dump_dir)
    )


def static_build(config: HopperConfig, dump_dir: str | os.PathLike, num_groups: int = 8, perturbation=None) -> dict:
    """profiling.static_report's hook: compile one variant, keep its cubin, state the budgets.
    ``perturbation`` (kernel.perturbation, tests only): the perturbed build of the variant."""
    from kernel.cubin import compile_keeping_cubin

    check_config(config)
    folder = config.label if perturbation is None else f"{config.label}~{perturbation.tag}"
    cubin, seconds = compile_keeping_cubin(folder, dump_dir, lambda dump: _build(config, num_groups, dump, perturbation))
    return {
        "label": config.label,
        "arch": ARCH,
        "cubin": cubin,
        "compile_seconds": seconds,
        "shared_bytes": smem_bytes(config)["total"],
        "threads_per_cta": config.threads,
        "facts": {
            "tile_mnk": [config.tile_m, config.tile_n, config.tile_k],
            "num_ab_stages": config.num_ab_stages,
            "consumer_warpgroups": config.consumer_warpgroups,
            "swapped": config.swapped,
            "loader": config.loader,
        },
    }


def compile_for(config: HopperConfig, num_groups: int, perturbation=None):
    """The compiled kernel of ``(config, num_groups)``, from the cache or compiled now.

    Works without a GPU when ``CUTE_DSL_ARCH=sm_90a`` is set before cutlass is imported; with
    ``CUTE_DSL_KEEP_CUBIN=1`` and ``CUTE_DSL_DUMP_DIR`` the cubin is kept for SASS inspection.
    """
    check_config(config)
    if num_groups < 1:
        raise ValueError(f"num_groups must be >= 1, got {num_groups}")
    # a perturbed build (kernel.perturbation, tests only) is its own cache entry
    key = (config, num_groups) if perturbation is None else (config, num_groups, perturbation)
    return compile_cache.get_or_compile(key, lambda: _build(config, num_groups, perturbation=perturbation))


@dataclass(frozen=True)
class Prepared:
    config: HopperConfig
    groups: list[GroupTensors]
    plan: LaunchPlan
    tables: DeviceTables | None  # None for a dry run
    outputs: list[torch.Tensor]  # the callers' c tensors, in caller order
    tensor_maps: torch.Tensor | None = None  # loader="tma": uint8 [G, 2, 128] (A, B per slot)


def _max_ctas(config: HopperConfig, device_type: str) -> int:
    sms = devmod.sm_count() if device_type == "cuda" else 132
    return sms * config.ctas_per_sm


def prepare(data: Any, config: HopperConfig = DEFAULT_CONFIG, *, dry_run: bool = False, strict: bool = False) -> Prepared:
    """Everything but the launch. ``dry_run`` accepts CPU tensors and builds no device tables.
    ``strict``: device tables and tensor maps with guard rows (kernel.tables; the harness)."""
    check_config(config)
    device_type = "cpu" if dry_run else "cuda"
    groups = validate_problem(data, constraints(config, device_type=device_type))
    plan = make_plan(
        [g.size for g in groups],
        tile_m=config.tile_m,
        tile_n=config.tile_n,
        tile_k=config.tile_k,
        max_ctas=_max_ctas(config, device_type),
        schedule=config.schedule,
    )
    tables = maps = None
    if not dry_run and plan.total_tiles:
        tables = table_cache.get(plan, groups, groups[0].c.device, strict=strict)
        if config.loader == "tma":
            maps = tensor_map_cache.get(plan, groups, config.tile_m, config.tile_n, groups[0].c.device)
            if strict:
                maps = guarded(maps, GUARD_ROWS, GUARD_BYTE)
    return Prepared(config, groups, plan, tables, [g.c for g in groups], maps)


def launch(prep: Prepared, stream: Any | None = None, perturbation=None) -> list[torch.Tensor]:
    if prep.plan.total_tiles == 0:
        return prep.outputs
    reason = unavailable_reason()
    if reason is not None:
        raise DeviceUnavailableError(reason)
    compiled = compile_for(prep.config, prep.plan.num_groups, perturbation)
    import cuda.bindings.driver as cuda
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_ptr

    t = prep.tables
    if stream is None:
        stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    compiled(
        make_ptr(cutlass.Int32, t.sizes.data_ptr(), cute.AddressSpace.gmem, assumed_align=16),
        make_ptr(cutlass.Int32, t.tile_prefix.data_ptr(), cute.AddressSpace.gmem, assumed_align=16),
        make_ptr(cutlass.Int64, t.pointers.data_ptr(), cute.AddressSpace.gmem, assumed_align=16),
        # loader="tma" reads its tensor maps here; the others never touch this argument
        make_ptr(cutlass.Uint8, (t.pointers if prep.tensor_maps is None else prep.tensor_maps).data_ptr(),
                 cute.AddressSpace.gmem, assumed_align=64),
        cutlass.Int32(prep.plan.num_ctas),
        stream,
    )
    return prep.outputs


def custom_kernel(data: Any, config: HopperConfig = DEFAULT_CONFIG, *, perturbation=None,
                  strict: bool = False) -> list[torch.Tensor]:
    """Leaderboard entry point: writes every group's C in place and returns them (caller order).
    ``perturbation`` (kernel.perturbation) and ``strict`` (guarded tables): the harness's
    perturbed runs, never production."""
    return launch(prepare(data, config, strict=strict), perturbation=perturbation)
