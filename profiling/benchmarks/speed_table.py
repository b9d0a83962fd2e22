"""The speed tables of one pytest-benchmark JSON (one run, so the ratios compare like with like).

    python3 -m profiling.benchmarks.speed_table $OUT/bench_gpu.json [--markdown OUT.md]

1. The leaderboard's benchmarks: rows the peer, each variant (``per-shape``: what
   ``custom_kernel(data)`` runs without a config) and "best per shape" (what an ideal per-shape
   dispatch would get); columns us per shape (and time / cuBLAS), the geomean, geomean / floor
   twice, and whether the row is faster than cuBLAS on every shape. The two floors: "/floor
   (run)" at the ceilings the benchmark run measured on its own machine (a power-capped GPU gives
   a slower floor), "/floor (ref)" at profiling.floors' reference H200 ceilings, the fixed figure
   a speed goal is stated against (bench1-4 76.1 / 38.1 / 16.3 / 8.2 us, geomean 24.95).
2. Every shape of the run (the suite, profiling/shape_suite.py), one row each: its family, the
   peer, the per-shape default (graph replay, time / cuBLAS, the build it ran), the same calls
   timed as the leaderboard times them (``leaderboard mean``: 15 eager calls between CUDA events
   after clearing the L2, the mean over repeats) and the host time of one eager call, then each
   other variant (a letter per variant, the legend below) and the fastest of them; then per shape family
   the per-shape default's geomean over cuBLAS and on how many shapes it is faster.

Pure Python (tested on the CPU with a synthetic JSON).
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from profiling import floors as floor_model
from profiling.shape_suite import family_shapes

SHAPES = tuple(s.name for s in family_shapes("leaderboard-bench"))
PEER = "cuBLAS bf16"
PER_SHAPE = "per-shape"  # profiling.benchmarks._support.PER_SHAPE: custom_kernel(data) without a config


def entries(data: dict) -> dict[tuple[str, str], dict]:
    """{(row, shape): extra_info} of the device-timed benchmarks of a pytest-benchmark JSON (row:
    the peer or the variant label)."""
    out: dict[tuple[str, str], dict] = {}
    for b in data.get("benchmarks", []):
        e = b.get("extra_info", {})
        if "device_median_us" not in e:
            continue
        name = b["name"]
        inner = name[name.find("[") + 1 : name.rfind("]")] if "[" in name else name
        if name.startswith("test_peer_cublas_bf16"):
            row, shape = PEER, inner
        else:
            head, _, shape = inner.rpartition("-")
            row = head.split(":", 1)[-1]
        out[row, shape] = e
    return out


def medians(data: dict) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """({row: {shape: median us}}, {shape: floor us}) from a pytest-benchmark JSON."""
    rows: dict[str, dict[str, float]] = {}
    floors: dict[str, float] = {}
    for (row, shape), e in entries(data).items():
        rows.setdefault(row, {})[shape] = float(e["device_median_us"])
        if e.get("time_over_floor"):
            floors[shape] = float(e["device_median_us"]) / float(e["time_over_floor"])
    return rows, floors


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def reference_floors() -> dict[str, float]:
    """Floor (us) of each standard shape at the reference H200 ceilings (profiling.floors)."""
    return {s: floor_model.floor(floor_model.get_shape(s)).floor_us for s in SHAPES}


def bench_table(data: dict) -> list[str]:
    rows, floors = medians(data)
    rows = {k: v for k, v in rows.items() if any(s in v for s in SHAPES)}
    ref_g = _geomean(list(reference_floors().values()))
    peer = rows.get(PEER, {})
    kernels = {k: v for k, v in rows.items() if k != PEER}
    best = {}
    for s in SHAPES:
        cands = [(v[s], k) for k, v in kernels.items() if s in v]
        if cands:
            best[s] = min(cands)
    out_rows = [(PEER, peer)] + sorted(kernels.items()) + [("best per shape", {s: t for s, (t, _) in best.items()})]
    head = "| variant | " + " | ".join(f"{s} us (/cuBLAS)" for s in SHAPES) + " | geomean | /floor (run) | /floor (ref) | beats cuBLAS on all |"
    lines = [head, "|" + "---|" * (len(SHAPES) + 5)]
    floor_g = _geomean([floors[s] for s in SHAPES]) if all(s in floors for s in SHAPES) else None
    for name, r in out_rows:
        cells = []
        for s in SHAPES:
            if s not in r:
                cells.append("-")
            elif name != PEER and s in peer:
                cells.append(f"{r[s]:.2f} ({r[s] / peer[s]:.2f})")
            else:
                cells.append(f"{r[s]:.2f}")
        full = all(s in r for s in SHAPES)
        g = _geomean([r[s] for s in SHAPES]) if full else None
        gs = f"{g:.2f}" if g else "-"
        fs = f"{g / floor_g:.2f}" if g and floor_g else "-"
        rs = f"{g / ref_g:.2f}" if g else "-"
        beats = "-" if name == PEER or not full or not all(s in peer for s in SHAPES) else (
            "yes" if all(r[s] < peer[s] for s in SHAPES) else "no")
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {gs} | {fs} | {rs} | {beats} |")
    if best:
        lines.append("")
        lines.append("best per shape: " + ", ".join(f"{s} {k}" for s, (_, k) in best.items()))
    if floors:
        lines.append("floors of this run (us): " + ", ".join(f"{s} {floors[s]:.1f}" for s in SHAPES if s in floors))
    lines.append("reference floors (us): " + ", ".join(f"{s} {t:.1f}" for s, t in reference_floors().items())
                 + f"; geomean {ref_g:.2f}")
    return lines


def _shape_order(names) -> list[str]:
    from profiling.shape_suite import SUITE

    known = [s.name for s in SUITE]
    return sorted(names, key=lambda n: (known.index(n) if n in known else len(known), n))


def _family(shape: str, infos: list[dict]) -> str:
    from profiling.shape_suite import SUITE_BY_NAME

    if shape in SUITE_BY_NAME:
        return SUITE_BY_NAME[shape].family
    return next((e["shape_family"] for e in infos if e.get("shape_family")), "-")


def _cell(e: dict | None, key: str, fmt: str = "{:.2f}") -> str:
    return fmt.format(float(e[key])) if e is not None and e.get(key) is not None else "-"


def suite_table(data: dict) -> list[str]:
    """Table 2 of the module docstring: one row per shape of the run."""
    found = entries(data)
    shapes = _shape_order({shape for _, shape in found})
    others = sorted({row for row, _ in found} - {PEER, PER_SHAPE})
    letter = {row: chr(ord("A") + i) if i < 26 else f"V{i}" for i, row in enumerate(others)}
    head = ("| shape | family | cuBLAS us | per-shape us (/cuBLAS) | runs | leaderboard mean us | host us/call | "
            + " | ".join(f"{letter[r]} us (/cuBLAS)" for r in others) + (" | " if others else "") + "fastest |")
    lines = [head, "|" + "---|" * (8 + len(others))]
    by_family: dict[str, list[tuple[float, float]]] = {}
    for shape in shapes:
        peer = found.get((PEER, shape))
        peer_us = float(peer["device_median_us"]) if peer else None

        def timed(row):
            e = found.get((row, shape))
            if e is None:
                return "-"
            us = float(e["device_median_us"])
            return f"{us:.2f} ({us / peer_us:.2f})" if peer_us else f"{us:.2f}"

        default = found.get((PER_SHAPE, shape))
        ran = default.get("config_run") if default else None
        kernels = [(float(e["device_median_us"]), row) for (row, s), e in found.items()
                   if s == shape and row not in (PEER, PER_SHAPE)]
        fastest = min(kernels)[1] if kernels else "-"
        family = _family(shape, [e for (r, s), e in found.items() if s == shape])
        if default is not None and peer_us:
            by_family.setdefault(family, []).append((float(default["device_median_us"]), peer_us))
        lines.append(
            f"| {shape} | {family} | {f'{peer_us:.2f}' if peer_us else '-'} | {timed(PER_SHAPE)} | "
            f"{letter.get(ran, ran or '-')} | {_cell(default, 'leaderboard_mean_us')} | "
            f"{_cell(default, 'host_us_per_call', '{:.1f}')} | "
            + "".join(f"{timed(r)} | " for r in others) + f"{letter.get(fastest, fastest)} |"
        )
    for row in others:
        lines.append(f"{letter[row]}: {row}")
    for family, pairs in by_family.items():
        ratio = _geomean([t / p for t, p in pairs])
        faster = sum(t < p for t, p in pairs)
        lines.append(f"{family}: per-shape / cuBLAS geomean {ratio:.2f}, faster than cuBLAS on {faster} of {len(pairs)}")
    return lines


def table(data: dict) -> list[str]:
    """Both tables, the leaderboard's benchmarks first."""
    return bench_table(data) + [""] + suite_table(data)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("json", nargs="+")
    p.add_argument("--markdown", help="also write the table here")
    a = p.parse_args(argv)
    data = {"benchmarks": []}
    for path in a.json:
        with open(path) as f:
            data["benchmarks"] += json.load(f).get("benchmarks", [])
    text = "\n".join(table(data))
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
