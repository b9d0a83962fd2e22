"""Fixed cost per launch against cost per K: time Hopper variants on one shape at several K.

A one-round shape (every CTA runs one tile, as bench3 and bench4 on the H200) spends its time in
two parts: what every launch pays whatever K is (launch, barrier init, pipeline fill, phase 1's
latency chain, epilogue, drain) and what each K tile costs. This script times each variant on the
standard shape's M and N at each ``--ks`` value (CUDA-graph replay, inputs rotated past L2, each
build checked against the exact oracle once first) and fits ``time = fixed + per_k_tile x
K / 256`` by least squares, so a change can be aimed at the part that is large.

    python -m profiling.k_slope --variant LABEL [--variant LABEL2] --shape bench4 --ks 512,1536,3072,6144
    python -m profiling.k_slope --variant LABEL --variant LABEL~no_prepass --shape bench4

``LABEL~PART`` times the build without one part (:mod:`kernel.hopper.ablation`; its results are
wrong by design, so it is not checked): the fixed cost and the slope of what is left.

Needs a CUDA GPU. Prints a markdown table (one row per variant: the time at each K, the fit's
fixed part and its cost per 256 K, the largest residual) to stdout, progress to stderr.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from profiling.preflight import missing_hopper_gpu

K_TILE = 256


def fit_line(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float, float]:
    """Least-squares ``y = a + b x``: (a, b, largest absolute residual). Needs two distinct xs."""
    n = len(xs)
    if n != len(ys) or len(set(xs)) < 2:
        raise ValueError("need at least two distinct x values, one y each")
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    a = my - b * mx
    return a, b, max(abs(y - (a + b * x)) for x, y in zip(xs, ys))


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m profiling.k_slope", description=__doc__.split("\n\n")[0])
    p.add_argument("--variant", action="append", required=True,
                   help="a declared Hopper label, LABEL:field=value,..., or a config's fields as JSON (repeatable)")
    p.add_argument("--shape", default="bench4", help="a standard shape: its M per group and N are kept")
    p.add_argument("--ks", default="512,1536,3072,6144", help="comma-separated K values (multiples of 256)")
    p.add_argument("--samples", type=int, default=15)
    args = p.parse_args(argv)
    ks = [int(k) for k in args.ks.split(",")]
    if any(k <= 0 or k % K_TILE for k in ks):
        p.error(f"--ks: every K must be a positive multiple of {K_TILE}")

    import oracle
    from kernel import hopper
    from profiling import floors, timing
    from profiling.ablation import check_exact, labelled_builds
    from profiling.benchmarks import _support as S

    try:
        builds = {v: (b.config, b.ablation) for v, b in labelled_builds(args.variant).items()}
    except ValueError as exc:
        p.error(str(exc))
    if (line := missing_hopper_gpu("profiling.k_slope")):
        print(line, file=sys.stderr)
        return 2
    base = floors.get_shape(args.shape)
    times: dict[str, list[float]] = {v: [] for v in args.variant}
    for k in ks:
        shape = floors.shape_set(f"{args.shape}_k{k}", [s[0] for s in base.sizes], [s[1] for s in base.sizes], k)
        host = oracle.make_inputs(shape.problem_sizes(), S.SEED, distribution=S.DISTRIBUTION)
        first = oracle.data_to(host, "cuda")
        copies = timing.copies_for(floors.shape_bytes(shape, padded_scales=True), l2_bytes=S.l2_bytes())
        datas = [first] + [oracle.clone_data(first) for _ in range(copies - 1)]
        per_replay = timing.launches_for(floors.floor_us(shape), copies)
        for label in args.variant:
            config, ablation = builds[label]
            if ablation is None:
                problem = check_exact(config, first)
                if problem is not None:
                    raise SystemExit(f"{label} at K={k}: {problem}; not timed")
            prepared = [hopper.prepare(d, config, ablation=ablation) for d in datas]
            t = timing.time_device([lambda q=q: hopper.launch(q) for q in prepared], samples=args.samples,
                                   warmup=5, launches_per_replay=per_replay)
            times[label].append(t.median_us)
            print(f"  {label} K={k}: {t.median_us:.2f} us", file=sys.stderr, flush=True)
    print("| variant | " + " | ".join(f"K={k}" for k in ks) + " | fixed us | us per 256 K | max residual |")
    print("|---|" + "---|" * (len(ks) + 3))
    for label in args.variant:
        a, b, r = fit_line([k / K_TILE for k in ks], times[label])
        name = builds[label][0].label + (label[label.index("~"):] if "~" in label else "")
        print(f"| `{name}` | " + " | ".join(f"{t:.2f}" for t in times[label]) + f" | {a:.2f} | {b:.3f} | {r:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
