"""The speed table: device medians of every kernel variant and the cuBLAS bf16 peer on the
standard shapes, from one pytest-benchmark JSON (one run, so the ratios compare like with like).

    python3 -m profiling.benchmarks.speed_table $OUT/bench_gpu.json [--markdown OUT.md]

Rows: the peer, each variant, and "best per shape" (what a per-shape dispatch table would get).
Columns: us per shape (and time / cuBLAS), the geomean, geomean / floor twice, and whether the
row is faster than cuBLAS on every shape. The two floors: "/floor (run)" at the ceilings the
benchmark run measured on its own machine (a power-capped GPU gives a slower floor), "/floor
(ref)" at profiling.floors' reference H200 ceilings, the fixed figure a speed goal is stated
against (bench1-4 76.1 / 38.1 / 16.3 / 8.2 us, geomean 24.95). Pure Python (tested on the CPU
with a synthetic JSON).
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from profiling import floors as floor_model

SHAPES = ("bench1", "bench2", "bench3", "bench4")
PEER = "cuBLAS bf16"


def medians(data: dict) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """({row: {shape: median us}}, {shape: floor us}) from a pytest-benchmark JSON."""
    rows: dict[str, dict[str, float]] = {}
    floors: dict[str, float] = {}
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
        if shape not in SHAPES:
            continue
        rows.setdefault(row, {})[shape] = float(e["device_median_us"])
        if e.get("time_over_floor"):
            floors[shape] = float(e["device_median_us"]) / float(e["time_over_floor"])
    return rows, floors


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def reference_floors() -> dict[str, float]:
    """Floor (us) of each standard shape at the reference H200 ceilings (profiling.floors)."""
    return {s: floor_model.floor(floor_model.get_shape(s)).floor_us for s in SHAPES}


def table(data: dict) -> list[str]:
    rows, floors = medians(data)
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
