"""GPU smoke test of the consumers' schedule options (issue 14 session 15), before the
properties: the warpgroups kept out of step (``consumer_stagger``, label ``_lag<L>``), two
wgmma groups in flight (``wgmma_in_flight=2``, label ``_w2``), and (session 16) phase 1 in a
launch of its own (``prepass_kernel_warps``, label letter ``k``), and (session 18) stream-K over
the balanced lists (``stream_k``, label ``_sk``: a tile split between two CTAs continues one chain
from the fp32 partial the first hands on). None changes a wgmma chain, so
each build's C must be bit-identical to its twin without the option, with outputs NaN-filled
before each launch, on problems that reach every part of the schedule: one K tile per tile and
many tiles per CTA (the stagger's warpgroup 0 arrives for the next tile before warpgroup 1 has
synced for this one: the two barrier ids; the in-flight groups and the 4-buffer ring run on
across tiles), 64-row and 128-row tiles mixed, ragged M and N, groups with M = 0, a CTA with a
single tile, bench2's geometry, and launches repeated back to back. Run it under ``timeout``: a
lost arrival hangs.

    python3 -m ci.schedule_smoke [--lags 1,2,3,4] [LABEL ...]
        (default: every declared build with one of the options; --lags: the first label's build at
        each of those lags instead)
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

CASES = [
    [(128, 256, 256, 1)],  # one tile, one K tile
    [(128, 4096, 256, 1)] * 8,  # 256 one-K-tile tiles on at most 132 CTAs
    [(40, 4096, 256, 1), (200, 2048, 256, 1), (64, 1024, 512, 1)],  # light and full tiles, K = 256 / 512
    [(130, 257, 512, 1), (7, 130, 256, 1), (0, 128, 256, 1), (256, 646, 768, 1)],  # ragged, M = 0
    [(m, 7168, 2048, 1) for m in (40, 76, 168, 72, 164, 148, 196, 160)],  # bench2
    [(128, 4096, 1536, 1), (384, 4096, 1536, 1)],  # bench4
    # stream_k: bench1 (K tiles split at most CTA boundaries, full and light ones), and few
    # tiles with many K tiles of different K per group (a CTA's range in two tiles' middles)
    [(m, 4096, 7168, 1) for m in (80, 176, 128, 72, 64, 248, 96, 160)],
    [(200, 384, 4096, 1), (33, 256, 7168, 1), (64, 130, 2048, 1)],
]


def twin_of(config):
    """The same build in lockstep, with one wgmma group in flight (the Y-decoding build: and its
    2 fp16 buffers; the prepass build keeps its Y ring), and phase 1 inside the GEMM's launch
    (``prepass_kernel_warps``; with the staged stores of the production build)."""
    from kernel.hopper.config import phase1_inside_twin

    if config.prepass_kernel_warps:
        config = phase1_inside_twin(config)
    if config.stream_k:
        config = dataclasses.replace(config, stream_k=False)
    if config.wgmma_in_flight != 1:
        buffers = config.fp16_buffers if config.y_source == "prepass" else 2
        config = dataclasses.replace(config, wgmma_in_flight=1, fp16_buffers=buffers)
    return dataclasses.replace(config, consumer_stagger=0)


def builds_of(labels, lags):
    """The builds of ``labels``: declared variants, or configs kernel.hopper.config names but does
    not declare (measured, e.g. ``STAGGER_CONFIG``)."""
    from kernel.hopper.config import check_config
    from kernel.hopper.variants import DECLARED_VARIANTS, named_configs

    by_label = named_configs()
    labels = labels or [c.label for c in DECLARED_VARIANTS
                        if c.consumer_stagger or c.wgmma_in_flight != 1 or c.prepass_kernel_warps or c.stream_k]
    unknown = [x for x in labels if x not in by_label]
    if unknown:
        raise SystemExit(f"unknown variant(s) {unknown}")
    builds = [by_label[x] for x in labels]
    if lags:
        builds = [dataclasses.replace(builds[0], consumer_stagger=lag) for lag in lags]
    for b in builds:
        check_config(b)
    return builds


def main(argv=None) -> int:
    from ci.prepass_smoke import compare_with_twins

    p = argparse.ArgumentParser(prog="python -m ci.schedule_smoke", description=__doc__.split("\n\n")[0])
    p.add_argument("labels", nargs="*")
    p.add_argument("--lags", default="", help="comma-separated lags for the first label's build")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    lags = [int(x) for x in args.lags.split(",") if x]
    builds = builds_of(args.labels, lags)
    bad = compare_with_twins([(c, twin_of(c)) for c in builds], CASES, 500, reps=2, back_to_back_last=True)
    print("schedule smoke:", "OK" if not bad else f"{bad} FAILED")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
