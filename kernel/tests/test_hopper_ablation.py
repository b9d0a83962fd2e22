"""Ablated Hopper builds (kernel/hopper/ablation.py): a profiling build option next to the config,
part of the compile key, refused where it cannot apply, absent from every production entry point,
and visible in the SASS of the ablated build only."""

import importlib
import inspect

import pytest

from kernel.compile_cache import CompileCache
from kernel.errors import UnsupportedConfigError
from kernel.hopper.ablation import PARTS, Ablation
from kernel.hopper.variants import DECLARED_VARIANTS, DEFAULT_CONFIG
from kernel.perturbation import Perturbation

launch = importlib.import_module("kernel.hopper.launch")
SPLIT_LABEL = "h90_m128n128k256_s4_wg2_dq1b4_swap_fp16_tma_prmt_rs"
SPLIT = next(c for c in DECLARED_VARIANTS if c.label == SPLIT_LABEL)


def test_parts_and_tags():
    assert {Ablation(p).tag for p in PARTS} == {f"ablate-{p}" for p in PARTS}
    with pytest.raises(ValueError, match="ablation part"):
        Ablation("none")  # production is ``ablation=None``, not a part
    with pytest.raises(ValueError):
        Ablation("no_stores")  # the part is "no_epilogue"


def test_ablation_is_part_of_the_compile_key(monkeypatch):
    builds = []
    monkeypatch.setattr(launch.PIPELINE.hooks, "build",
                        lambda config, g, dump_dir=None, perturbation=None, ablation=None:
                        builds.append((config, perturbation, ablation)) or object())
    monkeypatch.setattr(launch.PIPELINE, "compile_cache", CompileCache("hopper-ablation-test"))
    a, b = Ablation("no_fence"), Ablation("no_epilogue")
    prod = launch.compile_for(SPLIT, 2)
    ablated = launch.compile_for(SPLIT, 2, ablation=a)
    again = launch.compile_for(SPLIT, 2, ablation=Ablation("no_fence"))
    other = launch.compile_for(SPLIT, 2, ablation=b)
    both = launch.compile_for(SPLIT, 2, Perturbation(1), a)
    assert prod is not ablated and ablated is again and ablated is not other and both not in (ablated, prod)
    assert builds == [(SPLIT, None, None), (SPLIT, None, a), (SPLIT, None, b), (SPLIT, Perturbation(1), a)]
    key = launch.PIPELINE.compile_key
    assert key(SPLIT, 2) == (SPLIT, 2)  # the production key is unchanged
    assert key(SPLIT, 2, ablation=a) != key(SPLIT, 2) != key(SPLIT, 2, ablation=b)
    assert key(SPLIT, 2, ablation=a) != key(SPLIT, 2, perturbation=Perturbation(1))
    assert set(launch.PIPELINE.compile_cache.keys()) == {
        (SPLIT, 2), key(SPLIT, 2, ablation=a), key(SPLIT, 2, ablation=b), key(SPLIT, 2, Perturbation(1), a)}


@pytest.mark.parametrize("ablation, words", [
    (Ablation("no_fence"), "needs roles='split'"),  # the default variant is cooperative
    ("no_fence", "must be a kernel.hopper.ablation.Ablation"),  # a bare string is refused, not ignored
])
def test_the_build_refuses_what_it_cannot_apply(ablation, words):
    # the real hook: it refuses before importing CuTe DSL or tracing anything
    with pytest.raises(UnsupportedConfigError, match=words):
        launch.PIPELINE.hooks.build(DEFAULT_CONFIG, 2, ablation=ablation)


def test_blackwell_refuses_an_ablation():
    from kernel.blackwell import DEFAULT_CONFIG as BW, PIPELINE as BW_PIPELINE

    with pytest.raises(UnsupportedConfigError, match="no ablation"):
        BW_PIPELINE.hooks.build(BW, 2, ablation=Ablation("no_fence"))


def test_production_entry_points_take_no_ablation():
    """``custom_kernel`` (the fast path) has no way to get an ablated kernel: passing one is a
    TypeError, not a silently ignored keyword."""
    from kernel import family, hopper

    assert "ablation" not in inspect.signature(hopper.custom_kernel).parameters
    assert "ablation" not in inspect.signature(launch.PIPELINE.run).parameters
    for f in family.families():
        assert "ablation" not in inspect.signature(f.custom_kernel).parameters
    with pytest.raises(TypeError):
        hopper.custom_kernel([], DEFAULT_CONFIG, ablation=Ablation("no_fence"))


# ---- the ablated cubins, from their SASS (one compile each, about 2 s on a CPU) ---------------
def _sass_getter(config, static_builds):
    """part -> the kernel's instructions in ``config``'s build (2 groups) with that ablation
    (None: production); one compile each, about 2 s on a CPU, shared (ci.static_builds)."""

    def get(part):
        return static_builds.code(config, 2, ablation=None if part is None else Ablation(part))

    return get


@pytest.fixture(scope="module")
def sass_of(static_builds):
    return _sass_getter(SPLIT, static_builds)


def _count(code, mnemonic):
    return sum(i.mnemonic == mnemonic for i in code)


def _real_wgmma(code):
    """HGMMAs that write accumulators: ptxas pads a commit/wait group with no wgmma in it with
    ``HGMMA.64x8x16.F16 RZ, gdesc[URZ], RZ, ...`` (no destination)."""
    return sum(i.mnemonic == "HGMMA" and not i.operands.startswith("RZ") for i in code)


# ---- the parts of the cooperative register-X variant (X fragment and Y decode, Y's barriers) --
RS_LABEL = "h90_m128n128k256_s4_wg2_swap_fp16_tma_prmt_rs"
RS = next(c for c in DECLARED_VARIANTS if c.label == RS_LABEL)


def test_register_x_parts_are_refused_elsewhere():
    from kernel.hopper.ablation import REGS_PARTS, SPLIT_PARTS

    for part in REGS_PARTS:
        assert Ablation(part).problems(RS) == []
        assert "roles='cooperative'" in Ablation(part).problems(SPLIT)[0]
        assert Ablation(part).problems(DEFAULT_CONFIG)
    for part in SPLIT_PARTS:
        assert "needs roles='split'" in Ablation(part).problems(RS)[0]


@pytest.fixture(scope="module")
def rs_sass_of(static_builds):
    return _sass_getter(RS, static_builds)


def _named_barriers(code):
    return sum(i.mnemonic == "BAR" and "SYNC" in i.opcode for i in code)


@pytest.mark.compile
def test_register_x_parts_leave_out_what_they_name(rs_sass_of):
    prod = rs_sass_of(None)
    n_wgmma, n_bar, n_sts, n_lds = _real_wgmma(prod), _named_barriers(prod), _count(prod, "STS"), _count(prod, "LDS")
    assert n_wgmma > 0 and n_bar > 0 and n_sts > 0
    for part in ("no_y_dequant", "no_y_sync", "no_x_dequant", "mma_only"):
        code = rs_sass_of(part)
        assert _real_wgmma(code) == n_wgmma, part  # the wgmmas always stay
    # Y's decode is the only shared store of the consumers: gone without it
    assert _count(rs_sass_of("no_y_dequant"), "STS") == 0 and _named_barriers(rs_sass_of("no_y_dequant")) == n_bar
    assert _count(rs_sass_of("no_y_sync"), "STS") == 0 and _named_barriers(rs_sass_of("no_y_sync")) < n_bar
    # X's fragment decode reads the raw stage: fewer shared loads without it, Y's stores stay
    assert _count(rs_sass_of("no_x_dequant"), "LDS") < n_lds and _count(rs_sass_of("no_x_dequant"), "STS") == n_sts
    assert _count(rs_sass_of("mma_only"), "LDS") == 0 and _count(rs_sass_of("mma_only"), "PRMT") == 0


# ---- a prepass variant (Y arrives by TMA, already fp16): only X's decode can be left out ----
PRE_LABEL = "h90_m128n128k256_s4_wg2_b8_swap_fp16_tma_prmt_rs_prec1xs_t64_es"
PRE = next(c for c in DECLARED_VARIANTS if c.label == PRE_LABEL)


def test_prepass_takes_x_dequant_and_y_ring_parts_only():
    from kernel.hopper.ablation import PARTS

    accepted = [p for p in PARTS if not Ablation(p).problems(PRE)]
    assert accepted == ["no_x_dequant", "mma_only", "no_y_load", "no_y_ring", "no_prepass", "phase1_only",
                        "uniform_split", "no_epilogue"]  # (no_epilogue: every config)
    assert "shared-memory Y decode" in Ablation("no_y_sync").problems(PRE)[0]
    # the Y ring's parts exist only where Y arrives by TMA from the prepass workspace
    for part in ("no_y_load", "no_y_ring", "no_prepass", "phase1_only"):
        assert "prepass Y ring" in Ablation(part).problems(RS)[0]
        assert Ablation(part).problems(SPLIT)


def test_ablate_flag_adds_every_part_a_build_takes():
    from profiling.ablation import parse_builds

    tags = sorted(b.ablation.tag for b in parse_builds([PRE_LABEL], [], ablate=True) if b.ablation)
    assert tags == sorted(f"ablate-{p}" for p in ("no_x_dequant", "mma_only", "no_y_load", "no_y_ring", "no_prepass",
                                                  "phase1_only", "uniform_split", "no_epilogue"))
    tags = sorted(b.ablation.tag for b in parse_builds([RS_LABEL], [], ablate=True) if b.ablation)
    assert tags == sorted(f"ablate-{p}" for p in ("no_y_dequant", "no_y_sync", "no_x_dequant", "mma_only", "no_epilogue"))
    tags = sorted(b.ablation.tag for b in parse_builds([SPLIT_LABEL], [], ablate=True) if b.ablation)
    assert tags == sorted(f"ablate-{p}" for p in ("no_fence", "no_epilogue"))


@pytest.mark.compile
def test_prepass_no_x_dequant_drops_the_x_decode(static_builds):
    sass_of = _sass_getter(PRE, static_builds)
    prod, code = sass_of(None), sass_of("no_x_dequant")
    assert _real_wgmma(code) == _real_wgmma(prod) > 0
    # the consumers' PRMT decode of X is gone; phase 1's Y decode (PRMT too) stays
    assert 0 < _count(code, "PRMT") < _count(prod, "PRMT")


# ---- no_epilogue: every config, C never written -----------------------
def test_no_epilogue_applies_to_every_declared_variant():
    for config in DECLARED_VARIANTS:
        assert Ablation("no_epilogue").problems(config) == [], config.label
        assert Ablation("no_epilogue").skips("epilogue") and not Ablation("no_epilogue").skips("x_dequant")


def _stores(code):
    return [i for i in code if i.mnemonic in ("STG", "STSM")]


@pytest.mark.compile
@pytest.mark.parametrize("label", [RS_LABEL, RS_LABEL + "_es"])
def test_no_epilogue_drops_the_stores_and_keeps_the_wgmmas(label, static_builds):
    """The ablated build writes no C (one store behind a never-true ``m < 0`` stays, so the
    compiler cannot drop the accumulators' wgmmas as dead code: without it the whole K loop
    vanished) and keeps every wgmma, X decode and Y decode of the production build."""
    config = next(c for c in DECLARED_VARIANTS if c.label == label)
    sass_of = _sass_getter(config, static_builds)
    prod, code = sass_of(None), sass_of("no_epilogue")
    assert _real_wgmma(code) == _real_wgmma(prod) > 0
    assert _count(code, "PRMT") > 0 and _count(code, "STS") == _count(prod, "STS") > 0  # Y's decode stays
    assert len(_stores(prod)) >= 64 and len(_stores(code)) == 1
    assert not [i for i in code if i.opcode.startswith(("STSM", "STG.E.128"))]


@pytest.mark.compile
def test_prepass_y_ring_parts_drop_the_copy_then_the_handshake(static_builds):
    """no_y_load: the Y boxes' TMA is gone (one TMA per X stage stays), every barrier wait and
    arrive stays; no_y_ring: the consumers' Y waits and releases are gone too; mma_only: both
    and X's decode."""
    sass_of = _sass_getter(PRE, static_builds)
    prod = sass_of(None)

    def ops(code, opcode):
        return sum(i.opcode == opcode for i in code)

    load, ring, mma = sass_of("no_y_load"), sass_of("no_y_ring"), sass_of("mma_only")
    # no_y_load: the boxes' bytes completed by the producer itself (mbarrier.complete_tx), no copy
    assert ops(prod, "SYNCS.ARRIVE.TRANS64.RED.A0TX") == 0 < ops(load, "SYNCS.ARRIVE.TRANS64.RED.A0TX")
    # no_y_ring: none of that, and the consumers' Y releases (lane-0 arrives) and Y waits are gone
    assert ops(ring, "SYNCS.ARRIVE.TRANS64.RED.A0TX") == 0
    assert ops(ring, "SYNCS.ARRIVE.TRANS64.ART0") < ops(prod, "SYNCS.ARRIVE.TRANS64.ART0")
    assert ops(ring, "SYNCS.PHASECHK.TRANS64.TRYWAIT") < ops(prod, "SYNCS.PHASECHK.TRANS64.TRYWAIT")
    assert _real_wgmma(ring) == _real_wgmma(load) == _real_wgmma(prod) == _real_wgmma(mma) > 0
    assert _count(mma, "PRMT") < _count(ring, "PRMT") == _count(prod, "PRMT")


@pytest.mark.compile
def test_no_prepass_drops_phase_one_decode_only(static_builds):
    """no_prepass: phase 1's global Y loads and its decode are gone, the wgmmas and X's decode stay."""
    sass_of = _sass_getter(PRE, static_builds)
    prod, code = sass_of(None), sass_of("no_prepass")
    assert _real_wgmma(code) == _real_wgmma(prod) > 0
    ldg = lambda c: sum(i.mnemonic == "LDG" for i in c)
    assert ldg(code) < ldg(prod)
    assert 0 < _count(code, "PRMT") < _count(prod, "PRMT")
    # phase1_only: phase 1's loads stay, no wgmma is left
    only = sass_of("phase1_only")
    assert _real_wgmma(only) == 0 and ldg(only) > 0


def test_uniform_split_is_for_the_balanced_schedule_only():
    import dataclasses

    from kernel.hopper.variants import PHASE1_STAGED_CONFIG, SPLIT_WARP_CONFIG

    for cfg in (PHASE1_STAGED_CONFIG, SPLIT_WARP_CONFIG):
        assert not Ablation("uniform_split").problems(cfg)
    no_tail = dataclasses.replace(PRE, y_tail64=False, schedule="contiguous")
    assert "balanced schedule" in Ablation("uniform_split").problems(no_tail)[0]
    assert Ablation("uniform_split").problems(RS)


@pytest.mark.compile
def test_uniform_split_drops_the_split_search(static_builds):
    """uniform_split: the balanced split's unrolled candidate search is gone from the producer
    warp (hundreds of instructions fewer); the wgmmas stay."""
    from kernel.hopper.variants import PHASE1_STAGED_CONFIG

    sass_of = _sass_getter(PHASE1_STAGED_CONFIG, static_builds)
    prod, code = sass_of(None), sass_of("uniform_split")
    assert _real_wgmma(code) == _real_wgmma(prod) > 0
    assert len(code) < len(prod) - 300, (len(code), len(prod))


# ---- no_chunk_wait: phase1_beside builds only ----------------------------------------------
def test_no_chunk_wait_applies_to_beside_builds_only():
    from kernel.hopper.variants import WIDE_BESIDE_CONFIG

    assert Ablation("no_chunk_wait").problems(WIDE_BESIDE_CONFIG) == []
    for config in (PRE, RS, SPLIT):
        assert Ablation("no_chunk_wait").problems(config), config.label
    assert Ablation("no_chunk_wait").skips("chunk_wait") and not Ablation("no_chunk_wait").skips("prepass")
    assert Ablation("no_prepass").skips("chunk_wait")  # nothing decoded: nothing to wait for


@pytest.mark.compile
def test_no_chunk_wait_drops_the_producers_acquire_spins(static_builds):
    """The ablated beside build keeps phase 1 (its decode and its release adds) and loses the
    producer's acquire loads of the chunk flags (``LDG.E.STRONG.GPU``)."""
    from kernel.hopper.variants import WIDE_BESIDE_CONFIG

    sass_of = _sass_getter(WIDE_BESIDE_CONFIG, static_builds)
    prod, code = sass_of(None), sass_of("no_chunk_wait")
    assert _real_wgmma(code) == _real_wgmma(prod) > 0
    def opcodes(code, prefix):
        return sum(i.opcode.startswith(prefix) for i in code)

    assert opcodes(code, "REDG.E.ADD.STRONG.GPU") == opcodes(prod, "REDG.E.ADD.STRONG.GPU") > 0
    assert _count(code, "PRMT") == _count(prod, "PRMT") > 0
    assert opcodes(code, "LDG.E.STRONG.GPU") < opcodes(prod, "LDG.E.STRONG.GPU")
