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

:func:`pipeline_kernel` runs the same tiles through the GPU families' host pipeline
(kernel.host_pipeline: its fast path and seen-shape path included), reading and writing by the
addresses in the device tables; see the section at the end.
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
    # the last round's tiles cut in K halves (the Hopper 256-row Y tile's schedule), on a tile
    # height that is no power of two (the Hopper prepass builds' config.WIDE_Y_HEIGHTS)
    ModelConfig(tile_m=112, tile_n=64, tile_k=128, max_ctas=6, schedule="split_last"),
)


def constraints(config: ModelConfig = DEFAULT_CONFIG) -> KernelConstraints:
    # acc += a_tile @ b_tile.T: one fp32 update per K tile, torch's matmul order inside it; a cut
    # tile's halves added once in fp32 (schedule="split_last")
    return KernelConstraints(k_granularity=64, max_groups=64, device_type="cpu", accumulation_chunk=config.tile_k,
                             k_split=config.tile_k if config.schedule == "split_last" else None)


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


def run_units(plan: LaunchPlan, view, cta: int, partials: dict) -> None:
    """CTA ``cta``'s work units (``LaunchPlan.cta_units``): whole tiles; with
    ``schedule="split_last"`` a cut tile's half 0 leaves its fp32 sums in ``partials`` (the split
    area) and half 1 adds them to its own before storing C (CTA 2j runs before CTA 2j + 1)."""
    acc = torch.empty(plan.tile_m, plan.tile_n, dtype=torch.float32)  # one accumulator per CTA
    for unit in plan.cta_units(cta):
        run_tile(plan, view, unit.tile, acc, unit.k_begin * plan.tile_k, unit.k_end * plan.tile_k,
                 unit.role, partials)


def run_tile(plan: LaunchPlan, view: _TableView, tile: int, acc: torch.Tensor, k_begin: int = 0,
             k_end: int | None = None, role: str = "whole", partials: dict | None = None) -> None:
    coord = plan.locate(tile)
    m, n, k, _ = view.sizes[coord.slot]
    a, b, c = (view.operand(coord.slot, name) for name in ("a", "b", "c"))
    sfa, sfb = view.operand(coord.slot, "sfa_blocked"), view.operand(coord.slot, "sfb_blocked")
    m0, n0 = coord.m_block * plan.tile_m, coord.n_block * plan.tile_n
    rows_a = torch.arange(m0, min(m0 + plan.tile_m, m))
    rows_b = torch.arange(n0, min(n0 + plan.tile_n, n))
    acc.zero_()
    for k0 in range(k_begin, k if k_end is None else min(k_end, k), plan.tile_k):
        k1 = min(k0 + plan.tile_k, k)
        a_tile = _operand_tile(a, sfa, rows_a, k0, k1)
        b_tile = _operand_tile(b, sfb, rows_b, k0, k1)
        acc[: len(rows_a), : len(rows_b)] += a_tile @ b_tile.T
    if role == "publish":
        partials[plan.split_index(tile)] = acc.clone()
        return
    if role == "combine":
        acc += partials.pop(plan.split_index(tile))
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
    partials = {}
    for cta in range(plan.num_ctas):
        run_units(plan, view, cta, partials)
    return [g.c for g in groups]


# ---- the model through the shared host pipeline ---------------------------------------------
#
# ``custom_kernel`` above validates, plans and reads through a fresh table per call. The GPU
# families' entry, ``HostPipeline.run``, also caches: the fast path (kernel.fast_path) and the
# seen-shape path (kernel.seen_shapes) hand a repeated or same-shaped call device tables made
# for an earlier one. ``pipeline_kernel`` runs the model through that very pipeline, and its
# launch reads the tables as a GPU kernel does: sizes from the sizes table, and every operand
# read and every C written at the address the pointer table holds (raw memory, not the caller's
# tensor objects), so a stale table, a stale pointer or a stale launch shows in the results on a
# machine without a GPU (properties/test_entry_calling_pattern.py).


class PerShape:
    """The config ``pipeline_kernel(data)`` passes when given none: :meth:`ModelHooks.choose`
    turns it into :data:`DEFAULT_CONFIG` on a fast-path miss, as kernel.hopper's per-shape choice
    does (a repeated call hits the entry stored for it and chooses nothing)."""

    label = "per-shape"

    def __repr__(self) -> str:
        return "PER_SHAPE"


PER_SHAPE = PerShape()


def _at(address: int, nbytes: int, dtype: torch.dtype, shape: tuple, strides: tuple) -> torch.Tensor:
    """The ``nbytes`` of memory at ``address`` as a strided ``dtype`` tensor (no copy)."""
    import ctypes

    raw = torch.frombuffer((ctypes.c_uint8 * nbytes).from_address(address), dtype=torch.uint8)
    return raw.view(dtype).as_strided(shape, strides)


class _AddressView:
    """:class:`_TableView`'s reads through the device tables, by address: the operand of a slot is
    the memory its pointer-table entry points at, in the layout validation requires."""

    def __init__(self, tables: DeviceTables):
        self.sizes = tables.sizes.tolist()
        self.pointers = tables.pointers.tolist()

    def operand(self, slot: int, column: str) -> torch.Tensor:
        from kernel.validation import blocked_shape, blocked_strides

        m, n, k, _ = self.sizes[slot]
        address = self.pointers[slot][POINTER_COLUMNS.index(column)]
        fp4, fp8 = torch.float4_e2m1fn_x2, torch.float8_e4m3fn
        if column in ("a", "b"):
            rows = m if column == "a" else n
            return _at(address, rows * k // 2, fp4, (rows, k // 2, 1), (k // 2, 1, rows * k // 2))
        if column == "c":
            return _at(address, 2 * m * n, torch.float16, (m, n, 1), (n, 1, m * n))
        rows = m if column == "sfa_blocked" else n
        shape = blocked_shape(rows, k)
        return _at(address, 512 * shape[2] * shape[4], fp8, shape, blocked_strides(rows, k))


class AddressLaunch:
    """One launch of the model on prepared device tables (what ``HostPipeline.marshal`` returns
    for it): :meth:`launch` runs every CTA's tiles, reading and writing by address."""

    def __init__(self, plan: LaunchPlan, tables: DeviceTables, stream: int):
        self.plan, self.tables, self.stream = plan, tables, stream

    def launch(self) -> None:
        plan, view = self.plan, _AddressView(self.tables)
        partials = {}
        for cta in range(plan.num_ctas):
            run_units(plan, view, cta, partials)


class ModelHooks:
    """The model as a kernel family of :class:`kernel.host_pipeline.HostPipeline` (its
    ``FamilyHooks``): nothing to compile, no fourth table, CPU tensors."""

    name = "model"
    arch = "cpu"

    def resolve(self, config: ModelConfig) -> ModelConfig:
        return config

    def choose(self, config, data) -> ModelConfig:
        return DEFAULT_CONFIG if config is PER_SHAPE else config

    def constraints(self, config: ModelConfig) -> KernelConstraints:
        return constraints(config)

    def unavailable_reason(self) -> str | None:
        return None

    def max_ctas(self, config: ModelConfig, *, dry_run: bool) -> int | None:
        return config.max_ctas

    def aux_table(self, config, plan, groups, device, strict=False):
        return None

    def build(self, config: ModelConfig, num_groups: int, dump_dir=None, perturbation=None, ablation=None):
        if perturbation is not None or ablation is not None:
            from kernel.errors import UnsupportedConfigError

            raise UnsupportedConfigError(config.label, ["the model has no perturbed or ablated builds"])
        return ("model", config, num_groups)  # the launch runs run_tile: nothing to compile


_PIPELINE: list = []  # the pipeline, made on first use (its fast path starts the native build)


def pipeline():
    """The model's :class:`kernel.host_pipeline.HostPipeline` (one per process): the CPU has one
    stream (handle 0), and a launch is an :class:`AddressLaunch`."""
    if not _PIPELINE:
        from kernel.fast_path import FastPath
        from kernel.host_pipeline import HostPipeline

        class ModelPipeline(HostPipeline):
            def __init__(self):
                super().__init__(ModelHooks(), fast_path=FastPath(stream_id=lambda device_index: 0))

            def stream_handle(self, stream, device) -> int:
                return 0

            def marshal(self, prepared, handle) -> AddressLaunch:
                return AddressLaunch(prepared.plan, prepared.tables, handle)

        _PIPELINE.append(ModelPipeline())
    return _PIPELINE[0]


def pipeline_kernel(data, config: ModelConfig | None = None) -> list[torch.Tensor]:
    """``custom_kernel`` through the shared host pipeline (validation, plan, tables, the fast path
    and the seen-shape path of the GPU families' entry); ``config`` None: :data:`PER_SHAPE`."""
    return pipeline().run(data, PER_SHAPE if config is None else config)
