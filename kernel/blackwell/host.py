"""Host entry points: compile (cached per config and group count), prepare, launch.

``compile_for`` needs no GPU: every compile names its target (``--gpu-arch sm_100a``), so it
compiles for sm_100a on any machine whatever ``CUTE_DSL_ARCH`` says (verified with
nvidia-cutlass-dsl 4.8.1 on a CPU machine with it unset, ``sm_100a`` or ``sm_90a``); this module
never sets it, so the Hopper family can share the process.
``prepare`` does everything ``custom_kernel`` does except the launch; with ``dry_run=True`` it
accepts CPU tensors, so the whole host path (validation, plan, tables, compile cache) is
testable on a CPU.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kernel.blackwell import config as cfg
from kernel.compile_cache import CompileCache
from kernel.device import sm_count, unavailable_reason as _unavailable_reason
from kernel.errors import DeviceUnavailableError, UnsupportedConfigError
from kernel.plan import LaunchPlan, make_plan
from kernel.tables import DeviceTables, TableCache
from kernel.validation import GroupTensors, validate_problem

compile_cache: CompileCache = CompileCache("blackwell")
table_cache = TableCache()

# TMA descriptors are 128-byte objects that must sit on 128-byte boundaries.
_TENSORMAP_BYTES = 128


def unavailable_reason() -> str | None:
    return _unavailable_reason(10, "Blackwell sm_100a")


def _import_cute():
    import cutlass.cute as cute

    return cute


def kernel_class(config: cfg.BlackwellConfig):
    if config.warp_roles == "specialized":
        from kernel.blackwell.specialized import SpecializedKernel

        return SpecializedKernel
    from kernel.blackwell.monolithic import MonolithicKernel

    return MonolithicKernel


def compile_options(config: cfg.BlackwellConfig, dump_dir: str | os.PathLike | None = None) -> str:
    """The explicit target makes the result independent of CUTE_DSL_ARCH (one process can
    compile several families); dump_dir keeps the cubin for static inspection."""
    opts = f"--gpu-arch {config.arch}"
    if dump_dir is not None:
        opts += f" --keep-cubin --dump-dir {os.fspath(dump_dir)}"
    return opts


def _compile(config: cfg.BlackwellConfig, num_groups: int, dump_dir=None):
    cute = _import_cute()
    import cutlass
    from cutlass.cute.runtime import make_fake_stream, make_ptr

    kernel = kernel_class(config)(config, num_groups)

    def ptr(dtype, align):
        return make_ptr(dtype, 0, cute.AddressSpace.gmem, assumed_align=align)

    return cute.compile(
        kernel,
        ptr(cutlass.Int32, 16),  # sizes
        ptr(cutlass.Int32, 16),  # tile prefix
        ptr(cutlass.Int64, 16),  # pointers
        ptr(cutlass.Int64, _TENSORMAP_BYTES),  # descriptor workspace
        cutlass.Int32(1),  # CTA count: a run-time value
        make_fake_stream(),
        options=compile_options(config, dump_dir),
    )


def compile_for(config: cfg.BlackwellConfig = cfg.DEFAULT_CONFIG, num_groups: int = 1):
    """The compiled kernel for (config, group count), from ``compile_cache``; no GPU needed."""
    resolved = config.resolved()
    if not 1 <= num_groups <= cfg.MAX_GROUPS:
        raise UnsupportedConfigError(resolved.label, [f"num_groups={num_groups} outside 1..{cfg.MAX_GROUPS}"])
    return compile_cache.get_or_compile((resolved, num_groups), lambda: _compile(resolved, num_groups))


def compile_uncached(config: cfg.BlackwellConfig, num_groups: int, dump_dir: str | os.PathLike):
    """A fresh compile that keeps its cubin in ``dump_dir`` (static inspection; bypasses the cache)."""
    Path(dump_dir).mkdir(parents=True, exist_ok=True)
    return _compile(config.resolved(), num_groups, dump_dir)


@dataclass(frozen=True)
class Prepared:
    """Everything a launch needs; ``groups`` and ``plan`` are in the caller's / slot order."""

    config: cfg.BlackwellConfig
    groups: list[GroupTensors]
    plan: LaunchPlan
    tables: DeviceTables
    compiled: Any
    outputs: list[torch.Tensor]  # the callers' c tensors, caller order

    @property
    def workspace_shape(self) -> tuple[int, int, int, int]:
        from kernel.blackwell.common import NUM_TENSORMAPS, TENSORMAP_I64, tensormap_slots

        return (self.plan.num_ctas, tensormap_slots(self.config, self.plan.num_groups), NUM_TENSORMAPS, TENSORMAP_I64)


def max_ctas(config: cfg.BlackwellConfig, *, dry_run: bool) -> int | None:
    """Persistent grid cap: one CTA per SM (the A/B stages fill shared memory); None = 1 per tile."""
    if config.warp_roles == "monolithic":
        return None
    if dry_run and unavailable_reason() is not None:
        return 148  # a B200's SM count, so a dry run plans what a B200 would run
    return sm_count()


def _data_device_type(data) -> str:
    try:
        return data[0][0][0].device.type
    except (IndexError, TypeError, AttributeError):
        return "cuda"


def prepare(data, config: cfg.BlackwellConfig = cfg.DEFAULT_CONFIG, *, dry_run: bool = False) -> Prepared:
    """Validate, plan, build tables and fetch the compiled kernel; everything but the launch."""
    resolved = config.resolved()
    constraints = cfg.constraints(resolved)
    if dry_run:
        from dataclasses import replace

        constraints = replace(constraints, device_type=_data_device_type(data))
    groups = validate_problem(data, constraints)
    sizes = [g.size for g in groups]
    plan = make_plan(
        sizes,
        tile_m=resolved.tile_m,
        tile_n=resolved.tile_n,
        tile_k=resolved.tile_k,
        max_ctas=max_ctas(resolved, dry_run=dry_run),
        schedule=resolved.schedule,
    )
    device = groups[0].c.device
    tables = table_cache.get(plan, groups, device)
    compiled = compile_for(resolved, plan.num_groups)
    return Prepared(resolved, groups, plan, tables, compiled, [g.c for g in groups])


def launch(prepared: Prepared) -> None:
    """Launch on the current torch stream (no synchronization)."""
    import cuda.bindings.driver as cuda

    cute = _import_cute()
    import cutlass
    from cutlass.cute.runtime import make_ptr

    if prepared.plan.total_tiles == 0:
        return  # every group is empty: nothing to write
    t = prepared.tables
    workspace = torch.empty(prepared.workspace_shape, dtype=torch.int64, device=t.sizes.device)
    assert workspace.data_ptr() % _TENSORMAP_BYTES == 0

    def ptr(tensor, dtype, align=16):
        return make_ptr(dtype, tensor.data_ptr(), cute.AddressSpace.gmem, assumed_align=align)

    stream = cuda.CUstream(torch.cuda.current_stream(t.sizes.device).cuda_stream)
    prepared.compiled(
        ptr(t.sizes, cutlass.Int32),
        ptr(t.tile_prefix, cutlass.Int32),
        ptr(t.pointers, cutlass.Int64),
        ptr(workspace, cutlass.Int64, _TENSORMAP_BYTES),
        cutlass.Int32(prepared.plan.num_ctas),
        stream,
    )


def custom_kernel(data, config: cfg.BlackwellConfig = cfg.DEFAULT_CONFIG) -> list[torch.Tensor]:
    """The leaderboard entry point: C_g = (A_g * SFA_g) @ (B_g * SFB_g)^T for every group.

    The kernel writes each group's own ``c``; the returned list is the callers' c tensors in
    the caller's order.
    """
    reason = unavailable_reason()
    if reason is not None:
        raise DeviceUnavailableError(reason)
    prepared = prepare(data, config)
    launch(prepared)
    return list(prepared.outputs)


def static_build(config: cfg.BlackwellConfig, dump_dir: str | os.PathLike, num_groups: int = 8) -> dict:
    """profiling.static_report's hook: compile one variant, keep its cubin, state the budgets."""
    from kernel.cubin import compile_keeping_cubin

    resolved = config.resolved()
    cubin, seconds = compile_keeping_cubin(
        config.label, dump_dir, lambda dump: compile_uncached(resolved, num_groups, dump)
    )
    smem = cfg.smem_budget(resolved)
    return {
        "label": config.label,
        "arch": resolved.arch,
        "cubin": cubin,
        "compile_seconds": seconds,
        "shared_bytes": smem.total_bytes,
        "threads_per_cta": cfg.threads_per_cta(resolved),
        "facts": {
            "num_ab_stages": resolved.num_ab_stages,
            "num_acc_stages": resolved.num_acc_stages,
            "warp_roles": resolved.warp_roles,
            "schedule": resolved.schedule,
            "tile_mnk": list(resolved.tile_mnk),
            "mma_per_k_tile": resolved.mma_per_k_tile,
            "tmem_columns": cfg.tmem_budget(resolved).alloc_columns,
            "smem_stage_bytes": smem.stage_bytes,
        },
    }
