"""The happens-before checker's phase-1 rules on the CPU (kernel.phase1_protocol).

Hand-written traces: a valid launch is clean, and each rule rejects the trace that breaks it,
naming the CTA and warps as the device record does. Simulated launches (every warp a program,
seeded interleavings): the protocol as the kernel runs it is clean in every schedule and decodes
each chunk once; each phase-1 edit of the mutant catalog gives a trace the rules reject, and the
claim counter left set hangs the next call (what the checker names one launch earlier). The device
side of these rules (kernel/hopper/harness.py ``check_phase1_*``) is compiled into the checked
prepass build: kernel/tests/test_hopper_perturbed_sass.py.
"""

from __future__ import annotations

import pytest

from ci.mutants import BY_NAME
from kernel.perturbation import CHECK_RULES, PHASE1_CLAIM_MAP_CHUNKS
from kernel.phase1_protocol import (MUTATIONS, Acquire, Barrier, Claim, CompletionArrive, Counters, Fence, Launch,
                                    Publish, Read, Reset, record, simulate)

# 3 chunks, 2 CTAs of 3 warps (warps 0 and 1 decode, warp 2 the producer): CTA 0 decodes chunks
# 0 and 2, CTA 1 chunk 1
L = Launch(chunks=3, ctas=2, warps=3, producer_warp=2)
PHASE1_RULES = {name for name, _, _ in CHECK_RULES if name.startswith("phase1_")}


def valid():
    return [
        Claim(0, 0), Claim(1, 1), Barrier(0), Barrier(1),
        Claim(0, 2), Claim(1, 3), Fence(0, 0, 0), Fence(0, 1, 0), Fence(1, 1, 0), Fence(1, 0, 0),
        Barrier(0), Barrier(1), Publish(1, 0), Publish(0, 0),
        Claim(0, 4), Fence(0, 1, 1), Fence(0, 0, 1), Barrier(0), Publish(0, 1),
        Acquire(1, 3), CompletionArrive(1), Acquire(0, 3), Reset(0, 0, 0, 0), CompletionArrive(0),
        Barrier(1), Barrier(0), Read(1, 2), Read(0, 2),
    ]


def edited(drop=(), replace=None, move=None):
    """``valid()`` without the events in ``drop``, with ``replace`` {old: new}, and ``move``
    (event, after): the event taken out and put right after ``after``."""
    trace = [replace.get(e, e) if replace else e for e in valid() if e not in drop]
    if move:
        event, after = move
        trace.remove(event)
        trace.insert(trace.index(after) + 1, event)
    return trace


def test_the_valid_launch_is_clean():
    assert record(L, valid()).clean


@pytest.mark.parametrize("trace, first", [
    # the completion wait one chunk short
    (edited(replace={Acquire(1, 3): Acquire(1, 2)}), (1, 2, 0)),
    # a chunk counted done without its release (nothing published for it)
    (edited(drop=[Publish(1, 0)]), (1, 2, 2)),
    # thread 0 of CTA 0 waits after it arrived at the completion barrier
    (edited(move=(Acquire(0, 3), CompletionArrive(0))), (0, 2, 0)),
], ids=["wait_one_short", "publish_relaxed", "wait_after_barrier"])
def test_a_read_before_every_chunk_was_acquired_is_rejected(trace, first):
    r = record(L, trace)
    assert r.rules == ("phase1_read_unpublished",)
    assert (r.first_cta, r.first_warp, r.first_other) == first


def test_a_publish_before_every_warp_fenced_its_stores_is_rejected():
    r = record(L, edited(drop=[Fence(0, 1, 1)]))  # warp 1 of CTA 0 never fenced chunk 2
    assert r.rules == ("phase1_publish_unfenced",) and (r.first_cta, r.first_warp, r.first_other) == (0, 0, 1)
    assert "other warp 1" in r.describe()
    # the fence came, but after the release (a late warp past a missing chunk barrier)
    late = record(L, edited(move=(Fence(0, 1, 1), Publish(0, 1))))
    assert late.rules == ("phase1_publish_unfenced",)
    # a warp already one chunk ahead is not late
    ahead = edited(move=(Fence(0, 1, 1), Publish(0, 0)))
    assert record(L, ahead).clean


def test_a_chunk_claimed_twice_is_rejected_and_claims_past_the_end_are_not():
    r = record(L, edited(replace={Claim(1, 3): Claim(1, 2)}))
    assert r.rules == ("phase1_claim_not_unique",) and r.first_cta == 1  # CTA 0 took chunk 2 first
    assert record(L, valid() + [Claim(0, 3), Claim(1, 3)]).clean  # past the last chunk: end of claims
    big = Launch(chunks=PHASE1_CLAIM_MAP_CHUNKS + 8, ctas=1, warps=2, producer_warp=1)
    # beyond the claim map's chunks nothing is marked (a launch has at most prepass_chunk x grid chunks)
    assert record(big, [Claim(0, PHASE1_CLAIM_MAP_CHUNKS + 1)] * 2).clean
    assert record(big, [Claim(0, PHASE1_CLAIM_MAP_CHUNKS - 1)] * 2).rules == ("phase1_claim_not_unique",)


@pytest.mark.parametrize("left", [(5, 0, 0), (0, 1, 0), (0, 0, 2)])
def test_a_counter_left_nonzero_for_the_next_call_is_rejected(left):
    r = record(L, edited(replace={Reset(0, 0, 0, 0): Reset(0, *left)}))
    assert r.rules == ("phase1_counter_not_reset",) and r.first_cta == 0 and r.counts == {"phase1_counter_not_reset": 1}


def test_events_the_rules_do_not_know_are_refused():
    from kernel.phase1_protocol import check

    with pytest.raises(TypeError):
        check(L, [("claim", 0, 1)])


LAUNCHES = (Launch(chunks=5, ctas=3), Launch(chunks=2, ctas=4), Launch(chunks=9, ctas=2, warps=3, producer_warp=2))


@pytest.mark.parametrize("launch", LAUNCHES, ids=lambda x: f"{x.chunks}chunks-{x.ctas}ctas")
def test_the_protocol_is_clean_in_every_schedule(launch):
    for seed in range(40):
        run = simulate(launch, seed)
        assert not run.hung and sorted(run.decoded) == list(range(launch.chunks)), (seed, run.decoded)
        assert record(launch, run.events).clean, (seed, record(launch, run.events).describe())
        assert (run.counters.claim, run.counters.done, run.counters.passed) == (0, 0, 0)
        assert sum(isinstance(e, Read) for e in run.events) == launch.ctas


# each simulated edit, its mutant in ci/mutants.py and the helper that edit removes or moves
CATALOG = {
    "publish_relaxed": ("hopper_sync_phase1_publish_relaxed__prod", "self.publish_chunk(ws, it)"),
    "wait_one_short": ("hopper_sync_phase1_wait_one_short__prod", "self.acquire_chunks(ws, chunks)"),
    "wait_after_barrier": ("hopper_sync_phase1_wait_after_barrier__prod", "self.prepass_wait(ws, chunks)"),
    "no_fence": ("hopper_sync_phase1_no_global_proxy_fence__prod", "self.fence_chunk_stores(it)"),
    "claim_not_reset": ("hopper_sync_phase1_claim_not_reset__prod", "store_relaxed_gpu(ws + CLAIM_WORD"),
}
RULE_OF = {
    "publish_relaxed": "phase1_read_unpublished",
    "wait_one_short": "phase1_read_unpublished",
    "wait_after_barrier": "phase1_read_unpublished",
    "no_fence": "phase1_publish_unfenced",
    "claim_not_reset": "phase1_counter_not_reset",
}


def test_every_simulated_edit_is_a_catalog_mutant_of_the_prepass_build():
    assert set(CATALOG) == set(MUTATIONS) == set(RULE_OF)
    for name, helper in CATALOG.values():
        m = BY_NAME[name]
        assert m.variant == "h90_m128n128k256_s4_wg2_b8_swap_fp16_tma_prmt_rs_prec1xsw_t64_es"
        assert helper in m.original
    # the wait moved: it precedes the completion barrier in the original and follows it in the edit
    m = BY_NAME[CATALOG["wait_after_barrier"][0]]
    for text, wait_first in ((m.original, True), (m.replacement, False)):
        assert (text.index("self.prepass_wait(") < text.index("self.completion_barrier(")) == wait_first


@pytest.mark.parametrize("mutation", MUTATIONS)
def test_each_phase1_mutant_is_a_trace_the_rules_reject(mutation):
    """Every schedule of the edited protocol breaks the edit's rule (and no other): each edit
    removes or moves a record the rule needs, so the checker needs no race to fire."""
    for launch in LAUNCHES:
        for seed in range(30):
            run = simulate(launch, seed, mutation)
            assert not run.hung and sorted(run.decoded) == list(range(launch.chunks))
            assert record(launch, run.events).rules == (RULE_OF[mutation],), (launch, seed)


def test_the_rules_between_them_are_the_phase1_rules():
    assert set(RULE_OF.values()) | {"phase1_claim_not_unique"} == PHASE1_RULES


def test_a_claim_counter_left_set_hangs_the_next_call():
    """What the plain property sees of the claim counter not reset: the next call's claims all lie
    past the chunk count, no chunk is decoded and the completion wait never ends (a hang); the
    checked build names the counter on the call before."""
    launch = LAUNCHES[0]
    first = simulate(launch, 1, "claim_not_reset")
    assert record(launch, first.events).rules == ("phase1_counter_not_reset",)
    assert first.counters.claim == launch.chunks + launch.ctas
    second = simulate(launch, 2, "claim_not_reset", counters=first.counters)
    assert second.hung and second.decoded == []
    assert all(e.chunk >= launch.chunks for e in second.events if isinstance(e, Claim))
    assert not simulate(launch, 2, counters=Counters()).hung


def _beside_case(rng):
    """A random beside launch: chunks, CTAs, and per CTA the chunk range of each K stage it reads."""
    chunks = rng.randint(1, 12)
    ctas = rng.randint(1, 4)
    reads = []
    for _cta in range(ctas):
        stages = []
        for _s in range(rng.randint(0, 4)):
            first = rng.randrange(chunks)
            stages.append((first, rng.randint(first, min(chunks - 1, first + 2))))
        reads.append(stages)
    return chunks, ctas, reads


def test_phase1_beside_protocol_reads_only_decoded_rows_and_leaves_a_clean_workspace():
    """phase1_beside's protocol, two consecutive launches on one workspace, 300 seeded schedules
    of random grids and reads: no producer reads a chunk before its launch's helpers decoded it,
    nothing hangs, and each launch leaves the claim word, the count and every flag at 0."""
    import random

    from kernel.phase1_protocol import simulate_beside

    for seed in range(300):
        chunks, ctas, reads = _beside_case(random.Random(seed))
        run = simulate_beside(chunks, ctas, reads, seed)
        assert not run.hung and not run.stale_reads and not run.dirty_ends, (seed, chunks, ctas, reads, run)


@pytest.mark.parametrize("mutation", ["publish_relaxed", "no_wait", "flags_not_reset", "one_party"])
def test_each_beside_edit_breaks_the_protocol_on_some_schedule(mutation):
    """The beside edits of ci/mutants.py (and a count-through of one party per CTA): each reads a
    chunk before it is decoded, hangs, or leaves the next launch a dirty workspace on some of the
    300 schedules."""
    import random

    from kernel.phase1_protocol import simulate_beside

    broken = 0
    for seed in range(300):
        chunks, ctas, reads = _beside_case(random.Random(seed))
        run = simulate_beside(chunks, ctas, reads, seed, mutation=mutation)
        broken += bool(run.hung or run.stale_reads or run.dirty_ends)
    assert broken, mutation


def test_the_done_count_skip_reads_only_decoded_rows_and_leaves_a_clean_workspace():
    """chunk_done_skip's protocol (the producer waits for no flag once it read every chunk
    counted), the same 300 schedules: no stale read, no hang, each launch leaves the count at 0
    with the rest."""
    import random

    from kernel.phase1_protocol import simulate_beside

    unwaited = 0
    for seed in range(300):
        chunks, ctas, reads = _beside_case(random.Random(seed))
        run = simulate_beside(chunks, ctas, reads, seed, done_skip=True)
        assert not run.hung and not run.stale_reads and not run.dirty_ends, (seed, chunks, ctas, reads, run)
        assert not simulate_beside(chunks, ctas, reads, seed).unwaited  # without it every stage waits
        unwaited += run.unwaited
    assert unwaited  # the skip is taken on some schedules


@pytest.mark.parametrize("mutation", ["done_not_reset", "done_counted_early", "skip_one_short", "no_wait",
                                      "publish_relaxed"])
def test_each_done_skip_edit_breaks_the_protocol_on_some_schedule(mutation):
    """The done count never reset, counted before the rows, the skip one chunk short (and the
    flag edits the skip must not hide): each reads a chunk before it is decoded or leaves the next
    launch a dirty workspace on some of the 300 schedules."""
    import random

    from kernel.phase1_protocol import simulate_beside

    broken = 0
    for seed in range(300):
        chunks, ctas, reads = _beside_case(random.Random(seed))
        run = simulate_beside(chunks, ctas, reads, seed, mutation=mutation, done_skip=True)
        broken += bool(run.hung or run.stale_reads or run.dirty_ends)
    assert broken, mutation


def test_done_skip_edits_need_the_done_count():
    from kernel.phase1_protocol import simulate_beside

    with pytest.raises(ValueError, match="unknown mutation"):
        simulate_beside(2, 1, [[(0, 1)]], 0, mutation="done_not_reset")
