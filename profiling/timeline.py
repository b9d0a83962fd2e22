"""Where a launch's microseconds go: per-CTA %globaltimer stamps at fixed points of the kernel.

``profiling.k_slope`` splits a variant's time into a fixed cost per launch and a cost per K tile;
this says what the fixed part is made of. The timeline build of a Hopper variant
(``kernel.perturbation.timeline_perturbation``: production's schedule, no delay, no poison) has
every CTA stamp the GPU's nanosecond clock at the points of
``kernel.perturbation.TIMELINE_POINTS`` (its start, the prologue's table reads done, on the
prepass builds thread 0's phase-1 chunks issued, phase 1's grid barrier passed and its CTA
barrier, the producer's first stage acquired and committed, the first and the last tile's
epilogue and the end of its stores, the producer's tail) into the build's device table. The
launches run back to back over rotated input copies, as in the benchmark; each point is reported
relative to the launch's earliest CTA start: the median and the largest over the CTAs, then the
median over launches; below the table, ``later tiles``: what one tile takes once a CTA is past
its first (:func:`later_tile_us`). Two rows compare consecutive launches: ``period`` (this launch's first
CTA start after the previous launch's, i.e. the time a launch costs in a long sequence, what the
benchmark reports) and ``gap`` (this launch's first CTA start after the previous launch's last
stamp: negative when the two overlap, as programmatic dependent launch lets them).

``--graph`` captures the launches into a CUDA graph and replays it, as the benchmark does;
without it they are launched from Python on a stream, and when the host is slower than the
kernel each launch starts on an idle GPU (a large ``gap``): a shorter prologue then shows in
full, where in a graph the next launch's start overlaps the previous one's tail.

    python -m profiling.timeline --variant LABEL [--variant LABEL2] --shape bench4 [--launches 20] [--graph]
    python -m profiling.timeline --variant LABEL~no_epilogue --shape bench4
    python -m profiling.timeline --variant LABEL --shape bench1 --graph --per-cta out/
    python -m profiling.timeline_plot out/timeline_bench1_*.csv -o timeline_bench1.png

``--per-cta DIR`` also writes one CSV per variant (``timeline_<shape>_<label>.csv``): a row per
CTA with the work the host plan gave it (``modelled``: the schedule's cost model, quarter units
x K tiles, as ``kernel.plan``'s balanced split counts it; ``work``: its tiles) and each point's median over the launches, in us after the launch's first CTA
start. A CTA that ends late against what it was given is the schedule's model failing, not the
CTA's work; ``profiling.timeline_plot`` draws it.

Needs a CUDA GPU. Prints one markdown table per variant to stdout, progress to stderr. The
stamps cost a few instructions on one thread per point (a 64-bit store, or a compare-and-swap
for the "first" points); nothing is added inside the consumers' K loop.
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import statistics
import sys
from pathlib import Path
from typing import NamedTuple, Sequence

from profiling.preflight import missing_hopper_gpu


def relative_us(stamps: dict[str, list[int]]) -> dict[str, list[float | None]] | None:
    """One launch's stamps (``kernel.perturbation.timeline_stamps``) in us after its earliest CTA
    start: point -> per CTA (None: that CTA did not reach it). None when no CTA started (an
    empty launch)."""
    starts = [t for t in stamps["start"] if t]
    if not starts:
        return None
    t0 = min(starts)
    return {name: [(t - t0) / 1000.0 if t else None for t in values] for name, values in stamps.items()}


def launch_rows(stamps: dict[str, list[int]]) -> dict[str, tuple[int, float, float]] | None:
    """One launch's stamps relative to its earliest CTA start (:func:`relative_us`): point ->
    (CTAs that reached it, median us, largest us) over those CTAs. None for an empty launch."""
    relative = relative_us(stamps)
    if relative is None:
        return None
    rows = {}
    for name, values in relative.items():
        reached = [t for t in values if t is not None]
        if reached:
            rows[name] = (len(reached), statistics.median(reached), max(reached))
        else:
            rows[name] = (0, float("nan"), float("nan"))
    return rows


def summarize(launches: list[dict[str, tuple[int, float, float]]]) -> dict[str, tuple[int, float, float]]:
    """Per point: the largest CTA count seen and the medians over launches of the per-launch
    median and largest times."""
    out = {}
    for name in launches[0]:
        cols = [row[name] for row in launches if row[name][0]]
        if not cols:
            out[name] = (0, float("nan"), float("nan"))
            continue
        out[name] = (max(c[0] for c in cols), statistics.median(c[1] for c in cols),
                     statistics.median(c[2] for c in cols))
    return out


def sequence_rows(stamps_in_order: list[dict[str, list[int]]]) -> list[dict[str, tuple[int, float, float]]]:
    """``launch_rows`` of consecutive launches (in launch order), each with two more points:
    ``period`` (its earliest CTA start after the previous launch's, us) and ``gap`` (its earliest
    CTA start after the previous launch's latest stamp of any point, us; negative: overlap).
    The first launch of the sequence has neither (count 0); empty launches are left out."""
    out = []
    prev_start = prev_end = None
    for stamps in stamps_in_order:
        row = launch_rows(stamps)
        if row is None:
            continue
        t0 = min(t for t in stamps["start"] if t)
        end = max(t for values in stamps.values() for t in values if t)
        nan = float("nan")
        first = prev_start is None
        row["period"] = (0, nan, nan) if first else (1, (t0 - prev_start) / 1000.0, (t0 - prev_start) / 1000.0)
        row["gap"] = (0, nan, nan) if first else (1, (t0 - prev_end) / 1000.0, (t0 - prev_end) / 1000.0)
        prev_start, prev_end = t0, end
        out.append(row)
    return out


def table(label: str, summary: dict[str, tuple[int, float, float]], ctas: int) -> str:
    lines = [f"`{label}` ({ctas} CTAs; us after the launch's first CTA start)", "",
             "| point | CTAs | median us | largest us |", "|---|---|---|---|"]
    for name, (n, med, big) in summary.items():
        lines.append(f"| {name} | {n} | {med:.2f} | {big:.2f} |" if n else f"| {name} | 0 | - | - |")
    return "\n".join(lines)


def per_cta_medians(stamps_in_order: list[dict[str, list[int]]]) -> list[dict[str, float]]:
    """Per CTA, per point: the median over launches of the CTA's stamp in us after its launch's
    earliest CTA start (:func:`relative_us`; nan where the CTA never reached the point in any
    launch); empty launches are left out."""
    launches = [r for r in map(relative_us, stamps_in_order) if r is not None]
    if not launches:
        return []
    ctas = len(launches[0]["start"])
    return [{name: statistics.median(v) if (v := [r[name][cta] for r in launches if r[name][cta] is not None])
             else math.nan for name in launches[0]} for cta in range(ctas)]


class CtaWork(NamedTuple):
    cost: int  # the host schedule's modelled cost (quarter units x K tiles)
    what: str  # what it runs, in words
    whole: int  # its tiles when they are all whole tiles of one kind (no light tile, no cut half); else 0


def cta_work(plan, config) -> list[CtaWork]:
    """Per CTA of ``plan`` (a prepared launch's host plan) under ``config``: (modelled cost,
    what it runs, its tiles when all are whole tiles of one kind). The cost is the host schedule's
    own model, quarter units (``FULL_COST`` a full tile, ``LIGHT_COST`` a light one) times K tiles,
    its tiles (full + light). The sum over the CTAs is the problem's whole weight.
    ``split_last``: a cut tile's half costs its own K tiles and reads "+ half 0 (publish)" or
    "+ half 1 (combine)"."""
    from kernel.plan import FULL_COST

    out = []
    for cta in range(plan.num_ctas):
        if plan.schedule == "split_last":
            units = plan.cta_units(cta)
            whole = [u for u in units if u.role == "whole"]
            halves = [f" + half {int(u.role == 'combine')} ({u.role})" for u in units if u.role != "whole"]
            cost = sum(FULL_COST * (u.k_end - u.k_begin) for u in units)
            out.append(CtaWork(cost, f"{len(whole)} tiles" + "".join(halves), 0 if halves else len(whole)))
            continue
        tiles = list(plan.cta_tiles(cta))
        light = sum(plan.is_light(t) for t in tiles) if plan.schedule == "balanced" else 0
        cost = sum((plan.tile_cost(t) if plan.schedule == "balanced" else FULL_COST)
                   * plan.k_tiles(plan.locate(t).slot) for t in tiles)
        what = f"{len(tiles) - light} full + {light} light" if light else f"{len(tiles)} tiles"
        out.append(CtaWork(cost, what, 0 if light else len(tiles)))
    return out


def later_tile_us(medians: list[dict[str, float]], work: list[CtaWork]) -> tuple[int, float]:
    """The time a tile takes once a CTA is past its first: per CTA of at least two whole tiles of
    one kind (``CtaWork.whole``: no light tile, no cut half), its last epilogue's start after its
    first over its tiles - 1; (CTAs counted, their median in us; nan when none qualifies).
    Against the launch's first epilogue it separates what slows every tile from what holds the
    first one (phase 1, its first chunks)."""
    per_tile = []
    for row, w in zip(medians, work):
        first, last = row.get("epilogue_first", math.nan), row.get("epilogue_last", math.nan)
        if w.whole >= 2 and not math.isnan(first) and not math.isnan(last):
            per_tile.append((last - first) / (w.whole - 1))
    return len(per_tile), (statistics.median(per_tile) if per_tile else math.nan)


def write_per_cta(path: Path, label: str, work: list[CtaWork], medians: list[dict[str, float]]) -> Path:
    """The ``--per-cta`` CSV: one row per stamped CTA (label, cta, modelled, work, each point)."""
    points = list(medians[0]) if medians else []
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["label", "cta", "modelled", "work"] + points)
        for cta, (row, (cost, what, *_)) in enumerate(zip(medians, work)):  # the stamped CTAs: the first TIMELINE_CTAS
            w.writerow([label, cta, cost, what] + [f"{row[p]:.3f}" for p in points])
    return path


def per_cta_path(folder: Path, shape: str, label: str) -> Path:
    return folder / f"timeline_{shape}_{re.sub(r'[^A-Za-z0-9._-]', '_', label)}.csv"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m profiling.timeline", description=__doc__.split("\n\n")[0])
    p.add_argument("--variant", action="append", required=True,
                   help="a declared Hopper label, LABEL:field=value,... (that variant with fields changed), each with ~PART for its ablated build (repeatable)")
    p.add_argument("--shape", default="bench4", help="a standard shape (profiling.floors)")
    p.add_argument("--launches", type=int, default=20, help="launches measured (back to back, rotated inputs)")
    p.add_argument("--graph", action="store_true",
                   help="replay the launches from a CUDA graph (as the benchmark), not from Python on a stream")
    p.add_argument("--per-cta", metavar="DIR", type=Path,
                   help="also write each variant's per-CTA medians and planned work to DIR (profiling.timeline_plot)")
    args = p.parse_args(argv)
    if args.launches < 1:
        p.error("--launches must be >= 1")

    import torch

    import oracle
    from kernel import hopper
    from kernel.perturbation import timeline_perturbation, timeline_stamps
    from profiling import floors, timing
    from profiling.ablation import labelled_builds
    from profiling.benchmarks import _support as S

    try:
        builds = {v: (b.config, b.ablation) for v, b in labelled_builds(args.variant).items()}
    except ValueError as exc:
        p.error(str(exc))
    if (line := missing_hopper_gpu("profiling.timeline")):
        print(line, file=sys.stderr)
        return 2
    shape = floors.get_shape(args.shape)
    host = oracle.make_inputs(shape.problem_sizes(), S.SEED, distribution=S.DISTRIBUTION)
    first = oracle.data_to(host, "cuda")
    copies = timing.copies_for(floors.shape_bytes(shape, padded_scales=True), l2_bytes=S.l2_bytes())
    datas = [first] + [oracle.clone_data(first) for _ in range(copies - 1)]
    marker = timeline_perturbation()
    words = torch.tensor(marker.device_words(), dtype=torch.int32)
    for v in args.variant:
        config, ablation = builds[v]
        prepared = [hopper.prepare(d, config, ablation=ablation, perturbation=marker) for d in datas]
        ctas = prepared[0].plan.num_ctas
        for q in prepared * 2:  # compile, tables, warm-up
            hopper.launch(q)
        torch.cuda.synchronize()
        replayer = None
        if args.graph:  # the stamps' tables are reset outside the graph, before each replay
            replayer = timing.Replayer([lambda q=q: hopper.launch(q) for q in prepared], method="graph").prepare()
        rows, stamp_lists = [], []
        while len(rows) < args.launches:
            for q in prepared:
                q.delay_table.copy_(words)
            torch.cuda.synchronize()
            if replayer is not None:
                replayer.replay()
            else:
                for q in prepared:  # back to back
                    hopper.launch(q)
            torch.cuda.synchronize()
            stamps = [timeline_stamps(q.delay_table.cpu().tolist(), ctas) for q in prepared]
            rows += sequence_rows(stamps)
            stamp_lists += stamps
        mode = "CUDA-graph replay" if replayer is not None else "stream launches"
        print(f"  {v}: {len(rows)} launches ({mode})", file=sys.stderr, flush=True)
        print(table(v, summarize(rows[:args.launches]), ctas))
        medians = per_cta_medians(stamp_lists[:args.launches])
        work = cta_work(prepared[0].plan, config)
        n, later = later_tile_us(medians, work)
        if n:
            print(f"\nlater tiles: {later:.2f} us each (median over {n} CTAs of whole tiles only: last epilogue "
                  f"start after the first, over the tiles after the first)")
        print()
        if args.per_cta is not None:
            args.per_cta.mkdir(parents=True, exist_ok=True)
            path = write_per_cta(per_cta_path(args.per_cta, args.shape, v), v, work, medians)
            print(f"  {v}: per-CTA medians -> {path}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
