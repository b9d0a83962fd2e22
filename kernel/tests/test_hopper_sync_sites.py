"""Synchronization sites the sm_90a cubins must show, checked on a CPU from their SASS.

The property suite on the H200 cannot see a missing wgmma wait or a missing barrier when the
race does not happen to fire in 50 examples (ci/mutants.py: hopper_no_wait_before_epilogue and
hopper_no_barrier_before_buffer_reuse survived it). The code layout shows both:

* the epilogue reads the accumulators only after ``wgmma.wait_group 0``: between the last HGMMA
  and the first global store (or ``STSM``, the staged epilogue's stmatrix), the last
  ``WARPGROUP.DEPBAR`` waits for zero groups in flight;
* a dequant buffer is rewritten only after every consumer warp retired the wgmma that read it:
  with B fp16 buffers and N wgmma groups left in flight by each wait, the buffer a wait frees is
  rewritten B - N sub-blocks later, so after each ``WARPGROUP.DEPBAR.LE gsb0, N`` a ``BAR.SYNC``
  (the consumers' named barrier, which every warp passes after its own wait) comes before the
  (B - N)-th run of shared stores (two buffers, one group: before the first one);
* a Y buffer that TMA refills (the prepass builds' Y ring) is released to the producer only after
  the wgmma that read it retired: between the last HGMMA before a consumer's release arrive
  (``SYNCS.ARRIVE.TRANS64.ART0``) and that arrive, a ``WARPGROUP.DEPBAR`` leaves at most N groups;
* phase 1 of the prepass builds hands its decoded Y rows to TMA, which reads through the async
  proxy, so the PTX memory model wants a proxy fence at each hand-off: each thread's generic
  stores to the global workspace (the last ``STG`` before the chunk's publish) are followed by
  ``FENCE.VIEW.ASYNC.G`` and a ``MEMBAR.ALL.GPU`` before the publish (``REDG.E.ADD.STRONG.GPU``,
  a release); phase 1's generic writes to its staging slots in shared memory (the last ``STS``
  before the completion barrier, ``BAR.SYNC 0x0``), which the Y ring's TMA overwrites later, by
  ``FENCE.VIEW.ASYNC.S`` before that barrier; and the producer's first TMA load after the
  barrier (``UTMALDG``) by ``FENCE.VIEW.ASYNC.G`` after it. The GPU runs rarely show one missing
  (of the catalog's fence mutants, the slots' and the producer's survived every GPU verdict, the
  workspace's was caught once, by the perturbed property on one build), so the code must;
* a cut tile of ``schedule="split_last"`` hands its fp32 partial sums to another CTA: after the
  publishing half's last partial-sum store (``STG.E.128``) come the consumers' named barrier
  (``BAR.SYNC`` 3) and a ``MEMBAR.ALL.GPU`` before the flag's release add; the combining half
  spins with an acquire load (``LDG.E.STRONG.GPU``) and passes the same barrier before its first
  partial-sum load. On the GPU a relaxed flag or a missing barrier survived the plain and
  perturbed properties (the stores land before the flag in practice), so the code must show both;
* the staged epilogue (``epilogue="smem"``) writes a pass of C into its staging buffer (a run of
  ``STSM``) only after a ``BAR.SYNC`` that follows every earlier read of the buffer (the previous
  pass's ``LDS``, or the previous tile, whose epilogue lies behind the mainloop's last wgmma wait),
  and reads it back only after a ``BAR.SYNC`` that follows the whole run. A warp that skips either
  barrier rewrites rows another warp has not read yet, or reads rows another warp has not written:
  the hardware shows neither on most runs (the removed rewrite barrier survived the plain and
  perturbed properties on the GPU; compute-sanitizer's racecheck sees it).

Every production variant (kernel.hopper.variants PRODUCTION_VARIANTS) is in the rule set.
"""

import pytest

from kernel.hopper.variants import PRODUCTION_VARIANTS, named_configs
from profiling import sass

pytestmark = pytest.mark.compile

# one variant per consumer layout (1 warpgroup; 2 warpgroups on a swapped tile), per dequant path
LABELS = (
    "h90_m128n128k256_s3_wg1_fp16",
    "h90_m128n128k256_s3_wg2_swap_fp16",
    "h90_m128n128k256_s3_wg1_fp16_prmt",
    # the A operand from registers (x_operand="regs"), TMA loads, two fp16 buffers
    "h90_m128n128k256_s4_wg2_swap_fp16_tma_prmt_rs",
    # C staged through shared memory (stmatrix reads the accumulators)
    "h90_m128n128k256_s4_wg2_swap_fp16_tma_prmt_rs_es",
    # the 256-row Y tile with phase 1 before the tiles (the production dense builds' twin: its
    # completion barrier and cut last round)
    "h90_m256n128k256_s3_wg2_b4_swap_fp16_tma_prmt_rs_prec1xsb8h_es_pwg_sk",
)
# ... and every production variant: bench4's (4 fp16 buffers, two groups in flight) and the
# prepass build (Y from the workspace by TMA into a ring of fp16 buffers)
LABELS += tuple(c.label for c in PRODUCTION_VARIANTS if c.label not in LABELS)
CONFIGS = named_configs()
# the consumers decode Y into fp16 buffers they rewrite themselves / the producer's TMA refills them
DECODED_Y = tuple(label for label in LABELS if CONFIGS[label].y_source != "prepass")
TMA_Y_RING = tuple(label for label in LABELS if CONFIGS[label].y_source == "prepass")
# ... with phase 1 decoded before the tiles, behind a completion barrier (phase1_beside builds
# hand their rows over per chunk: test_beside_variant_sass_structure in test_hopper_compile.py)
PHASE1_FIRST = tuple(label for label in TMA_Y_RING if not CONFIGS[label].phase1_beside)
# C staged through shared memory
STAGED_C = tuple(label for label in LABELS if CONFIGS[label].epilogue == "smem")
# the last round's tiles cut in K halves
SPLIT_LAST = tuple(label for label in LABELS if CONFIGS[label].schedule == "split_last")


class _Instructions(dict):
    """label -> the main kernel's instructions (``profiling.sass.kernel_code``: the function with
    the most instructions, the static report's too), compiled on first use (so a selection of
    some labels, ``-k LABEL`` or node ids, compiles only those variants), from the process's
    shared builds."""

    def __init__(self, static_builds):
        super().__init__()
        self.static_builds = static_builds

    def __missing__(self, label):
        self[label] = self.static_builds.code(CONFIGS[label])
        return self[label]


@pytest.fixture(scope="module")
def instructions(static_builds):
    return _Instructions(static_builds)


def _groups_left(ins: sass.Instruction) -> int:
    """``WARPGROUP.DEPBAR.LE gsb0, 0xN`` -> N."""
    return int(ins.operands.split(",")[-1].strip().rstrip(";"), 16)


@pytest.mark.parametrize("label", LABELS)
def test_epilogue_waits_for_all_wgmma_before_storing(instructions, label):
    code = instructions[label]
    last_mma = max(i.offset for i in code if i.opcode.startswith("HGMMA"))
    # the epilogue's first read of the accumulators: a global store, or (epilogue="smem") stmatrix
    first_store = min(i.offset for i in code if i.opcode.startswith(("STG", "STSM")) and i.offset > last_mma)
    waits = [i for i in code if i.opcode.startswith("WARPGROUP.DEPBAR") and last_mma < i.offset < first_store]
    assert waits, f"{label}: no wgmma wait between the last HGMMA (0x{last_mma:x}) and the epilogue (0x{first_store:x})"
    assert _groups_left(waits[-1]) == 0, (
        f"{label}: the last wgmma wait before the epilogue leaves {_groups_left(waits[-1])} group(s) in flight: "
        "the epilogue may read accumulators a wgmma is still writing"
    )


def _barrier_before_store_run(code, start: int, run: int):
    """From instruction ``start`` on: whether a ``BAR.SYNC`` comes before the ``run``-th run of
    shared stores (a run: ``STS*`` instructions with no barrier, HGMMA or wgmma wait among them);
    True when the code ends first."""
    runs, in_run = 0, False
    for i in code[start:]:
        if i.opcode.startswith("BAR.SYNC"):
            return True
        if i.opcode.startswith("STS"):
            if not in_run:
                runs, in_run = runs + 1, True
                if runs == run:
                    return False
        elif i.opcode.startswith(("HGMMA", "WARPGROUP.DEPBAR")):
            in_run = False
    return True


@pytest.mark.parametrize("label", DECODED_Y)
def test_barrier_before_a_dequant_buffer_is_rewritten(instructions, label):
    code = instructions[label]
    cfg = CONFIGS[label]
    left = cfg.wgmma_in_flight
    partial_waits = [n for n, i in enumerate(code) if i.opcode.startswith("WARPGROUP.DEPBAR") and _groups_left(i) > 0]
    assert partial_waits, f"{label}: no partial wgmma wait found (the test no longer matches the kernel)"
    assert {_groups_left(code[n]) for n in partial_waits} == {left}, (label, {_groups_left(code[n]) for n in partial_waits})
    for n in partial_waits:
        assert _barrier_before_store_run(code, n + 1, cfg.fp16_buffers - left), (
            f"{label}: after the wgmma wait at 0x{code[n].offset:x} the decode stores of sub-block "
            f"+{cfg.fp16_buffers - left} come before any barrier: a warp may overwrite a buffer another warp's "
            "wgmma still reads"
        )


@pytest.mark.parametrize("label", TMA_Y_RING)
def test_a_tma_refilled_buffer_is_released_after_its_wgmma_retired(instructions, label):
    code = instructions[label]
    left = CONFIGS[label].wgmma_in_flight
    releases = [n for n, i in enumerate(code) if i.opcode.startswith("SYNCS.ARRIVE.TRANS64.ART0")]
    mmas = [n for n, i in enumerate(code) if i.opcode.startswith("HGMMA")]
    checked = 0
    for n in releases:
        last = [m for m in mmas if m < n]
        if not last:
            continue  # before the first wgmma in code order (a raw stage's first release)
        waits = [i for i in code[last[-1]:n] if i.opcode.startswith("WARPGROUP.DEPBAR")]
        assert waits and min(_groups_left(w) for w in waits) <= left, (
            f"{label}: the release arrive at 0x{code[n].offset:x} follows the HGMMA at 0x{code[last[-1]].offset:x} "
            f"with no wgmma wait leaving at most {left} group(s): the producer may refill a buffer a wgmma still reads")
        checked += 1
    assert checked >= 4, f"{label}: {checked} release arrives after a wgmma (the test no longer matches the kernel)"


def _stsm_runs(code) -> list[tuple[int, int]]:
    """The staged epilogue's writes of each pass: runs of ``STSM`` with no barrier, shared load,
    wgmma or wgmma wait between its stores."""
    return sass.runs(code, "STSM", ("BAR.SYNC", "LDS", "HGMMA", "WARPGROUP.DEPBAR"))


@pytest.mark.parametrize("label", STAGED_C)
def test_the_staged_epilogue_rewrites_and_reads_its_buffer_behind_barriers(instructions, label):
    code = instructions[label]
    runs = _stsm_runs(code)
    assert runs, f"{label}: a staged epilogue with no STSM (the test no longer matches the kernel)"
    for first, last in runs:
        # backwards from the run: the barrier, before any earlier read of the buffer or the
        # mainloop's last wgmma wait (the previous tile's reads lie behind it)
        before = next((i for i in reversed(code[:first])
                       if i.opcode.startswith(("BAR.SYNC", "LDS", "STSM", "HGMMA", "WARPGROUP.DEPBAR"))), None)
        assert before is not None and before.opcode.startswith("BAR.SYNC"), (
            f"{label}: the staging writes at 0x{code[first].offset:x} follow "
            f"{before.opcode + ' at 0x%x' % before.offset if before else 'the kernel start'} with no barrier: a warp "
            "may rewrite rows of the staging buffer another warp of its warpgroup has not read yet")
        after = next((i for i in code[last + 1:] if i.opcode.startswith(("BAR.SYNC", "LDS"))), None)
        assert after is not None and after.opcode.startswith("BAR.SYNC"), (
            f"{label}: the staging reads at 0x{after.offset if after else 0:x} follow the writes ending at "
            f"0x{code[last].offset:x} with no barrier: a warp may read rows another warp has not written yet")


def _first(code, start: int, stop: int, prefix: str, operands: str | None = None) -> int | None:
    """Index of the first instruction in ``code[start:stop]`` whose opcode starts with ``prefix``
    (and whose operands are ``operands``, when given)."""
    return next((n for n in range(start, stop) if code[n].opcode.startswith(prefix)
                 and (operands is None or code[n].operands.strip().rstrip(";").strip() == operands)), None)


def _last(code, start: int, stop: int, prefix: str) -> int | None:
    return next((n for n in range(stop - 1, start - 1, -1) if code[n].opcode.startswith(prefix)), None)


@pytest.mark.parametrize("label", PHASE1_FIRST)
def test_phase1_hands_its_rows_to_the_async_proxy_behind_fences(instructions, label):
    code = instructions[label]
    publish = _first(code, 0, len(code), "REDG.E.ADD.STRONG.GPU")
    assert publish is not None, f"{label}: no release add publishing a phase-1 chunk (the test no longer matches the kernel)"
    barrier = _first(code, publish, len(code), "BAR.SYNC", "0x0")
    assert barrier is not None, f"{label}: no CTA barrier after phase 1's publish (the test no longer matches the kernel)"
    stg = _last(code, 0, publish, "STG")
    assert stg is not None, f"{label}: no workspace store before phase 1's publish (the test no longer matches the kernel)"
    at = f"{label}: phase 1's last workspace store at 0x{code[stg].offset:x}, its publish at 0x{code[publish].offset:x}"
    assert _first(code, stg, publish, "FENCE.VIEW.ASYNC.G") is not None, (
        f"{at}: no async-proxy fence between them: another CTA's TMA may read rows the generic stores have not made "
        "visible to the async proxy")
    assert _first(code, stg, publish, "MEMBAR.ALL.GPU") is not None, (
        f"{at}: no GPU-scope fence between them: the publish is not a release of the chunk's stores")
    sts = _last(code, 0, barrier, "STS")
    assert sts is not None, f"{label}: no staging-slot store before phase 1's completion barrier"
    assert _first(code, sts, barrier, "FENCE.VIEW.ASYNC.S") is not None, (
        f"{label}: phase 1's last staging-slot store at 0x{code[sts].offset:x} reaches the completion barrier at "
        f"0x{code[barrier].offset:x} with no shared-memory async-proxy fence: the Y ring's TMA may later write the same "
        "bytes unordered with it")
    tma = _first(code, barrier, len(code), "UTMALDG")
    assert tma is not None, f"{label}: no TMA load after phase 1's completion barrier (the test no longer matches the kernel)"
    assert _first(code, barrier, tma, "FENCE.VIEW.ASYNC.G") is not None, (
        f"{label}: the first TMA load after phase 1's completion barrier (0x{code[tma].offset:x}) has no async-proxy fence "
        f"after the barrier (0x{code[barrier].offset:x}): it may read workspace rows its CTA acquired through the generic proxy only")


@pytest.mark.parametrize("label", SPLIT_LAST)
def test_a_cut_tile_hands_its_partial_sums_over_behind_a_barrier_and_a_release(instructions, label):
    from kernel.hopper.config import SPLIT_BARRIER_ID

    code = instructions[label]
    threads = CONFIGS[label].consumer_threads
    bars = [n for n, ins in enumerate(code) if ins.opcode.startswith("BAR.SYNC")
            and ins.operands.replace(" ", "").rstrip(";") == f"{SPLIT_BARRIER_ID:#x},{threads:#x}"]
    assert len(bars) == 2, f"{label}: the split barrier twice (publish, combine), found {len(bars)}"
    publish_bar, combine_bar = bars
    stores = [n for n in range(publish_bar) if code[n].opcode.startswith("STG.E.128")]
    assert stores, f"{label}: no partial-sum store before the publish's barrier (the test no longer matches the kernel)"
    release = _first(code, publish_bar, combine_bar, "REDG.E.ADD.STRONG.GPU")
    assert release is not None, (f"{label}: no release add of the cut tile's flag after the barrier at "
                                 f"0x{code[publish_bar].offset:x}: its partial sums are published with a relaxed "
                                 "store or not at all")
    assert not [n for n in range(publish_bar, release) if code[n].opcode.startswith("STG")], (
        f"{label}: a partial-sum store after the publish's barrier: thread 0 may release the flag before it lands")
    assert _first(code, publish_bar, release, "MEMBAR.ALL.GPU") is not None, (
        f"{label}: no GPU-scope fence between the barrier and the flag's add at 0x{code[release].offset:x}: the add "
        "does not release the other threads' partial sums")
    spin = _last(code, 0, combine_bar, "LDG.E.STRONG.GPU")
    assert spin is not None and spin > release, (
        f"{label}: no acquire spin on the flag before the combine's barrier at 0x{code[combine_bar].offset:x}")
    loads = [n for n in range(len(code)) if code[n].opcode.startswith("LDG.E.128") and n > release]
    assert loads and min(loads) > combine_bar, (
        f"{label}: a partial-sum load before the combine's barrier: it may read the slot before the flag's acquire")


# builds whose producer warpgroup hands registers to the consumers (setmaxnreg)
REGISTER_HANDOFF = tuple(c.label for c in CONFIGS.values() if c.producer_warpgroup)
# phase 1 beside the tiles: chunk flags instead of the completion barrier
BESIDE = tuple(c.label for c in CONFIGS.values() if c.phase1_beside)
# ... whose producer stops acquiring flags once every chunk is counted
DONE_SKIP = tuple(c.label for c in CONFIGS.values() if c.chunk_done_skip)


@pytest.mark.parametrize("label", REGISTER_HANDOFF)
def test_the_producer_warpgroup_hands_its_registers_to_the_consumers(instructions, label):
    """setmaxnreg: ptxas drops an instruction it cannot honour (a role's value carried past a join,
    results row D30) without failing the build; the SASS must show the producer warpgroup's
    ``USETMAXREG.DEALLOC`` and the consumers' ``USETMAXREG.TRY_ALLOC`` at the config's figures."""
    from kernel.hopper import config as cfgmod

    config = CONFIGS[label]
    give, take = config.warpgroup_regs
    assert 128 * give + 256 * take == config.threads * config.launch_register_cap
    if not config.phase1_beside:
        assert (give, take) == (cfgmod.PRODUCER_WARPGROUP_REGS, cfgmod.CONSUMER_WARPGROUP_REGS)
    ops = [(ins.opcode, ins.operands.replace(" ", "").rstrip(";")) for ins in instructions[label]
           if ins.opcode.startswith("USETMAXREG")]
    assert [o for o in ops if o[0].startswith("USETMAXREG.DEALLOC") and o[1].endswith(f"{give:#x}")], (label, ops)
    assert [o for o in ops if o[0].startswith("USETMAXREG.TRY_ALLOC") and o[1].endswith(f"{take:#x}")], (label, ops)


@pytest.mark.parametrize("label", BESIDE)
def test_phase1_beside_hands_each_chunk_over_behind_a_release_and_each_tile_reads_behind_an_acquire(
        instructions, label):
    """phase1_beside: no CTA-wide barrier once the roles start (the first ``USETMAXREG``: nothing
    waits for all of phase 1); a chunk's publish
    (``REDG.E.ADD.STRONG.GPU``) follows the last workspace store before it with an async-proxy
    fence and a GPU-scope fence between; and some TMA load follows an acquire spin
    (``LDG.E.STRONG.GPU``) and an async-proxy fence after it (the producer's wait for its tile's
    chunks)."""
    code = instructions[label]
    roles = _first(code, 0, len(code), "USETMAXREG")
    assert roles is not None, f"{label}: no setmaxnreg (the test no longer matches the kernel)"
    late = _first(code, roles, len(code), "BAR.SYNC", "0x0")
    assert late is None, f"{label}: a CTA-wide barrier at 0x{code[late].offset:x}, after the roles start"
    publishes = [n for n, ins in enumerate(code) if ins.opcode.startswith("REDG.E.ADD.STRONG.GPU")]
    assert publishes, f"{label}: no release add (the test no longer matches the kernel)"
    from kernel.hopper.config import PHASE1_BARRIER_ID

    checked = 0
    for publish in publishes:
        bar = _last(code, 0, publish, "BAR.SYNC")
        if bar is None or not code[bar].operands.replace(" ", "").startswith(f"{PHASE1_BARRIER_ID:#x},"):
            continue  # not behind the helpers' chunk barrier: the cut tile's flag
        stg = _last(code, 0, bar, "STG")
        assert stg is not None, f"{label}: no workspace store before the chunk barrier at 0x{code[bar].offset:x}"
        at = f"{label}: a workspace store at 0x{code[stg].offset:x}, then a publish at 0x{code[publish].offset:x}"
        assert _first(code, stg, publish, "FENCE.VIEW.ASYNC.G") is not None, f"{at} with no async-proxy fence"
        assert _first(code, stg, publish, "MEMBAR.ALL.GPU") is not None, f"{at} with no GPU-scope fence"
        checked += 1
    assert checked, f"{label}: no chunk publish after a workspace store (the test no longer matches the kernel)"
    guarded = []
    for tma in (n for n, ins in enumerate(code) if ins.opcode.startswith("UTMALDG")):
        fence = _last(code, 0, tma, "FENCE.VIEW.ASYNC.G")
        if fence is not None and _last(code, 0, fence, "LDG.E.STRONG.GPU") is not None:
            spin = _last(code, 0, fence, "LDG.E.STRONG.GPU")
            if not [n for n in range(spin, fence) if code[n].opcode.startswith(("REDG", "STG"))]:
                guarded.append(tma)
    assert guarded, f"{label}: no TMA load behind an acquire spin and an async-proxy fence (the producer's chunk wait)"


@pytest.mark.parametrize("label", DONE_SKIP)
def test_the_done_count_skip_rests_on_a_release_count_and_an_acquire_fence(instructions, static_builds, label):
    """chunk_done_skip: against the same build without it, exactly one more release add
    (``REDG.E.ADD.STRONG.GPU``: the lead helper's count of each chunk, right behind a
    ``MEMBAR.ALL.GPU``; the chunk-publish rule above checks its fences after the chunk's stores),
    and the producer's skip: a ``MEMBAR.ALL.GPU`` (its ``fence.acq_rel``, the acquire of every
    counted publish) followed by a ``FENCE.VIEW.ASYNC.G`` with no memory access between, which the
    build without the skip does not have. A relaxed count or a skip without its fence passes the
    GPU properties whenever the hardware orders the writes anyway; the code must show both."""
    import dataclasses

    code = instructions[label]
    twin = static_builds.code(dataclasses.replace(CONFIGS[label], chunk_done_skip=False))

    def releases(ins):
        return [n for n, i in enumerate(ins) if i.opcode.startswith("REDG.E.ADD.STRONG.GPU")]

    def acquire_then_proxy(ins):
        pairs = []
        for n in (n for n, i in enumerate(ins) if i.opcode.startswith("MEMBAR.ALL.GPU")):
            for k in range(n + 1, min(n + 10, len(ins))):
                op = ins[k].opcode
                if op.startswith("FENCE.VIEW.ASYNC.G"):
                    pairs.append((n, k))
                    break
                if op.startswith(("UTMALDG", "REDG", "STG", "LDG", "ATOMG", "BRA")):
                    break
        return pairs

    assert len(releases(code)) == len(releases(twin)) + 1, f"{label}: the chunk count is not a release add"
    assert all(_last(code, 0, r, "MEMBAR.ALL.GPU") is not None for r in releases(code))
    assert acquire_then_proxy(code) and not acquire_then_proxy(twin), (
        f"{label}: no fence.acq_rel then proxy fence for the producer's skip")
