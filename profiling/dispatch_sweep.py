"""Time every Hopper production build on every shape of the suite, to set the dispatch rule.

    python3 -m profiling.dispatch_sweep [--shapes suite|quick|NAMES] [--variants production|rule]
        [--variant LABEL[:field=value,...] ...] [--samples N] [--budget-s S] [--json OUT.json]
    python3 -m profiling.dispatch_sweep --quick --json OUT.json     # = --shapes quick --variants rule
    python3 -m profiling.dispatch_sweep --analyze OUT.json          # no GPU needed

On each shape (profiling/shape_suite.py, shape-major: inputs made once per shape) it times, with
the repository's timing (profiling.timing.time_device: CUDA-graph replay over input copies
rotated past L2, the median of ``--samples`` replays): each build, ``custom_kernel(data)``
without a config (the per-shape default, and which build the rule picked), and the cuBLAS bf16
peer (profiling.peers) in the same process. A build that raises or leaves an output unwritten
(NaN) is recorded with the error, and the sweep goes on. The JSON (rewritten after every shape,
so a run cut short keeps what it measured) holds per shape its sizes, family, the rule's
:class:`kernel.hopper.dispatch.Features` at this GPU's SM count, the floor and every time.
``--budget-s`` starts no new shape after that many seconds (the rest are listed as skipped).
Each shape's record also holds the compiles so far and their seconds (the compile cache's), so a
run tells what a compile costs on its machine.

``--variants``: ``production`` (default) every production build (kernel.hopper.PRODUCTION_VARIANTS);
``rule`` the builds the dispatch rule can pick (DEFAULT_RULE.configs()); ``--variant`` adds
a build: a declared label, or a declared variant with fields changed, so a pipeline-stage or
buffer-count variant is timed beside its base in one run without declaring it
(``--variant 'LABEL:num_ab_stages=4,fp16_buffers=3'``; kernel.hopper.variants.resolve_config).
Cost: one compile per (build, group count): the suite has six group counts, --quick's shapes five.

:func:`analyze` (``--analyze``, also printed after a sweep) reports, from the JSON alone: the
fastest build on each shape and by how much, the rule's choice and its cost against the fastest
(geomean over the shapes), and for each pair of builds that each win somewhere, the feature
thresholds that best separate where each is faster: the first build picked inside a region of
one feature (``rounds <= 0.95``) or a box of two, the second outside, ranked by the time the split loses against always picking the faster
one. Thresholds are midpoints between measured shapes; kernel/hopper/dispatch.py's clauses take
them as bounds.

:func:`goals` (printed first after a sweep and with ``--analyze``) holds the per-shape default to
the speed the project asks of it, from the same JSON: on every shape with the peer timed, the
default's time over cuBLAS bf16's against ``PEER_GOALS`` (at most 0.85 on the leaderboard's
benchmarks, the MoE and the decode shapes, where small groups let a grouped kernel win clearly;
at most 1.0 elsewhere: a compute-bound dense group cannot beat the same tensor rate, so parity),
and the geomean over bench1-4 of the default's time over the reference floor
(``profiling.floors``, H200 figures) against ``FLOOR_GEOMEAN_GOAL``, a goal for an H200 run.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import time
from typing import Sequence

SCHEMA = 1


# ---------------------------------------------------------------------------- the sweep (GPU)


def _builds(variants: str, extra: Sequence[str]) -> list:
    """The production or rule builds, then each ``--variant`` (kernel.hopper.variants.resolve_config:
    a declared label, ``LABEL:field=value,...`` or JSON fields)."""
    from kernel.hopper import PRODUCTION_VARIANTS
    from kernel.hopper.dispatch import DEFAULT_RULE
    from kernel.hopper.variants import resolve_config

    base = list(PRODUCTION_VARIANTS) if variants == "production" else DEFAULT_RULE.configs()
    for spec in extra:
        base.append(resolve_config(spec))
    return list(dict.fromkeys(base))


def _timed(launches, samples: int, lpr: int) -> dict:
    from profiling import timing

    t = timing.time_device(launches, samples=samples, launches_per_replay=lpr)
    return {"us": t.median_us, "iqr_us": t.stats.iqr, "method": t.method}


def _unwritten(outs) -> list[int]:
    import torch

    return [g for g, c in enumerate(outs) if c.numel() and bool(torch.isnan(c).any())]


def sweep_shape(shape, builds, samples: int, peer: bool, sms: int) -> dict:
    """Every time of one shape (see the module docstring)."""
    from kernel import hopper
    from kernel.hopper import dispatch
    from profiling import floors, timing
    from profiling.benchmarks import _support as S

    t0 = time.time()
    copies = timing.copies_for(floors.shape_bytes(shape, padded_scales=True), l2_bytes=S.l2_bytes())
    datas = S.device_copies(shape, copies)
    lpr = timing.launches_for(floors.floor_us(shape), copies)
    record = {
        "shape": shape.name,
        "family": shape.family,
        "sizes": shape.problem_sizes(),
        "features": dispatch.features(shape.sizes, sms).as_dict(),
        "floor_us": floors.floor_us(shape),
        "copies": copies,
        "launches_per_replay": lpr,
        "builds": {},
    }
    for config in builds:
        try:
            outs = hopper.custom_kernel(datas[0], config=config)
            bad = _unwritten(outs)
            if bad:
                raise RuntimeError(f"left NaN (unwritten) outputs in groups {bad}")
            record["builds"][config.label] = _timed(S.kernel_launches(hopper, config, datas), samples, lpr)
        except Exception as exc:  # a build that cannot run this shape: recorded, the sweep goes on
            record["builds"][config.label] = {"error": f"{type(exc).__name__}: {str(exc).strip()[:300]}"}
        _progress(shape.name, config.label, record["builds"][config.label])
    try:
        chosen = hopper.default_config(datas[0]).label
        record["per_shape"] = {"label": chosen, **_timed(S.kernel_launches(hopper, None, datas), samples, lpr)}
    except Exception as exc:
        record["per_shape"] = {"error": f"{type(exc).__name__}: {str(exc).strip()[:300]}"}
    _progress(shape.name, "per-shape", record["per_shape"])
    if peer:
        launches, peer_lpr = S.peer_setup(shape)
        record["peer"] = _timed(launches, samples, peer_lpr)
        _progress(shape.name, "cuBLAS bf16", record["peer"])
    stats = hopper.compile_cache.stats
    record["compiles_so_far"], record["compile_seconds_so_far"] = stats.compiles, round(stats.compile_seconds, 1)
    record["seconds"] = round(time.time() - t0, 1)
    return record


def _progress(shape: str, what: str, r: dict) -> None:
    text = f"{r['us']:.2f} us" if "us" in r else f"FAILED {r.get('error')}"
    print(f"[dispatch_sweep] {shape} {what}: {text}", file=sys.stderr, flush=True)


def _machine() -> dict:
    import torch

    from kernel.hopper.dispatch import DEFAULT_RULE, device_sms

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return {"gpu": props.name, "sms": device_sms(), "torch": torch.__version__, "date": time.strftime("%Y-%m-%d"),
            "rule": DEFAULT_RULE.describe()}


def run(shapes, builds, samples: int, peer: bool, budget_s: float, json_path: str | None) -> dict:
    doc = {"schema": SCHEMA, **_machine(), "builds": [b.label for b in builds], "samples": samples,
           "shapes": [], "skipped": []}
    start = time.time()
    for shape in shapes:
        if budget_s and time.time() - start > budget_s:
            doc["skipped"].append(shape.name)
            continue
        doc["shapes"].append(sweep_shape(shape, builds, samples, peer, doc["sms"]))
        doc["seconds"] = round(time.time() - start, 1)
        if json_path:
            with open(json_path, "w") as f:
                json.dump(doc, f, indent=1)
    if json_path:
        with open(json_path, "w") as f:
            json.dump(doc, f, indent=1)
    return doc


# ---------------------------------------------------------------------------- the analysis (CPU)


def _times(record: dict) -> dict[str, float]:
    return {label: r["us"] for label, r in record.get("builds", {}).items() if "us" in r}


def _geomean(xs) -> float:
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


# the per-shape default's time over cuBLAS bf16's, at most, by shape family (the rest: PEER_GOAL)
PEER_GOALS = {"leaderboard-bench": 0.85, "moe": 0.85, "decode": 0.85}
PEER_GOAL = 1.0
# the geomean over FLOOR_GEOMEAN_SHAPES of the default's time over the reference floor, at most,
# on an H200 (the floor's figures are the H200's)
FLOOR_GEOMEAN_GOAL = 1.75
FLOOR_GEOMEAN_SHAPES = ("bench1", "bench2", "bench3", "bench4")


def goals(doc: dict) -> list[str]:
    """The default against its goals (see the module docstring), as lines: a table of the shapes
    with both the default and the peer timed, the floor geomean when every shape of
    ``FLOOR_GEOMEAN_SHAPES`` has a default time, and a count of the goals met."""
    lines = [f"goals on {doc.get('gpu')}: the per-shape default / cuBLAS bf16, and / the floor",
             "| shape | family | default us | cuBLAS us | ratio | goal | met |", "|---|---|---|---|---|---|---|"]
    met = total = 0
    by_shape = {}
    for rec in doc.get("shapes", []):
        us = rec.get("per_shape", {}).get("us")
        peer = rec.get("peer", {}).get("us")
        if us is not None:
            by_shape[rec["shape"]] = (us, rec.get("floor_us"))
        if us is None or not peer:
            continue
        goal = PEER_GOALS.get(rec["family"], PEER_GOAL)
        ok = us / peer <= goal
        met, total = met + ok, total + 1
        lines.append(f"| {rec['shape']} | {rec['family']} | {us:.2f} | {peer:.2f} | {us / peer:.3f} | <= {goal:g} | "
                     f"{'yes' if ok else 'NO'} |")
    if all(name in by_shape and by_shape[name][1] for name in FLOOR_GEOMEAN_SHAPES):
        g = _geomean(by_shape[name][0] / by_shape[name][1] for name in FLOOR_GEOMEAN_SHAPES)
        ok = g <= FLOOR_GEOMEAN_GOAL
        h200 = "H200" in str(doc.get("gpu", ""))
        met, total = met + (ok and h200), total + h200
        lines.append(f"geomean over {', '.join(FLOOR_GEOMEAN_SHAPES)} of default / floor: {g:.3f} "
                     f"(goal <= {FLOOR_GEOMEAN_GOAL:g} on an H200: "
                     + (f"{'met' if ok else 'NOT met'})" if h200 else "not judged on this GPU)"))
    else:
        lines.append("floor geomean: not every one of " + ", ".join(FLOOR_GEOMEAN_SHAPES) + " has a default time")
    lines.append(f"goals met: {met} of {total}")
    return lines


def _short(label: str) -> str:
    return label.replace("h90_m128n128k256_", "…")


def sweep_table(doc: dict) -> list[str]:
    """One row per shape: features, each build's time (/cuBLAS), the per-shape default, the peer."""
    builds = doc.get("builds", [])
    letter = {b: chr(ord("A") + i) for i, b in enumerate(builds)}
    head = ("| shape | family | G | tiles | rounds | tail | K max | M max/mean | "
            + " | ".join(f"{letter[b]} us" for b in builds) + " | per-shape us (build) | cuBLAS us | fastest |")
    lines = [head, "|" + "---|" * (11 + len(builds))]
    for rec in doc.get("shapes", []):
        f = rec["features"]
        peer = rec.get("peer", {}).get("us")
        times = _times(rec)

        def cell(r):
            if "us" not in r:
                return "FAILED"
            return f"{r['us']:.2f}" + (f" ({r['us'] / peer:.2f})" if peer else "")

        cells = [cell(rec["builds"][b]) if b in rec.get("builds", {}) else "-" for b in builds]
        ps = rec.get("per_shape", {})
        ps_cell = f"{cell(ps)} ({letter.get(ps.get('label'), ps.get('label', '?'))})" if ps else "-"
        fastest = letter.get(min(times, key=times.get), "?") if times else "-"
        lines.append(
            f"| {rec['shape']} | {rec['family']} | {f['groups']} | {f['tiles']} | {f['rounds']:.2f} | {f['tail']:.2f} | "
            f"{f['k_max']} | {f['m_ratio']:.2f} | " + " | ".join(cells)
            + f" | {ps_cell} | {f'{peer:.2f}' if peer else '-'} | {fastest} |"
        )
    lines += [f"{letter[b]}: {b}" for b in builds]
    last = (doc.get("shapes") or [{}])[-1]
    if "compiles_so_far" in last:
        lines.append(f"compiles: {last['compiles_so_far']} in {last['compile_seconds_so_far']} s; the whole sweep "
                     f"{doc.get('seconds')} s")
    if doc.get("skipped"):
        lines.append(f"not timed (--budget-s): {', '.join(doc['skipped'])}")
    return lines


FEATURES = ("rounds", "tail", "k_max", "k_ratio", "groups", "m_max", "m_mean", "m_ratio")  # tiles = rounds x SMs: left out


def _thresholds(values: list[float]) -> list[float]:
    """Midpoints between consecutive distinct values (and one past each end)."""
    vs = sorted(set(values))
    if not vs:
        return []
    return [vs[0] - 1] + [(a + b) / 2 for a, b in zip(vs, vs[1:])] + [vs[-1] + 1]


def _split_cost(points, inside) -> float:
    """Mean time lost, as a fraction of the faster build's time, by picking X where ``inside``
    holds and Y elsewhere; ``points``: (features, t_x, t_y)."""
    cost = 0.0
    for f, tx, ty in points:
        picked = tx if inside(f) else ty
        cost += (picked - min(tx, ty)) / min(tx, ty)
    return cost / len(points)


def _side(name: str, t: float, le: bool):
    return (lambda f: f[name] <= t) if le else (lambda f: f[name] >= t)


def _both_ran(records: list[dict], x: str, y: str):
    return [(r["features"], _times(r)[x], _times(r)[y]) for r in records if x in _times(r) and y in _times(r)]


def _recorded(points) -> list[str]:
    """The FEATURES every point records (a sweep written before a feature existed lacks it)."""
    return [name for name in FEATURES if all(name in f for f, _, _ in points)]


def per_feature_splits(records: list[dict], x: str, y: str) -> list[tuple[float, str]]:
    """For each feature its best single threshold for picking ``x`` on one side and ``y`` on the
    other (:func:`_split_cost`), best first."""
    points = _both_ran(records, x, y)
    out = []
    for name in _recorded(points):
        out.append(min(((_split_cost(points, _side(name, t, le)), f"{name} {'<=' if le else '>='} {t:g}")
                        for t in _thresholds([f[name] for f, _, _ in points]) for le in (True, False)),
                       key=lambda c: round(c[0], 9)))
    return sorted(out, key=lambda c: round(c[0], 9))


def separating_splits(records: list[dict], x: str, y: str, top: int = 5) -> list[tuple[float, str]]:
    """The best ways, by :func:`_split_cost`, to pick ``x`` inside a region and ``y`` outside:
    one feature (``rounds <= t`` or ``>= t``) or a box of two (``rounds <= t and k_max <= u``
    and the other three corners), over the shapes both builds ran; at equal cost the single
    feature first."""
    points = _both_ran(records, x, y)
    if not points:
        return []
    cands: list[tuple[float, str]] = []
    names = _recorded(points)
    cuts = {name: _thresholds([f[name] for f, _, _ in points]) for name in names}
    for name in names:
        for t in cuts[name]:
            for le in (True, False):
                cands.append((_split_cost(points, _side(name, t, le)), f"{name} {'<=' if le else '>='} {t:g}"))
    for a, b in itertools.combinations(names, 2):
        for ta, tb in itertools.product(cuts[a], cuts[b]):
            for la, lb in itertools.product((True, False), repeat=2):
                sa, sb = _side(a, ta, la), _side(b, tb, lb)
                cands.append((_split_cost(points, lambda f: sa(f) and sb(f)),
                              f"{a} {'<=' if la else '>='} {ta:g} and {b} {'<=' if lb else '>='} {tb:g}"))
    cands.sort(key=lambda c: (round(c[0], 9), c[1].count(" and ")))
    return cands[:top]


def analyze(doc: dict) -> list[str]:
    """The report of the module docstring, as lines."""
    records = [r for r in doc.get("shapes", []) if _times(r)]
    lines = [f"GPU {doc.get('gpu')} ({doc.get('sms')} SMs), {doc.get('date')}; rule: " + "; ".join(doc.get("rule", []))]
    wins: dict[str, list[str]] = {}
    regrets = []
    lines.append("| shape | fastest | by (second / fastest) | rule picked | rule / fastest |")
    lines.append("|---|---|---|---|---|")
    for r in records:
        times = _times(r)
        order = sorted(times, key=times.get)
        best = order[0]
        wins.setdefault(best, []).append(r["shape"])
        margin = times[order[1]] / times[best] if len(order) > 1 else float("nan")
        picked = r.get("per_shape", {}).get("label")
        regret = times[picked] / times[best] if picked in times else float("nan")
        if picked in times:
            regrets.append(regret)
        lines.append(f"| {r['shape']} | {_short(best)} | {margin:.3f} | {_short(picked or '-')} | {regret:.3f} |")
    lines.append(f"rule / fastest over {len(regrets)} shapes: geomean {_geomean(regrets):.3f}, worst "
                 f"{max(regrets, default=float('nan')):.3f}")
    for label, shapes in sorted(wins.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"{_short(label)} fastest on {len(shapes)}: {', '.join(shapes)}")
    winners = sorted(wins)
    for x, y in itertools.permutations(winners, 2):
        lines.append(f"{_short(x)} where, else {_short(y)} (mean time lost over the shapes both ran, the split):")
        for cost, text in separating_splits(records, x, y):
            lines.append(f"  {100 * cost:6.2f} %  {text}")
        lines.append("  each feature alone: " + "; ".join(f"{text} ({100 * cost:.2f} %)"
                                                           for cost, text in per_feature_splits(records, x, y)))
    if len(winners) == 1:
        lines.append(f"one build is fastest everywhere it ran: {winners[0]}")
    return lines


# ---------------------------------------------------------------------------- command line


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m profiling.dispatch_sweep", description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", default="suite", help="suite (default), quick, shape families or names, comma-separated")
    p.add_argument("--variants", choices=("production", "rule"), default="production",
                   help="production: every production build; rule: the builds the dispatch rule can pick")
    p.add_argument("--variant", action="append", default=[], help="also time this build: a declared LABEL, or LABEL:field=value,... (repeatable)")
    p.add_argument("--quick", action="store_true", help="--shapes quick --variants rule")
    p.add_argument("--samples", type=int, default=15, help="graph replays per timing (median)")
    p.add_argument("--budget-s", type=float, default=0.0, help="start no new shape after this many seconds (0: none)")
    p.add_argument("--no-peer", action="store_true", help="skip the cuBLAS bf16 peer")
    p.add_argument("--json", help="write the sweep here (rewritten after every shape)")
    p.add_argument("--analyze", metavar="JSON", help="report on a sweep's JSON instead of running one")
    args = p.parse_args(argv)

    if args.analyze:
        with open(args.analyze) as f:
            doc = json.load(f)
        print("\n".join(sweep_table(doc) + [""] + goals(doc) + [""] + analyze(doc)))
        return 0
    if args.quick:
        args.shapes, args.variants = "quick", "rule"

    from profiling.preflight import missing_hopper_gpu
    from profiling.shape_suite import group_counts, select

    shapes = select(args.shapes)
    builds = _builds(args.variants, args.variant)
    if (line := missing_hopper_gpu("profiling.dispatch_sweep")):
        print(line, file=sys.stderr)
        return 2
    print(f"[dispatch_sweep] {len(shapes)} shapes, {len(builds)} builds, group counts {group_counts(shapes)}: "
          f"{len(builds) * len(group_counts(shapes))} compiles", file=sys.stderr, flush=True)
    doc = run(shapes, builds, args.samples, not args.no_peer, args.budget_s, args.json)
    print("\n".join(sweep_table(doc) + [""] + goals(doc) + [""] + analyze(doc)))
    failed = [(r["shape"], b) for r in doc["shapes"] for b, t in r["builds"].items() if "us" not in t]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
