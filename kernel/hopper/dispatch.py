"""Per-shape variant choice of the Hopper kernel: a rule on the problem's properties, no table of
shapes, no autotuning.

``custom_kernel(data)`` without a config runs ``DEFAULT_RULE.choose(problem_sizes)``
(kernel.hopper.launch.default_config, on a fast-path miss). The rule sees only the problem's
:class:`Features`, computed from the sizes and the GPU's SM count (the kernel runs one persistent
CTA per SM; :func:`device_sms` reads the count at run time, :data:`DEFAULT_SMS` without a GPU):

* ``tiles``: 128 x 128 output tiles (the in-flight and prepass builds' tile); ``rounds`` = tiles
  / SMs; ``tail``: how full the last round is, in (0, 1] (1: every SM busy to the end);
* ``k_max``: the largest K (the longest tile); ``k_ratio``: the largest K over the smallest among
  the groups with work (1: every tile equally long); ``groups``: the group count; ``m_max``,
  ``m_mean`` (over groups with work) and ``m_ratio`` = m_max / m_mean (how uneven the groups are);
  ``y_fit``: the smallest Y tile height (192 to 256 in steps of 16) that splits every group's M
  into no more blocks than 256 rows do (:func:`y_fit`: how much of a 256-row tile a dense group's
  last block wastes).

The rule is an ordered tuple of :class:`Clause` s, each a box in that space (inclusive bounds on
some features) and the build it picks; the first clause that holds wins, else ``fallback``.
Nothing is measured or searched at call time: a few integer sums and comparisons.

The thresholds come from ``python3 -m profiling.dispatch_sweep --shapes suite --variants rule``
on an H100 80GB HBM3 (132 SMs; docs/results.md row D1, 2026-12-05): the build with two wgmma
groups in flight (``IN_FLIGHT_CONFIG``, Y decoded per tile) against the prepass build
(``SPLIT_WARP_CONFIG``, Y decoded once per call into a workspace). The in-flight build won every
shape of at most 1.94 rounds with K <= 3584 (the ten leaderboard test shapes, bench4, a ragged
shape, a Mixtral decode step) by 3 to 66 %; the prepass build won every shape with K >= 4096 (bench3
at 0.91 rounds by 10 %) and the many-round shapes with K = 2048 (bench2 at 5.5 rounds by 43 %,
a DeepSeek down projection at 14 rounds by 8 %), where the decode done once per call is shared by
many tiles. :data:`DEFAULT_RULE`'s last clause is the box around the in-flight build's wins
(rounds <= :data:`IN_FLIGHT_MAX_ROUNDS`, K <= :data:`IN_FLIGHT_MAX_K`, each the midpoint between
the nearest shapes each build won), and the prepass build as the fallback. Over that sweep's 24 shapes it
costs 0.5 % (geomean) against the fastest build per shape; the one shape it misses (32 groups,
K = 2048, 5.7 rounds: the in-flight build 13 % faster) sits beside bench2, which goes the other
way by 43 %. The same sweep on an H200 (row D2, 2026-12-06) finds the same thresholds the best
split there (0.4 % from the faster build in geomean). ``--analyze`` on a sweep's JSON reports which build wins each shape and which feature
thresholds separate the winners, so a sweep on another GPU (other SM count, other clocks) can move
them.

Two clauses come before it (rows D14, D15: an H100, 2026-12-06). Below half a round
(:data:`FEW_TILES_MAX_ROUNDS`) the in-flight build on 64-row X tiles (``FEW_TILES_CONFIG``, one
consumer warpgroup) won all ten leaderboard test shapes, by 7 to 22 % (lbtest1 7.43 -> 6.51 us),
and lost bench4 (0.97 rounds), a ragged one-round shape and the decode shapes: a tile of half the
MMA is faster only while the doubled tile count leaves SMs free. For groups of thousands of rows
over several rounds (:data:`WIDE_Y_MIN_M_MEAN`, :data:`WIDE_Y_MIN_ROUNDS`) the prepass pipeline with
a 256-row Y tile won both dense single groups by 7 and 9 %; it lost every
shape of small groups (bench1-3, MoE: it has no tail tiles, and half the tiles). Its clause also
asks for one K in every group (:data:`WIDE_Y_MAX_K_RATIO`): its schedule (contiguous rounds, the
last one cut in K halves) counts tiles, not K, and it was measured on single groups only. Its
build decodes phase 1 beside the tiles (``WIDE_BESIDE_CONFIG``: 0.6 and 3.5 % faster than phase 1
before them on dense_4096 in two runs, 2.9 and 3.4 % on dense_2320; rows D31, D32). Where every
group's M splits into as many 240-row blocks as 256-row ones (``y_fit <= 240``) the same build on
240-row Y tiles (``WIDE_BESIDE_240_CONFIG``) runs the same tiles with 6 % less MMA each:
dense_2320 116.56 us against 125.19 (row D32); where it needs more blocks it is slower
(dense_4096: 18 blocks instead of 16, +18 %).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields
from typing import Iterable, Sequence

from kernel.hopper.config import WIDE_Y_HEIGHTS, HopperConfig
from kernel.hopper.variants import (FEW_TILES_CONFIG, IN_FLIGHT_CONFIG, SPLIT_WARP_CONFIG, WIDE_BESIDE_240_CONFIG,
                                     WIDE_BESIDE_CONFIG, named_configs)

# the Y tile heights y_fit chooses among, ascending (config.WIDE_Y_HEIGHTS and 256)
Y_HEIGHTS = tuple(sorted(WIDE_Y_HEIGHTS)) + (256,)
# the output tile (N x M) the features count in (the builds' own tiles differ: 64 x 128, 128 x 256)
TILE = 128
# SMs a machine without a GPU plans for (H100 SXM and H200 have 132)
DEFAULT_SMS = 132


@dataclass(frozen=True)
class Features:
    """What the rule may depend on (see the module docstring)."""

    groups: int
    tiles: int
    sms: int
    rounds: float
    tail: float
    k_max: int
    k_ratio: float
    m_max: int
    m_mean: float
    m_ratio: float
    y_fit: int

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


FEATURE_NAMES: tuple[str, ...] = tuple(f.name for f in fields(Features))


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def y_fit(ms: Iterable[int]) -> int:
    """The smallest Y tile height of :data:`Y_HEIGHTS` that splits every M of ``ms`` into no more
    blocks than 256-row tiles do (256 when none is smaller; a group of 2320 rows: 240, ten
    blocks either way; of 4096: 256). Groups without rows ask nothing."""
    fit = Y_HEIGHTS[0]
    for m in ms:
        if m > 0:
            blocks = _ceil_div(m, 256)
            fit = max(fit, next(h for h in Y_HEIGHTS if _ceil_div(m, h) == blocks))
    return fit


def features(problem_sizes: Iterable[Sequence[int]], sms: int) -> Features:
    """:class:`Features` of a list of (m, n, k[, l]) sizes on a GPU of ``sms`` SMs."""
    if sms < 1:
        raise ValueError(f"sms must be >= 1, got {sms}")
    sizes = [(int(s[0]), int(s[1]), int(s[2])) for s in problem_sizes]
    tiles = sum(_ceil_div(m, TILE) * _ceil_div(n, TILE) for m, n, _ in sizes)
    busy = [m for m, n, _ in sizes if m > 0 and n > 0]
    last = tiles % sms
    m_max = max(busy, default=0)
    m_mean = sum(busy) / len(busy) if busy else 0.0
    ks = [k for m, n, k in sizes if m > 0 and n > 0]
    return Features(
        groups=len(sizes),
        tiles=tiles,
        sms=sms,
        rounds=tiles / sms,
        tail=(last if last else (sms if tiles else 0)) / sms,
        k_max=max((k for _, _, k in sizes), default=0),
        k_ratio=max(ks) / min(ks) if ks and min(ks) > 0 else 1.0,
        m_max=m_max,
        m_mean=m_mean,
        m_ratio=m_max / m_mean if m_mean else 0.0,
        y_fit=y_fit(busy),
    )


@dataclass(frozen=True)
class Bound:
    """``lo <= features.<feature> <= hi``; None leaves that side open."""

    feature: str
    lo: float | None = None
    hi: float | None = None

    def __post_init__(self):
        if self.feature not in FEATURE_NAMES:
            raise KeyError(f"no feature {self.feature!r}; known: {', '.join(FEATURE_NAMES)}")

    def holds(self, f: Features) -> bool:
        value = getattr(f, self.feature)
        return (self.lo is None or value >= self.lo) and (self.hi is None or value <= self.hi)

    def describe(self) -> str:
        if self.lo is not None and self.hi is not None:
            return f"{self.lo:g} <= {self.feature} <= {self.hi:g}"
        if self.lo is not None:
            return f"{self.feature} >= {self.lo:g}"
        return f"{self.feature} <= {self.hi:g}" if self.hi is not None else f"any {self.feature}"


@dataclass(frozen=True)
class Clause:
    """Pick the build labelled ``label`` when every bound holds."""

    label: str
    bounds: tuple[Bound, ...]
    why: str = ""

    def holds(self, f: Features) -> bool:
        return all(b.holds(f) for b in self.bounds)

    def describe(self) -> str:
        return " and ".join(b.describe() for b in self.bounds) + f" -> {self.label}"


def by_label(label: str) -> HopperConfig:
    """The declared variant ``label`` (kernel.hopper.variants.named_configs); KeyError if none."""
    configs = named_configs()
    if label not in configs:
        raise KeyError(f"no declared Hopper variant is labelled {label!r}")
    return configs[label]


@functools.lru_cache(maxsize=None)
def device_sms() -> int:
    """The current GPU's SM count; :data:`DEFAULT_SMS` on a machine without one."""
    from kernel import device

    return device.sm_count() if device.cuda_capability() is not None else DEFAULT_SMS


class DispatchRule:
    """``clauses`` in order, the first that holds picks its build; ``fallback`` otherwise."""

    def __init__(self, clauses: Sequence[Clause], fallback: HopperConfig):
        self.clauses = tuple(clauses)
        self.fallback = fallback
        self._builds = {c.label: by_label(c.label) for c in self.clauses}  # label -> config: no shape in it

    def choose_features(self, f: Features) -> HopperConfig:
        for clause in self.clauses:
            if clause.holds(f):
                return self._builds[clause.label]
        return self.fallback

    def choose(self, problem_sizes: Iterable[Sequence[int]], sms: int | None = None) -> HopperConfig:
        """The build for these sizes on a GPU of ``sms`` SMs (None: this machine's, :func:`device_sms`)."""
        return self.choose_features(features(problem_sizes, device_sms() if sms is None else sms))

    def configs(self) -> list[HopperConfig]:
        """Every config the rule can return (fallback first), without repeats."""
        out = [self.fallback]
        for c in self._builds.values():
            if c not in out:
                out.append(c)
        return out

    def describe(self) -> list[str]:
        return [c.describe() for c in self.clauses] + [f"otherwise -> {self.fallback.label}"]


# The region measured faster with the per-tile decode (see the module docstring): at most this many
# rounds of tiles (between 1.94, the largest the in-flight build won, and 2.67, bench1's) ...
IN_FLIGHT_MAX_ROUNDS = 2.3
# ... with K at most this (between 3584, won by the in-flight build, and 4096, bench3's, lost)
IN_FLIGHT_MAX_K = 3840

# The region measured faster on 64-row X tiles (FEW_TILES_CONFIG, row D15): at most this many rounds
# (between 0.15, the largest it won, and 0.70, the smallest it lost), with the in-flight clause's K
FEW_TILES_MAX_ROUNDS = 0.42
# The region of the 256-row Y tile (row D14; WIDE_BESIDE_CONFIG since row D32): groups of this many rows on average
# (between 256, bench3's, lost, and 4096, the dense groups', won) ...
WIDE_Y_MIN_M_MEAN = 2176
# ... and this many rounds of 128 x 128 tiles, so that its half as many tiles still make two rounds
# (it won at 7.76 rounds; with one round its halved tile count leaves SMs idle: bench3 +60 %)
WIDE_Y_MIN_ROUNDS = 4.0
# ... with one K in every group: its schedule counts tiles, not their K (the fallback's
# snake split deals long and short tiles evenly); it was measured only on single groups
WIDE_Y_MAX_K_RATIO = 1.0

# What ``custom_kernel(data)`` runs when no config is given (kernel.hopper.launch.default_config).
# Every config it can return is a production variant (the main job runs them).
DEFAULT_RULE = DispatchRule(
    (
        Clause(FEW_TILES_CONFIG.label,
               (Bound("rounds", hi=FEW_TILES_MAX_ROUNDS), Bound("k_max", hi=IN_FLIGHT_MAX_K)),
               "less than half a round: twice the tiles of half the MMA each keep more SMs busy"),
        Clause(WIDE_BESIDE_240_CONFIG.label,
               (Bound("m_mean", lo=WIDE_Y_MIN_M_MEAN), Bound("rounds", lo=WIDE_Y_MIN_ROUNDS),
                Bound("k_ratio", hi=WIDE_Y_MAX_K_RATIO), Bound("y_fit", hi=WIDE_BESIDE_240_CONFIG.tile_m)),
               "the next clause's groups, when 240-row Y blocks cover them in as many blocks as 256-row "
               "ones: the same tiles, 6 % less MMA each"),
        Clause(WIDE_BESIDE_CONFIG.label,
               (Bound("m_mean", lo=WIDE_Y_MIN_M_MEAN), Bound("rounds", lo=WIDE_Y_MIN_ROUNDS),
                Bound("k_ratio", hi=WIDE_Y_MAX_K_RATIO)),
               "groups of thousands of rows: each decoded X fragment feeds 256 rows"),
        Clause(IN_FLIGHT_CONFIG.label,
               (Bound("rounds", hi=IN_FLIGHT_MAX_ROUNDS), Bound("k_max", hi=IN_FLIGHT_MAX_K)),
               "few rounds with little K: too few tiles share the decode the prepass does once per call"),
    ),
    fallback=SPLIT_WARP_CONFIG,
)
