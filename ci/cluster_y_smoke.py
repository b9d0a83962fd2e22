"""GPU smoke test of Y decoded once per 2-CTA cluster (``y_cluster_decode``, label ``_c2d``,
issue 14 session 13), before the properties: each ``_c2d`` build's C must be bit-identical to its
twin without the cluster (``cluster_x=1``, the same tile, 2 fp16 buffers, 4 raw stages: the same
operand values and wgmma order), with outputs NaN-filled before each launch, on problems that
reach every part of the protocol: one K tile per tile (4 sub-blocks: the prologue's AHEAD
sub-blocks and the loop's), an odd number of N blocks (a ghost rank past N that still decodes
its share), several tiles per CTA (the Y ring and its barrier phases running on across tiles),
ragged M and N, groups with M = 0, bench4's geometry, and launches repeated back to back. Run it
under ``timeout``: a wrong barrier phase hangs.

    python3 -m ci.cluster_y_smoke [LABEL ...]      (default: every declared y_cluster_decode build)
"""

from __future__ import annotations

import dataclasses
import sys

from kernel.hopper.variants import FASTEST_STAGED_PDL_CONFIG

CASES = [
    [(128, 256, 256, 1)],  # one cluster tile, one K tile
    [(100, 384, 512, 1)],  # three N blocks: a ghost rank
    [(130, 257, 512, 1), (7, 130, 256, 1), (0, 128, 256, 1), (256, 646, 768, 1)],  # ragged, M = 0
    [(96, 7168, 2048, 1)] * 8,  # 448 tiles: several cluster tiles per cluster
    [(128, 4096, 1536, 1), (384, 4096, 1536, 1)],  # bench4
]


def twin_of(config):
    """The build without the cluster: the same tile and stages as the production bench4 build."""
    return dataclasses.replace(config, cluster_x=1, y_cluster_decode=False, y_cluster_copy="st_async", fp16_buffers=2,
                               num_ab_stages=FASTEST_STAGED_PDL_CONFIG.num_ab_stages)


def main(argv=None) -> int:
    from ci.prepass_smoke import compare_with_twins
    from kernel.hopper.variants import DECLARED_VARIANTS

    argv = sys.argv[1:] if argv is None else argv
    labels = argv or [c.label for c in DECLARED_VARIANTS if c.y_cluster_decode]
    builds = [next(c for c in DECLARED_VARIANTS if c.label == label) for label in labels]
    bad = compare_with_twins([(c, twin_of(c)) for c in builds], CASES, 400, reps=3, back_to_back_last=True)
    print("cluster Y smoke:", "OK" if not bad else f"{bad} FAILED")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
