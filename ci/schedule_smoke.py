"""GPU smoke test of two wgmma groups in flight (``wgmma_in_flight=2``, label ``_w2``), before
the properties. It changes no wgmma chain, so each build's C must be bit-identical to its twin
with one group in flight (and the two fp16 buffers that takes), with outputs NaN-filled before
each launch, on problems that reach every part of the schedule: one K tile per tile and many
tiles per CTA (the in-flight groups and the 4-buffer ring run on across tiles), ragged M and N,
groups with M = 0, a CTA with a single tile, bench2's and bench4's geometry, and launches
repeated back to back. Run it under ``timeout``: a lost arrival hangs.

    python3 -m ci.schedule_smoke [LABEL ...]      (default: every declared build with the option)
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

CASES = [
    [(128, 256, 256, 1)],  # one tile, one K tile
    [(128, 4096, 256, 1)] * 8,  # 256 one-K-tile tiles on at most 132 CTAs
    [(40, 4096, 256, 1), (200, 2048, 256, 1), (64, 1024, 512, 1)],  # K = 256 / 512
    [(130, 257, 512, 1), (7, 130, 256, 1), (0, 128, 256, 1), (256, 646, 768, 1)],  # ragged, M = 0
    [(m, 7168, 2048, 1) for m in (40, 76, 168, 72, 164, 148, 196, 160)],  # bench2
    [(128, 4096, 1536, 1), (384, 4096, 1536, 1)],  # bench4
]


def twin_of(config):
    """The same build with one wgmma group in flight and its 2 fp16 buffers."""
    return dataclasses.replace(config, wgmma_in_flight=1, fp16_buffers=2)


def builds_of(labels):
    """The declared builds of ``labels`` (default: every one with two groups in flight)."""
    from kernel.hopper.config import check_config
    from kernel.hopper.variants import DECLARED_VARIANTS, named_configs

    by_label = named_configs()
    labels = labels or [c.label for c in DECLARED_VARIANTS if c.wgmma_in_flight != 1]
    unknown = [x for x in labels if x not in by_label]
    if unknown:
        raise SystemExit(f"unknown variant(s) {unknown}")
    builds = [by_label[x] for x in labels]
    for b in builds:
        check_config(b)
        check_config(twin_of(b))
    return builds


def main(argv=None) -> int:
    from ci.prepass_smoke import compare_with_twins

    p = argparse.ArgumentParser(prog="python -m ci.schedule_smoke", description=__doc__.split("\n\n")[0])
    p.add_argument("labels", nargs="*")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    builds = builds_of(args.labels)
    bad = compare_with_twins([(c, twin_of(c)) for c in builds], CASES, 500, reps=2, back_to_back_last=True)
    print("schedule smoke:", "OK" if not bad else f"{bad} FAILED")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
