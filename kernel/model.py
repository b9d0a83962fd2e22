"""The CPU model: the kernels' arithmetic and scheduling, executed tile by tile on the shared plan.

It is a subject like any kernel (``custom_kernel(data)``) and runs on every CI machine, so the
launch plan, the device-side group search, edge-tile predication and the blocked scale layout
are fuzzed without a GPU. Per output tile it does what the GPU kernels do:

* locate the tile with :meth:`LaunchPlan.locate` (the device's binary search);
* for each K tile, read packed FP4 codes and the scales from the *blocked* layout, dequantize
  exactly (code * scale fits in fp32, and in bf16/fp16), and accumulate the tile product into an
  fp32 accumulator (rows/columns past M or N read as zero, as TMA's out-of-bounds fill does);
* round the accumulator once to fp16 and store only the rows and columns inside C.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from kernel.plan import LaunchPlan, Schedule, make_plan
from kernel.validation import GroupTensors, KernelConstraints, validate_problem

_E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)


@dataclass(frozen=True)
class ModelConfig:
    tile_m: int = 128
    tile_n: int = 128
    tile_k: int = 256
    max_ctas: int | None = 8  # a small "GPU" so that CTAs run several tiles
    schedule: Schedule = "contiguous"

    @property
    def label(self) -> str:
        ctas = "all" if self.max_ctas is None else str(self.max_ctas)
        return f"model-t{self.tile_m}x{self.tile_n}x{self.tile_k}-{self.schedule}-ctas{ctas}"


DEFAULT_CONFIG = ModelConfig()
DECLARED_VARIANTS = (
    DEFAULT_CONFIG,
    ModelConfig(tile_m=64, tile_n=128, tile_k=128, max_ctas=5, schedule="strided"),
)


def constraints(config: ModelConfig = DEFAULT_CONFIG) -> KernelConstraints:
    return KernelConstraints(k_granularity=64, max_groups=64, device_type="cpu")


def unavailable_reason() -> str | None:
    return None


def _decode_e2m1(packed: torch.Tensor) -> torch.Tensor:
    """[rows, k//2] packed bytes -> [rows, k] float32 (low nibble is the even element)."""
    table = torch.tensor(_E2M1_VALUES, dtype=torch.float32)
    raw = packed.view(torch.uint8)
    codes = torch.stack((raw & 0xF, raw >> 4), dim=-1).reshape(raw.shape[0], -1)
    return table[codes.long()]


def _blocked_scales(blocked: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
    """Scales [len(rows), len(cols)] as float32, read from the (32, 4, rm, 4, rk, 1) blocked view."""
    r = rows[:, None]
    c = cols[None, :]
    return blocked[r % 32, (r % 128) // 32, r // 128, c % 4, c // 4, 0].to(torch.float32)


def _operand_tile(packed: torch.Tensor, blocked: torch.Tensor, rows: torch.Tensor, k0: int, k1: int) -> torch.Tensor:
    """Dequantized [len(rows), k1 - k0] slice of an operand, exactly, in float32."""
    values = _decode_e2m1(packed[rows, k0 // 2 : k1 // 2, 0])
    scales = _blocked_scales(blocked, rows, torch.arange(k0 // 16, k1 // 16))
    return values * scales.repeat_interleave(16, dim=1)


def run_tile(plan: LaunchPlan, groups: list[GroupTensors], tile: int) -> None:
    coord = plan.locate(tile)
    t = groups[coord.group]
    m, n, k, _ = t.size
    m0, n0 = coord.m_block * plan.tile_m, coord.n_block * plan.tile_n
    rows_a = torch.arange(m0, min(m0 + plan.tile_m, m))
    rows_b = torch.arange(n0, min(n0 + plan.tile_n, n))
    acc = torch.zeros(plan.tile_m, plan.tile_n, dtype=torch.float32)
    for k0 in range(0, k, plan.tile_k):
        k1 = min(k0 + plan.tile_k, k)
        a = _operand_tile(t.a, t.sfa_blocked, rows_a, k0, k1)
        b = _operand_tile(t.b, t.sfb_blocked, rows_b, k0, k1)
        acc[: len(rows_a), : len(rows_b)] += a @ b.T
    t.c[m0 : m0 + len(rows_a), n0 : n0 + len(rows_b), 0] = acc[: len(rows_a), : len(rows_b)].to(torch.float16)


def plan_for(config: ModelConfig, problem_sizes) -> LaunchPlan:
    return make_plan(
        problem_sizes,
        tile_m=config.tile_m,
        tile_n=config.tile_n,
        tile_k=config.tile_k,
        max_ctas=config.max_ctas,
        schedule=config.schedule,
    )


def custom_kernel(data, config: ModelConfig = DEFAULT_CONFIG) -> list[torch.Tensor]:
    groups = validate_problem(data, constraints(config))
    plan = plan_for(config, [g.size for g in groups])
    for cta in range(plan.num_ctas):
        for tile in plan.cta_tiles(cta):
            run_tile(plan, groups, tile)
    return [g.c for g in groups]
