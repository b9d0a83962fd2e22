"""The Blackwell kernel family's configuration: one frozen config, its validity and its budgets.

Plain Python (no CuTe DSL import), so plans, labels and byte arithmetic are testable anywhere.
Every number the kernel derives from a config is computed here once; the traced host function
checks its own layouts against these numbers at trace time, so the two cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from kernel.errors import UnsupportedConfigError
from kernel.validation import KernelConstraints

WarpRoles = Literal["monolithic", "specialized"]
Schedule = Literal["contiguous", "strided"]

ARCH = "sm_100a"
SUPPORTED_TILES = ((128, 128, 256), (128, 256, 256))

# Operand formats: FP4 E2M1 A/B (two per byte), one FP8 E4M3 scale per 16 K elements, fp16 C.
SF_VEC_SIZE = 16
MMA_INST_K = 64  # K of one tcgen05.mma.kind::mxf4nvf4 instruction (block16 scales, 4 per row)

# Shared memory: sm_100 lets one CTA use 227 KiB of dynamic shared memory.
SMEM_CAPACITY_BYTES = 232448
# Every smem buffer starts on a 1024-byte boundary (the 128-byte swizzle atom is 8 rows x 128 B);
# the mbarriers and the TMEM address slot sit in the first 1024-byte block, ahead of the buffers.
SMEM_ALIGN_BYTES = 1024
# TMEM: 128 lanes x 512 32-bit columns per SM; an allocation is a power of two >= 32 columns.
TMEM_COLUMNS = 512
SF_ATOM_MN = 32  # one TMEM column of scale factors covers 32 rows (per 64-wide K block)

# Threads: 'specialized' = 4 epilogue warps + 1 MMA warp + 1 TMA warp; 'monolithic' = 4 warps.
EPILOGUE_WARPS = 4
MMA_WARP = 4
TMA_WARP = 5
# Epilogue: accumulator columns moved TMEM -> registers -> global per step (tcgen05.ld 32x32b.x32):
# 32 fp32 registers per thread per step; the seed moved all 128 at once and spilled.
EPILOGUE_COLUMNS = 32
MAX_GROUPS = 64


def _ceil_div(a: int, b: int) -> int:
    return (a + b - 1) // b


def _pow2_at_least(x: int, floor: int) -> int:
    p = floor
    while p < x:
        p *= 2
    return p


@dataclass(frozen=True)
class BlackwellConfig:
    """One variant of the sm_100a NVFP4 grouped GEMM. Every axis explicit; ``None`` stages = max."""

    tile_mnk: tuple[int, int, int] = (128, 128, 256)
    num_ab_stages: int | None = None  # A/B/SFA/SFB smem pipeline depth; None = as many as fit
    num_acc_stages: int = 2  # accumulator buffers in TMEM
    warp_roles: WarpRoles = "specialized"
    schedule: Schedule = "contiguous"  # how a persistent CTA takes its tiles (kernel.plan)
    arch: str = ARCH

    # -- names ---------------------------------------------------------------------------------
    @property
    def label(self) -> str:
        m, n, k = self.tile_mnk
        roles = {"specialized": "spec", "monolithic": "mono"}.get(self.warp_roles, self.warp_roles)
        ab = "max" if self.num_ab_stages is None else str(self.num_ab_stages)
        sched = "" if self.schedule == "contiguous" else f"-{self.schedule}"
        arch = "" if self.arch == ARCH else f"-{self.arch}"
        return f"bw-{roles}-t{m}x{n}x{k}-ab{ab}-acc{self.num_acc_stages}{sched}{arch}"

    def describe(self) -> str:
        r = self.resolved()
        b = smem_budget(r)
        return (
            f"{self.label}: tile {r.tile_mnk}, {r.num_ab_stages} A/B stages x {b.stage_bytes} B, "
            f"{r.num_acc_stages} acc stages, {r.warp_roles} ({threads_per_cta(r)} threads), "
            f"schedule {r.schedule}, smem {b.total_bytes} B, TMEM {tmem_budget(r).alloc_columns} cols"
        )

    # -- derived -------------------------------------------------------------------------------
    @property
    def tile_m(self) -> int:
        return self.tile_mnk[0]

    @property
    def tile_n(self) -> int:
        return self.tile_mnk[1]

    @property
    def tile_k(self) -> int:
        return self.tile_mnk[2]

    @property
    def mma_per_k_tile(self) -> int:
        return self.tile_k // MMA_INST_K

    def resolved(self) -> "BlackwellConfig":
        """The same variant with defaults filled in; raises UnsupportedConfigError if invalid."""
        problems = config_problems(self)
        if problems:
            raise UnsupportedConfigError(self.label, problems)
        if self.num_ab_stages is not None:
            return self
        return replace(self, num_ab_stages=max_ab_stages(self))


@dataclass(frozen=True)
class SmemBudget:
    a_bytes: int  # per stage
    b_bytes: int
    sfa_bytes: int
    sfb_bytes: int
    header_bytes: int  # mbarriers + TMEM address slot, padded to SMEM_ALIGN_BYTES
    num_ab_stages: int

    @property
    def stage_bytes(self) -> int:
        return self.a_bytes + self.b_bytes + self.sfa_bytes + self.sfb_bytes

    @property
    def total_bytes(self) -> int:
        return self.header_bytes + self.num_ab_stages * self.stage_bytes

    def arithmetic(self) -> str:
        return (
            f"{self.header_bytes} B barriers/header + {self.num_ab_stages} stages x "
            f"({self.a_bytes} A + {self.b_bytes} B + {self.sfa_bytes} SFA + {self.sfb_bytes} SFB "
            f"= {self.stage_bytes} B) = {self.total_bytes} B"
        )


def _header_bytes(num_ab_stages: int, num_acc_stages: int) -> int:
    raw = 8 * (2 * num_ab_stages + 2 * num_acc_stages) + 4
    return _ceil_div(raw, SMEM_ALIGN_BYTES) * SMEM_ALIGN_BYTES


def smem_budget(config: BlackwellConfig, num_ab_stages: int | None = None) -> SmemBudget:
    m, n, k = config.tile_mnk
    stages = num_ab_stages if num_ab_stages is not None else config.num_ab_stages
    if stages is None:
        stages = max_ab_stages(config)
    return SmemBudget(
        a_bytes=m * k // 2,
        b_bytes=n * k // 2,
        sfa_bytes=m * (k // SF_VEC_SIZE),
        sfb_bytes=n * (k // SF_VEC_SIZE),
        header_bytes=_header_bytes(stages, config.num_acc_stages),
        num_ab_stages=stages,
    )


def max_ab_stages(config: BlackwellConfig) -> int:
    """The deepest A/B pipeline that fits in shared memory (0 if not even one stage fits)."""
    stages = 0
    while stages < 64 and smem_budget(config, stages + 1).total_bytes <= SMEM_CAPACITY_BYTES:
        stages += 1
    return stages


@dataclass(frozen=True)
class TmemBudget:
    acc_columns: int  # per accumulator stage
    sfa_columns: int
    sfb_columns: int
    num_acc_stages: int

    @property
    def used_columns(self) -> int:
        return self.acc_columns * self.num_acc_stages + self.sfa_columns + self.sfb_columns

    @property
    def alloc_columns(self) -> int:
        return _pow2_at_least(self.used_columns, 32)

    def arithmetic(self) -> str:
        return (
            f"{self.num_acc_stages} acc stages x {self.acc_columns} + {self.sfa_columns} SFA + "
            f"{self.sfb_columns} SFB = {self.used_columns} of {TMEM_COLUMNS} TMEM columns"
        )


def tmem_budget(config: BlackwellConfig) -> TmemBudget:
    m, n, k = config.tile_mnk
    k_blocks = k // MMA_INST_K
    return TmemBudget(
        acc_columns=n,  # fp32 accumulator: one column per N element, one lane per M row
        sfa_columns=(m // SF_ATOM_MN) * k_blocks,
        sfb_columns=(n // SF_ATOM_MN) * k_blocks,
        num_acc_stages=config.num_acc_stages,
    )


def threads_per_cta(config: BlackwellConfig) -> int:
    return 32 * (EPILOGUE_WARPS + 2) if config.warp_roles == "specialized" else 32 * EPILOGUE_WARPS


def config_problems(config: BlackwellConfig) -> list[str]:
    """Every rule ``config`` breaks, with the numbers; empty when the kernel can be built."""
    problems: list[str] = []
    if config.arch != ARCH:
        problems.append(f"arch {config.arch!r}: this family compiles for {ARCH} only")
    if tuple(config.tile_mnk) not in SUPPORTED_TILES:
        problems.append(f"tile {tuple(config.tile_mnk)} not in the supported tiles {list(SUPPORTED_TILES)}")
        return problems  # the budgets below need a known tile
    if config.warp_roles not in ("monolithic", "specialized"):
        problems.append(f"warp_roles {config.warp_roles!r} must be 'monolithic' or 'specialized'")
    if config.schedule not in ("contiguous", "strided"):
        problems.append(f"schedule {config.schedule!r} must be 'contiguous' or 'strided'")
    if config.num_acc_stages not in (1, 2):
        problems.append(f"num_acc_stages={config.num_acc_stages} must be 1 or 2")
    if config.warp_roles == "monolithic":
        if config.num_acc_stages != 1:
            problems.append(
                f"num_acc_stages={config.num_acc_stages}: a monolithic CTA computes one tile, "
                "so it has exactly one accumulator stage"
            )
        if config.schedule != "contiguous":
            problems.append("schedule: a monolithic CTA runs one tile; only 'contiguous' names it")
    if config.num_acc_stages in (1, 2):
        t = tmem_budget(config)
        if t.used_columns > TMEM_COLUMNS:
            problems.append(f"TMEM does not fit: {t.arithmetic()}")
    stages = config.num_ab_stages
    if stages is not None:
        if not isinstance(stages, int) or isinstance(stages, bool) or not 1 <= stages <= 8:
            problems.append(f"num_ab_stages={stages!r} must be an int in 1..8 (or None for the maximum)")
        else:
            b = smem_budget(config, stages)
            if b.total_bytes > SMEM_CAPACITY_BYTES:
                problems.append(
                    f"shared memory does not fit: {b.arithmetic()} > {SMEM_CAPACITY_BYTES} B "
                    f"(at most {max_ab_stages(config)} stages fit)"
                )
    elif max_ab_stages(config) < 1:
        problems.append(f"not even one A/B stage fits: {smem_budget(config, 1).arithmetic()}")
    return problems


def constraints(config: BlackwellConfig) -> KernelConstraints:
    """What this kernel accepts. K: whole K tiles only (the K loop has no K residue handling).

    M and N are arbitrary (TMA zero-fills partial tiles, the epilogue predicates its stores);
    every base pointer must be 16-byte aligned (TMA; the epilogue's 16-byte stores are used only
    when a row's start is provably 16-byte aligned, i.e. N % 8 == 0).
    """
    return KernelConstraints(
        k_granularity=config.tile_k,
        max_groups=MAX_GROUPS,
        device_type="cuda",
        alignment_bytes=16,
    )


DEFAULT_CONFIG = BlackwellConfig()

# The variants the harness tests and benchmarks on a B200: the production ones (the main job's
# default) and the rest of the declared matrix (--variant=all).
PRODUCTION_VARIANTS: tuple[BlackwellConfig, ...] = (
    DEFAULT_CONFIG,
    BlackwellConfig(tile_mnk=(128, 256, 256), num_acc_stages=1),
    BlackwellConfig(warp_roles="monolithic", num_ab_stages=1, num_acc_stages=1),
)
EXPERIMENTAL_VARIANTS: tuple[BlackwellConfig, ...] = (
    BlackwellConfig(schedule="strided"),
    BlackwellConfig(warp_roles="monolithic", num_acc_stages=1),
)
DECLARED_VARIANTS: tuple[BlackwellConfig, ...] = PRODUCTION_VARIANTS + EXPERIMENTAL_VARIANTS

# The variants CI compiles and inspects (SASS census, resources): roles x stages x acc stages.
STATIC_MATRIX: tuple[BlackwellConfig, ...] = (
    *(BlackwellConfig(num_ab_stages=s) for s in (1, 2, 4, 6)),
    DEFAULT_CONFIG,
    BlackwellConfig(num_ab_stages=6, num_acc_stages=1),
    BlackwellConfig(num_ab_stages=2, num_acc_stages=1),
    BlackwellConfig(schedule="strided"),
    BlackwellConfig(tile_mnk=(128, 256, 256), num_acc_stages=1),
    BlackwellConfig(tile_mnk=(128, 256, 256), num_ab_stages=2, num_acc_stages=1),
    BlackwellConfig(warp_roles="monolithic", num_ab_stages=1, num_acc_stages=1),
    BlackwellConfig(warp_roles="monolithic", num_ab_stages=2, num_acc_stages=1),
    BlackwellConfig(warp_roles="monolithic", num_acc_stages=1),
    BlackwellConfig(tile_mnk=(128, 256, 256), warp_roles="monolithic", num_ab_stages=1, num_acc_stages=1),
)
