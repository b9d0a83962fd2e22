"""Nsight Compute metric sets per architecture, and the figures derived from them.

Pure Python (no ncu, no torch). A :class:`Metric` pairs an ncu metric name with the short
column name the reports use. ``core`` marks the names verified on the H200's ncu 2025.3.1
(Hopper; docs/profiling.md) or the documented Blackwell names; ``metric_names(arch,
"core")`` is the fallback set when the full one is refused.

Names differ between architectures (Hopper counts wgmma in ``sm__pipe_tensor_op_hmma_*``;
Blackwell has ``sm__pipe_tc_*`` and TMEM), so one sweep collects one architecture's set.
Before a run, :func:`filter_available` drops the names the installed ncu does not know
(``ncu --query-metrics --csv`` lists base names), because one unknown name makes ncu refuse
the whole run.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

DURATION = "gpu__time_duration.sum"


@dataclass(frozen=True)
class Metric:
    name: str  # the ncu metric name, with its rollup / suffix
    key: str  # the column name in the reports
    unit: str
    group: str  # time | tensor | dram | l2 | smem | launch | occupancy | sm | stall
    core: bool = False  # verified name (docs/profiling.md); kept in the minimal fallback set


# Warp-stall reasons of the WarpStateStats section (per issued instruction, ratio of warps).
STALL_REASONS: tuple[str, ...] = (
    "long_scoreboard", "short_scoreboard", "barrier", "wait", "math_pipe_throttle",
    "mio_throttle", "lg_throttle", "membar", "not_selected", "selected", "no_instruction",
    "dispatch_stall", "branch_resolving", "drain", "imc_miss", "misc", "sleeping",
    "tex_throttle",
)


def stall_metric(reason: str) -> str:
    return f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"


def _stalls() -> tuple[Metric, ...]:
    return tuple(Metric(stall_metric(r), f"stall_{r}", "warps/issue", "stall") for r in STALL_REASONS)


_COMMON: tuple[Metric, ...] = (
    Metric(DURATION, "duration_ns", "ns", "time", core=True),
    Metric("dram__throughput.avg.pct_of_peak_sustained_elapsed", "dram_pct", "%", "dram", core=True),
    Metric("dram__bytes_read.sum", "dram_read_bytes", "B", "dram", core=True),
    Metric("dram__bytes_write.sum", "dram_write_bytes", "B", "dram"),
    Metric("lts__t_sector_hit_rate.pct", "l2_hit_pct", "%", "l2"),
    Metric("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "smem_conflicts_ld", "", "smem"),
    Metric("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", "smem_conflicts_st", "", "smem"),
    Metric("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", "smem_wavefronts", "", "smem"),
    # how busy the L1 data pipe is (the shared-memory traffic of the Hopper kernel's decode goes
    # through it; ncu's "L1: Data Pipe Lsu Wavefronts" row); an ncu that does not know it drops it and says so
    Metric("l1tex__data_pipe_lsu_wavefronts.avg.pct_of_peak_sustained_elapsed", "lsu_pipe_pct", "%", "smem"),
    Metric("launch__registers_per_thread", "regs_per_thread", "", "launch", core=True),
    Metric("launch__shared_mem_per_block_dynamic", "smem_dynamic_bytes", "B", "launch"),
    Metric("launch__grid_size", "grid_size", "", "launch"),
    Metric("launch__block_size", "block_size", "", "launch"),
    Metric("sm__warps_active.avg.pct_of_peak_sustained_active", "occupancy_achieved_pct", "%", "occupancy"),
    Metric("sm__maximum_warps_per_active_cycle_pct", "occupancy_theoretical_pct", "%", "occupancy"),
    Metric("sm__throughput.avg.pct_of_peak_sustained_elapsed", "sm_throughput_pct", "%", "sm"),
)

HOPPER_TENSOR: tuple[Metric, ...] = (
    Metric("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
           "tensor_active_pct", "%", "tensor", core=True),
    Metric("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
           "tensor_elapsed_pct", "%", "tensor", core=True),
    Metric("sm__inst_executed_pipe_tensor_op_gmma.sum", "tensor_insts", "inst", "tensor", core=True),
)

BLACKWELL_TENSOR: tuple[Metric, ...] = (
    Metric("sm__pipe_tc_cycles_active.avg.pct_of_peak_sustained_active",
           "tensor_active_pct", "%", "tensor", core=True),
    Metric("sm__inst_executed_pipe_tc.sum", "tensor_insts", "inst", "tensor", core=True),
    Metric("sm__ops_path_tensor_op_utcomma_src_fp4_dst_fp32.sum", "tensor_fp4_ops", "", "tensor", core=True),
    Metric("sm__mem_tensor_cycles_active.avg.pct_of_peak_sustained_active",
           "tmem_active_pct", "%", "tensor", core=True),
)

METRIC_SETS: dict[str, tuple[Metric, ...]] = {
    "sm_90a": (_COMMON[0], *HOPPER_TENSOR, *_COMMON[1:], *_stalls()),
    "sm_100a": (_COMMON[0], *BLACKWELL_TENSOR, *_COMMON[1:], *_stalls()),
}
ARCH_ALIASES = {"sm_90": "sm_90a", "sm90": "sm_90a", "hopper": "sm_90a",
                "sm_100": "sm_100a", "sm100": "sm_100a", "blackwell": "sm_100a"}
# ncu --chips names, for querying metric names without that GPU present.
NCU_CHIPS = {"sm_90a": "gh100", "sm_100a": "gb100"}


def normalize_arch(arch: str) -> str:
    arch = ARCH_ALIASES.get(arch, arch)
    if arch not in METRIC_SETS:
        raise ValueError(f"no metric set for arch {arch!r}; known: {sorted(METRIC_SETS)}")
    return arch


def metric_set(arch: str, level: str = "full") -> tuple[Metric, ...]:
    """The metrics of ``arch``; ``level`` "full" (everything) or "core" (verified names only).

    The duration metric is always first: the multi-kernel combiner relies on it.
    """
    metrics = METRIC_SETS[normalize_arch(arch)]
    if level == "core":
        metrics = tuple(m for m in metrics if m.core)
    elif level != "full":
        raise ValueError(f"level must be 'full' or 'core', got {level!r}")
    assert metrics[0].name == DURATION
    return metrics


def metric_names(arch: str, level: str = "full") -> list[str]:
    return [m.name for m in metric_set(arch, level)]


def key_of(arch: str) -> dict[str, str]:
    """ncu name -> report column, over both levels of ``arch``."""
    return {m.name: m.key for m in metric_set(arch)}


# ---- what the installed ncu knows ---------------------------------------------------------
def base_name(metric: str) -> str:
    """``dram__bytes_read.sum`` -> ``dram__bytes_read`` (what --query-metrics lists)."""
    return metric.split(".", 1)[0]


def parse_query_metrics(text: str) -> set[str]:
    """Base metric names from ``ncu --query-metrics`` output (``--csv`` or the text table)."""
    names: set[str] = set()
    token = re.compile(r"^[a-z0-9]+__[A-Za-z0-9_]+$")
    lines = [l for l in text.splitlines() if l.strip()]
    if any(l.lstrip().startswith('"') for l in lines):
        for row in csv.reader(io.StringIO("\n".join(l for l in lines if l.lstrip().startswith('"')))):
            if row and token.match(row[0].strip()):
                names.add(row[0].strip())
    else:
        for line in lines:
            first = line.split()[0]
            if token.match(first):
                names.add(first)
    return names


def filter_available(metrics: Sequence[str], available: set[str] | None,
                     min_known: int = 50) -> tuple[list[str], list[str]]:
    """(kept, dropped): drop a metric whose base name the installed ncu does not list.

    A family the listing does not cover at all (``launch__*`` is not a hardware metric and may
    be absent) is kept; a listing of fewer than ``min_known`` names is treated as a failed query
    and filters nothing.
    """
    if not available or len(available) < min_known:
        return list(metrics), []
    families = {n.split("__", 1)[0] for n in available}
    kept, dropped = [], []
    for m in metrics:
        base = base_name(m)
        family = base.split("__", 1)[0]
        if base in available or family not in families:
            kept.append(m)
        else:
            dropped.append(m)
    if DURATION in dropped:  # never run without the duration
        dropped.remove(DURATION)
        kept.insert(0, DURATION)
    return kept, dropped


# ---- derived figures ---------------------------------------------------------------------
def _num(x) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return math.nan
    return v


def top_stalls(row: Mapping[str, object], n: int = 3) -> list[tuple[str, float]]:
    """The ``n`` largest stall reasons of one row, as (reason, warps per issue), largest first.

    ``selected`` (the warp that issued) is not a stall and is left out.
    """
    found = []
    for reason in STALL_REASONS:
        if reason == "selected":
            continue
        v = _num(row.get(f"stall_{reason}"))
        if not math.isnan(v):
            found.append((reason, v))
    found.sort(key=lambda rv: (-rv[1], rv[0]))
    return found[:n]


def derive(row: Mapping[str, object], flops: float, floor_us: float) -> dict[str, float | str]:
    """Figures computed from one (variant, shape) row of metrics.

    * ``duration_us``; ``tflops`` = FLOPs / duration; ``time_over_floor`` = duration / floor;
    * ``dram_gbps`` = (DRAM bytes read + written) / duration (under ncu: flushed caches);
    * ``smem_conflict_pct`` = bank conflicts / shared wavefronts * 100 (LSU ld+st);
    * ``occupancy_ratio`` = achieved / theoretical warps;
    * ``top_stalls``: "reason=value" of the three largest stall reasons.
    """
    ns = _num(row.get("duration_ns"))
    us = ns / 1e3 if ns > 0 else math.nan
    out: dict[str, float | str] = {"duration_us": us}
    out["tflops"] = flops / (us * 1e-6) / 1e12 if us > 0 and flops > 0 else math.nan
    out["floor_us"] = floor_us
    out["time_over_floor"] = us / floor_us if us > 0 and floor_us > 0 else math.nan
    rd, wr = _num(row.get("dram_read_bytes")), _num(row.get("dram_write_bytes"))
    moved = (0 if math.isnan(rd) else rd) + (0 if math.isnan(wr) else wr)
    out["dram_gbps"] = moved / (us * 1e-6) / 1e9 if us > 0 and not (math.isnan(rd) and math.isnan(wr)) else math.nan
    conflicts = [_num(row.get(k)) for k in ("smem_conflicts_ld", "smem_conflicts_st")]
    conflicts = [c for c in conflicts if not math.isnan(c)]
    wave = _num(row.get("smem_wavefronts"))
    out["smem_conflict_pct"] = (100.0 * sum(conflicts) / wave) if conflicts and wave > 0 else math.nan
    ach, theo = _num(row.get("occupancy_achieved_pct")), _num(row.get("occupancy_theoretical_pct"))
    out["occupancy_ratio"] = ach / theo if theo > 0 and not math.isnan(ach) else math.nan
    out["top_stalls"] = ", ".join(f"{r}={v:.2f}" for r, v in top_stalls(row))
    return out


def rename_metrics(values: Mapping[str, object], arch: str) -> dict[str, object]:
    """{ncu name: value} -> {report column: value}; unknown names keep their ncu name."""
    keys = key_of(arch)
    return {keys.get(name, name): value for name, value in values.items()}


def geomean(values: Iterable[float]) -> float:
    vals = [v for v in values if isinstance(v, (int, float)) and v > 0 and not math.isnan(v)]
    if not vals:
        return math.nan
    return math.exp(sum(math.log(v) for v in vals) / len(vals))
