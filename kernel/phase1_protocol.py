"""Phase 1's chunk hand-off and the happens-before checker's rules for it, on the CPU.

Phase 1 of the prepass builds (kernel/hopper/phase1.py) hands every decoded chunk of the fp16
workspace from the CTA that decoded it to every CTA whose phase 2 reads it, through three global
counters (kernel/hopper/workspace.py):

* **claim**: thread 0 of a CTA takes chunk ``atom.add(CLAIM, 1)``; every chunk is taken once;
* **publish**: every decoding thread (the consumer warps; the producer warp decodes nothing)
  proxy-fences its stores of the chunk, the decoding warps pass a barrier, and
  thread 0 counts the chunk done with a release (``fence.acq_rel`` + ``red.release`` on DONE);
* **acquire**: thread 0 waits (``ld.acquire``) until DONE reaches the chunk count, then the CTA
  passes phase 1's completion barrier; only after it does the producer warp TMA-load the
  workspace (the **read**);
* **reset**: each CTA counts itself through (PASSED); the last one sets the three counters back
  to 0, so the next call starts from a clean header.

A checked harness build (``Perturbation.checks``) records what its phase-1 helpers did and
checks four rules (kernel.perturbation CHECK_RULES ``phase1_*``, device side in
kernel/hopper/harness.py ``check_phase1_*``). :func:`check` is their CPU twin: it replays one
launch's events, in the order they happened, and writes the record words the device writes
(decoded by :class:`kernel.perturbation.CheckRecord`). A check reads the shadow words as they
are at that point (shared memory on the device is coherent: a check sees whatever the other
warps stored before it, at least what they stored before the barrier it passed); so the
fenced-before-publish rule, which a missing chunk barrier breaks, fires on the traces where the
order actually broke, as on the device. The read rule reads what thread 0 had acquired when it
arrived at the completion barrier (it keeps that count as it arrives), and the claim, release
and reset rules read launch-wide records: a missing fence, release or reset, a short wait or a
wait after the barrier fires on every trace. :func:`simulate` runs the protocol itself, each
warp of each CTA a program interleaved by a seeded scheduler, and returns the events a checked
build would record; its ``mutation`` options are the phase-1 edits of ci/mutants.py, so the bad
order of each is a recorded trace the rules reject.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from kernel.perturbation import (CHECK_COUNT_WORD0, CHECK_FIRST_WORD, CHECK_RULE_INDEX, CHECK_RULES_WORD,
                                 PHASE1_CLAIM_MAP_CHUNKS, TABLE_WORDS, CheckRecord, check_site)

# the warps' shadow words the rules read (kernel/hopper/harness.py HB_P1_FENCED, HB_P1_ACQUIRED,
# HB_P1_ACQUIRED_AT_BARRIER)
FENCED, ACQUIRED, ACQUIRED_AT_BARRIER = "fenced", "acquired", "acquired_at_barrier"


@dataclass(frozen=True)
class Claim:  # thread 0's claim returned ``chunk``
    cta: int
    chunk: int


@dataclass(frozen=True)
class Fence:  # ``warp`` proxy-fenced its stores of its CTA's ``it``-th chunk
    cta: int
    warp: int
    it: int


@dataclass(frozen=True)
class Barrier:  # the CTA barrier completed (every warp of the CTA arrived; no rule reads it)
    cta: int


@dataclass(frozen=True)
class Publish:  # thread 0 released its CTA's ``it``-th chunk (counted it done)
    cta: int
    it: int


@dataclass(frozen=True)
class Acquire:  # thread 0's completion wait acquired DONE >= ``target``
    cta: int
    target: int


@dataclass(frozen=True)
class CompletionArrive:  # thread 0 arrives at phase 1's completion barrier
    cta: int


@dataclass(frozen=True)
class Read:  # ``warp`` (the producer) issued its first TMA of the workspace
    cta: int
    warp: int


@dataclass(frozen=True)
class Reset:  # the last CTA through read the counters back after its reset
    cta: int
    claim: int
    done: int
    passed: int


@dataclass(frozen=True)
class Launch:
    chunks: int
    ctas: int
    warps: int = 9  # the prepass build: 8 consumer warps, then 1 producer warp
    producer_warp: int = 8  # it decodes no chunk: warps 0 .. producer_warp - 1 do

    @property
    def decode_warps(self) -> int:
        return self.producer_warp


def check(launch: Launch, events) -> list[int]:
    """The checker's record words (``TABLE_WORDS`` of them) after ``events`` of one launch."""
    words = [0] * TABLE_WORDS
    written: dict[tuple[int, int, str], int] = {}  # (CTA, warp, word) -> the warp's shadow word
    claimed: set[int] = set()
    published = 0

    def report(rule: str, warp: int, other: int, cta: int) -> None:
        i = CHECK_RULE_INDEX[rule]
        words[CHECK_RULES_WORD] |= 1 << i
        if words[CHECK_FIRST_WORD] == 0:
            words[CHECK_FIRST_WORD] = check_site(i, warp, other, cta)
        words[CHECK_COUNT_WORD0 + i] += 1

    def read(cta: int, warp: int, word: str) -> int:
        return written.get((cta, warp, word), 0)

    for e in events:
        if isinstance(e, Claim):
            if e.chunk < launch.chunks and e.chunk < PHASE1_CLAIM_MAP_CHUNKS:
                if e.chunk in claimed:
                    report("phase1_claim_not_unique", 0, 0, e.cta)
                claimed.add(e.chunk)
        elif isinstance(e, Fence):
            written[e.cta, e.warp, FENCED] = e.it + 1
        elif isinstance(e, Barrier):
            pass
        elif isinstance(e, Publish):
            for w in range(launch.decode_warps):
                if read(e.cta, w, FENCED) < e.it + 1:
                    report("phase1_publish_unfenced", 0, w, e.cta)
            published += 1
        elif isinstance(e, Acquire):
            written[e.cta, 0, ACQUIRED] = e.target
        elif isinstance(e, CompletionArrive):
            written[e.cta, 0, ACQUIRED_AT_BARRIER] = read(e.cta, 0, ACQUIRED)
        elif isinstance(e, Read):
            if read(e.cta, 0, ACQUIRED_AT_BARRIER) < launch.chunks:
                report("phase1_read_unpublished", e.warp, 0, e.cta)
            if published < launch.chunks:
                report("phase1_read_unpublished", e.warp, e.warp, e.cta)
        elif isinstance(e, Reset):
            if e.claim or e.done or e.passed:
                report("phase1_counter_not_reset", 0, 0, e.cta)
        else:
            raise TypeError(f"not a phase-1 event: {e!r}")
    return words


def record(launch: Launch, events) -> CheckRecord:
    return CheckRecord.from_words(check(launch, events))


# ---- the protocol, run ------------------------------------------------------------------------
# the phase-1 edits of ci/mutants.py (hopper_sync_phase1_*__prod), as the simulated protocol does them
MUTATIONS = (
    "publish_relaxed",  # the chunk counted done with a relaxed add: no release, nothing published
    "wait_one_short",  # the completion wait acquires chunks - 1
    "wait_after_barrier",  # thread 0's completion wait after the CTA barrier the producer passes
    "no_fence",  # no proxy fence of the chunk's stores
    "claim_not_reset",  # the last CTA through leaves the claim counter as it is
)


@dataclass
class Counters:
    claim: int = 0
    done: int = 0
    passed: int = 0


@dataclass
class Run:
    events: list = field(default_factory=list)
    decoded: list[int] = field(default_factory=list)  # chunk indices, in the order decoded
    counters: Counters = field(default_factory=Counters)
    hung: bool = False  # every warp left blocks on a barrier or the completion wait


# phase 1's chunk barrier (its decoding warps) and its completion barrier (every warp)
_STEP, _BARRIER, _COMPLETION = "step", "barrier", "completion"


def simulate(launch: Launch, seed: int, mutation: str | None = None, counters: Counters | None = None,
             max_steps: int = 200_000) -> Run:
    """One launch of the protocol from ``counters`` (a fresh header by default), every warp of
    every CTA a program, one step of a random runnable warp at a time (``seed``)."""
    if mutation is not None and mutation not in MUTATIONS:
        raise ValueError(f"unknown mutation {mutation!r}; one of {MUTATIONS}")
    run = Run(counters=counters if counters is not None else Counters())
    ctr, emit = run.counters, run.events.append
    slots = {cta: [0, 0] for cta in range(launch.ctas)}
    target = launch.chunks - 1 if mutation == "wait_one_short" else launch.chunks

    def claim(cta):
        c = ctr.claim
        ctr.claim += 1
        emit(Claim(cta, c))
        return c

    def completion(cta):
        while ctr.done < target:
            yield ("spin", target)
        emit(Acquire(cta, target))
        passed = ctr.passed
        ctr.passed += 1
        yield _STEP
        if passed == launch.ctas - 1:
            if mutation != "claim_not_reset":
                ctr.claim = 0
            ctr.done = ctr.passed = 0
            emit(Reset(cta, ctr.claim, ctr.done, ctr.passed))
            yield _STEP

    def warp(cta, w):
        if w == launch.producer_warp:  # it decodes nothing (its first X stages: not the protocol's)
            yield _COMPLETION
            emit(Read(cta, w))
            yield _STEP
            return
        if w == 0:
            slots[cta][0] = claim(cta)
            yield _STEP
        yield _BARRIER
        it = 0
        while slots[cta][it % 2] < launch.chunks:
            if w == 0:
                slots[cta][(it + 1) % 2] = claim(cta)  # the next claim, while this chunk decodes
                run.decoded.append(slots[cta][it % 2])
                yield _STEP
            yield _STEP  # this warp's share of the chunk's loads, decode and stores
            if mutation != "no_fence":
                emit(Fence(cta, w, it))
                yield _STEP
            yield _BARRIER
            if w == 0:
                if mutation != "publish_relaxed":
                    emit(Publish(cta, it))
                ctr.done += 1
                yield _STEP
            it += 1
        if w == 0 and mutation != "wait_after_barrier":
            yield from completion(cta)
        if w == 0:
            emit(CompletionArrive(cta))
        yield _COMPLETION
        if w == 0 and mutation == "wait_after_barrier":
            yield from completion(cta)

    programs = {(cta, w): warp(cta, w) for cta in range(launch.ctas) for w in range(launch.warps)}
    state: dict[tuple[int, int], object] = {key: _STEP for key in programs}  # what each warp waits for
    arrived = {(cta, b): set() for cta in range(launch.ctas) for b in (_BARRIER, _COMPLETION)}
    expected = {_BARRIER: launch.decode_warps, _COMPLETION: launch.warps}
    rng = random.Random(seed)
    for _ in range(max_steps):
        runnable = [k for k, s in state.items()
                    if s == _STEP or (isinstance(s, tuple) and ctr.done >= s[1])]
        if not runnable:
            run.hung = bool(state)
            return run
        key = rng.choice(runnable)
        try:
            got = next(programs[key])
        except StopIteration:
            del state[key]
            continue
        if got in (_BARRIER, _COMPLETION):
            bar = key[0], got
            arrived[bar].add(key[1])
            state[key] = got
            if len(arrived[bar]) == expected[got]:  # the barrier completes: its warps go on
                emit(Barrier(key[0]))
                for w in arrived[bar]:
                    state[key[0], w] = _STEP
                arrived[bar] = set()
        else:
            state[key] = got
    raise RuntimeError(f"no end after {max_steps} steps")


# ---- phase 1 beside the tiles (HopperConfig.phase1_beside) ------------------------------------
# Each CTA's helper warps claim chunks until none is left, decode each and release its flag; each
# CTA's producer warp acquires the flags of every K stage's chunks before reading them; both
# parties then count themselves through, and the last of the grid's 2 x CTAs parties zeroes the
# flags, the claim word and the count (kernel/hopper/phase1.py, kernel/hopper/workspace.py).
# :func:`simulate_beside` runs that protocol for consecutive launches on one workspace, every party
# a program interleaved by a seeded scheduler; its ``mutation`` options are the beside edits of
# ci/mutants.py (hopper_sync_beside_*), and ``one_party`` a count-through of one party per CTA.
# With ``done_skip`` (HopperConfig.chunk_done_skip) each helper also counts its published chunk in
# the DONE word, and a producer that read (before a stage's flag waits) every chunk counted waits
# for no flag after that stage; the last party zeroes the count too. Its edits: the count never
# reset (``done_not_reset``), counted before the chunk's rows are written (``done_counted_early``),
# and the skip taken one chunk short (``skip_one_short``).
BESIDE_MUTATIONS = ("publish_relaxed", "no_wait", "flags_not_reset", "one_party")
DONE_SKIP_MUTATIONS = ("done_not_reset", "done_counted_early", "skip_one_short")


@dataclass
class BesideRun:
    stale_reads: list = field(default_factory=list)  # (launch, CTA, chunk): read before it was decoded
    dirty_ends: list = field(default_factory=list)  # (launch, claim, passed, flags set) left for the next
    hung: bool = False
    unwaited: int = 0  # done_skip: K stages read with no flag wait (every chunk counted before)


def simulate_beside(chunks: int, ctas: int, reads: list[list[tuple[int, int]]], seed: int, launches: int = 2,
                    mutation: str | None = None, max_steps: int = 200_000, done_skip: bool = False) -> BesideRun:
    """``launches`` consecutive launches (each after the previous one ended, as on one stream) of
    ``chunks`` chunks on ``ctas`` CTAs; ``reads[cta]``: the (first, last) chunk range of each K
    stage its producer reads, in order. A read sees a chunk's rows only if that launch's helpers
    wrote them before it (``publish_relaxed``: the flag may be seen before the rows)."""
    known = BESIDE_MUTATIONS + (DONE_SKIP_MUTATIONS if done_skip else ())
    if mutation is not None and mutation not in known:
        raise ValueError(f"unknown mutation {mutation!r}; one of {known}")
    run = BesideRun()
    rng = random.Random(seed)
    flags = [0] * chunks
    written = [0] * chunks  # the launch whose rows a chunk holds
    hdr = {"claim": 0, "passed": 0, "done": 0}
    parties = ctas if mutation == "one_party" else 2 * ctas
    all_counted = chunks - 1 if mutation == "skip_one_short" else chunks

    for launch in range(1, launches + 1):
        def count_through():
            passed = hdr["passed"]
            hdr["passed"] += 1
            yield "step"
            if passed == parties - 1:
                if mutation != "flags_not_reset":
                    for c in range(chunks):
                        flags[c] = 0
                hdr["claim"] = hdr["passed"] = 0
                if mutation != "done_not_reset":
                    hdr["done"] = 0
                yield "step"

        def helpers(cta):
            while True:
                c = hdr["claim"]
                hdr["claim"] += 1
                yield "step"
                if c >= chunks:
                    break
                if done_skip and mutation == "done_counted_early":
                    hdr["done"] += 1  # counted before the rows are written
                    yield "step"
                if mutation == "publish_relaxed":
                    flags[c] += 1  # the flag may land before the rows
                    yield "step"
                    written[c] = launch
                else:
                    written[c] = launch
                    yield "step"
                    flags[c] += 1
                yield "step"
                if done_skip and mutation != "done_counted_early":
                    hdr["done"] += 1  # a release add after the flag's
                    yield "step"
            yield from count_through()

        def producer(cta):
            skip = False
            for first, last in reads[cta]:
                if not skip:
                    counted = hdr["done"]  # read beside the flag acquires
                    yield "step"
                    if mutation != "no_wait":
                        while any(flags[c] < 1 for c in range(first, last + 1)):
                            yield "spin"
                    skip = done_skip and counted >= all_counted
                else:
                    run.unwaited += 1
                for c in range(first, last + 1):
                    if written[c] != launch:
                        run.stale_reads.append((launch, cta, c))
                yield "step"
            yield from count_through()

        programs = [helpers(cta) for cta in range(ctas)] + [producer(cta) for cta in range(ctas)]
        live = list(range(len(programs)))
        spins = 0
        for _ in range(max_steps):
            if not live:
                break
            i = rng.choice(live)
            try:
                got = next(programs[i])
            except StopIteration:
                live.remove(i)
                spins = 0
                continue
            spins = spins + 1 if got == "spin" else 0
            if spins > 50 * len(live) + 1000:  # only spinning producers are left
                run.hung = True
                return run
        else:
            raise RuntimeError(f"no end after {max_steps} steps")
        if hdr["claim"] or hdr["passed"] or hdr["done"] or any(flags):
            run.dirty_ends.append((launch, hdr["claim"], hdr["passed"], sum(1 for f in flags if f)))
    return run
