"""Schedule perturbation of a non-production build: seeded delays at every synchronization site,
and poison written where the protocol hands a shared-memory region back. Pure Python.

Why: a stage released one barrier too early, a missing fence or a wrong mbarrier phase leaves the
output right almost every time on small problems, because the roles happen to run in lock step.
Delays at the sync sites make one role run far ahead of or far behind the others, so a race
window that is a few cycles wide in a plain run becomes microseconds wide ("incantations":
Alglave et al., ASPLOS 2015). Poison makes a late reader visible at once: the side that releases a
region overwrites it with NaN patterns (all-ones bytes: E4M3 scale 0xFF is NaN, fp16 0xFFFF is
NaN, FP4 0xF is -6) right where the protocol says it is free, instead of the next real write
landing hundreds of cycles later.

A :class:`Perturbation` is a harness build option (never present in a production build:
``perturbation=None`` traces exactly the production code). Two forms:

* compile-time (``runtime=False``): every delay is an immediate of the build, so each seed is
  its own compile (the perturbation is its compile-cache key);
* run-time (``runtime=True``, what the properties and ``ci.mutation_runner`` use): the build
  has a delay site at every (role, site, when) that reads its delay from a small device table
  (:meth:`Perturbation.device_words`: one int32 per :data:`SLOTS` entry, then the jitter bound,
  the jitter mode and the seed), passed as an extra kernel argument of that build only. The
  compile-cache key is :attr:`Perturbation.compile_form` (poison and the filler wgmmas, no
  seed), so one build per (variant, group count) serves every seed, jitter and CTA cap: the
  seed is data. A site whose table entry is 0 does not sleep. Its seed picks,
for every (role, site, when) of :data:`SITES`, whether to delay and for how long
(``delay_ns``): per role first a scale (that role idles, jitters or stalls), then per site a
coin and an amount up to ``max_delay_ns``. ``jitter`` adds a run-time variation on top
(``"cta"``: a hash of the CTA index, ``"warp"``: of the CTA and warp index; up to
``max_delay_ns / 2``), so the CTAs of one launch do not all stall alike.

Sites (role -> site; each has a ``before`` and an ``after`` point unless noted):

* ``producer``: ``acquire`` (raw stage: empty-barrier wait), ``issue`` (the loads of a stage;
  ``after`` = after the full-barrier arrive / commit), ``tensormap`` (tensor-map acquire fence),
  ``tail`` (producer tail: before only);
* ``consumer``: ``wait`` (raw stage full-barrier wait), ``release`` (raw stage empty arrive),
  ``fence`` (generic -> async proxy fence after the fp16 stores), ``bar_dequant`` (the named
  barrier that publishes the fp16 buffers), ``bar_reuse`` (the named barrier before a buffer is
  rewritten), ``wgmma_wait`` (wgmma wait_group), ``fp16_wait`` / ``fp16_release`` (split roles'
  fp16 ring), ``epilogue`` (before the first C store: before only), ``epilogue_read`` (the staged
  epilogue, after the barrier that says a pass of C is in the staging buffer and before the
  thread reads it back: before only, skewed, see below), ``decode`` (cooperative roles:
  before each sub-block's dequant, right after the barrier that ended the previous sub-block;
  before only). In the run-time build ``decode`` also sleeps the seed's **warp skew**
  (:meth:`Perturbation.skew`): the warps with ``warp % 4`` = the seed's victim sleep
  ``skew_ns`` more, so the other warps of their warpgroup finish the sub-block's dequant, and
  whatever follows it up to the next barrier, before the victim starts reading the raw stage.
  The same skew also sleeps before the consumers' ``wgmma_wait`` (:data:`SKEWED_SITES`): the
  victim waits for its wgmma group, and tells the checker so, late; and at ``epilogue_read``:
  the victim reads a pass of C back from the staging buffer late, while the rest of its
  warpgroup stores theirs and moves on to the next pass or tile (what a missing or short
  barrier before the buffer's rewrite lets through).
  No other site gives that: the others sit after a sub-block's reads (fence, publish barrier)
  or before a barrier that resynchronizes the warps (each sub-block ends with the reuse
  barrier and, with poison, the poison barrier). Aimed at a poison or release of the raw stage
  that one warp reaches while another still reads it (a missing publish barrier);
* ``dequant`` (split roles only): ``wait``, ``release``, ``fp16_acquire``, ``fp16_commit``,
  ``fence``;
* ``phase1`` (``y_source="prepass"`` builds, thread 0 of each CTA): ``claim`` (each atomic chunk
  claim), ``publish`` (the release that counts a decoded chunk done, after the chunk's CTA
  barrier), ``wait`` (the completion wait: the acquire of every chunk's publish) and ``reset``
  (the count-through and the last CTA's reset of the three counters for the next call).

Poison sites (``poison=True``; Hopper cooperative roles):

* raw stage, consumer side: after the named barrier that follows the last sub-block's dequant
  (every consumer thread has read the stage), each thread overwrites its slice of the stage,
  fences the async proxy and syncs its warp, then the stage is released;
* raw stage, producer side (one producer warp): after the empty-barrier wait, before any copy
  into the stage is issued, the warp overwrites the stage, fences the async proxy, syncs;
* fp16 operand buffers (two-buffer ping-pong): after the named barrier that says every warp
  retired the wgmma that read the other buffer, each thread overwrites its slice of that buffer
  and the consumers pass one more named barrier, so no poison store can land after a real one;
* accumulators: after the epilogue's stores, set to NaN (the next tile must reset them).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Literal

ROLES = ("producer", "consumer", "dequant", "phase1")
SITES: dict[str, tuple[str, ...]] = {
    "producer": ("acquire", "issue", "tensormap", "tail"),
    "consumer": ("wait", "release", "fence", "bar_dequant", "bar_reuse", "wgmma_wait", "fp16_wait",
                 "fp16_release", "epilogue", "epilogue_read", "decode", "split_publish", "split_wait"),
    "dequant": ("wait", "release", "fp16_acquire", "fp16_commit", "fence"),
    "phase1": ("claim", "publish", "wait", "reset"),
}
BEFORE_ONLY = {("producer", "tail"), ("consumer", "epilogue"), ("consumer", "epilogue_read"), ("consumer", "decode")}
WHENS = ("before", "after")
# per role: how much of max_delay_ns its sites may take (idle, jitter, stall)
ROLE_SCALES = (0.0, 0.1, 1.0)
POISON_WORD = 0xFFFFFFFF  # E4M3 0xFF: NaN; fp16 0xFFFF: NaN; FP4 0xF: -6
Jitter = Literal["none", "cta", "warp"]
JITTERS = ("none", "cta", "warp")
_TAG = re.compile(r"^s(?P<seed>\d+)-d(?P<max>\d+)-p(?P<density>\d+)-(?P<poison>poison|clean)-(?P<jitter>none|cta|warp)"
                  r"(?P<nodelay>-nodelay)?(?:-c(?P<ctas>\d+))?(?:-w(?P<fill>\d+))?(?:-e(?P<every>\d+))?(?P<hb>-hb)?(?P<tl>-tl)?(?P<stress>-t)?(?P<rt>-rt)?$")
# the run-time delay table (Perturbation.device_words): one int32 per (role, site, when) of
# SLOTS, in this order, then the jitter bound (ns), the jitter mode (JITTERS index), the seed, and
# the warp skew of the consumers' decode site (Perturbation.skew: nanoseconds, victim warp % 4)
SLOTS: tuple[tuple[str, str, str], ...] = tuple(
    (role, site, when) for role in ROLES for site in SITES[role] for when in WHENS
    if not (when == "after" and (role, site) in BEFORE_ONLY))
SLOT_INDEX = {slot: i for i, slot in enumerate(SLOTS)}
JITTER_NS_WORD, JITTER_MODE_WORD, SEED_WORD = len(SLOTS), len(SLOTS) + 1, len(SLOTS) + 2
SKEW_NS_WORD, SKEW_WARP_WORD = len(SLOTS) + 3, len(SLOTS) + 4
# the sites that also sleep the seed's warp skew (Perturbation.skew) in the run-time build: the
# consumers' decode site (a warp starts reading the raw stage late) and the point before their
# wgmma wait (a warp waits for, and so publishes the retirement of, its wgmma group late: what
# a missing barrier between the other warps' waits and a buffer's rewrite lets through, seen by
# the happens-before checker at once), and the staged epilogue's read-back of a pass (a warp
# reads the staging buffer late, after the others may have rewritten it: wrong C)
SKEWED_SITES = frozenset({("consumer", "decode", "before"), ("consumer", "wgmma_wait", "before"),
                          ("consumer", "epilogue_read", "before")})
# one in STRESS_ONE_IN run-time seeds launches beside the tensor-pipe stressor (stressed_seed)
STRESS_ONE_IN = 2
# one in SKEW_ONE_IN run-time "delays" seeds has no warp skew (Perturbation.skew)
SKEW_ONE_IN = 4
TABLE_WORDS = 128  # 512 bytes, zero-padded
# the protocol checker's record (``Perturbation.checks``), in the same device table after the
# delay words: a bitmask of the rules broken (bit = index in CHECK_RULES), the first violation's
# packed site (check_site: rule, warp, other warp, CTA; 0 = none) and one count per rule. Every
# launch gets a fresh table (kernel.host_pipeline: device_words, zeros past the delay words) and
# the host reads the record after the launch
CHECK_RULES_WORD, CHECK_FIRST_WORD, CHECK_COUNT_WORD0 = SKEW_WARP_WORD + 1, SKEW_WARP_WORD + 2, SKEW_WARP_WORD + 3
# the checker's launch-wide phase-1 shadow (y_source="prepass" builds), in the same table: the
# chunks published through the release (each CTA's thread 0 adds 1 before its release, so a CTA
# that acquired every chunk's publish reads them all), and one bit per chunk claimed (an atomic
# or; a bit already set is a second claim of that chunk), for the first PHASE1_CLAIM_MAP_CHUNKS
# chunks (a launch has at most prepass_chunk x grid chunks: kernel.hopper.phase1)
PHASE1_PUBLISHED_WORD = 72
PHASE1_CLAIM_MAP_WORD0, PHASE1_CLAIM_MAP_WORDS = 96, 32
PHASE1_CLAIM_MAP_CHUNKS = 32 * PHASE1_CLAIM_MAP_WORDS
# the timeline (``Perturbation.timeline``, profiling.timeline): after the table's TABLE_WORDS, one
# u64 %globaltimer stamp (ns) per (CTA, point) for the first TIMELINE_CTAS CTAs, CTA-major, 0 =
# not reached. "first" points keep the first stamp (a compare-and-swap from 0), the others the
# last (a plain store). Who stamps: thread 0 ("start", "tables_read"; in the prepass builds its
# first chunk's "phase1_loaded" (its first item's loads returned: the item decoded),
# "phase1_fenced" (the chunk's stores issued and proxy-fenced) and "phase1_published" (the
# chunk barrier passed, the release issued), then "phase1_decoded" and "phase1_passed",
# "phase1_done": after phase 1's completion barrier), the producer warp's lane 0 (its first stage acquired and
# committed, its tail), the first consumer thread (its first tile's epilogue, its last tile's
# epilogue and the end of that epilogue's stores)
TIMELINE_POINTS: tuple[tuple[str, str], ...] = (
    ("start", "last"),
    ("tables_read", "last"),  # thread 0 has the tile total (the prologue's table reads done)
    ("phase1_loaded", "first"),  # prepass builds, thread 0: its first chunk's first item loaded
    ("phase1_fenced", "first"),  # ... that chunk's stores issued and proxy-fenced
    ("phase1_published", "first"),  # ... that chunk's barrier passed and its release issued
    # prepass_chunk builds, thread 0 (phase1_beside: the lead helper): its phase-1 chunks' stores issued
    ("phase1_decoded", "last"),
    ("phase1_passed", "last"),  # prepass_chunk builds, thread 0: phase 1's grid barrier passed
    ("phase1_done", "last"),
    ("producer_first_acquire", "first"),
    ("producer_first_commit", "first"),
    ("epilogue_first", "first"),
    ("epilogue_last", "last"),
    ("epilogue_last_end", "last"),
    ("producer_tail", "last"),
)
TIMELINE_INDEX = {name: i for i, (name, _) in enumerate(TIMELINE_POINTS)}
TIMELINE_CTAS = 512  # a grid of two CTAs per SM on a 132-SM H200 is 264
TIMELINE_WORD0 = TABLE_WORDS
TIMELINE_WORDS = TIMELINE_CTAS * len(TIMELINE_POINTS) * 2
# the palette's persistent-grid caps, cycled with the seeds: the full grid (one or few tiles per
# CTA on small problems), then 2 CTAs and 1 CTA, so each CTA walks many tiles: accumulators, fp16
# buffers and ring slots are reused many times, the ring phase runs on across tiles and the
# producer runs ahead into the next tile while the consumers store the last one
PALETTE_CTAS = (0, 2, 1)
# the filler wgmmas per filled wgmma group (Perturbation.wgmma_fill) of a perturbation that has them:
# real-shape wgmmas (zero A, the real Y, into the real accumulator) queued in the real group, so it
# retires after that much more tensor work; ptxas keeps them asynchronous (docs/results.md,
# kernel/tests/test_hopper_perturbed_sass.py). Compiled in (part of the compile
# form). A run-time gate does not work: a branch around the fillers makes ptxas close a wgmma group
# at the branch (the fillers' own gsb0), so they no longer share the group
FILL = 32
# the run-time "window" build fills one sub-block in FILL_STRIDE (the even ones): a filled group
# followed by an unfilled one. The race of a lax wait or a missing reuse barrier needs the group
# of sub-block s-1 still reading its buffer after the group of sub-block s has been *issued*; if
# the tensor pipe takes only a few wgmmas ahead of the one executing, issuing a long group blocks
# the warp until the group before it retired, so filling every group closes the window it was
# meant to open (docs/results.md); a short group after a long one does not
FILL_STRIDE = 2
# the compile-time palette cycles fillers like the caps (third seed: fillers in every group)
PALETTE_FILL = (0, 0, 16)
# the run-time strategy (runtime_perturbation) gives each seed one of three builds, by seed % 4:
# "delays" (0, 1: seeded delays at every site, poison), "quiet" (2: no delay site traced, poison:
# production's schedule, so every race the plain property can meet it meets too, with poison
# and guarded tables on top) and "window" (3: no delay site, poison, FILL fillers in every
# FILL_STRIDE-th wgmma group: consumers as fast as production, a slow tensor pipe). Independent of
# the jitter (seed % 3) and the cap ((seed // 3) % 3); seed 3 of a 3-seed palette is a window seed
FILL_EVERY = 4
KINDS = ("delays", "delays", "quiet", "window")


@dataclass(frozen=True)
class Perturbation:
    seed: int
    max_delay_ns: int = 4000
    density_pct: int = 50  # chance (percent) that a site of a non-idle role delays at all
    poison: bool = True
    jitter: Jitter = "none"
    delays: bool = True
    # cap on the persistent grid of the launch (0: the launch's own CTA count); not a compile
    # option (kernel.host_pipeline applies it to the plan), but part of the build's name and key
    max_ctas: int = 0
    # filler wgmmas (the real shape, zero A, the real Y buffer, into the real accumulator: they add
    # exactly zero) issued in every real wgmma group of the consumers, ahead of the real ones: the
    # tensor pipe runs them first, so the real group retires late and a reuse of its operands
    # before the protocol's wait reads poison (0: none; a multiple of 4; compiled in)
    wgmma_fill: int = 0
    # fillers in one wgmma group of every fill_stride (the sub-blocks sb % fill_stride == 0; 1: all)
    fill_stride: int = 1
    # delays read at run time from the build's device table (one build serves every seed)
    runtime: bool = False
    # the launch runs beside a tensor-pipe stressor on another stream (properties.tensor_stress:
    # one small CTA per SM keeping long wgmmas queued, so the subject's wgmma groups execute late
    # while its warps run on). Not a build option: no part of the compile form or the kernel
    stress: bool = False
    # the happens-before checker (run-time builds only; compiled in, part of the compile form):
    # every consumer warp keeps a shadow of its wgmma groups (committed, waited for, which group
    # read which fp16 / Y buffer, which buffer it fenced and published, whether its accumulator
    # or A-fragment registers were written since the last wgmma fence) and every producer warp of
    # its stage fills and tensor-map acquires, in shared memory (the prepass build's phase 1 too: the
    # chunks each warp fenced, what thread 0 acquired, and in the device table the chunks published
    # and claimed: kernel.phase1_protocol states those rules on the CPU); each synchronization site checks
    # the protocol's rule there against what the other warps *published before the barrier it
    # passed*, and a broken rule is recorded (CHECK_RULES) and raised by the host after the launch
    # as kernel.errors.ProtocolViolation. It needs no race to fire: a missing barrier or a lax wait
    # is seen on every run where a warp can be behind, and a missing wait, fence, tail or acquire
    # on every run
    checks: bool = False
    # the timeline (run-time builds only, profiling.timeline; compiled in, part of the compile
    # form): %globaltimer stamps at TIMELINE_POINTS into the device table after its TABLE_WORDS.
    # Production's schedule: no delay site, no poison, no checker, no filler
    timeline: bool = False

    def __post_init__(self):
        problems = []
        if self.seed < 0:
            problems.append(f"seed must be >= 0, got {self.seed}")
        if not 0 <= self.max_delay_ns <= 1_000_000:
            problems.append(f"max_delay_ns must be in [0, 1e6], got {self.max_delay_ns}")
        if not 0 <= self.density_pct <= 100:
            problems.append(f"density_pct must be in [0, 100], got {self.density_pct}")
        if not 0 <= self.wgmma_fill <= 4096:
            problems.append(f"wgmma_fill must be in [0, 4096], got {self.wgmma_fill}")
        if not 1 <= self.fill_stride <= 8:
            problems.append(f"fill_stride must be in [1, 8], got {self.fill_stride}")
        if not 0 <= self.max_ctas <= 100_000:
            problems.append(f"max_ctas must be in [0, 1e5], got {self.max_ctas}")
        if self.checks and not self.runtime:
            problems.append("checks needs a run-time perturbation (its record lives in the device table)")
        if self.timeline and (not self.runtime or self.delays or self.poison or self.checks or self.wgmma_fill):
            problems.append("timeline runs production's schedule: a run-time build without delays, poison, "
                            "checks or fillers")
        if self.jitter not in JITTERS:
            problems.append(f"jitter must be one of {JITTERS}, got {self.jitter!r}")
        if problems:
            raise ValueError("; ".join(problems))

    # ---- the seeded delay table ----------------------------------------------------------
    def role_scale(self, role: str) -> float:
        return random.Random(f"{self.seed}/{role}").choice(ROLE_SCALES)

    def delay_ns(self, role: str, site: str, when: str) -> int:
        """The compile-time delay of one (role, site, when); 0 means no delay instruction."""
        if role not in SITES or site not in SITES[role]:
            raise KeyError(f"unknown perturbation site {role}.{site}")
        if when not in WHENS or (when == "after" and (role, site) in BEFORE_ONLY):
            raise KeyError(f"site {role}.{site} has no {when!r} point")
        if not self.delays:
            return 0
        rng = random.Random(f"{self.seed}/{role}/{site}/{when}")
        hit = rng.randrange(100) < self.density_pct
        amount = rng.randint(1, max(1, self.max_delay_ns))
        return int(hit * amount * self.role_scale(role))

    def table(self) -> dict[tuple[str, str, str], int]:
        return {slot: self.delay_ns(*slot) for slot in SLOTS}

    # ---- the run-time form: one build, the seed's table as data ------------------------------
    @property
    def compile_form(self) -> "Perturbation":
        """What the build depends on (its compile-cache key and what the build is traced with):
        itself for a compile-time perturbation; for a run-time one poison, the filler wgmmas and
        whether delay sites are traced at all (``delays=False``: none, the production schedule;
        seed, delay amounts, jitter and the CTA cap are data), so every seed of a kind shares
        one build."""
        if not self.runtime:
            return self
        return Perturbation(0, 0, 0, poison=self.poison, jitter="none", delays=self.delays, max_ctas=0,
                            wgmma_fill=self.wgmma_fill, fill_stride=self.fill_stride if self.wgmma_fill else 1,
                            runtime=True, checks=self.checks, timeline=self.timeline)

    @property
    def kind(self) -> str:
        """What schedule the build runs: "delays" (delay sites), "window" (no delay site, filler
        wgmmas), "quiet" (no delay site, no filler: production's schedule, plus poison)."""
        if self.delays:
            return "delays"
        return "window" if self.wgmma_fill else "quiet"

    def skew(self) -> tuple[int, int]:
        """The run-time build's warp skew at the consumers' ``decode`` site: ``(ns, victim)``,
        the warps with ``warp % 4 == victim`` sleeping ``ns`` more there (0: no skew). Seeded:
        3 in 4 run-time seeds with delay sites skew, by ``max_delay_ns / 4`` up to
        ``max_delay_ns``; none without delay sites ("quiet", "window") or at compile time."""
        rng = random.Random(f"{self.seed}/skew")
        on = rng.randrange(SKEW_ONE_IN) != 0
        ns = rng.randint(max(1, self.max_delay_ns // 4), max(1, self.max_delay_ns))
        victim = rng.randrange(4)
        return (ns if on and self.delays and self.runtime else 0), victim

    def device_words(self) -> list[int]:
        """The run-time build's table (int32 words, :data:`TABLE_WORDS` of them): the delay of
        every :data:`SLOTS` entry (0: that site does not sleep), the jitter bound, the jitter
        mode (0 none, 1 per CTA, 2 per warp), the seed (the jitter hash's salt) and the warp
        skew (:meth:`skew`: nanoseconds, victim warp)."""
        words = [self.delay_ns(*slot) for slot in SLOTS] + [
            self.jitter_ns, JITTERS.index(self.jitter), self.seed & 0xFFFF, *self.skew()]
        return words + [0] * (TABLE_WORDS - len(words) + (TIMELINE_WORDS if self.timeline else 0))

    @property
    def jitter_ns(self) -> int:
        """Upper bound of the run-time variation added at every delayed site."""
        return 0 if self.jitter == "none" or not self.delays else self.max_delay_ns // 2

    # ---- a printable, parseable name (test ids, repro lines, the compile-cache key) -------
    @property
    def tag(self) -> str:
        return (f"s{self.seed}-d{self.max_delay_ns}-p{self.density_pct}-{'poison' if self.poison else 'clean'}"
                f"-{self.jitter}{'' if self.delays else '-nodelay'}{f'-c{self.max_ctas}' if self.max_ctas else ''}"
                f"{f'-w{self.wgmma_fill}' if self.wgmma_fill else ''}{f'-e{self.fill_stride}' if self.fill_stride != 1 else ''}"
                f"{'-hb' if self.checks else ''}{'-tl' if self.timeline else ''}"
                f"{'-t' if self.stress else ''}"
                f"{'-rt' if self.runtime else ''}")

    @classmethod
    def from_tag(cls, tag: str) -> "Perturbation":
        m = _TAG.match(tag)
        if not m:
            raise ValueError(f"not a perturbation tag: {tag!r} (expected e.g. s3-d4000-p50-poison-none)")
        return cls(int(m["seed"]), int(m["max"]), int(m["density"]), m["poison"] == "poison", m["jitter"],
                   m["nodelay"] is None, int(m["ctas"] or 0),
                   int(m["fill"] or 0), int(m["every"] or 1), m["rt"] is not None, m["stress"] is not None,
                   checks=m["hb"] is not None, timeline=m["tl"] is not None)


def palette(size: int, *, max_delay_ns: int = 4000, runtime: bool = False) -> tuple[Perturbation, ...]:
    """Seeds 1..size, poison on, jitter cycling none / cta / warp, the grid cap cycling
    :data:`PALETTE_CTAS` (full grid, 2 CTAs, 1 CTA) and the filler wgmmas :data:`PALETTE_FILL`.
    Compile-time (default): each entry is one compile per group count; ``runtime=True``: all
    share one build (their :attr:`Perturbation.compile_form` is one)."""
    return tuple(Perturbation(seed, max_delay_ns, poison=True, jitter=JITTERS[(seed - 1) % 3],
                              max_ctas=PALETTE_CTAS[(seed - 1) % len(PALETTE_CTAS)],
                              wgmma_fill=PALETTE_FILL[(seed - 1) % len(PALETTE_FILL)], runtime=runtime)
                 for seed in range(1, size + 1))


def runtime_perturbation(seed: int, *, max_delay_ns: int = 4000, density_pct: int = 50,
                         checks: bool = True) -> Perturbation:
    """The run-time perturbation of ``seed`` that the perturbed property draws: poison on, the
    jitter mode and the grid cap picked by the seed, and its kind (:data:`KINDS`, ``seed % 4``):
    "delays" (seeded delays at every sync site), "quiet" (no delay site: production's schedule)
    or "window" (no delay site, :data:`FILL` filler wgmmas in every :data:`FILL_STRIDE`-th group).
    Three builds in all (a kind's seeds share one: the seed is data). ``checks``: the
    happens-before checker in every build (:attr:`Perturbation.checks`)."""
    kind = KINDS[seed % FILL_EVERY]
    window = kind == "window"
    return Perturbation(seed, max_delay_ns, density_pct, poison=True, jitter=JITTERS[seed % 3],
                        delays=kind == "delays", max_ctas=PALETTE_CTAS[(seed // 3) % len(PALETTE_CTAS)],
                        wgmma_fill=FILL if window else 0, fill_stride=FILL_STRIDE if window else 1, runtime=True,
                        stress=stressed_seed(seed), checks=checks)


def stressed_seed(seed: int) -> bool:
    """Whether the run-time perturbation of ``seed`` launches beside the tensor-pipe stressor:
    one seed in :data:`STRESS_ONE_IN`, by a hash of the seed (independent of its kind, jitter
    and grid cap, which are ``seed % 4``, ``seed % 3`` and ``(seed // 3) % 3``)."""
    return random.Random(f"{seed}/stress").randrange(STRESS_ONE_IN) == 0


# ---- the happens-before checker's rules and record (Perturbation.checks) ----------------------
# (name, what broke, the likely cause); the index is the rule's bit in the record
CHECK_RULES: tuple[tuple[str, str, str], ...] = (
    ("reuse_before_own_wait",
     "rewrote or released an fp16 operand buffer while its own wgmma group that reads it had not been waited for",
     "a wgmma wait_group that leaves that group in flight (too lax or missing)"),
    ("reuse_before_peer_wait",
     "rewrote an fp16 operand buffer before another warp had waited for its wgmma group that reads it",
     "a missing barrier between the other warps' wgmma wait and the rewrite"),
    ("wgmma_without_fence",
     "issued a wgmma after writing its accumulator or A-fragment registers with no wgmma fence in between",
     "a missing warpgroup.fence() (wgmma.fence) after the accumulator reset or the fragment decode"),
    ("wgmma_reads_unpublished",
     "issued a wgmma reading an fp16 operand buffer that another warp (or itself) had not yet proxy-fenced and published",
     "a missing generic-to-async proxy fence or a missing barrier between the fp16 stores and the wgmma"),
    ("producer_exit_in_flight",
     "a producer warp exited with stages it filled that it never saw released",
     "a missing producer tail"),
    ("tma_without_tensormap_acquire",
     "issued a TMA with a tensor map the issuing thread had not acquired in this launch",
     "a missing tensormap acquire fence before the TMA"),
    ("accumulator_read_in_flight",
     "read the accumulators (epilogue) while one of its wgmma groups writing them had not been waited for",
     "a missing wgmma wait_group(0) before the epilogue"),
    # phase 1 of the y_source="prepass" builds (kernel.hopper.phase1; the CPU twin of these four
    # rules is kernel.phase1_protocol)
    ("phase1_read_unpublished",
     "read the fp16 workspace (the producer warp's first TMA of it) before its CTA's completion wait had "
     "acquired the release of every phase-1 chunk",
     "a completion wait short of the chunk count or after the CTA barrier, or a chunk counted done "
     "without its release (a relaxed add)"),
    ("phase1_publish_unfenced",
     "published a phase-1 chunk (the release that counts it done) before another warp of its CTA (or "
     "itself) had proxy-fenced its workspace stores of that chunk",
     "a missing fence.proxy.async.global after the chunk's stores, or a missing CTA barrier before the release"),
    ("phase1_claim_not_unique",
     "claimed a phase-1 chunk that another claim of the same launch had already taken",
     "the claim counter not at 0 when the launch began, reset while CTAs still claimed, or a claim "
     "taken twice"),
    ("phase1_counter_not_reset",
     "the last CTA through phase 1 left a counter (claim, done, passed) nonzero for the next call",
     "a missing reset store of that counter, or a claim, publish or count-through landing after the reset"),
)
CHECK_RULE_INDEX = {name: i for i, (name, _, _) in enumerate(CHECK_RULES)}
assert SKEW_WARP_WORD < CHECK_RULES_WORD and CHECK_COUNT_WORD0 + len(CHECK_RULES) <= PHASE1_PUBLISHED_WORD
assert len(CHECK_RULES) < 15 and PHASE1_CLAIM_MAP_WORD0 + PHASE1_CLAIM_MAP_WORDS <= TABLE_WORDS


# the packed first-violation word: rule + 1 in bits 0-3, warp from SITE_WARP_SHIFT (5 bits), the
# other warp from SITE_OTHER_SHIFT (5 bits), the CTA from SITE_CTA_SHIFT (18 bits); the device
# packs it with these shifts too (kernel.hopper.ptx.hb_check)
SITE_WARP_SHIFT, SITE_OTHER_SHIFT, SITE_CTA_SHIFT = 4, 9, 14


def check_site(rule: int, warp: int, other: int, cta: int) -> int:
    """The packed first-violation word (what the device writes for these values)."""
    return (((rule + 1) & 0xF) | ((warp & 0x1F) << SITE_WARP_SHIFT) | ((other & 0x1F) << SITE_OTHER_SHIFT)
            | ((cta & 0x3FFFF) << SITE_CTA_SHIFT))


@dataclass(frozen=True)
class CheckRecord:
    """The checker's record of one launch, decoded from the device table's words."""
    rules: tuple[str, ...]  # the names of the rules broken, in CHECK_RULES order
    counts: dict[str, int]  # reports per rule: one per warp (its lane 0) and check site reached
    first_rule: str | None
    first_warp: int
    first_other: int
    first_cta: int

    @classmethod
    def from_words(cls, words) -> "CheckRecord":
        words = [int(w) & 0xFFFFFFFF for w in words]
        mask = words[CHECK_RULES_WORD]
        rules = tuple(name for i, (name, _, _) in enumerate(CHECK_RULES) if mask >> i & 1)
        counts = {name: words[CHECK_COUNT_WORD0 + i] for i, (name, _, _) in enumerate(CHECK_RULES)
                  if words[CHECK_COUNT_WORD0 + i]}
        first = words[CHECK_FIRST_WORD]
        rule = (first & 0xF) - 1
        return cls(rules, counts, CHECK_RULES[rule][0] if 0 <= rule < len(CHECK_RULES) else None,
                   first >> SITE_WARP_SHIFT & 0x1F, first >> SITE_OTHER_SHIFT & 0x1F, first >> SITE_CTA_SHIFT & 0x3FFFF)

    @property
    def clean(self) -> bool:
        return not self.rules

    def describe(self) -> str:
        lines = []
        for name in self.rules:
            i = CHECK_RULE_INDEX[name]
            _, what, cause = CHECK_RULES[i]
            lines.append(f"[{name}] {what} ({self.counts.get(name, 0)} warp report(s)); likely cause: {cause}")
        if self.first_rule is not None:
            other = f", other warp {self.first_other}" if self.first_rule in (
                "reuse_before_peer_wait", "wgmma_reads_unpublished", "phase1_publish_unfenced") else ""
            lines.append(f"first seen: rule {self.first_rule}, CTA {self.first_cta}, warp {self.first_warp}{other}")
        return "\n".join(lines)


def timeline_perturbation() -> Perturbation:
    """The timeline build's perturbation: production's schedule plus the stamps."""
    return Perturbation(0, 0, 0, poison=False, delays=False, runtime=True, timeline=True)


def timeline_stamps(words, num_ctas: int) -> dict[str, list[int]]:
    """The stamps of a timeline launch from its device table's words (int32, as read back):
    point -> one u64 nanosecond stamp per CTA (0: that CTA did not reach the point), for the
    first ``min(num_ctas, TIMELINE_CTAS)`` CTAs."""
    words = [int(w) & 0xFFFFFFFF for w in words]
    if len(words) < TIMELINE_WORD0 + TIMELINE_WORDS:
        raise ValueError(f"not a timeline table: {len(words)} words, expected {TIMELINE_WORD0 + TIMELINE_WORDS}")
    out: dict[str, list[int]] = {name: [] for name, _ in TIMELINE_POINTS}
    for cta in range(min(num_ctas, TIMELINE_CTAS)):
        for i, (name, _) in enumerate(TIMELINE_POINTS):
            at = TIMELINE_WORD0 + 2 * (cta * len(TIMELINE_POINTS) + i)
            out[name].append(words[at] | words[at + 1] << 32)
    return out
