"""Per-CTA timelines drawn: when each CTA ran, against the work the host plan gave it.

Reads the CSVs of ``python -m profiling.timeline --per-cta DIR`` (one per variant) and draws,
per variant, two panels side by side:

* left, one horizontal line per CTA from its start to its last stamp (the end of its last
  epilogue's stores, or the producer's tail), a mark where phase 1 was passed and where its
  first tile's epilogue began: a schedule's last round, a CTA that waits, a late start show
  as lines that stick out;
* right, each CTA's end against its modelled work (``modelled``: quarter units x K tiles, the
  schedule's own cost model) with the least-squares line: a balanced schedule is a tight
  vertical cloud at one work value; points far above the line are CTAs the model gets wrong
  (a wait, a slow piece), not CTAs that were given more.

    python -m profiling.timeline_plot out/timeline_bench1_*.csv -o timeline_bench1.png

Runs anywhere (matplotlib, no GPU). Prints one line per variant: the CTAs' median and largest
end, and the CTAs that end latest, with their work.
"""

from __future__ import annotations

from kernel.errors import PicklableError
import argparse
import csv
import math
import statistics
import sys
from pathlib import Path
from typing import Sequence

REQUIRED = ("label", "cta", "modelled", "work", "start")
END_POINTS = ("epilogue_last_end", "producer_tail", "epilogue_last")  # the first a CTA has is its end


class TimelineCsvError(PicklableError, ValueError):
    """A CSV that is not ``profiling.timeline --per-cta`` output (names the file and the rule)."""


def read_per_cta(path: Path) -> tuple[str, list[dict]]:
    """(label, rows) of one per-CTA CSV; numbers parsed (nan where a point was not reached)."""
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
        if missing:
            raise TimelineCsvError(f"{path}: not a per-CTA timeline CSV (missing columns {missing}); "
                                   "write one with python -m profiling.timeline --per-cta DIR")
        rows = []
        for row in reader:
            out = {"cta": int(row["cta"]), "modelled": int(row["modelled"]), "work": row["work"]}
            for key, value in row.items():
                if key not in ("label", "cta", "modelled", "work"):
                    out[key] = float(value) if value not in ("", None) else math.nan
            rows.append(out)
            label = row["label"]
    if not rows:
        raise TimelineCsvError(f"{path}: no CTA rows")
    return label, rows


def cta_end(row: dict) -> float:
    """A CTA's end: its first reached point of END_POINTS, else its latest stamp."""
    for name in END_POINTS:
        if not math.isnan(row.get(name, math.nan)):
            return row[name]
    stamps = [v for k, v in row.items() if k not in ("cta", "modelled", "work") and not math.isnan(v)]
    return max(stamps) if stamps else math.nan


def summary_line(label: str, rows: list[dict], late: int = 4) -> str:
    ends = [(cta_end(r), r) for r in rows if not math.isnan(cta_end(r))]
    ends.sort(key=lambda e: -e[0])
    med = statistics.median(e for e, _ in ends)
    worst = ", ".join(f"CTA {r['cta']} {e:.1f} us ({r['modelled']}: {r['work']})" for e, r in ends[:late])
    return f"{label}: {len(ends)} CTAs, end median {med:.1f} us, largest {ends[0][0]:.1f}; latest: {worst}"


def fit(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float] | None:
    """Least squares y = a + b x (a, b); None when x does not vary."""
    try:
        slope, intercept = statistics.linear_regression(xs, ys)
    except statistics.StatisticsError:
        return None
    return intercept, slope


def plot(tables: list[tuple[str, list[dict]]], out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(tables), 2, figsize=(13, 4.2 * len(tables)), squeeze=False,
                             gridspec_kw={"width_ratios": [2.2, 1]})
    xmax = max(cta_end(r) for _, rows in tables for r in rows if not math.isnan(cta_end(r))) * 1.03
    for (label, rows), (left, right) in zip(tables, axes):
        ctas = [r["cta"] for r in rows]
        starts = [r["start"] for r in rows]
        ends = [cta_end(r) for r in rows]
        left.hlines(ctas, starts, ends, color="tab:blue", linewidth=0.8)
        for name, style in (("phase1_passed", "k|"), ("epilogue_first", "g|")):
            if name in rows[0]:
                left.plot([r[name] for r in rows], ctas, style, markersize=3, label=name)
        left.plot(ends, ctas, "r.", markersize=2, label="end")
        left.set_xlim(0, xmax)
        left.invert_yaxis()
        left.set_xlabel("us after the launch's first CTA start (median over launches)")
        left.set_ylabel("CTA")
        left.set_title(label, fontsize=8)
        left.legend(fontsize=7, loc="lower left")
        work = [r["modelled"] for r in rows]
        right.plot(work, ends, ".", markersize=4)
        line = fit([w for w, e in zip(work, ends) if not math.isnan(e)], [e for e in ends if not math.isnan(e)])
        if line is not None:
            lo, hi = min(work), max(work)
            right.plot([lo, hi], [line[0] + line[1] * lo, line[0] + line[1] * hi], "k--", linewidth=0.8,
                       label=f"{line[0]:.1f} + {line[1]:.3f} us per unit")
            right.legend(fontsize=7)
        right.set_xlabel("modelled work (quarter units x K tiles)")
        right.set_ylabel("end, us")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m profiling.timeline_plot", description=__doc__.split("\n\n")[0])
    p.add_argument("csv", nargs="+", type=Path, help="per-CTA CSVs of profiling.timeline --per-cta")
    p.add_argument("-o", "--out", type=Path, default=Path("timeline.png"), help="the PNG to write")
    args = p.parse_args(argv)
    try:
        tables = [read_per_cta(path) for path in args.csv]
    except (OSError, TimelineCsvError) as exc:
        print(f"profiling.timeline_plot: {exc}", file=sys.stderr)
        return 2
    for label, rows in tables:
        print(summary_line(label, rows))
    print(f"wrote {plot(tables, args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
