"""Hypothesis strategies: problem sets, value distributions, pointer layouts, invalid problems.

Every example is an :class:`Example`: plain sizes, a seed and two names. The tensors are built
from it by ``oracle.make_inputs`` through a seeded ``torch.Generator``, so an example prints as
one line and replays bit for bit on any machine (see ``Example.repro``).
"""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass

from hypothesis import strategies as st

import oracle
from oracle.speed import BENCHMARK_SHAPES
from properties.subjects import GridPlanner, SizeLimits, SubjectVariant
from kernel.plan import LaunchPlan, balanced_share
from kernel.validation import KernelConstraints

# sizes around the tile edges the kernels use (64, 128, 256 rows or columns)
EDGE_SIZES = (1, 2, 8, 63, 64, 65, 127, 128, 129, 191, 192, 255, 256, 257)
# the standard (benchmark) shapes' K; GPU subjects also draw K up to the largest of them
STANDARD_K = 7168
# the leaderboard's four benchmark shapes: M per group, N and K shared by the groups
STANDARD_SHAPES = BENCHMARK_SHAPES


@dataclass(frozen=True)
class Example:
    sizes: tuple[tuple[int, int, int, int], ...]
    seed: int
    distribution: str
    layout: str

    def repro(self, subject: str, variant: str | None = None) -> str:
        args = [
            "python -m properties.repro",
            f"--subject={shlex.quote(subject)}",
            *([f"--variant={shlex.quote(variant)}"] if variant else []),
            f"--sizes={shlex.quote(repr([list(s) for s in self.sizes]))}",
            f"--seed={self.seed}",
            f"--distribution={self.distribution}",
            f"--layout={self.layout}",
        ]
        return " ".join(args)


def _dim(limit: int, allow_zero: bool, extra_edges: tuple[int, ...] = ()) -> st.SearchStrategy[int]:
    """A size up to ``limit``: a tile edge (EDGE_SIZES, and each of ``extra_edges`` and the size
    one past it), any size, or (``allow_zero``) 0."""
    more = {e + d for e in extra_edges for d in (0, 1)}
    edges = sorted(e for e in set(EDGE_SIZES) | more if 1 <= e <= limit)
    choices = [st.sampled_from(edges), st.integers(1, limit)]
    if allow_zero:
        choices.append(st.just(0))
    return st.one_of(*choices)


@st.composite
def problem_sizes(
    draw,
    constraints: KernelConstraints,
    limits: SizeLimits,
    layout: str = "separate",
) -> tuple[tuple[int, int, int, int], ...]:
    """A valid problem set for ``constraints``, ragged per group, biased to tile edges."""
    num_groups = draw(st.integers(1, min(limits.max_groups, constraints.max_groups)))
    gran = constraints.k_granularity
    k_of = st.integers(1, limits.max_k_blocks).map(lambda b: b * gran)
    if constraints.device_type == "cuda" and STANDARD_K // gran > limits.max_k_blocks:
        # the standard shapes' K range (up to 7168) on the GPU, where it costs little
        k_of = st.one_of(k_of, st.integers(limits.max_k_blocks + 1, STANDARD_K // gran).map(lambda b: b * gran))
    m_of = _dim(limits.max_m, allow_zero=True, extra_edges=constraints.m_edges)
    n_of = _dim(limits.max_n, allow_zero=True)
    shared_m = draw(_dim(limits.max_m, allow_zero=False, extra_edges=constraints.m_edges)) if layout == "shared_a" else None
    shared_n = draw(_dim(limits.max_n, allow_zero=False)) if layout == "shared_b" else None
    shared_k = draw(k_of) if layout in ("shared_a", "shared_b") else None
    sizes = []
    for _ in range(num_groups):
        m = shared_m if shared_m is not None else draw(m_of)
        n = shared_n if shared_n is not None else draw(n_of)
        k = shared_k if shared_k is not None else draw(k_of)
        sizes.append((m, n, k, 1))
    # at least one group with work, so every example exercises the kernel
    if all(m == 0 or n == 0 for m, n, _, _ in sizes):
        m, n, k, l = sizes[0]
        sizes[0] = (max(m, 1), max(n, 1), k, l)
    return tuple(sizes)


# ---- problems larger than one round of the subject's grid ------------------------------------
# examples(multi_round=True) draws a multi-round problem when integers(1, MULTI_ROUND_SHARE) comes
# out at its top (Hypothesis does not draw it uniformly: about one example in six)
MULTI_ROUND_SHARE = 4
# the layouts a multi-round problem is built in: those that let groups differ in M and N
MULTI_ROUND_LAYOUTS = ("separate", "views", "packed_c", "leaderboard")
# its K: at most this (one 256-K tile of the kernels), so its extra tiles cost little
MULTI_ROUND_MAX_K = 256
# about half of its draws of two or more groups alternate K and K + MULTI_ROUND_MAX_K (one 256-K
# tile more) over the groups, so the balanced grid deals their tiles in the snake order
# (kernel.plan.snake_tile), odd rounds included


@dataclass(frozen=True)
class GridShape:
    """What a launch plan does with a problem's tiles (kernel.plan.LaunchPlan)."""

    tiles: int  # output tiles
    ctas: int  # CTAs launched
    rounds: int  # the most tiles one CTA runs
    idle_ctas: int  # launched CTAs that run no tile
    light_tiles: int  # tiles of at most tile_m / 2 rows (LaunchPlan.is_light: the balanced schedule's light tiles)


def grid_shape(plan: LaunchPlan) -> GridShape:
    """The :class:`GridShape` of ``plan``, from the plan's own schedule: LaunchPlan.cta_tiles,
    which deals a balanced grid's tiles by the snake when the groups' K differ and by the
    balanced split otherwise, as the device does."""
    counts = [len(plan.cta_tiles(c)) for c in range(plan.num_ctas)]
    light_tiles = sum(plan.slot_light(s) * plan.tiles_n[s] for s in range(plan.num_groups))
    return GridShape(plan.total_tiles, plan.num_ctas, max(counts, default=0), counts.count(0), light_tiles)


@st.composite
def multi_round_sizes(draw, constraints: KernelConstraints, limits: SizeLimits, planner: GridPlanner):
    """A problem of more tiles than ``planner``'s grid has CTAs: 2 to 4 rounds of it, counted in
    its own tiles (the target tile count is drawn in (CTAs * (rounds - 1), CTAs * rounds]). Its
    groups are all *light* (M <= tile_m / 2: one half-height tile per N block, the balanced
    schedule's light tiles), all full (the last M block holds more than tile_m / 2 rows) or
    mixed (1 or 2 full M blocks, then a light one); N ragged inside its last block; K at most
    :data:`MULTI_ROUND_MAX_K`, or, in about half of the draws of two or more groups, K and
    K + :data:`MULTI_ROUND_MAX_K` alternating over the groups (the snake split). On a
    balanced grid most of the one-K draws leave CTAs idle (the balanced split hands out whole
    runs of tiles); the snake deals one tile per CTA per round and idles none (see grid_shape)."""
    gran = constraints.k_granularity
    k = gran * draw(st.integers(1, max(1, MULTI_ROUND_MAX_K // gran)))
    if planner.schedule == "split_last":
        # the last round's tiles are cut in K halves only with two K tiles or more: 2 or 3
        k = gran * draw(st.integers(2, max(3, 3 * MULTI_ROUND_MAX_K // gran)))
    groups = draw(st.integers(1, min(limits.max_groups, constraints.max_groups)))
    # the groups' K: one K, or K and K + MULTI_ROUND_MAX_K alternating from a drawn first
    mixed_k = groups >= 2 and draw(st.booleans())
    first_long = draw(st.integers(0, 1)) if mixed_k else 0
    extra = gran * max(1, MULTI_ROUND_MAX_K // gran)  # one 256-K tile, in whole granules
    ks = [k + (extra if mixed_k and (g + first_long) % 2 else 0) for g in range(groups)]
    ctas, tm, tn = planner.ctas, planner.tile_m, planner.tile_n
    rounds = draw(st.integers(2, 4))
    target = draw(st.integers(ctas * (rounds - 1) + 1, ctas * rounds))
    kind = draw(st.sampled_from(("light", "full", "mixed")))
    per_group = -(-target // groups)
    sizes = []
    for g in range(groups):
        if kind == "light":
            m_blocks, m = 1, draw(st.integers(1, tm // 2))
        elif kind == "full":
            m_blocks = draw(st.integers(1, 3))
            m = m_blocks * tm - draw(st.integers(0, tm // 2 - 1))
        else:
            m_blocks = draw(st.integers(2, 3))
            m = (m_blocks - 1) * tm + draw(st.integers(1, tm // 2))
        n_blocks = -(-per_group // m_blocks)
        n = n_blocks * tn - draw(st.integers(0, tn - 1))
        sizes.append((m, n, ks[g], 1))
    return tuple(sizes)


@st.composite
def examples(draw, variant: SubjectVariant, distributions=None, layouts=None, multi_round: bool = True) -> Example:
    """A valid example for ``variant``: ragged sizes biased to tile edges (:func:`problem_sizes`),
    or, about one time in six when ``multi_round`` and the variant has a grid planner, a problem
    of several rounds of its grid (:func:`multi_round_sizes`, :data:`MULTI_ROUND_SHARE`)."""
    planner = variant.planner if multi_round else None
    round_layouts = [lay for lay in (layouts or oracle.LAYOUTS) if lay in MULTI_ROUND_LAYOUTS]
    if planner is not None and round_layouts and draw(st.integers(1, MULTI_ROUND_SHARE)) == MULTI_ROUND_SHARE:
        layout = draw(st.sampled_from(round_layouts))
        sizes = draw(multi_round_sizes(variant.constraints, variant.limits, planner))
    else:
        layout = draw(st.sampled_from(layouts or oracle.LAYOUTS))
        sizes = draw(problem_sizes(variant.constraints, variant.limits, layout))
    distribution = draw(st.sampled_from(distributions or oracle.DISTRIBUTIONS))
    seed = draw(st.integers(0, 2**31 - 1))
    return Example(sizes, seed, distribution, layout)


def corner_examples(constraints: KernelConstraints, seed: int = 0,
                    planner: GridPlanner | None = None) -> dict[str, Example]:
    """Structured corners that random draws reach rarely, run as fixed examples in every profile
    (properties/test_subject_vs_oracle.py): name -> Example, valid for ``constraints``.

    Empty groups (M or N zero) before, between and after non-empty ones in caller order; M and N
    at the tile multiples 64, 128, 256 and one past; G = 1 and G = max_groups; K at the
    granularity and at the standard shapes' 7168; every group sharing one B; the leaderboard's
    first test case in its layout; the four standard shapes at full size; with row edges
    (``constraints.m_edges``), one group at each and one past it. With the subject's
    ``planner``, two problems past one round of its grid (:func:`multi_round_corners`)."""
    gran, g_max = constraints.k_granularity, constraints.max_groups
    k_std = -(-STANDARD_K // gran) * gran
    k_small = gran * max(1, 256 // gran)
    corners = {
        "empty_groups_around_work": ((0, 64, k_small, 1), (65, 0, k_small, 1), (40, 72, k_small, 1),
                                     (0, 0, k_small, 1), (129, 8, k_small, 1), (7, 0, k_small, 1)),
        "tile_multiples": ((64, 128, gran, 1), (128, 256, gran, 1), (256, 64, gran, 1)),
        "tile_multiples_plus_one": ((65, 129, gran, 1), (129, 257, gran, 1), (257, 65, gran, 1)),
        "one_group_k_granularity": ((128, 128, gran, 1),),
        "one_group_k7168": ((129, 65, k_std, 1),),
        "max_groups": tuple(((7 * g) % 130, (11 * g) % 70 + 1, gran * (1 + g % 3), 1) for g in range(g_max)),
        "ragged_k7168": ((33, 200, k_std, 1), (0, 64, k_std, 1), (130, 17, k_std, 1)),
    }
    if constraints.m_edges:
        # every row edge of the subject and the row count one past it, one group each (N and K
        # small), spread over as many launches' groups as max_groups allows
        edge_rows = sorted({e + d for e in constraints.m_edges for d in (0, 1)})
        corners["row_edges"] = tuple((m, 72 + 8 * (i % 3), gran, 1) for i, m in enumerate(edge_rows[:g_max]))
    examples = {name: Example(sizes, seed, "uniform", "separate") for name, sizes in corners.items()}
    examples["all_groups_share_b"] = Example(((1, 136, k_small, 1), (128, 136, k_small, 1), (200, 136, k_small, 1)),
                                             seed, "uniform", "shared_b")
    # the leaderboard's first test case as its generator builds it (plain scales in host memory)
    if 256 % gran == 0 and g_max >= 2:
        examples["leaderboard_test_case"] = Example(((96, 128, 256, 1), (128, 256, 512, 1)), seed,
                                                    "leaderboard", "leaderboard")
    for name, (ms, n, k) in STANDARD_SHAPES.items():
        if k % gran == 0 and len(ms) <= g_max:
            examples[name] = Example(tuple((m, n, k, 1) for m in ms), seed, "uniform", "separate")
    if planner is not None:
        examples.update({name: Example(sizes, seed, "uniform", "separate")
                         for name, sizes in multi_round_corners(constraints, planner).items()})
    return examples


MULTI_ROUND_CORNERS = ("light_tiles_idle_ctas", "three_rounds_mixed_tiles", "three_rounds_mixed_k",
                       "last_round_quarter_odd_k", "last_round_quarter_two_k")


def multi_round_corners(constraints: KernelConstraints, planner: GridPlanner) -> dict[str, tuple]:
    """Two problems past one round of ``planner``'s grid (C CTAs), K = 256 (or the granularity):

    * ``light_tiles_idle_ctas``: up to 8 groups of light tiles only (M <= tile_m / 2, the shape
      of a small MoE step), T > C tiles in all, T the smallest count for which the balanced split
      of T light tiles over C CTAs (kernel.plan.balanced_share) leaves a CTA without a tile;
    * ``three_rounds_mixed_tiles``: up to 3 groups of one full and one light M block per N block,
      more than 2 C tiles, so a contiguous grid runs at least three rounds;
    * ``three_rounds_mixed_k``: the same tiles with K, 2 K, K over the groups (one group: K), so a
      balanced grid deals them in the snake order, an odd round included;
    * ``last_round_quarter_odd_k``: one group of 2 C + C // 4 tiles, K = 3 x 256 (three K tiles:
      ``schedule="split_last"`` cuts the last round's tiles into halves of one and two K tiles);
    * ``last_round_quarter_two_k``: 2 C tiles of K = 4 x 256, then C // 4 tiles of K = 2 x 256 in a
      second group (the cut tiles, last in the launch order, are the second group's: halves of one
      K tile, on a K other than the first group's)."""
    gran, g_max = constraints.k_granularity, constraints.max_groups
    k = gran * max(1, MULTI_ROUND_MAX_K // gran)
    ctas, tm, tn = planner.ctas, planner.tile_m, planner.tile_n

    def idle(t: int) -> bool:
        return any(balanced_share(0, t, ctas, c)[3] == 0 for c in range(ctas))

    groups = min(8, g_max)
    light = next((t for t in range(ctas + 1, 3 * ctas + 1) if idle(t)), 2 * ctas + 1)
    blocks = [light // groups + (g < light % groups) for g in range(groups)]
    light_sizes = tuple((max(1, tm // 2 - 13 * (g % 3)), b * tn - (g % 2) * (tn // 2 - 1) if b else 0, k, 1)
                        for g, b in enumerate(blocks))
    groups = min(3, g_max)
    n_blocks = -(-(2 * ctas + 1) // (2 * groups))
    mixed_sizes = tuple((tm + max(1, tm // 4 - g), n_blocks * tn - 5 * g, k, 1) for g in range(groups))
    mixed_k = tuple((m, n, 2 * k if g % 2 else k, l) for g, (m, n, _, l) in enumerate(mixed_sizes))
    quarter = max(1, ctas // 4)
    k_tile = gran * max(1, 256 // gran)
    odd_k = ((tm - 5, (2 * ctas + quarter) * tn - 7, 3 * k_tile, 1),)
    two_k = ((2 * tm - 9, ctas * tn - 3, 4 * k_tile, 1), (tm // 2 + 3, quarter * tn - 11, 2 * k_tile, 1))
    return {"light_tiles_idle_ctas": light_sizes, "three_rounds_mixed_tiles": mixed_sizes,
            "three_rounds_mixed_k": mixed_k, "last_round_quarter_odd_k": odd_k, "last_round_quarter_two_k": two_k}


@dataclass(frozen=True)
class InvalidExample:
    """A valid example plus one broken rule; ``rule``, ``group`` and ``tensor`` are what the
    typed error must name (``group`` None: a problem-wide rule)."""

    base: Example
    breakage: str
    rule: str
    group: int | None
    tensor: str | None = None


# every tensor of a group, and every rule each of them must satisfy (kernel.validation): one
# breakage "rule:tensor" per pair; "aliasing:X" places c over X (over another group's c for X = c)
TENSORS = ("a", "b", "c", "sfa", "sfb", "sfa_blocked", "sfb_blocked")
TENSOR_RULES = ("type", "dtype", "shape", "device", "strides", "alignment", "aliasing")
# problem-wide breakages -> the rule they break (the error names tensor "problem_sizes")
PROBLEM_BREAKAGES = {
    "k_not_multiple": "k_granularity",
    "l_not_one": "l_is_one",
    "too_many_groups": "too_many_groups",
    "no_groups": "no_groups",
    "negative_m": "negative_size",
    "three_int_size": "size_format",
}
# the tensors the kernel reads: an output may overlap none of them (kernel.validation)
INPUTS = ("a", "b", "sfa", "sfb", "sfa_blocked", "sfb_blocked")
# partial overlaps of c (of the broken group) with one end of a tensor, by the least the rules
# allow (properties.breakages): "aliasing_end:X" puts c's first element over X's last element,
# "aliasing_start:X" c's last element over X's first; X of the same group, or with "_other" of
# another group; for X = c always another group's c. One element of overlap where the 16-byte
# base alignment leaves room for it (c over c, and c's last element over any input's first),
# one byte for a tensor held to no alignment (the plain scales of a kernel that never reads
# them), otherwise c begins at the last 16-byte aligned address at or before X's last element.
OVERLAP_ENDS = ("start", "end")
PARTIAL_OVERLAPS = (
    [f"aliasing_{end}{owner}:{x}" for end in OVERLAP_ENDS for owner in ("", "_other") for x in INPUTS]
    + [f"aliasing_{end}:c" for end in OVERLAP_ENDS]
)
# breakage name -> the InvalidProblemError.rule it must raise
BREAKAGES = {**PROBLEM_BREAKAGES, **{f"{rule}:{tensor}": rule for rule in TENSOR_RULES for tensor in TENSORS},
             **{name: "aliasing" for name in PARTIAL_OVERLAPS}}
# the plain scales of a kernel that never reads them: only these rules apply (kernel.validation)
PLAIN_SCALES = ("sfa", "sfb")
PLAIN_SCALE_RULES = ("type", "dtype", "shape", "aliasing")
# the layouts an invalid problem is built in: the plain one and the leaderboard's
INVALID_BASE_LAYOUTS = ("separate", "leaderboard")


def breakage_tensor(breakage: str) -> str:
    """The tensor the error must name: the broken one (c for every aliasing breakage)."""
    if breakage in PROBLEM_BREAKAGES:
        return "problem_sizes"
    return "c" if BREAKAGES[breakage] == "aliasing" else breakage.split(":")[1]


def two_outputs_overlap(breakage: str) -> bool:
    """Whether the breakage puts c over another group's c: the error may name either group
    (kernel.validation names the later one in address order)."""
    return BREAKAGES.get(breakage) == "aliasing" and breakage.endswith(":c")


def applicable_breakages(constraints: KernelConstraints) -> list[str]:
    """The breakages a problem for ``constraints`` can show: an off-grid K must stay a multiple of
    16 (the scale blocks), so a K granularity of 16 has none; the plain scales of a kernel that
    does not read them break only the rules they are held to."""
    def applies(breakage: str) -> bool:
        if breakage == "k_not_multiple":
            return constraints.k_granularity >= 32
        tensor = breakage.partition(":")[2]
        return constraints.reads_plain_scales or tensor not in PLAIN_SCALES or BREAKAGES[breakage] in PLAIN_SCALE_RULES
    return sorted(b for b in BREAKAGES if applies(b))


@st.composite
def invalid_examples(draw, variant: SubjectVariant) -> InvalidExample:
    base = draw(examples(variant, distributions=["uniform"], layouts=list(INVALID_BASE_LAYOUTS), multi_round=False))
    breakage = draw(st.sampled_from(applicable_breakages(variant.constraints)))
    group = draw(st.integers(0, len(base.sizes) - 1))
    if breakage in ("too_many_groups", "no_groups"):
        group = None
    return InvalidExample(base, breakage, BREAKAGES[breakage], group, breakage_tensor(breakage))


# ---- schedule perturbation (properties/test_perturbed_properties.py) ----------------------
# the run-time perturbation kinds (kernel.perturbation.KINDS) the perturbed property spreads its
# examples over, and the sub-blocks (64 K each) one tile of a "window" example runs at least
PERTURBED_KINDS = ("delays", "window", "quiet")
WINDOW_SUB_BLOCKS = 32


def pad_groups(sizes, layout: str, count: int, draw) -> tuple[tuple[int, int, int, int], ...]:
    """``sizes`` padded to ``count`` groups with empty ones (M or N zero) at drawn places, kept
    valid for ``layout``: ``shared_a`` pads with the shared M and K (N = 0), ``shared_b`` with the
    shared N and K (M = 0), the others with ``(0, N, K)``."""
    sizes = list(sizes)
    m0, n0, k0, _ = sizes[0]
    while len(sizes) < count:
        if layout == "shared_a":
            group = (m0, 0, k0, 1)
        elif layout == "shared_b":
            group = (0, n0, k0, 1)
        else:
            group = (0, draw(st.sampled_from([0, 64, 200])), k0, 1)
        sizes.insert(draw(st.integers(0, len(sizes))), group)
    return tuple(sizes)


def sub_blocks_per_tile(sizes) -> int:
    """The most 64-K sub-blocks one output tile of ``sizes`` runs (its group's K / 64)."""
    return max((k // 64 for m, n, k, _ in sizes if m and n), default=0)


def kind_of(index: int, example: Example) -> str:
    """The perturbation kind of a drawn example: a hash of everything drawn (stable across
    processes), not a draw of its own. Hypothesis' derandomized runs mutate a few early examples
    and keep most of their choices, so a kind drawn on its own came out clustered (one 25-example
    run: 23 of one kind, 2 of another, none of the third); a hash of the whole example changes
    with any mutation, so the kinds stay near a third each."""
    import zlib

    return PERTURBED_KINDS[zlib.crc32(repr((index, example)).encode()) % len(PERTURBED_KINDS)]


@st.composite
def perturbed_examples(draw, variant: SubjectVariant, palette_size: int = 0, max_groups: int = 3):
    """(perturbation, example): a run-time perturbation (kernel.perturbation: one build per kind
    and group count serves every seed, the seed's delay table is data) of any seed
    (``palette_size=0``) or of seeds 1..palette_size, and an example, always ``max_groups``
    groups (empty ones inserted: one compile per build in all). The example is either ordinary,
    drawn exactly as the plain property draws it (:func:`examples`: every distribution and
    every pointer layout, at most ``max_groups`` groups), or a stress shape; its kind
    (:func:`kind_of`, or the palette seed's):

    * "quiet" (production's schedule, plus poison and guarded tables): so on ordinary examples
      the perturbed property is a superset of the plain property (whose multi-round problems
      are not drawn here: the stress shapes' many_tiles pass the grid on the few CTAs of a
      perturbed build);
    * "window" (filler wgmmas, no delay site): an example whose tiles run fewer than
      :data:`WINDOW_SUB_BLOCKS` sub-blocks is replaced by a long-K stress shape
      (:func:`stress_sizes` ``long_k`` or ``mixed``), so a tile runs dozens of sub-blocks and a
      filled wgmma group is followed by an unfilled one many times over;
    * "delays" (seeded delays at every sync site)."""
    from kernel.perturbation import KINDS, runtime_perturbation

    index = draw(st.integers(1, palette_size) if palette_size > 0 else st.integers(0, 2**14 - 1))
    shape = draw(st.sampled_from(["ordinary", "stress"]))
    if shape == "stress":
        sizes = draw(stress_sizes(variant.constraints, max_groups))
        example = Example(sizes, draw(st.integers(0, 2**31 - 1)), draw(st.sampled_from(oracle.DISTRIBUTIONS)), "separate")
    else:
        limits = SizeLimits(max_groups=max_groups, max_m=variant.limits.max_m, max_n=variant.limits.max_n,
                            max_k_blocks=variant.limits.max_k_blocks)
        example = draw(examples(dataclasses.replace(variant, limits=limits), multi_round=False))
    if palette_size > 0:
        seed = index
    else:
        kind = kind_of(index, example)
        seed = KINDS.index(kind) + len(KINDS) * index or len(KINDS)
    perturbation = runtime_perturbation(seed)
    if perturbation.kind == "window" and sub_blocks_per_tile(example.sizes) < WINDOW_SUB_BLOCKS:
        sizes = draw(stress_sizes(variant.constraints, max_groups, shapes=("long_k", "mixed")))
        example = Example(sizes, example.seed, example.distribution, "separate")
    sizes = pad_groups(example.sizes, example.layout, max_groups, draw)
    if sizes != example.sizes:
        example = dataclasses.replace(example, sizes=sizes)
    return perturbation, example


STRESS_CTAS = 132  # the H200's SMs: one persistent CTA each


@st.composite
def stress_sizes(draw, constraints: KernelConstraints, max_groups: int = 3,
                 shapes: tuple[str, ...] = ("long_k", "many_tiles", "mixed", "light_tiles")):
    """Shapes that make the pipelines wrap and reuse: ``long_k`` (the raw-stage ring wraps dozens
    of times inside one tile), ``many_tiles`` (more 128x128 tiles than CTAs, so a persistent CTA
    reuses its accumulators and fp16 buffers across tiles), or both in one ragged problem
    (``mixed``: its first group has the long K); ``light_tiles``: more tiles than CTAs, every one
    light (groups of at most 64 rows: one half-height tile per N block), which the balanced
    split hands out in runs that leave CTAs of a full grid without a tile (the plain property's
    multi-round corner, here in the perturbed builds; one K for every group, or the balanced grid
    would deal the tiles by the snake, which idles no CTA); ``shapes`` picks among them."""
    gran = constraints.k_granularity
    shape = draw(st.sampled_from(list(shapes)))
    groups = draw(st.integers(1, max_groups))
    if shape == "light_tiles":
        col_tiles = -(-(STRESS_CTAS + 1) // groups)
        k = gran * draw(st.integers(1, 2))
        return tuple((draw(st.integers(1, 64)), draw(st.integers((col_tiles - 1) * 128 + 1, col_tiles * 128 + 256)),
                      k, 1) for _ in range(groups))
    wide = 0 if shape == "long_k" else groups - (shape == "mixed")  # groups of many tiles
    # each wide group: >= 9 row tiles of 128 and enough column tiles that together they pass
    # STRESS_CTAS tiles of 128 x 128
    col_tiles = -(-(STRESS_CTAS + 1) // (9 * wide)) if wide else 0
    sizes = []
    for g in range(groups):
        if g >= groups - wide:
            m = draw(st.integers(8 * 128 + 1, 10 * 128))
            n = draw(st.integers((col_tiles - 1) * 128 + 1, col_tiles * 128 + 256))
            k = gran * draw(st.integers(1, 2))
        else:
            m, n = draw(st.integers(1, 200)), draw(st.integers(1, 200))
            k = gran * draw(st.integers(24, 48))
        sizes.append((m, n, k, 1))
    return tuple(sizes)
