"""Which resource bounds a kernel, read from one ncu ``--csv --page raw`` export with the
speed-of-light, memory, scheduler and warp-state sections (``bash ci/gpu_profile.sh bound``):

    python -m profiling.ncu_bound out/ncu/ncu_LABEL.csv [--shapes bench1,bench3]

Prints one block per profiled kernel: time, the throughput of each unit against its peak
(the largest first: the unit nearest its ceiling is the candidate bound), tensor-pipe activity,
issue activity and eligible warps per scheduler, and the stall reasons that take the largest
share of a warp's cycles between issues. Pure parsing (no ncu, no GPU): tested on a recorded
export.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from profiling import metrics as M
from profiling.ncu_report import parse_raw_csv

# unit -> the metric(s) giving its throughput as a percentage of its peak, first found wins (what
# ncu 2025.3.1 exports for these sections on the H200: L1's exists only per active cycle; DRAM's
# is gpu__dram_throughput in the section export, dram__throughput when asked for by name)
THROUGHPUTS: dict[str, tuple[str, ...]] = {
    "SM (issue / pipes)": ("sm__throughput.avg.pct_of_peak_sustained_elapsed",),
    "L1 / shared": ("l1tex__throughput.avg.pct_of_peak_sustained_active",),
    "L2": ("lts__throughput.avg.pct_of_peak_sustained_elapsed",),
    "DRAM": ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
             "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
    "memory (max of units)": ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",),
}
TENSOR = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
TIME = M.DURATION
ISSUE_ACTIVE = "smsp__issue_active.avg.pct_of_peak_sustained_active"
ELIGIBLE = "smsp__warps_eligible.avg.per_cycle_active"
ACTIVE_WARPS = "smsp__warps_active.avg.per_cycle_active"
SUMMARY_METRICS: tuple[str, ...] = (*(n for names in THROUGHPUTS.values() for n in names), TENSOR, TIME, ISSUE_ACTIVE,
                                    ELIGIBLE, ACTIVE_WARPS)


def unit_throughput(metrics: dict, unit: str) -> float:
    """``unit``'s throughput against its peak (%), NaN when the export has none of its names."""
    for name in THROUGHPUTS[unit]:
        value = metrics.get(name)
        if isinstance(value, float) and math.isfinite(value):
            return value
    return math.nan


def stall_reasons(metrics: dict) -> list[tuple[str, float]]:
    """(reason, warps stalled per issued instruction) for each of profiling.metrics' stall
    reasons the export has (WarpStateStats), largest first."""
    out = []
    for reason in M.STALL_REASONS:
        value = metrics.get(M.stall_metric(reason))
        if isinstance(value, float) and math.isfinite(value):
            out.append((reason, value))
    return sorted(out, key=lambda rv: -rv[1])


def summarize(record: dict, shape: str | None = None, top: int = 6) -> str:
    m = record["metrics"]

    def fmt(name, unit=""):
        v = m.get(name, math.nan)
        return "n/a" if not math.isfinite(v) else f"{v:.1f}{unit}"

    time_us = m.get(TIME, math.nan) / 1000.0 if math.isfinite(m.get(TIME, math.nan)) else math.nan
    head = f"kernel {record['id']}" + (f" ({shape})" if shape else "") + f": {time_us:.1f} us"
    lines = [head]
    units = sorted(((u, unit_throughput(m, u)) for u in THROUGHPUTS),
                   key=lambda uv: -(uv[1] if math.isfinite(uv[1]) else -1))
    lines.append("  throughput vs peak: " + ", ".join(
        f"{u} {v:.1f} %" if math.isfinite(v) else f"{u} n/a" for u, v in units))
    lines.append(f"  tensor pipe active {fmt(TENSOR, ' %')}; issue active {fmt(ISSUE_ACTIVE, ' %')}; "
                 f"warps eligible {fmt(ELIGIBLE)} / active {fmt(ACTIVE_WARPS)} per scheduler")
    stalls = stall_reasons(m)
    total = sum(v for _, v in stalls)
    if stalls and total > 0:
        lines.append("  stalls (cycles per issue, share): " + ", ".join(
            f"{r} {v:.1f} ({100 * v / total:.0f} %)" for r, v in stalls[:top]))
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", type=Path)
    ap.add_argument("--shapes", default="", help="comma-separated shape names, in launch order")
    args = ap.parse_args(argv)
    records = parse_raw_csv(args.csv.read_text(errors="replace"))
    if not records:
        print(f"{args.csv}: no kernel records", file=sys.stderr)
        return 1
    shapes = [s for s in args.shapes.split(",") if s]
    for i, rec in enumerate(records):
        print(summarize(rec, shapes[i] if i < len(shapes) else None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
