"""Compile the Hopper variants for sm_90a on the CPU; inspect the cubin's SASS.

The compile names its target (``--gpu-arch sm_90a``), whatever CUTE_DSL_ARCH says; needs
``cuobjdump`` from the nvidia-cuda-cuobjdump wheel (or on PATH).
"""

import glob
import os
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.compile

from ci.ptx_convergence import check_ptx
from kernel.hopper import DEFAULT_CONFIG, STATIC_MATRIX, compile_cache, compile_for, static_build
from kernel.hopper.config import SPILL_ALLOWANCE


def _cuobjdump() -> str | None:
    found = shutil.which("cuobjdump")
    if found:
        return found
    for pattern in ("nvidia/cu13/bin/cuobjdump", "nvidia/cuda_cuobjdump/bin/cuobjdump"):
        for site in sys.path:
            hits = glob.glob(os.path.join(site, pattern))
            if hits:
                return hits[0]
    return None


def _compile_to_cubin(config, num_groups, tmp_path):
    """A fresh compile (the cache would skip it) through the static report's hook."""
    return static_build(config, tmp_path, num_groups=num_groups)["cubin"]


@pytest.mark.parametrize("config", STATIC_MATRIX, ids=lambda c: c.label)
def test_sass_has_hgmma_and_no_local_memory(config, tmp_path):
    tool = _cuobjdump()
    if tool is None:
        pytest.skip("cuobjdump not found (pip install nvidia-cuda-cuobjdump)")
    cubin = _compile_to_cubin(config, 8, tmp_path)
    sass = subprocess.run([tool, "--dump-sass", cubin], capture_output=True, text=True, check=True).stdout
    assert "HGMMA" in sass, "no wgmma in the SASS"
    lines = sass.splitlines()
    local = [n for n, line in enumerate(lines) if "STL" in line or "LDL" in line]
    usage = subprocess.run([tool, "--dump-resource-usage", cubin], capture_output=True, text=True, check=True).stdout
    allowed, _why = SPILL_ALLOWANCE.get(config.label, (0, ""))
    if not allowed:
        assert not local, f"{len(local)} local-memory instructions, e.g. {lines[local[0]].strip()}"
        assert "STACK:0" in usage, usage
    else:
        # a declared allowance (config.SPILL_ALLOWANCE): at most that many bytes stored, and no
        # local-memory access between the first and the last wgmma (none in the K loop)
        stores = [lines[n] for n in local if "STL" in lines[n]]
        assert sum(16 if ".128" in x else 8 if ".64" in x else 4 for x in stores) <= allowed, stores
        mmas = [n for n, line in enumerate(lines) if "HGMMA" in line]
        assert not [n for n in local if mmas[0] < n < mmas[-1]], "a spill inside the wgmma span"
    # the PTX kept beside the cubin: CTA-wide barriers reached by the whole CTA at one
    # instruction, .aligned instructions by whole warps (ci.ptx_convergence; session 8's
    # undefined completion barrier was caught by compute-sanitizer on a GPU only)
    (ptx,) = glob.glob(os.path.join(os.path.dirname(cubin), "*.ptx"))
    with open(ptx) as f:
        found = check_ptx(f.read())
    assert not found, "\n".join(str(v) for _, v in found)


def test_compile_cache_compiles_once_per_config_and_group_count():
    before = compile_cache.stats.compiles
    compile_for(DEFAULT_CONFIG, 3)
    compile_for(DEFAULT_CONFIG, 3)
    assert compile_cache.stats.compiles - before <= 1
    assert (DEFAULT_CONFIG, 3) in compile_cache.keys()


def test_shape_sweep_compiles_once():
    """20 shape sets through the host path of one variant: one compile (shapes are run-time values).

    ``launch`` compiles ``compile_for(prep.config, prep.plan.num_groups)``; a dry-run prepare
    gives the same key without a GPU."""
    import random

    import oracle
    from kernel.hopper import prepare

    rng = random.Random(20261129)
    compile_cache.clear()
    for i in range(20):
        sizes = [(rng.randint(0, 400), rng.randint(1, 900), 256 * rng.randint(1, 4), 1) for _ in range(3)]
        prep = prepare(oracle.make_inputs(sizes, i, device="cpu"), DEFAULT_CONFIG, dry_run=True)
        compile_for(prep.config, prep.plan.num_groups)
    assert compile_cache.stats.compiles == 1, compile_cache.stats
    assert compile_cache.stats.hits == 19


def _kernel_without_spills(config, tmp_path):
    """``config``'s kernel instructions (8 groups), after checking it uses no stack or local
    memory (no spill stores or loads)."""
    from profiling import sass

    build = static_build(config, tmp_path, num_groups=8)
    ins = sass.kernel_code(build["cubin"])
    usage = [u for u in sass.resource_usage(build["cubin"]) if u.function == ins[0].function][0]
    if config.label not in SPILL_ALLOWANCE:
        assert usage.stack_bytes == 0 and usage.local_bytes == 0
        assert not [i for i in ins if i.opcode.startswith(("STL", "LDL"))]
    return ins


def test_prepass_variant_sass_structure(tmp_path):
    """y_source="prepass" (issue 14p, experimental): phase 1 (global decode, claim atomics, the
    release add and the acquire spin, the generic -> async proxy fences) comes before the tile
    loop; the tile loop has no CTA barrier (only mbarriers), per 256-K stage one X TMA box, one
    bulk copy of X's scales and four Y TMA boxes, and 4 sub-blocks x 4 HGMMAs with at most one
    group in flight before a Y buffer is released; 0 spills."""
    config = next(c for c in STATIC_MATRIX if c.label.endswith("_rs_pre"))  # the first prepass variant (no run-time chunks, no 64-row tails)
    ins = _kernel_without_spills(config, tmp_path)
    ops = [i.opcode for i in ins]

    def first(prefix):
        return next(n for n, o in enumerate(ops) if o.startswith(prefix))

    def count(prefix):
        return sum(o.startswith(prefix) for o in ops)

    assert count("HGMMA") == 16
    assert count("UTMALDG") == 5 and count("UBLKCP") == 1
    # phase 1: global decode (128-bit loads and stores), claim, release add, acquire spin, fences
    assert count("STG.E.128") >= 8 and count("ATOMG.E.ADD.STRONG.GPU") >= 2 and count("REDG.E.ADD.STRONG.GPU") == 1
    assert any(o.startswith("LDG.E.STRONG.GPU") for o in ops)
    assert count("FENCE.VIEW.ASYNC.G") >= 2
    tile_loop = first("UTMALDG")
    assert max(n for n, o in enumerate(ops) if o.startswith("BAR.")) < tile_loop, "a CTA barrier in the tile loop"
    assert first("REDG") < tile_loop and first("HGMMA") > tile_loop
    waits = [i.operands for i in ins if i.opcode.startswith("WARPGROUP.DEPBAR")]
    assert waits and all(int(w.split(",")[-1].strip().rstrip(";"), 16) <= 1 for w in waits), waits


# (phase 1 in a launch of its own: kernel/tests/test_hopper_phase1_kernel.py)
@pytest.mark.parametrize("label", [c.label for c in STATIC_MATRIX
                                   if c.prepass_chunk and c.prepass_sync == "barrier" and not c.prepass_kernel_warps])
def test_prepass_chunk_variant_sass_structure(label, tmp_path):
    """Issue 14q (experimental): the run-time-chunk phase 1 issues every item's loads of a chunk
    (PREPASS_BATCH items x two 128-bit loads and one scale word, predicated) before its
    decodes, claims the next chunk inside the loop (two claim atomics and one passed atomic);
    phase 1's completion barrier is ONE instruction that every thread executes (bar.sync is
    barrier.sync.aligned: two role sites were undefined in PTX, and compute-sanitizer synccheck
    aborted the launch on them, session 8); with ``prepass_x_early`` the producer's first X
    stages (TMA box and scale bulk copy) come before that barrier (``prepass_x_before``: before
    phase 1) and every Y box after it; no other CTA barrier after it; 0 spills."""
    from kernel.hopper.config import PREPASS_BATCH, STREAMK_BARRIER_ID

    config = next(c for c in STATIC_MATRIX if c.label == label)
    ins = _kernel_without_spills(config, tmp_path)
    ops = [i.opcode for i in ins]
    # (y_tail64: both wgmma shapes per sub-block, test_tail64_variant_sass_structure; y_tail16: eight)
    assert sum(o.startswith("HGMMA") for o in ops) == (32 if config.y_tail64 else 128 if config.y_tail16 else 16)
    # the batched loads: predicated 128-bit loads of every item before the first decode store
    first_stg = next(n for n, o in enumerate(ops) if o.startswith("STG.E.128"))
    batched = [i for i in ins[:first_stg] if i.opcode.startswith("LDG.E.128") and i.predicate]
    assert len(batched) == 2 * PREPASS_BATCH, [i.opcode for i in batched]
    # (epilogue="smem": plus the staged epilogue's mma_n / 16 16-byte stores of C)
    staged = config.mma_n // 16 if config.epilogue == "smem" else 0
    # (stream_k: plus a partial's acc_regs_per_thread / 4 16-byte stores, test_hopper_streamk.py)
    partial = config.acc_regs_per_thread // 4 if config.stream_k else 0
    assert sum(o.startswith("STG.E.128") for o in ops) == 8 * PREPASS_BATCH + staged + partial
    # (prepass_first_local: the producer's count-through at two sites, before its first workspace
    # box and at the end for a CTA without one)
    assert sum(o.startswith("ATOMG.E.ADD.STRONG.GPU") for o in ops) == 3 + config.prepass_first_local
    # after the chunk loop's release add: one CTA barrier, the completion barrier (the producer's
    # early X stages and thread 0's spin before it, both roles' work after it; prepass_first_local:
    # the local decode's barrier, the first K tile's predicated loads and swizzled shared stores
    # before it, the producer's spin after it)
    red = next(n for n, o in enumerate(ops) if o.startswith("REDG"))
    # (cluster_x = 2: a barrier.cluster compiles to UCGABAR_ARV/WAIT and ptxas's fallback for a
    # launch without clusters, a BAR.SYNC right behind the UCGABAR_WAIT: not one of the kernel's)
    # (epilogue="smem": the staged epilogue's per-warpgroup barriers, 128 threads, are not CTA barriers;
    # stream_k: nor the consumers' barrier around a partial, test_hopper_streamk.py)
    streamk = f"{hex(STREAMK_BARRIER_ID)},{hex(config.consumer_threads)}"
    bars = [n for n, o in enumerate(ops) if o.startswith("BAR.") and n > red and "UCGABAR_WAIT" not in ops[n - 3:n]
            and not (staged and ins[n].operands.replace(" ", "").endswith(",0x80"))
            and not (config.stream_k and ins[n].operands.replace(" ", "") == streamk)]
    assert len(bars) == 1 and bars[0] < next(n for n, o in enumerate(ops) if o.startswith("HGMMA")), bars
    x_before = config.prepass_x_before or config.prepass_first_local
    early = [o for o in ops[red:bars[0]] if o.startswith(("UTMALDG", "UBLKCP"))]
    assert bool(early) == (config.prepass_x_early and not x_before), early
    spins = [n for n, o in enumerate(ops) if o.startswith("LDG.E.STRONG.GPU")]
    if config.prepass_first_local:
        local = ins[red:bars[0]]
        assert sum(i.opcode.startswith("LDG.E.128") and bool(i.predicate) for i in local) == 4
        assert sum(i.opcode.startswith("STS.128") for i in local) >= 8
        assert spins and all(n > bars[0] for n in spins), spins  # only the producer waits, after it
    else:
        assert spins and min(spins) < bars[0], spins
    if x_before:
        early = [o for o in ops[:red] if o.startswith(("UTMALDG", "UBLKCP"))]
    if config.prepass_x_early or config.prepass_x_before:
        assert {o.split(".")[0] for o in early} == {"UTMALDG", "UBLKCP"}


@pytest.mark.parametrize("label", [c.label for c in STATIC_MATRIX if c.prepass_sync == "flags" and not c.prepass_decoders])
def test_prepass_flags_variant_sass_structure(label, tmp_path):
    """Issue 14 (session 4, prepass_sync="flags"): no grid barrier (no release add, no spin
    before a CTA barrier); phase 1 publishes its flag cells with a fenced acq_rel add and a
    release store (MEMBAR.GPU before the strong store), and counts the CTA through with a
    fourth atomic; the producer's flag wait (strong GPU loads, a ballot, nanosleep) and then
    the generic -> async proxy fence come before the first Y TMA box and after the early X
    stages; no CTA barrier after phase 1; 16 HGMMAs, 0 spills. Its barrier twin keeps the
    grid barrier (its release add) and has none of the flag wait."""
    import dataclasses

    config = next(c for c in STATIC_MATRIX if c.label == label)
    ins = _kernel_without_spills(config, tmp_path)
    ops = [i.opcode for i in ins]

    def at(prefix):
        return [n for n, o in enumerate(ops) if o.startswith(prefix)]

    assert len(at("HGMMA")) == 16
    assert not at("REDG"), "a grid barrier's release add in the flags build"
    # claim, next claim, the flag cell's acq_rel add, the CTA's count through phase 1
    assert len(at("ATOMG.E.ADD.STRONG.GPU")) == 4
    # the first add of a flag cell is fenced (fence.acq_rel.gpu), the flag store released
    first_cell_add = at("ATOMG.E.ADD.STRONG.GPU")[2]
    assert "MEMBAR.ALL.GPU" in ops[first_cell_add - 6:first_cell_add]
    releases = [n for n in at("STG.E.STRONG.GPU") if "MEMBAR.ALL.GPU" in ops[n - 4:n]]
    assert releases and releases[0] > first_cell_add
    bars = at("BAR.")
    assert max(bars) < first_cell_add, "a CTA barrier after phase 1"
    # the producer: flag loads (strong, GPU scope), ballot, backoff, then the proxy fence
    waits = [n for n in at("LDG.E.STRONG.GPU") if n > max(bars)]
    assert len(waits) >= 1 and at("VOTE.ANY") and at("NANOSLEEP")
    fence = [n for n in at("FENCE.VIEW.ASYNC.G") if n > waits[0]]
    y_boxes = [n for n in at("UTMALDG") if n > fence[0]]
    assert fence and len(y_boxes) >= 4
    ballot = [n for n in at("VOTE.ANY") if waits[0] < n < fence[0]]
    assert ballot
    # the early X stages (TMA box and scale bulk copy) come before the first flag wait
    early = {ops[n].split(".")[0] for n in range(max(bars), waits[0]) if ops[n].startswith(("UTMALDG", "UBLKCP"))}
    assert early == ({"UTMALDG", "UBLKCP"} if config.prepass_x_early else set()), early
    # the writers' own proxy fence stays in phase 1 (before the chunk's CTA barrier)
    assert any(n < max(bars) for n in at("FENCE.VIEW.ASYNC.G"))
    twin = _kernel_without_spills(dataclasses.replace(config, prepass_sync="barrier"), tmp_path / "twin")
    twin_ops = [i.opcode for i in twin]
    assert sum(o.startswith("REDG") for o in twin_ops) == 1 and not any(o.startswith("VOTE.ANY") for o in twin_ops)


def _cluster_twin(config):
    """The same variant without clusters (cluster_x = 1)."""
    import dataclasses

    return dataclasses.replace(config, cluster_x=1)


@pytest.mark.parametrize("label", [c.label for c in STATIC_MATRIX if c.cluster_x == 2 and not c.y_cluster_decode])
def test_cluster_variant_sass_structure(label, tmp_path):
    """cluster_x = 2 (issue 14, experimental): every Y box is a multicast TMA (UTMALDG.MULTICAST,
    four per 256-K stage) and X stays per CTA (plain UTMALDG); every Y release is two remote
    mbarrier arrives (SYNCS.ARRIVE...RED: lane r on rank r's empty barrier) where the twin without
    clusters arrives locally once, the X stage's release stays local; the cluster barrier runs after
    the Y ring's init and before phase 1's first claim (UCGABAR_WAIT before the first REDG and
    the first multicast) and again at the end, after the last wgmma and the last C store; the
    twin has none of the three; 0 spills."""
    config = next(c for c in STATIC_MATRIX if c.label == label)
    ins = _kernel_without_spills(config, tmp_path / "c2")
    ops = [i.opcode for i in ins]

    def where(prefix):
        return [n for n, o in enumerate(ops) if o.startswith(prefix)]

    mcast = where("UTMALDG.2D.MULTICAST")
    plain = [n for n in where("UTMALDG") if n not in mcast]
    assert len(mcast) == 4 and len(plain) >= 2, (len(mcast), len(plain))
    remote = where("SYNCS.ARRIVE.TRANS64.RED")
    local = [n for n in where("SYNCS.ARRIVE.TRANS64.ART0")]
    arv, wait = where("UCGABAR_ARV"), where("UCGABAR_WAIT")
    assert len(arv) == len(wait) == 2, (arv, wait)
    assert wait[0] < where("REDG")[0] and wait[0] < mcast[0], "the cluster sync after the barrier init comes first"
    assert arv[1] > max(where("HGMMA")) and arv[1] > max(where("STG")), "the exit cluster sync comes last"

    twin = _kernel_without_spills(_cluster_twin(config), tmp_path / "c1")
    tops = [i.opcode for i in twin]
    assert not [o for o in tops if "MULTICAST" in o or o.startswith("UCGABAR") or ".RED" in o and "SYNCS" in o]
    twin_local = [o for o in tops if o.startswith("SYNCS.ARRIVE.TRANS64.ART0")]
    # every Y release site of the twin (a local arrive) is one remote arrive per cluster rank
    # here (lane 0 on rank 0, lane 1 on rank 1); the X stage's release stays one local arrive
    assert len(local) == 1 and len(remote) == config.cluster_x * (len(twin_local) - 1) > 0, (
        len(twin_local), len(remote), len(local))


@pytest.mark.parametrize("label", [c.label for c in STATIC_MATRIX if c.y_tail64])
def test_tail64_variant_sass_structure(label, tmp_path):
    """Session 5 (y_tail64, experimental): per 64-K sub-block one branch of 4 HGMMA.64x64x16
    (a 64-row tile) and one of 4 HGMMA.64x128x16, each ending its own group (gsb0), into the
    same accumulator registers (the 64-wide one the first half); no null HGMMA (ptxas adds a
    ``HGMMA.64x8x16 RZ`` to carry a commit placed after the join: a second group per sub-block,
    and the wait_group(1) after it would then retire this sub-block's wgmmas before the next
    X decode); every wait leaves one group in flight; 0 spills within the 288-thread cap."""
    from profiling import sass

    config = next(c for c in STATIC_MATRIX if c.label == label)
    build = static_build(config, tmp_path, num_groups=8)
    ins = sass.kernel_code(build["cubin"])
    usage = [u for u in sass.resource_usage(build["cubin"]) if u.function == ins[0].function][0]
    assert usage.stack_bytes == 0 and usage.local_bytes == 0 and usage.registers <= config.launch_register_cap
    assert not [i for i in ins if i.opcode.startswith(("STL", "LDL"))]
    mmas = [i for i in ins if i.opcode.startswith("HGMMA")]
    shapes = [i.opcode.split(".")[1] for i in mmas]
    assert shapes.count("64x64x16") == 16 and shapes.count("64x128x16") == 16, shapes
    assert all(i.operands.split(",")[0].strip() == "R24" for i in mmas), "one accumulator base for both shapes"
    closing = [i for i in mmas if "gsb0" in i.operands]
    assert len(closing) == 8 and {i.opcode.split(".")[1] for i in closing} == {"64x64x16", "64x128x16"}
    waits = [i.operands for i in ins if i.opcode.startswith("WARPGROUP.DEPBAR")]
    assert waits and all(int(w.split(",")[-1].strip().rstrip(";"), 16) <= 1 for w in waits), waits


@pytest.mark.parametrize("label", [c.label for c in STATIC_MATRIX if c.epilogue == "smem"])
def test_staged_epilogue_sass_structure(label, tmp_path):
    """Session 6 (epilogue="smem", experimental): the staged epilogue is in the SASS and its twin
    (the same config with epilogue="direct", a production variant) has none of it. Per tile and
    thread: ``mma_n / 16`` STSM.16.MT88.4 (stmatrix.x4.trans; one pass of 8 on the fastest tile,
    two of 4 on the mixed-tail tile) after the last wgmma wait (``gsb0, 0x0``) and behind a
    128-thread named barrier, as many LDS.128 behind a second one, and one 16-byte STG.E.128 per
    LDS.128 (plus the 2-byte fallback for rows that are not 16-byte aligned); the direct
    epilogue's 2-byte stores from the accumulators are gone. 0 spills within the 288-thread cap."""
    import dataclasses

    from kernel.hopper.config import epilogue_stage_rows
    from profiling import sass

    config = next(c for c in STATIC_MATRIX if c.label == label)
    twin = dataclasses.replace(config, epilogue="direct")

    def code_of(cfg, name):
        build = static_build(cfg, tmp_path / name, num_groups=8)
        ins = sass.kernel_code(build["cubin"])
        usage = [u for u in sass.resource_usage(build["cubin"]) if u.function == ins[0].function][0]
        return ins, usage

    ins, usage = code_of(config, "staged")
    twin_ins, _ = code_of(twin, "direct")
    assert usage.registers <= config.launch_register_cap
    if config.label not in SPILL_ALLOWANCE:  # (an allowance: test_sass_has_hgmma_and_no_local_memory)
        assert usage.stack_bytes == 0 and usage.local_bytes == 0
        assert not [i for i in ins if i.opcode.startswith(("STL", "LDL"))]

    def ops(code, prefix):
        return [i for i in code if i.opcode.startswith(prefix)]

    stsm = ops(ins, "STSM.16.MT88.4")
    # the epilogue's shared loads (prepass_store="staged" also has LDS.128, in phase 1's copy,
    # before any tile)
    lds128 = [i for i in ops(ins, "LDS.128") if i.offset > stsm[0].offset]
    assert len(stsm) == config.mma_n // 16 and len(lds128) >= config.mma_n // 16
    assert len(ops(ins, "STG.E.128")) == len(ops(twin_ins, "STG.E.128")) + config.mma_n // 16
    assert not ops(twin_ins, "STSM") and not ops(ins, "STSM.16.M88")  # the direct twin stages nothing
    # the direct epilogue's one STG.E.U16 per accumulator value is gone (what remains: the 8-way
    # 2-byte fallback per staged chunk, and the prepass's own stores)
    assert len(ops(twin_ins, "STG.E.U16")) >= config.acc_regs_per_thread
    assert len(ops(ins, "STG.E.U16")) == len(ops(twin_ins, "STG.E.U16")) - config.acc_regs_per_thread + 8 * (config.mma_n // 16)
    # order: the last wgmma, a full wgmma wait, a 128-thread barrier, the stmatrix stores, a
    # barrier, the shared loads
    first_stsm = stsm[0].offset
    last_mma = max(i.offset for i in ins if i.opcode.startswith("HGMMA") and i.offset < first_stsm)
    waits = [i for i in ins if i.opcode.startswith("WARPGROUP.DEPBAR") and last_mma < i.offset < first_stsm]
    assert waits and waits[-1].operands.replace(" ", "").endswith("0x0"), waits
    bars = [i for i in ins if i.opcode.startswith("BAR.SYNC") and i.operands.replace(" ", "").endswith("0x80")]
    assert any(waits[-1].offset < b.offset < first_stsm for b in bars)
    first_pass = epilogue_stage_rows(config) // 16
    assert any(stsm[first_pass - 1].offset < b.offset < lds128[0].offset for b in bars)


def _background_builds():
    """The declared background builds, and (session 12) the one with a local first K tile
    (measured, not declared)."""
    from kernel.hopper.config import BACKGROUND_LOCAL_CONFIG

    return [c for c in STATIC_MATRIX if c.prepass_decoders] + [BACKGROUND_LOCAL_CONFIG]


@pytest.mark.parametrize("config", _background_builds(), ids=lambda c: c.label)
def test_background_phase1_sass_structure(config, tmp_path):
    """Session 10 (prepass_decoders > 0): phase 1 runs on the decoder warps alone. The only
    CTA-wide barriers are the two ring inits' at the start (before the first claim); the decoder
    warps sync with their own named barrier (id DECODER_BARRIER_ID, their thread count) and never
    with barrier 0 after it; the hand-off barrier has one arrive (the producer warp, before its
    first flag wait) and one sync (the decoder warps), and the CTA's count through phase 1 (the
    last of the four atomic adds: claim, next claim, flag cell, count) comes after that sync; no
    grid barrier (no release add); the producer's flag wait and proxy fence come before Y's
    boxes; no spills."""
    from kernel.hopper import config as cfgmod

    ins = _kernel_without_spills(config, tmp_path)
    ops = [i.opcode for i in ins]
    args = [i.operands.replace(" ", "") for i in ins]

    def at(prefix):
        return [n for n, o in enumerate(ops) if o.startswith(prefix)]

    assert len(at("HGMMA")) == (32 if config.y_tail64 else 16)
    assert not at("REDG"), "a grid barrier's release add in a background build"
    adds = at("ATOMG.E.ADD.STRONG.GPU")
    assert len(adds) == 4, adds
    cta_bars = [n for n in at("BAR.SYNC") if args[n] in ("0x0", "")]
    assert cta_bars and max(cta_bars) < adds[0], "a CTA-wide barrier after phase 1 began"
    dec = f"{cfgmod.DECODER_BARRIER_ID:#x},{32 * config.prepass_decoders:#x}"
    hand = f"{cfgmod.DECODER_HANDOFF_BARRIER_ID:#x},{32 * config.prepass_decoders + 32:#x}"
    assert len([n for n in at("BAR.SYNC") if args[n] == dec]) >= 2
    hand_sync = [n for n in at("BAR.SYNC") if args[n] == hand]
    hand_arrive = [n for n in at("BAR.ARV") if args[n] == hand]
    assert len(hand_sync) == 1 and len(hand_arrive) == 1, (hand_sync, hand_arrive)
    assert hand_sync[0] < adds[-1], "the CTA counted through phase 1 before the hand-off"
    # the producer: arrive, then the flag wait (ballot, backoff), the proxy fence, Y's boxes
    waits = [n for n in at("NANOSLEEP") if n > hand_arrive[0] and not ops[n].startswith("NANOSLEEP.SYNCS")]
    assert waits, "no flag wait after the producer's hand-off arrive"
    fence = [n for n in at("FENCE.VIEW.ASYNC.G") if n > waits[0]]
    assert fence and len([n for n in at("UTMALDG") if n > fence[0]]) >= 4
    # the decoders' own proxy fence before their chunk barrier
    assert any(n < hand_sync[0] for n in at("FENCE.VIEW.ASYNC.G"))
    if config.y_tail64:
        # the producer's balanced share: one arrive (after its store), one sync (the consumers)
        share = f"{cfgmod.SHARE_BARRIER_ID:#x},{config.consumer_threads + 32:#x}"
        assert len([n for n in at("BAR.ARV") if args[n] == share]) == 1
        assert len([n for n in at("BAR.SYNC") if args[n] == share]) == 1
    local = f"{cfgmod.LOCAL_BARRIER_ID:#x},{config.consumer_threads + 32:#x}"
    local_arrive = [n for n in at("BAR.ARV") if args[n] == local]
    local_sync = [n for n in at("BAR.SYNC") if args[n] == local]
    if not config.prepass_first_local:
        assert not local_arrive and not local_sync
        return
    # session 12 (prepass_first_local): the consumers' local decode between the share's sync and
    # their one arrive on the local barrier (each thread's items: two predicated 16-byte loads of
    # A each, their staged 16-byte shared stores), all before the first wgmma; the producer syncs
    # on it once
    assert len(local_arrive) == 1 and len(local_sync) == 1, (local_arrive, local_sync)
    assert local_arrive[0] < at("HGMMA")[0]
    start = [n for n in at("BAR.SYNC") if args[n] == share][0] if config.y_tail64 else 0
    seg = ins[start:local_arrive[0]]
    items = config.first_local_tiles * config.tile_k // 64 * config.mma_n // config.consumer_threads
    assert sum(i.opcode.startswith("LDG.E.128") and bool(i.predicate) for i in seg) == 2 * items
    assert sum(i.opcode.startswith("STS.128") for i in seg) >= 8 * items
    assert any(i.opcode.startswith("FENCE.VIEW.ASYNC.S") for i in seg), "no proxy fence before the hand-over"


@pytest.mark.parametrize("label", [c.label for c in STATIC_MATRIX if c.y_tail16])
def test_tail16_variant_sass_structure(label, tmp_path):
    """Session 10 (y_tail16, experimental): per 64-K sub-block one branch of 4 HGMMA.64xNx16 for
    each N = 16 .. 128 (16 of each shape: 4 sub-blocks), each branch ending its own group (gsb0,
    8 per sub-block), all into the same accumulator base register (the N-wide one the first N / 2
    values); no null HGMMA (a commit after the join); every wait leaves one group in flight; the
    Y operand of every branch is the same 128-row buffer descriptor."""
    from profiling import sass

    config = next(c for c in STATIC_MATRIX if c.label == label)
    build = static_build(config, tmp_path, num_groups=8)
    ins = sass.kernel_code(build["cubin"])
    mmas = [i for i in ins if i.opcode.startswith("HGMMA")]
    shapes = [i.opcode.split(".")[1] for i in mmas]
    assert {s: shapes.count(s) for s in set(shapes)} == {f"64x{16 * j}x16": 16 for j in range(1, 9)}, shapes
    assert all(i.operands.split(",")[0].strip() == "R24" for i in mmas), "one accumulator base for every shape"
    closing = [i for i in mmas if "gsb0" in i.operands]
    assert len(closing) == 32 and len({i.opcode.split(".")[1] for i in closing}) == 8
    waits = [i.operands for i in ins if i.opcode.startswith("WARPGROUP.DEPBAR")]
    assert waits and all(int(w.split(",")[-1].strip().rstrip(";"), 16) <= 1 for w in waits), waits
