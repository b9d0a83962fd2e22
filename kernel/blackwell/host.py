"""The Blackwell family's hooks into the shared host pipeline (:mod:`kernel.host_pipeline`).

Compiling needs no GPU: every compile names its target (``--gpu-arch sm_100a``), so it compiles
for sm_100a on any machine whatever ``CUTE_DSL_ARCH`` says (verified with nvidia-cutlass-dsl
4.8.1 on a CPU machine with it unset, ``sm_100a`` or ``sm_90a``); this module never sets it, so
the Hopper family can share the process. ``prepare(..., dry_run=True)`` accepts CPU tensors, so
the whole host path (validation, plan, tables, compile cache) is testable on a CPU.

The kernel's fourth table is a per-CTA TMA-descriptor workspace that the TMA warp rewrites when
its tile moves to another group; it is allocated once per prepared problem (one launch at a time
uses it: launches of one prepared problem on one stream run in order).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from kernel.blackwell import config as cfg
from kernel.device import sm_count, unavailable_reason as _unavailable_reason
from kernel.errors import UnsupportedConfigError
from kernel.host_pipeline import AuxTable, HostPipeline, Prepared
from kernel.plan import LaunchPlan
from kernel.validation import GroupTensors, KernelConstraints

# TMA descriptors are 128-byte objects that must sit on 128-byte boundaries.
_TENSORMAP_BYTES = 128
# a dry run on a machine without an sm_100 GPU plans for a B200's SM count
DRY_RUN_SMS = 148


def unavailable_reason() -> str | None:
    return _unavailable_reason(10, "Blackwell sm_100a")


def kernel_class(config: cfg.BlackwellConfig):
    if config.warp_roles == "specialized":
        from kernel.blackwell.specialized import SpecializedKernel

        return SpecializedKernel
    from kernel.blackwell.monolithic import MonolithicKernel

    return MonolithicKernel


def compile_options(config: cfg.BlackwellConfig, dump_dir: str | os.PathLike | None = None) -> str:
    """The explicit target makes the result independent of CUTE_DSL_ARCH (one process can
    compile several families); dump_dir keeps the cubin and the PTX for static inspection."""
    opts = f"--gpu-arch {config.arch}"
    if dump_dir is not None:
        opts += f" --keep-cubin --keep-ptx --dump-dir {os.fspath(dump_dir)}"  # PTX: ci.ptx_convergence
    return opts


def workspace_shape(config: cfg.BlackwellConfig, plan: LaunchPlan) -> tuple[int, int, int, int]:
    from kernel.blackwell.common import NUM_TENSORMAPS, TENSORMAP_I64, tensormap_slots

    return (plan.num_ctas, tensormap_slots(config, plan.num_groups), NUM_TENSORMAPS, TENSORMAP_I64)


class BlackwellHooks:
    name = "blackwell"
    arch = cfg.ARCH

    def resolve(self, config: cfg.BlackwellConfig) -> cfg.BlackwellConfig:
        return config.resolved()

    def constraints(self, config: cfg.BlackwellConfig) -> KernelConstraints:
        return cfg.constraints(config)

    def unavailable_reason(self) -> str | None:
        return unavailable_reason()

    def max_ctas(self, config: cfg.BlackwellConfig, *, dry_run: bool) -> int | None:
        """Persistent grid cap: one CTA per SM (the A/B stages fill shared memory); None = 1 per tile."""
        if config.warp_roles == "monolithic":
            return None
        if dry_run and unavailable_reason() is not None:
            return DRY_RUN_SMS
        return sm_count()

    def aux_table(self, config: cfg.BlackwellConfig, plan: LaunchPlan, groups: list[GroupTensors],
                  device: torch.device, strict: bool = False) -> AuxTable:
        # the workspace is per CTA, written by the kernel itself: no guard rows
        workspace = torch.empty(workspace_shape(config, plan), dtype=torch.int64, device=device)
        if workspace.data_ptr() % _TENSORMAP_BYTES:
            raise RuntimeError("descriptor workspace is not 128-byte aligned")
        return AuxTable(workspace, "int64", _TENSORMAP_BYTES)

    def build(self, config: cfg.BlackwellConfig, num_groups: int, dump_dir: str | os.PathLike | None = None,
              perturbation=None, ablation=None):
        if perturbation is not None:
            raise UnsupportedConfigError(config.label, ["the Blackwell kernels take no perturbation (Hopper only)"])
        if ablation is not None:
            raise UnsupportedConfigError(config.label, ["the Blackwell kernels take no ablation (Hopper only)"])
        import cutlass
        import cutlass.cute as cute
        from cutlass.cute.runtime import make_fake_stream, make_ptr

        if dump_dir is not None:
            Path(dump_dir).mkdir(parents=True, exist_ok=True)
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


PIPELINE = HostPipeline(BlackwellHooks())
compile_cache = PIPELINE.compile_cache
table_cache = PIPELINE.table_cache


def compile_for(config: cfg.BlackwellConfig = cfg.DEFAULT_CONFIG, num_groups: int = 1):
    """The compiled kernel for (config, group count), from the compile cache; no GPU needed."""
    return PIPELINE.compile_for(config, num_groups)


def compile_uncached(config: cfg.BlackwellConfig, num_groups: int, dump_dir: str | os.PathLike):
    """A fresh compile that keeps its cubin in ``dump_dir`` (static inspection; bypasses the cache)."""
    return PIPELINE.hooks.build(config.resolved(), num_groups, dump_dir)


def prepare(data, config: cfg.BlackwellConfig = cfg.DEFAULT_CONFIG, *, dry_run: bool = False,
            compile: bool | None = None) -> Prepared:
    """Validate, plan, build tables and fetch the compiled kernel; everything but the launch."""
    return PIPELINE.prepare(data, config, dry_run=dry_run, compile=compile)


def launch(prepared: Prepared, stream: Any = None) -> list[torch.Tensor]:
    """Launch on ``stream`` (default: torch's current stream; no synchronization); returns the c tensors."""
    return PIPELINE.launch(prepared, stream)


def custom_kernel(data, config: cfg.BlackwellConfig = cfg.DEFAULT_CONFIG) -> list[torch.Tensor]:
    """The leaderboard entry point: C_g = (A_g * SFA_g) @ (B_g * SFB_g)^T for every group.

    The kernel writes each group's own ``c``; the returned list is the callers' c tensors in
    the caller's order.
    """
    return PIPELINE.run(data, config)


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
