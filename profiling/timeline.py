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
median over launches. Two rows compare consecutive launches: ``period`` (this launch's first
CTA start after the previous launch's, i.e. the time a launch costs in a long sequence, what the
benchmark reports) and ``gap`` (this launch's first CTA start after the previous launch's last
stamp: negative when the two overlap, as programmatic dependent launch lets them).

``--graph`` captures the launches into a CUDA graph and replays it, as the benchmark does;
without it they are launched from Python on a stream, and when the host is slower than the
kernel each launch starts on an idle GPU (a large ``gap``): a shorter prologue then shows in
full, where in a graph the next launch's start overlaps the previous one's tail.

    python -m profiling.timeline --variant LABEL [--variant LABEL2] --shape bench4 [--launches 20] [--graph]
    python -m profiling.timeline --variant LABEL~no_epilogue --shape bench4

Needs a CUDA GPU. Prints one markdown table per variant to stdout, progress to stderr. The
stamps cost a few instructions on one thread per point (a 64-bit store, or a compare-and-swap
for the "first" points); nothing is added inside the consumers' K loop.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from typing import Sequence

from profiling.preflight import missing_hopper_gpu


def launch_rows(stamps: dict[str, list[int]]) -> dict[str, tuple[int, float, float]] | None:
    """One launch's stamps (``kernel.perturbation.timeline_stamps``) relative to its earliest
    CTA start: point -> (CTAs that reached it, median us, largest us) over those CTAs. None when
    no CTA started (an empty launch)."""
    starts = [t for t in stamps["start"] if t]
    if not starts:
        return None
    t0 = min(starts)
    rows = {}
    for name, values in stamps.items():
        reached = [(t - t0) / 1000.0 for t in values if t]
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


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m profiling.timeline", description=__doc__.split("\n\n")[0])
    p.add_argument("--variant", action="append", required=True,
                   help="a declared Hopper label, or LABEL~PART for its ablated build (repeatable)")
    p.add_argument("--shape", default="bench4", help="a standard shape (profiling.floors)")
    p.add_argument("--launches", type=int, default=20, help="launches measured (back to back, rotated inputs)")
    p.add_argument("--graph", action="store_true",
                   help="replay the launches from a CUDA graph (as the benchmark), not from Python on a stream")
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
        rows = []
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
            rows += sequence_rows([timeline_stamps(q.delay_table.cpu().tolist(), ctas) for q in prepared])
        mode = "CUDA-graph replay" if replayer is not None else "stream launches"
        print(f"  {v}: {len(rows)} launches ({mode})", file=sys.stderr, flush=True)
        print(table(v, summarize(rows[:args.launches]), ctas))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
