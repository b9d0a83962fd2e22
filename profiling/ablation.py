"""Time Hopper configs, declared or not, and what each "split" config costs without a part.

    python -m profiling.ablation --variant LABEL [--config JSON ...] [--ablate [--parts P1,P2]]
                                 [--shapes bench1,bench2] [--json PATH]

``--config '{"tile_n": 256, "roles": "split", ...}'`` builds a ``HopperConfig`` from the given
fields (the rest default), so a candidate can be timed before it is declared. ``--ablate`` adds,
for every ``roles="split"`` config, its ablated builds (:class:`kernel.hopper.ablation.Ablation`,
a build option passed next to the config, never a config field): ``no_fence`` (the dequant
warps' proxy fence left out); for a cooperative register-X config its
``kernel.hopper.ablation.REGS_PARTS`` that apply (a prepass config: ``PREPASS_PARTS``), and for every config ``no_epilogue`` (no C
written: what the epilogue costs). They are named ``LABEL~ablate-PART``. Ablated results
are wrong by design and are not checked; every other config is checked against the exact oracle
(NaN-poisoned outputs) through ``custom_kernel`` before it is timed, and a wrong one is
reported, not timed.

Timing: the shared CUDA-graph replay of ``profiling.timing`` (median over samples, inputs
rotated over copies that together exceed L2), on the standard shapes' benchmark inputs; every
build, ablated or not, is prepared once per input copy (``hopper.prepare(..., ablation=...)``)
and only its launch is replayed.
Progress goes to stderr, a markdown table to stdout.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from typing import Sequence

from kernel.hopper.ablation import ANY_PARTS, PREPASS_PARTS, REGS_PARTS, SPLIT_PARTS, Ablation, check_ablation
from profiling.preflight import missing_hopper_gpu

ABLATIONS = SPLIT_PARTS


@dataclasses.dataclass(frozen=True)
class Build:
    """One timed build: a Hopper config and, for profiling only, the part it leaves out."""

    config: object  # HopperConfig
    ablation: Ablation | None = None

    @property
    def label(self) -> str:
        return self.config.label if self.ablation is None else f"{self.config.label}~{self.ablation.tag}"


def parse_builds(variants: Sequence[str], configs: Sequence[str], ablate: bool,
                 parts: Sequence[str] | None = None) -> list[Build]:
    """The builds to time: each variant and config, then (``ablate``) its ablated twins, only
    those of ``parts`` when given (e.g. ``["no_epilogue"]``)."""
    from kernel.hopper.ablation import PARTS
    from kernel.hopper.variants import resolve_config

    if parts is not None:
        unknown = [p for p in parts if p not in PARTS]
        if unknown or not ablate:
            raise SystemExit(f"--parts takes --ablate and parts of {', '.join(PARTS)}; got {', '.join(parts)}")

    out = []
    for spec in variants:  # a label or LABEL:field=value,...
        try:
            out.append(resolve_config(spec))
        except ValueError as exc:
            raise SystemExit(str(exc)) from None
    out += [resolve_config(text) for text in configs]  # JSON fields: its typed errors go through
    builds = [Build(c) for c in dict.fromkeys(out)]
    if ablate:
        builds += [Build(b.config, Ablation(a)) for b in list(builds) if b.config.roles == "split" for a in ABLATIONS]
        builds += [Build(b.config, Ablation(a)) for b in list(builds)
                   if b.ablation is None for a in dict.fromkeys(REGS_PARTS + PREPASS_PARTS + ANY_PARTS)
                   if not Ablation(a).problems(b.config)]
    if parts is not None:
        builds = [b for b in builds if b.ablation is None or b.ablation.part in parts]
    for b in builds:
        check_ablation(b.config, b.ablation)
    return builds


def labelled_builds(variants: Sequence[str]) -> dict[str, Build]:
    """``LABEL`` or ``LABEL~PART`` (a declared Hopper label, ``LABEL:field=value,...`` or
    HopperConfig fields as JSON: kernel.hopper.variants.resolve_config; and the ablation part its
    build leaves out) -> its Build, keyed by the text given
    (profiling.k_slope, profiling.timeline). Raises ValueError naming an unknown label; an
    ablation the config cannot take raises UnsupportedConfigError (check_ablation)."""
    from kernel.hopper.variants import resolve_config

    builds = {}
    for text in variants:
        spec, _, part = text.partition("~")
        config = resolve_config(spec)
        ablation = Ablation(part) if part else None
        if ablation is not None:
            check_ablation(config, ablation)
        builds[text] = Build(config, ablation)
    return builds


def prepare_build(build: Build, data, *, dry_run: bool = False, compile: bool | None = None):
    """``build`` prepared on ``data`` through the Hopper pipeline: the ablation is a build option
    of the compile (its own compile-cache entry), never a config field."""
    from kernel import hopper

    return hopper.prepare(data, build.config, dry_run=dry_run, compile=compile, ablation=build.ablation)


def check_exact(config, data) -> str | None:
    """None when every group matches the oracle within its bound (exact elements bitwise)."""
    import oracle
    import torch
    from kernel import hopper

    for g in data[0]:
        g[2].fill_(float("nan"))
    outs = hopper.custom_kernel(data, config=config)
    torch.cuda.synchronize()
    expected = oracle.expected_outputs(data)  # on the GPU: seconds for the standard shapes
    report = oracle.compare(outs, [e.reference for e in expected], [e.bound for e in expected])
    return None if report.ok else str(report)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m profiling.ablation", description=__doc__.split("\n\n")[0])
    p.add_argument("--variant", action="append", default=[], help="a declared label (repeatable)")
    p.add_argument("--config", action="append", default=[], help="HopperConfig fields as JSON (repeatable)")
    p.add_argument("--ablate", action="store_true", help="add the ablated twins of each config (split parts, register-X parts, no_epilogue)")
    p.add_argument("--parts", help="with --ablate: only these ablation parts (comma-separated), e.g. no_epilogue")
    p.add_argument("--shapes", default="bench1,bench2,bench3,bench4")
    p.add_argument("--samples", type=int, default=15)
    p.add_argument("--json", help="write every row here")
    p.add_argument("--build-timeout", type=float, default=0.0,
                   help="seconds one build may take on one shape (check, prepare, timing); past it the rows so far "
                   "are written (--json, table) with a TIMEOUT row and the process exits 3: a hung kernel cannot be "
                   "interrupted, so a device script gets the other builds' figures instead of nothing (0: no limit)")
    args = p.parse_args(argv)

    from kernel import hopper
    from profiling import floors, timing
    from profiling.benchmarks import _support as S

    builds = parse_builds(args.variant, args.config, args.ablate,
                          None if args.parts is None else args.parts.split(","))
    if (line := missing_hopper_gpu("profiling.ablation")):
        print(line, file=sys.stderr)
        return 2
    rows = []
    for shape_name in args.shapes.split(","):
        shape = floors.get_shape(shape_name)
        copies = timing.copies_for(floors.shape_bytes(shape, padded_scales=True), l2_bytes=S.l2_bytes())
        datas = S.device_copies(shape, copies)
        launches_per_replay = timing.launches_for(floors.floor_us(shape), copies)
        for build in builds:
            t0 = time.time()
            watchdog = _watchdog(args, rows, builds, shape_name, build.label)
            try:
                problem = None if build.ablation is not None else check_exact(build.config, datas[0])
                prepared = [] if problem else [prepare_build(build, d) for d in datas]
            except Exception as e:  # a config that cannot launch: report it, time the others
                problem = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:200]}"
            if problem:
                if watchdog is not None:
                    watchdog.cancel()
                rows.append({"shape": shape_name, "label": build.label, "us": None, "problem": problem})
                print(f"[ablation] {shape_name} {build.label}: FAILED {problem}", file=sys.stderr, flush=True)
                continue
            launches = [lambda p=p: hopper.launch(p) for p in prepared]
            t = timing.time_device(launches, samples=args.samples, launches_per_replay=launches_per_replay)
            rows.append({"shape": shape_name, "label": build.label, "us": t.median_us, "method": t.method})
            if watchdog is not None:
                watchdog.cancel()
            print(f"[ablation] {shape_name} {build.label}: {t.median_us:.1f} us ({time.time() - t0:.0f} s)",
                  file=sys.stderr, flush=True)
    _report(args, rows, builds)
    return 1 if any(r["us"] is None for r in rows) else 0


def _report(args, rows, builds) -> None:
    """The markdown table (stdout) and the --json rows; a cell not measured reads "-"."""
    shapes = args.shapes.split(",")
    print("| config | " + " | ".join(f"{s} us" for s in shapes) + " |")
    print("|---|" + "---|" * len(shapes))
    for build in builds:
        cells = []
        for s in shapes:
            r = next((r for r in rows if r["shape"] == s and r["label"] == build.label), None)
            if r is None:
                cells.append("-")
            elif r["us"] is None:
                cells.append("TIMEOUT" if r.get("problem") == "TIMEOUT" else "FAILED")
            else:
                cells.append(f"{r['us']:.1f}")
        print(f"| `{build.label}` | " + " | ".join(cells) + " |", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


def _watchdog(args, rows, builds, shape_name, label):
    """--build-timeout: a timer that, if the build is still running on this shape when it fires,
    records a TIMEOUT row, writes what was measured and ends the process (exit 3)."""
    if not args.build_timeout:
        return None
    import os
    import threading

    def fire():
        rows.append({"shape": shape_name, "label": label, "us": None, "problem": "TIMEOUT"})
        print(f"[ablation] {shape_name} {label}: TIMEOUT after {args.build_timeout:.0f} s", file=sys.stderr, flush=True)
        _report(args, rows, builds)
        sys.stdout.flush()
        os._exit(3)

    t = threading.Timer(args.build_timeout, fire)
    t.daemon = True
    t.start()
    return t


if __name__ == "__main__":
    sys.exit(main())
