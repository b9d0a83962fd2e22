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
from kernel.hopper import DEFAULT_CONFIG, STATIC_MATRIX, compile_cache, compile_for
from kernel.hopper.config import BESIDE_WARPGROUP_REGS
from kernel.hopper.variants import SPILL_ALLOWANCE


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


@pytest.mark.parametrize("config", STATIC_MATRIX, ids=lambda c: c.label)
def test_sass_has_hgmma_and_no_local_memory(config, static_builds):
    tool = _cuobjdump()
    if tool is None:
        pytest.skip("cuobjdump not found (pip install nvidia-cuda-cuobjdump)")
    # through the static report's hook (static_build), not the JIT cache: a build of its own,
    # cubin and PTX kept
    cubin = static_builds.cubin(config, 8)
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
    # instruction, .aligned instructions by whole warps (ci.ptx_convergence: an undefined
    # completion barrier of this kind was once caught by compute-sanitizer on a GPU only)
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


def _kernel_without_spills(config, static_builds):
    """``config``'s kernel instructions (8 groups), after checking it uses no stack or local
    memory (no spill stores or loads)."""
    from profiling import sass

    build = static_builds.build(config, 8)
    ins = static_builds.code(config, 8)
    usage = [u for u in sass.resource_usage(build["cubin"]) if u.function == ins[0].function][0]
    if config.label not in SPILL_ALLOWANCE:
        assert usage.stack_bytes == 0 and usage.local_bytes == 0
        assert not [i for i in ins if i.opcode.startswith(("STL", "LDL"))]
    return ins


def _phase1_levers():
    """A phase-1 lever built beside the declared prepass builds (not declared: config fields
    timed with ``--variant LABEL:field=value``): the 128-row prepass build with a producer
    warpgroup whose other warps decode phase 1 too."""
    from dataclasses import replace

    from kernel.hopper.variants import SPLIT_WARP_CONFIG

    return [replace(SPLIT_WARP_CONFIG, producer_warpgroup=True, phase1_helpers=True)]


def _phase1_decode_structure(config, static_builds):
    """A prepass build's instructions, opcodes and staged-epilogue stores, after the checks its
    phase 1 and tile share: no spills, the wgmmas of every width, every item's loads of a chunk
    before its first decode store (predicated 128-bit loads), whole 128-byte runs stored."""
    ins = _kernel_without_spills(config, static_builds)
    ops = [i.opcode for i in ins]
    # (y_tail64: every wgmma width per sub-block, test_tail64_variant_sass_structure)
    assert sum(o.startswith("HGMMA") for o in ops) == 16 * (1 + len(config.narrow_widths))
    # the batched loads: predicated 128-bit loads of every item before the first decode store
    first_stg = next(n for n, o in enumerate(ops) if o.startswith("STG.E.128"))
    batched = [i for i in ins[:first_stg] if i.opcode.startswith("LDG.E.128") and i.predicate]
    assert len(batched) == 2 * config.prepass_batch, [i.opcode for i in batched]
    # (epilogue="smem": plus the staged epilogue's mma_n / 16 16-byte stores of C)
    staged = config.mma_n // 16 if config.epilogue == "smem" else 0
    # (schedule="split_last": plus a cut tile's fp32 partial sums, 16 bytes per store)
    partial = config.acc_regs_per_thread // 4 if config.schedule == "split_last" else 0
    assert sum(o.startswith("STG.E.128") for o in ops) == 8 * config.prepass_batch + staged + partial
    return ins, ops, staged


@pytest.mark.parametrize("config", [c for c in STATIC_MATRIX if c.y_source == "prepass" and not c.phase1_beside]
                         + _phase1_levers(), ids=lambda c: c.label)
def test_prepass_variant_sass_structure(config, static_builds):
    """The prepass builds: phase 1 issues every item's loads of a chunk (prepass_batch items x
    two 128-bit loads and one scale word, predicated) before its decodes, claims the next chunk
    inside the loop (two claim atomics and one passed atomic) and stores whole 128-byte runs
    (8 per item batch) between named barriers of its decoding threads; its completion barrier is
    ONE instruction that every thread executes
    (bar.sync is barrier.sync.aligned: reached from two role sites it is undefined in PTX, and
    compute-sanitizer synccheck aborts the launch on it); the producer's first X stages (TMA box
    and scale bulk copy) come before that barrier and every Y box after it; no other CTA
    barrier after it; both wgmma shapes of y_tail64 per sub-block; 0 spills."""
    ins, ops, staged = _phase1_decode_structure(config, static_builds)
    assert sum(o.startswith("ATOMG.E.ADD.STRONG.GPU") for o in ops) == 3
    # phase 1's chunk barriers are the named barrier of its decoding threads only (the producer
    # warp decodes nothing); after the chunk loop's release add: one CTA barrier, the completion
    # barrier (thread 0's spin before it, both roles' tile work after it; the staged epilogue's
    # per-warpgroup barriers, 128 threads, are not CTA barriers)
    from kernel.hopper.config import PHASE1_BARRIER_ID

    named = f"{PHASE1_BARRIER_ID:#x},{config.phase1_threads:#x}"
    red = next(n for n, o in enumerate(ops) if o.startswith("REDG"))
    chunk_bars = [n for n, o in enumerate(ops) if o.startswith("BAR.") and ins[n].operands.replace(" ", "") == named]
    assert chunk_bars and max(chunk_bars) < red, chunk_bars
    from kernel.hopper.config import SPLIT_BARRIER_ID

    split_named = f"{SPLIT_BARRIER_ID:#x},{config.consumer_threads:#x}"
    split_bars = [n for n, o in enumerate(ops) if o.startswith("BAR.") and ins[n].operands.replace(" ", "") == split_named]
    bars = [n for n, o in enumerate(ops) if o.startswith("BAR.") and n > red
            and not (staged and ins[n].operands.replace(" ", "").endswith(",0x80")) and n not in split_bars]
    assert len(bars) == 1 and bars[0] < next(n for n, o in enumerate(ops) if o.startswith("HGMMA")), bars
    assert ins[bars[0]].operands.replace(" ", "") == "0x0", ins[bars[0]].operands
    # the producer's first X stages (TMA box and scale bulk copy) before the completion barrier,
    # outside phase 1's chunk loop (the producer warp issues them while the consumers decode)
    early = [n for n, o in enumerate(ops[:bars[0]]) if o.startswith(("UTMALDG", "UBLKCP"))]
    assert {ops[n].split(".")[0] for n in early} == {"UTMALDG", "UBLKCP"}, early
    assert not [n for n in early if min(chunk_bars) < n < max(chunk_bars)], (early, chunk_bars)
    spins = [n for n, o in enumerate(ops) if o.startswith("LDG.E.STRONG.GPU")]
    assert spins and min(spins) < bars[0], spins
    if config.schedule == "split_last":
        # the cut tile: the publish's and the combine's named barrier of the consumer threads,
        # both after the completion barrier; the combine's spin and its partial-sum loads after it
        assert len(split_bars) == 2 and min(split_bars) > bars[0], split_bars
        assert max(spins) > bars[0], spins
        loads = [n for n, o in enumerate(ops) if o.startswith("LDG.E.128") and n > max(split_bars)]
        assert len(loads) == config.acc_regs_per_thread // 4, [ops[n] for n in loads]
    else:
        assert not split_bars, split_bars


@pytest.mark.parametrize("label", [c.label for c in STATIC_MATRIX if c.producer_warpgroup])
def test_producer_warpgroup_variant_moves_registers(label, static_builds):
    """producer_warpgroup: 384 threads; the producer warpgroup gives registers back
    (USETMAXREG.DEALLOC) and the consumers take them (USETMAXREG.TRY_ALLOC), both after the last
    CTA-wide barrier (phase 1's completion barrier; with phase1_beside the setup's) (ptxas drops
    setmaxnreg before a point where the roles' code joins again: the kernel would then run at the
    launch's 168 registers and spill); 0 spills, with the 256-row Y tile's 128 accumulators per
    thread too."""
    config = next(c for c in STATIC_MATRIX if c.label == label)
    build = static_builds.build(config, 8)
    assert build["threads_per_cta"] == 384
    ins = _kernel_without_spills(config, static_builds)
    ops = [i.opcode for i in ins]
    dealloc = [n for n, o in enumerate(ops) if o.startswith("USETMAXREG.DEALLOC")]
    alloc = [n for n, o in enumerate(ops) if o.startswith("USETMAXREG.TRY_ALLOC")]
    assert len(dealloc) == 1 and len(alloc) == 1, [o for o in ops if "MAXREG" in o]
    cta_bars = [n for n, i in enumerate(ins) if i.opcode.startswith("BAR.SYNC") and i.operands.replace(" ", "") == "0x0"]
    assert cta_bars and min(dealloc + alloc) > max(cta_bars), (dealloc, alloc, cta_bars)
    assert min(alloc) < min(n for n, o in enumerate(ops) if o.startswith("HGMMA"))


@pytest.mark.parametrize("label", [c.label for c in STATIC_MATRIX if c.y_tail64])
def test_tail64_variant_sass_structure(label, static_builds):
    """y_tail64: per 64-K sub-block one branch of 4 HGMMA.64xNx16 per width N (each narrow width
    of ``narrow_widths``, then 128), each ending its own group (gsb0), into the same accumulator
    registers (a narrow one their prefix); no null HGMMA (ptxas adds a ``HGMMA.64x8x16 RZ`` to
    carry a commit placed after the join: a second group per sub-block, and the wait_group(1)
    after it would then retire this sub-block's wgmmas before the next X decode); every wait
    leaves one group in flight; 0 spills within the 288-thread cap (or the variant's allowance)."""
    from profiling import sass

    config = next(c for c in STATIC_MATRIX if c.label == label)
    build = static_builds.build(config, 8)
    ins = static_builds.code(config, 8)
    usage = [u for u in sass.resource_usage(build["cubin"]) if u.function == ins[0].function][0]
    assert usage.registers <= config.launch_register_cap
    if config.label not in SPILL_ALLOWANCE:
        assert usage.stack_bytes == 0 and usage.local_bytes == 0
        assert not [i for i in ins if i.opcode.startswith(("STL", "LDL"))]
    mmas = [i for i in ins if i.opcode.startswith("HGMMA")]
    shapes = [i.opcode.split(".")[1] for i in mmas]
    widths = (*config.narrow_widths, config.mma_n)
    assert sorted(set(shapes)) == sorted(f"64x{w}x16" for w in widths), shapes
    assert all(shapes.count(f"64x{w}x16") == 16 for w in widths), shapes
    assert all(i.operands.split(",")[0].strip() == "R24" for i in mmas), "one accumulator base for every width"
    closing = [i for i in mmas if "gsb0" in i.operands]
    assert len(closing) == 4 * len(widths) and {i.opcode.split(".")[1] for i in closing} == set(shapes)
    waits = [i.operands for i in ins if i.opcode.startswith("WARPGROUP.DEPBAR")]
    assert waits and all(int(w.split(",")[-1].strip().rstrip(";"), 16) <= 1 for w in waits), waits


@pytest.mark.parametrize("label", [c.label for c in STATIC_MATRIX if c.epilogue == "smem"])
def test_staged_epilogue_sass_structure(label, static_builds):
    """epilogue="smem": the staged epilogue is in the SASS and its twin
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

    def code_of(cfg):
        build = static_builds.build(cfg, 8)
        ins = static_builds.code(cfg, 8)
        usage = [u for u in sass.resource_usage(build["cubin"]) if u.function == ins[0].function][0]
        return ins, usage

    ins, usage = code_of(config)
    twin_ins, _ = code_of(twin)
    assert usage.registers <= config.launch_register_cap
    if config.label not in SPILL_ALLOWANCE:  # (an allowance: test_sass_has_hgmma_and_no_local_memory)
        assert usage.stack_bytes == 0 and usage.local_bytes == 0
        assert not [i for i in ins if i.opcode.startswith(("STL", "LDL"))]

    def ops(code, prefix):
        return [i for i in code if i.opcode.startswith(prefix)]

    stsm = ops(ins, "STSM.16.MT88.4")
    # the epilogue's shared loads (the prepass builds' phase 1 also has LDS.128, in its copy,
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


@pytest.mark.parametrize("config", [c for c in STATIC_MATRIX if c.phase1_beside], ids=lambda c: c.label)
def test_beside_variant_sass_structure(config, static_builds):
    """phase1_beside: the helpers' phase 1 as in the other prepass builds (every item's loads of a
    chunk before its decodes, whole 128-byte runs stored, the helpers' own named barrier of 96
    threads around each chunk), four global atomics (the first claim, the loop's claim, and one
    count-through per party: the producer warp and the lead helper warp), the tile's wgmmas, no
    spills (the CTA-wide barrier's absence and the fences:
    kernel/tests/test_hopper_sync_sites.py)."""
    from kernel.hopper.config import PHASE1_BARRIER_ID

    ins, ops, _staged = _phase1_decode_structure(config, static_builds)
    assert sum(o.startswith("ATOMG.E.ADD.STRONG.GPU") for o in ops) == 4
    named = f"{PHASE1_BARRIER_ID:#x},{config.phase1_threads:#x}"
    assert config.phase1_threads == 96
    assert [n for n, o in enumerate(ops) if o.startswith("BAR.") and ins[n].operands.replace(" ", "") == named]



@pytest.mark.parametrize("batch", sorted(BESIDE_WARPGROUP_REGS))
def test_each_beside_register_split_decodes_without_spills(batch, static_builds):
    """BESIDE_WARPGROUP_REGS: at each phase-1 batch its (helpers, consumers) registers hold
    the helpers' decode and the consumers' tile with no spill, and the SASS sets those figures
    (the declared beside builds take 2; the others are timed as ``LABEL:prepass_batch=N``)."""
    import dataclasses

    from kernel.hopper.variants import WIDE_BESIDE_CONFIG

    config = dataclasses.replace(WIDE_BESIDE_CONFIG, prepass_batch=batch)
    give, take = config.warpgroup_regs
    ins = _kernel_without_spills(config, static_builds)
    ops = [(i.opcode, i.operands.replace(" ", "").rstrip(";")) for i in ins if i.opcode.startswith("USETMAXREG")]
    assert [o for o in ops if o[0].startswith("USETMAXREG.DEALLOC") and o[1].endswith(f"{give:#x}")], ops
    assert [o for o in ops if o[0].startswith("USETMAXREG.TRY_ALLOC") and o[1].endswith(f"{take:#x}")], ops
