"""GPU smoke test of the staged epilogue (``epilogue="smem"``): each ``_es``
variant's C must be bit-identical to its ``epilogue="direct"`` twin's (same accumulators, the
same rounding), on problems that reach every predicate of the staged stores: M ragged inside a
tile and 64-row (light) tails, N a multiple of 8 (16-byte stores) and not (2-byte fallback: n % 8
= 1, 2, 6), groups of M = 0, several tiles per CTA (persistent CTAs reuse the staging buffer),
and repeated launches. Outputs are NaN-filled before each staged launch.

    python3 -m ci.epilogue_smoke [LABEL ...]      (default: every declared epilogue="smem" variant)
"""

from __future__ import annotations

import dataclasses
import sys

CASES = [
    [(40, 512, 256, 1)],  # one light tile (t64), n % 8 == 0
    [(130, 257, 512, 1), (7, 130, 256, 1), (0, 128, 256, 1), (256, 646, 768, 1)],  # n % 8 = 1, 2, 0, 6
    [(192, 3072, 1024, 1), (320, 3072, 1024, 1)],  # bench3's geometry, shorter K
    [(96, 7168, 2048, 1)] * 8,  # 448 tiles: several per CTA
    [(200, 1000, 512, 1), (33, 1001, 256, 1)],
]


def main(argv=None) -> int:
    from ci.prepass_smoke import compare_with_twins
    from kernel.hopper.variants import DECLARED_VARIANTS

    argv = sys.argv[1:] if argv is None else argv
    labels = argv or [c.label for c in DECLARED_VARIANTS if c.epilogue == "smem"]
    staged = [next(c for c in DECLARED_VARIANTS if c.label == label) for label in labels]
    bad = compare_with_twins([(c, dataclasses.replace(c, epilogue="direct")) for c in staged], CASES, 300)
    print("epilogue smoke:", "OK" if not bad else f"{bad} FAILED")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
