"""The CPU model: the kernels' arithmetic and scheduling, executed tile by tile on the shared plan.

It is a subject like any kernel (``custom_kernel(data)``) and runs on every CI machine, so the
launch plan, the device-side group search, edge-tile predication and the blocked scale layout
are fuzzed without a GPU. Per output tile it does what the GPU kernels do:

* locate the tile with :meth:`LaunchPlan.locate` (the device's binary search) and read the
  slot's sizes and operands through the device tables (``kernel.tables``), by pointer;
* for each K tile, read packed FP4 codes and the scales from the *blocked* layout, dequantize
  exactly (code * scale fits in fp32, and in bf16/fp16), and accumulate the tile product into an
  fp32 accumulator (rows/columns past M or N read as zero, as TMA's out-of-bounds fill does);
* round the accumulator once to fp16 and store only the rows and columns inside C.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from kernel.plan import LaunchPlan, Schedule, make_plan
from kernel.tables import POINTER_COLUMNS, DeviceTables, TableCache
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
    # acc += a_tile @ b_tile.T: one fp32 update per K tile, torch's matmul order inside it
    return KernelConstraints(k_granularity=64, max_groups=64, device_type="cpu", accumulation_chunk=config.tile_k)


def unavailable_reason() -> str | None:
    return None


def _decode_e2m1(packed: torch.Tensor) -> torch.Tensor:
    """[rows, k//2] packed uint8 bytes -> [rows, k] float32 (low nibble is the even element)."""
    table = torch.tensor(_E2M1_VALUES, dtype=torch.float32)
    raw = packed
    codes = torch.stack((raw & 0xF, raw >> 4), dim=-1).reshape(raw.shape[0], -1)
    return table[codes.long()]


def _blocked_scales(blocked: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
    """Scales [len(rows), len(cols)] as float32, read from the (32, 4, rm, 4, rk, 1) blocked view."""
    r = rows[:, None]
    c = cols[None, :]
    raw = blocked.view(torch.uint8)[r % 32, (r % 128) // 32, r // 128, c % 4, c // 4, 0]
    return raw.view(torch.float8_e4m3fn).to(torch.float32)


def _operand_tile(packed: torch.Tensor, blocked: torch.Tensor, rows: torch.Tensor, k0: int, k1: int) -> torch.Tensor:
    """Dequantized [len(rows), k1 - k0] slice of an operand, exactly, in float32."""
    values = _decode_e2m1(packed.view(torch.uint8)[rows, k0 // 2 : k1 // 2, 0])
    scales = _blocked_scales(blocked, rows, torch.arange(k0 // 16, k1 // 16))
    return values * scales.repeat_interleave(16, dim=1)


class _TableView:
    """Reads a slot's sizes and operands through the device tables, as the kernels do: by the
    pointers in ``tables.pointers`` (mapped back to this problem's tensors) and the sizes in
    ``tables.sizes``, so a wrong or stale table shows up in the model's output."""

    def __init__(self, tables: DeviceTables, groups: list[GroupTensors]):
        self.sizes = tables.sizes.tolist()
        self.pointers = tables.pointers.tolist()
        self.by_pointer = [
            # empty tensors own no tile, and may share an address with a neighbour: leave them out
            {getattr(g, col).data_ptr(): getattr(g, col) for g in groups if getattr(g, col).numel()}
            for col in POINTER_COLUMNS
        ]

    def operand(self, slot: int, column: str) -> torch.Tensor:
        col = POINTER_COLUMNS.index(column)
        return self.by_pointer[col][self.pointers[slot][col]]


def run_tile(plan: LaunchPlan, view: _TableView, tile: int, acc: torch.Tensor) -> None:
    coord = plan.locate(tile)
    m, n, k, _ = view.sizes[coord.slot]
    a, b, c = (view.operand(coord.slot, name) for name in ("a", "b", "c"))
    sfa, sfb = view.operand(coord.slot, "sfa_blocked"), view.operand(coord.slot, "sfb_blocked")
    m0, n0 = coord.m_block * plan.tile_m, coord.n_block * plan.tile_n
    rows_a = torch.arange(m0, min(m0 + plan.tile_m, m))
    rows_b = torch.arange(n0, min(n0 + plan.tile_n, n))
    acc.zero_()
    for k0 in range(0, k, plan.tile_k):
        k1 = min(k0 + plan.tile_k, k)
        a_tile = _operand_tile(a, sfa, rows_a, k0, k1)
        b_tile = _operand_tile(b, sfb, rows_b, k0, k1)
        acc[: len(rows_a), : len(rows_b)] += a_tile @ b_tile.T
    c[m0 : m0 + len(rows_a), n0 : n0 + len(rows_b), 0] = acc[: len(rows_a), : len(rows_b)].to(torch.float16)


_tables = TableCache()


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
    view = _TableView(_tables.get(plan, groups, torch.device("cpu")), groups)
    for cta in range(plan.num_ctas):
        acc = torch.empty(plan.tile_m, plan.tile_n, dtype=torch.float32)  # one accumulator per CTA
        for tile in plan.cta_tiles(cta):
            run_tile(plan, view, tile, acc)
    return [g.c for g in groups]
