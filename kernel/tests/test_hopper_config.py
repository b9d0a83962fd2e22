"""Hopper config rules, byte arithmetic and the host plan flow: plain Python, no GPU, no CuTe DSL."""

import re
import pytest
import torch

from kernel.errors import InvalidProblemError, UnsupportedConfigError
from kernel.hopper import (
    DECLARED_VARIANTS,
    DEFAULT_CONFIG,
    STATIC_MATRIX,
    HopperConfig,
    check_config,
    config_problems,
    constraints,
    prepare,
    smem_bytes,
)
from kernel.hopper.config import SMEM_CAPACITY_BYTES, stage_tx_bytes


@pytest.mark.parametrize("config", DECLARED_VARIANTS, ids=lambda c: c.label)
def test_declared_variants_are_valid(config):
    assert config_problems(config) == []
    assert smem_bytes(config)["total"] <= SMEM_CAPACITY_BYTES
    assert hash(config) == hash(HopperConfig(**config.__dict__))


def test_variant_set():
    labels = [c.label for c in DECLARED_VARIANTS]
    assert len(set(labels)) == len(labels) >= 6
    assert DEFAULT_CONFIG in DECLARED_VARIANTS
    assert set(STATIC_MATRIX) <= set(DECLARED_VARIANTS)
    assert {c.consumer_warpgroups for c in DECLARED_VARIANTS} == {1, 2, 3}
    assert any(c.swapped for c in DECLARED_VARIANTS)


def test_smem_overflow_names_the_bytes():
    cfg = HopperConfig(tile_n=256, consumer_warpgroups=2, num_ab_stages=6)
    problems = config_problems(cfg)
    assert any("shared memory" in p and str(smem_bytes(cfg)["total"]) in p for p in problems)
    with pytest.raises(UnsupportedConfigError) as info:
        check_config(cfg)
    assert info.value.label == cfg.label


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(tile_m=96),
        dict(tile_k=64),
        dict(consumer_warpgroups=3),
        dict(arch="sm_100a"),
        dict(tile_m=256, tile_n=128),  # wgmma M side 256
        dict(tile_n=256),  # 1 warpgroup, 128x256 accumulator = 256 registers
        dict(tile_m=64, consumer_warpgroups=2),  # cooperative needs mma_m 128
        dict(loader="copy_engine"),
        dict(operand_exp_shift=3),
        dict(dequant="lut"),
    ],
)
def test_bad_configs_are_rejected(kwargs):
    assert config_problems(HopperConfig(**kwargs))


def test_swapped_geometry():
    cfg = HopperConfig(tile_m=64, tile_n=128, swapped=True)
    assert (cfg.mma_m, cfg.mma_n) == (128, 64)
    # rows of both operands plus one 128-row scale block each, per 256-K stage
    assert stage_tx_bytes(cfg) == (128 + 64) * 128 + 2 * 2048


def test_dequant_axis_labels():
    assert DEFAULT_CONFIG.dequant == "shift"
    prmt = [c for c in DECLARED_VARIANTS if c.dequant == "prmt"]
    assert {c.label for c in prmt} >= {
        "h90_m128n128k256_s3_wg1_fp16_prmt",
        "h90_m128n128k256_s3_wg2_swap_fp16_prmt",
    }
    step1 = [c for c in prmt if c.roles == "cooperative" and c.producer_warps == 1 and c.loader == "cp_async"]
    for c in step1:  # each step-1 prmt variant has its shift twin declared, for same-session comparisons
        twin = HopperConfig(**{**c.__dict__, "dequant": "shift"})
        assert twin in DECLARED_VARIANTS and twin.label + "_prmt" == c.label


def test_constraints_follow_tile_k():
    assert constraints(HopperConfig(tile_k=128)).k_granularity == 128
    assert constraints(DEFAULT_CONFIG).k_granularity == 256


def _cpu_problem(sizes):
    import oracle

    return oracle.make_inputs(sizes, 7, device="cpu")


def test_prepare_dry_run_plans_on_cpu():
    sizes = [(40, 136, 256, 1), (0, 40, 256, 1), (200, 72, 512, 1)]
    prep = prepare(_cpu_problem(sizes), DEFAULT_CONFIG, dry_run=True)
    assert prep.tables.sizes.device.type == "cpu" and prep.compiled is None and prep.aux is None
    assert prep.plan.total_tiles == 1 * 2 + 0 + 2 * 1
    assert [tuple(c.shape) for c in prep.outputs] == [(40, 136, 1), (0, 40, 1), (200, 72, 1)]


def test_prepare_rejects_k_off_granularity():
    with pytest.raises(InvalidProblemError) as info:
        prepare(_cpu_problem([(8, 8, 128, 1)]), DEFAULT_CONFIG, dry_run=True)
    assert info.value.rule == "k_granularity"
    prepare(_cpu_problem([(8, 8, 128, 1)]), HopperConfig(tile_k=128, num_ab_stages=5), dry_run=True)


def test_register_cap_budgets_whole_warpgroups():
    # ptxas for sm_90a refused 152 registers at 416 threads ("Insufficient registers (128)")
    assert HopperConfig().register_cap == 255  # 160 threads
    assert HopperConfig(tile_n=256, consumer_warpgroups=2, num_ab_stages=2).register_cap == 168  # 288
    split = HopperConfig(roles="split", dequant_warpgroups=2, fp16_buffers=3)
    assert split.threads == 128 + 256 + 32 and split.register_cap == 128
    # 128 accumulators + overhead do not fit in 128 registers: rejected before any compile
    assert any("registers per thread" in p for p in config_problems(split))
    assert not config_problems(HopperConfig(roles="split", dequant_warpgroups=1, fp16_buffers=3))


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(roles="split", dequant_warpgroups=0), "dequant_warpgroups 1 or 2"),
        (dict(roles="split", dequant_warpgroups=1, fp16_buffers=7), "2..6 fp16_buffers"),
        (dict(dequant_warpgroups=1), "for roles='split' only"),
        (dict(fp16_buffers=4), "takes 2 or 3 fp16 buffers"),
        (dict(roles="split", dequant_warpgroups=1, loader="bulk_rows"), "does not take loader='bulk_rows'"),
        (dict(loader="tma", tile_k=128, num_ab_stages=5), "needs tile_k 256"),
        (dict(producer_warps=3), "producer_warps must be 1, 2 or 4"),
        (dict(producer_warps=2, loader="bulk_rows"), "needs loader='cp_async'"),
        (dict(roles="weird"), "roles must be"),
        (dict(loader="tma", dequant="prmt", x_operand="regs"), "64-row wgmma A fragment"),  # wg1, mma_m 128
        # 64 rows of Y = 128 units over 256 threads: units would be left unwritten
        (dict(tile_m=64, swapped=True, consumer_warpgroups=2, loader="tma", dequant="prmt", x_operand="regs"),
         "evenly"),
        (dict(x_operand="regs"), "needs loader='tma'"),
    ],
)
def test_role_axes_rules(kwargs, words):
    problems = config_problems(HopperConfig(**kwargs))
    assert any(words in p for p in problems), problems


def test_split_smem_counts_the_fp16_ring_and_its_barriers():
    coop = HopperConfig()
    split = HopperConfig(roles="split", dequant_warpgroups=1, fp16_buffers=3)
    assert smem_bytes(split)["dequant_buffers"] == 3 * (128 + 128) * 64 * 2
    assert smem_bytes(split)["barriers"] == smem_bytes(coop)["barriers"] + 2 * 3 * 8
    assert "_dq1b3" in split.label and "_p4" in HopperConfig(producer_warps=4).label


def test_ablation_is_not_a_config_field():
    """Ablations are profiling build options (kernel.hopper.ablation), not part of a variant."""
    import dataclasses

    assert not {f.name for f in dataclasses.fields(HopperConfig)} & {"ablate", "ablation", "perturbation"}
    with pytest.raises(TypeError):
        HopperConfig(ablate="no_mma")
    assert not any("ablate" in c.label for c in DECLARED_VARIANTS)


def test_setmaxnreg_register_arithmetic():
    wg3 = HopperConfig(tile_n=192, swapped=True, consumer_warpgroups=3, num_ab_stages=4, dequant="prmt",
                       loader="tma", x_operand="regs", consumer_regs=160)
    # 3 consumer warpgroups + a whole producer warpgroup: 512 threads launch at 128 registers
    assert wg3.threads == 512 and wg3.launch_register_cap == 128
    # 384 x 160 + 128 x 32 = 65536: the producer keeps what the consumers leave
    assert wg3.producer_regs == 32 and wg3.register_cap == 160
    assert wg3.consumer_threads * wg3.consumer_regs + 128 * wg3.producer_regs <= 65536
    assert wg3.mma_m == 192 and wg3.acc_regs_per_thread == 64 and wg3.label.endswith("_rs_r160")
    assert "_wg3_" in wg3.label and config_problems(wg3) == []
    wg2 = HopperConfig(swapped=True, consumer_warpgroups=2, num_ab_stages=4, dequant="prmt", loader="tma",
                       x_operand="regs", consumer_regs=232)
    assert wg2.threads == 384 and wg2.launch_register_cap == 168 and wg2.producer_regs == 40
    assert config_problems(wg2) == []
    # without setmaxnreg nothing changes
    assert HopperConfig().producer_threads == 32 and HopperConfig().register_cap == HopperConfig().launch_register_cap


_WG3 = dict(swapped=True, consumer_warpgroups=3, num_ab_stages=4, dequant="prmt", loader="tma", x_operand="regs")
_SPLIT_RS = dict(swapped=True, consumer_warpgroups=2, num_ab_stages=4, dequant="prmt", loader="tma", x_operand="regs",
                 roles="split", dequant_warpgroups=1, fp16_buffers=4)


def test_setmaxnreg_never_asks_for_more_than_the_cta_holds():
    """setmaxnreg.inc only takes registers that warpgroups of the same CTA released with
    setmaxnreg.dec; the CTA holds threads x launch cap from its launch, not the whole register
    file (a 640-thread split variant whose consumers asked for 160 hung on the H200). For every
    declared setmaxnreg variant, and for a sweep of split / cooperative ones, the warpgroups'
    final counts fit in the launch allocation and no warpgroup's count goes up but the consumers'."""
    import itertools

    configs = [c for c in DECLARED_VARIANTS if c.consumer_regs]
    for dq, regs in itertools.product((1, 2), range(96, 257, 8)):
        configs.append(HopperConfig(**dict(_SPLIT_RS, dequant_warpgroups=dq, consumer_regs=regs)))
    for wg, regs in itertools.product((2, 3), range(96, 257, 8)):
        configs.append(HopperConfig(**dict(_WG3, consumer_warpgroups=wg, tile_n=64 * wg, consumer_regs=regs)))
    valid = 0
    for c in configs:
        if config_problems(c):
            continue
        valid += 1
        dq_threads = c.dequant_threads if c.roles == "split" else 0
        final = c.consumer_threads * c.consumer_regs + 128 * c.producer_regs + dq_threads * c.dequant_regs
        assert final <= c.launch_allocation == -(-c.threads // 128) * 128 * c.launch_register_cap, c.label
        assert c.producer_regs <= c.launch_register_cap and (not dq_threads or c.dequant_regs <= c.launch_register_cap)
        assert c.consumer_regs >= c.launch_register_cap
    assert valid >= 10
    # the variant that hung: 640 threads launch at 96 registers (61440 held); the dequant
    # warpgroups were given 72 (the register file's share), so 256 x 160 + 128 x 40 + 256 x 72
    # = 64512 > 61440; they now keep 56
    hung = HopperConfig(**dict(_SPLIT_RS, dequant_warpgroups=2, consumer_regs=160))
    assert hung.threads == 640 and hung.launch_allocation == 61440 and hung.dequant_regs == 56
    assert 256 * 160 + 128 * 40 + 256 * 72 > hung.launch_allocation


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(_WG3, tile_n=192), "need x_operand='regs' and consumer_regs"),
        (dict(_WG3, tile_n=192, consumer_regs=164), "multiple of 8"),
        (dict(_WG3, tile_n=192, consumer_regs=120), "below the launch cap"),
        (dict(_WG3, tile_n=192, consumer_regs=168), "leave the producer warpgroup 8"),
        (dict(_WG3, tile_n=128, consumer_regs=160), "64-row wgmma A fragment per warpgroup"),
        (dict(tile_n=192, consumer_regs=160, loader="tma", dequant="prmt"), "tile_n 192 is for swapped"),
        (dict(consumer_regs=232), "needs loader='tma' and producer_warps=1"),
        (dict(_WG3, tile_n=192, consumer_regs=160, loader="cp_async"), "needs loader='tma' and producer_warps=1"),
        (dict(_SPLIT_RS, dequant_warpgroups=2, consumer_regs=200), "leave the dequant warpgroups 16"),
        (dict(_SPLIT_RS, x_operand="smem", consumer_regs=168), "roles='split' needs x_operand='regs'"),
        (dict(_SPLIT_RS, fp16_buffers=2), "decodes sub-blocks in pairs: it needs >= 3 fp16_buffers"),
    ],
)
def test_setmaxnreg_rules(kwargs, words):
    problems = config_problems(HopperConfig(**kwargs))
    assert any(words in p for p in problems), problems


def test_sf_blocks_cover_every_tile_start():
    from kernel.hopper.config import sf_blocks

    assert [sf_blocks(r) for r in (64, 128, 192, 256)] == [1, 1, 2, 2]
    # a tile of `rows` starts at a multiple of `rows`: the 128-row scale blocks it touches
    for rows in (64, 128, 192, 256):
        for start in range(0, 8192, rows):
            touched = (start + rows - 1) // 128 - start // 128 + 1
            assert touched <= sf_blocks(rows), (rows, start)


_RS = dict(swapped=True, consumer_warpgroups=2, num_ab_stages=4, dequant="prmt", loader="tma", x_operand="regs")


def test_y_per_warpgroup_smem_arithmetic_and_label():
    from kernel.hopper.config import EXPERIMENTAL_VARIANTS, FASTEST_CONFIG, PRODUCTION_VARIANTS, dequant_buffer_bytes

    ywg = HopperConfig(**_RS, y_per_warpgroup=True)
    assert ywg.label == FASTEST_CONFIG.label + "_ywg" == "h90_m128n128k256_s4_wg2_swap_fp16_tma_prmt_rs_ywg"
    assert ywg.y_copies == 2 and FASTEST_CONFIG.y_copies == 1
    # one 2-buffer Y ring (128 rows x 64 K x 2 B each) per warpgroup: 2 x 2 x 16384 B
    assert dequant_buffer_bytes(FASTEST_CONFIG) == 32768 and dequant_buffer_bytes(ywg) == 65536
    # 4 raw stages of 36864 B + 65536 + 64 B barriers + 3 x 1024 alignment: 4 stages still fit, 5 do not
    assert smem_bytes(ywg) == {"barriers": 64, "raw_stages": 147456, "dequant_buffers": 65536, "total": 216128}
    assert config_problems(ywg) == [] and ywg in EXPERIMENTAL_VARIANTS and ywg not in PRODUCTION_VARIANTS
    five = HopperConfig(**dict(_RS, num_ab_stages=5), y_per_warpgroup=True)
    assert smem_bytes(five)["total"] == 253008 > SMEM_CAPACITY_BYTES
    assert any("shared memory" in p for p in config_problems(five))
    # off by default: no declared label changes
    assert not any(c.y_per_warpgroup for c in PRODUCTION_VARIANTS)
    assert sum("_ywg" in c.label for c in DECLARED_VARIANTS) == sum(c.y_per_warpgroup for c in DECLARED_VARIANTS)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(_RS, x_operand="smem", y_per_warpgroup=True), "y_per_warpgroup needs roles='cooperative', x_operand='regs'"),
        (dict(_RS, fp16_buffers=3, y_per_warpgroup=True), "and 2 fp16 buffers"),
        (dict(_RS, tile_n=64, consumer_warpgroups=1, y_per_warpgroup=True), "needs 2 or 3 consumer warpgroups"),
        (dict(_RS, y_per_warpgroup=1), "must be a bool"),
    ],
)
def test_y_per_warpgroup_rules(kwargs, words):
    problems = config_problems(HopperConfig(**kwargs))
    assert any(words in p for p in problems), problems


def test_split_register_x_pairs_sub_blocks_only_with_a_ring_that_cannot_deadlock():
    """The dequant warps of a split, register-X variant acquire two fp16 buffers before they
    publish either when each of their threads has two or more Y units per sub-block; a consumer
    releases a buffer only after the next one is published and its wgmma issued. A ring of 2
    then waits on itself (it hung on the H200); from 3 buffers on one is always free."""
    one = HopperConfig(**_SPLIT_RS)
    two = HopperConfig(**dict(_SPLIT_RS, dequant_warpgroups=2, consumer_regs=152))
    assert one.y_pairs_sub_blocks and not two.y_pairs_sub_blocks
    for buffers in range(2, 7):
        for dq in (1, 2):
            c = HopperConfig(**dict(_SPLIT_RS, dequant_warpgroups=dq, fp16_buffers=buffers,
                                    consumer_regs=168 if dq == 1 else 152))
            pairing_deadlock = c.y_pairs_sub_blocks and buffers < 3
            refused = any("in pairs" in p for p in config_problems(c))
            assert refused == pairing_deadlock, (c.label, config_problems(c))
    assert not HopperConfig().y_pairs_sub_blocks and not HopperConfig(**_WG3, tile_n=192, consumer_regs=160).y_pairs_sub_blocks

# ---- issue 14p: y_source="prepass" (Y decoded once into a global fp16 workspace) --------------
_PRE = dict(_RS, y_source="prepass", fp16_buffers=8)


def test_prepass_smem_arithmetic_and_label():
    from kernel.hopper.config import (
        EXPERIMENTAL_VARIANTS, FASTEST_CONFIG, PRODUCTION_VARIANTS, raw_stage_layout, y_box_tx_bytes,
    )

    pre = HopperConfig(**_PRE)
    assert pre.label == "h90_m128n128k256_s4_wg2_b8_swap_fp16_tma_prmt_rs_pre"
    assert config_problems(pre) == [] and pre in EXPERIMENTAL_VARIANTS and pre not in PRODUCTION_VARIANTS
    # a raw stage holds X (128 rows x 128 B) and its scale block only; Y comes as 64-K fp16 boxes
    assert raw_stage_layout(pre)["bytes"] == 16384 + 2048 == stage_tx_bytes(pre)
    assert y_box_tx_bytes(pre) == 128 * 64 * 2
    # 4 X stages + 8 Y buffers + barriers (2 x 4 + 2 x 8) x 8 B + 8 B claim slots + 3 x 1024 alignment
    assert smem_bytes(pre) == {"barriers": 200, "raw_stages": 73728, "dequant_buffers": 131072, "total": 208072}
    assert config_problems(HopperConfig(**dict(_PRE, fp16_buffers=9))) == []
    assert any("shared memory" in p for p in config_problems(HopperConfig(**dict(_PRE, fp16_buffers=10))))
    # the axis is off by default: no other label changes; the only production variant with a
    # prepass is the mixed-tail one with C and phase 1's items staged through shared memory and
    # its balanced split searched by a warp (kernel.hopper.dispatch DEFAULT_TABLE's choice on
    # bench1-3, session 10)
    from kernel.hopper.config import SPLIT_WARP_CONFIG

    assert FASTEST_CONFIG.y_source == "smem_decode"
    assert [c for c in PRODUCTION_VARIANTS if c.y_source != "smem_decode"] == [SPLIT_WARP_CONFIG]
    assert sum("_pre" in c.label for c in DECLARED_VARIANTS) == sum(c.y_source == "prepass" for c in DECLARED_VARIANTS)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(_PRE, swapped=False), "needs swapped tiles"),
        (dict(_PRE, x_operand="smem"), "needs roles='cooperative' and x_operand='regs'"),
        (dict(_PRE, roles="split", dequant_warpgroups=1), "needs roles='cooperative' and x_operand='regs'"),
        (dict(_PRE, y_per_warpgroup=True), "takes neither y_per_warpgroup nor consumer_regs"),
        (dict(_PRE, consumer_regs=232), "takes neither y_per_warpgroup nor consumer_regs"),
        (dict(_PRE, schedule="strided"), "schedule='contiguous' only"),
        (dict(_PRE, fp16_buffers=1), "a Y ring of 2..16 fp16 buffers"),
        (dict(_PRE, dequant_warpgroups=1), "dequant_warpgroups is for roles='split' only"),
        (dict(_RS, y_source="global"), "y_source must be 'smem_decode' or 'prepass'"),
    ],
)
def test_prepass_rules(kwargs, words):
    problems = config_problems(HopperConfig(**kwargs))
    assert any(words in p for p in problems), problems


def test_prepass_takes_no_shared_memory_decode_ablation():
    from kernel.hopper.ablation import REGS_PARTS, Ablation

    pre = HopperConfig(**_PRE)
    for part in REGS_PARTS:
        # X's decode (no_x_dequant) and mma_only (with the Y ring's parts) are the parts of the
        # shared-memory Y decode's list a prepass variant has
        assert bool(Ablation(part).problems(pre)) == (part not in ("no_x_dequant", "mma_only")), part


def test_x_prefetch_rules_and_label():
    pre = HopperConfig(**_PRE)
    assert HopperConfig(**dict(_PRE, x_prefetch=True)).label == pre.label + "_xp"
    assert not config_problems(HopperConfig(**dict(_PRE, x_prefetch=True)))
    assert any("x_prefetch is built for the prepass consumers" in p
               for p in config_problems(HopperConfig(**dict(_RS, x_prefetch=True))))
    assert any("x_prefetch must be a bool" in p for p in config_problems(HopperConfig(**dict(_PRE, x_prefetch=1))))


def test_prepass_lean_exit_rules_and_label():
    from kernel.hopper.config import LEAN_EXIT_CONFIG, PHASE1_STAGED_CONFIG

    assert LEAN_EXIT_CONFIG.label == PHASE1_STAGED_CONFIG.label.replace("_prec1xs_", "_prec1xsl_")
    assert not config_problems(LEAN_EXIT_CONFIG) and LEAN_EXIT_CONFIG in DECLARED_VARIANTS
    q = HopperConfig(**dict(_PRE, prepass_chunk=1, prepass_lean_exit=True))
    assert not config_problems(q) and q.label.endswith("_prec1l")
    for bad in (dict(_PRE, prepass_lean_exit=True),  # no prepass_chunk: the plain phase 1
                dict(_RS, prepass_lean_exit=True),
                dict(_PRE, prepass_chunk=1, prepass_sync="flags", prepass_lean_exit=True)):
        assert any("prepass_lean_exit trims" in p for p in config_problems(HopperConfig(**bad))), bad
    assert any("must be a bool" in p for p in config_problems(HopperConfig(**dict(_PRE, prepass_chunk=1,
                                                                                   prepass_lean_exit=1))))
    from kernel.hopper.config import X_BEFORE_CONFIG

    assert X_BEFORE_CONFIG.label == LEAN_EXIT_CONFIG.label.replace("_prec1xsl_", "_prec1xslb_")
    assert not config_problems(X_BEFORE_CONFIG)
    assert any("prepass_x_before is built on prepass_lean_exit" in p
               for p in config_problems(HopperConfig(**dict(_PRE, prepass_chunk=1, prepass_x_before=True))))


def test_prepass_split_warp_rules_and_label():
    import dataclasses

    from kernel.hopper.config import LEAN_EXIT_CONFIG, PHASE1_STAGED_CONFIG, SPLIT_WARP_CONFIG

    assert SPLIT_WARP_CONFIG.label == PHASE1_STAGED_CONFIG.label.replace("_prec1xs_", "_prec1xsw_")
    assert not config_problems(SPLIT_WARP_CONFIG) and SPLIT_WARP_CONFIG in DECLARED_VARIANTS
    for bad in (dataclasses.replace(LEAN_EXIT_CONFIG, prepass_split_warp=True),  # lean searches so already
                HopperConfig(**dict(_PRE, prepass_chunk=1, prepass_split_warp=True)),  # no balanced split
                dataclasses.replace(PHASE1_STAGED_CONFIG, prepass_chunk=0, prepass_store="direct",
                                    prepass_split_warp=True)):  # no chunked phase 1
        assert any("prepass_split_warp is the balanced split's warp search alone" in p
                   for p in config_problems(bad)), bad
    assert any("prepass_split_warp must be a bool" in p
               for p in config_problems(dataclasses.replace(PHASE1_STAGED_CONFIG, prepass_split_warp=1)))
    # the lean exit's other three changes, one at a time (the lean exit is all four)
    from kernel.hopper.config import CLAIM_FIRST_CONFIG, COUNT_AFTER_CONFIG, MAP_EARLY_CONFIG

    for cfg, name, letter in ((COUNT_AFTER_CONFIG, "prepass_count_after", "t"),
                              (MAP_EARLY_CONFIG, "prepass_map_early", "m"),
                              (CLAIM_FIRST_CONFIG, "prepass_claim_first", "q")):
        assert cfg.label == SPLIT_WARP_CONFIG.label.replace("_prec1xsw_", f"_prec1xsw{letter}_")
        assert not config_problems(cfg) and cfg in DECLARED_VARIANTS
        lean_too = dataclasses.replace(LEAN_EXIT_CONFIG, **{name: True})
        no_chunk = dataclasses.replace(PHASE1_STAGED_CONFIG, prepass_chunk=0, prepass_store="direct", **{name: True})
        for bad in (lean_too, no_chunk):
            assert any(f"{name} is one change of the lean exit alone" in p for p in config_problems(bad)), bad
        assert any(f"{name} must be a bool" in p
                   for p in config_problems(dataclasses.replace(PHASE1_STAGED_CONFIG, **{name: 1})))
    assert LEAN_EXIT_CONFIG.exit_split_warp and LEAN_EXIT_CONFIG.exit_count_after
    assert LEAN_EXIT_CONFIG.exit_map_early and LEAN_EXIT_CONFIG.exit_claim_first
    assert not any((PHASE1_STAGED_CONFIG.exit_split_warp, PHASE1_STAGED_CONFIG.exit_count_after,
                    PHASE1_STAGED_CONFIG.exit_map_early, PHASE1_STAGED_CONFIG.exit_claim_first))


def test_prepass_chunk_and_early_x_rules_and_labels():
    """Issue 14q: the run-time chunk size and the early X stages are prepass-only axes, off by
    default (every earlier label unchanged), and the 192 x 128 prepass tile fits at the
    416-thread launch cap (no Y decode in the consumers) with 3 X stages and 8 Y buffers."""
    q = HopperConfig(**dict(_PRE, prepass_chunk=1, prepass_x_early=True))
    assert config_problems(q) == [] and q.label.endswith("_prec1x")
    assert HopperConfig(**dict(_PRE, prepass_chunk=2)).label.endswith("_prec2")
    assert any("prepass_chunk must be" in p for p in config_problems(HopperConfig(**dict(_PRE, prepass_chunk=3))))
    assert any("prepass_x_early is built on" in p for p in config_problems(HopperConfig(**dict(_PRE, prepass_x_early=True))))
    assert any("y_source='prepass' only" in p for p in config_problems(HopperConfig(prepass_chunk=1)))
    assert all(c.prepass_chunk == 0 and not c.prepass_x_early for c in DECLARED_VARIANTS if c.y_source != "prepass")
    wide = HopperConfig(**dict(_PRE, tile_n=192, consumer_warpgroups=3, num_ab_stages=3, prepass_chunk=1,
                               prepass_x_early=True))
    assert config_problems(wide) == [] and wide.threads == 416 and wide.launch_register_cap == 128
    assert smem_bytes(wide)["total"] == 220344
    assert any("shared memory" in p for p in config_problems(HopperConfig(**dict(_PRE, tile_n=192, consumer_warpgroups=3,
                                                                                   prepass_chunk=1))))


def test_prepass_flags_rules_labels_and_smem():
    """Issue 14 (session 4): prepass_sync="flags" (per Y block x K chunk readiness flags instead
    of phase 1's grid barrier) is a prepass_chunk-only axis, off by default (every earlier
    label unchanged), labelled with an "f" after the prepass suffix, and takes one more 8-byte
    shared cell (the generation broadcast)."""
    from kernel.hopper.config import PREPASS_FLAGS_SLOT_BYTES, PRODUCTION_VARIANTS

    q = HopperConfig(**dict(_PRE, prepass_chunk=1, prepass_x_early=True))
    f = HopperConfig(**dict(_PRE, prepass_chunk=1, prepass_x_early=True, prepass_sync="flags"))
    assert config_problems(f) == [] and f.label == q.label + "f" == "h90_m128n128k256_s4_wg2_b8_swap_fp16_tma_prmt_rs_prec1xf"
    assert HopperConfig(**dict(_PRE, prepass_chunk=1, prepass_sync="flags")).label.endswith("_prec1f")
    assert smem_bytes(f)["total"] == smem_bytes(q)["total"] + PREPASS_FLAGS_SLOT_BYTES
    assert smem_bytes(f)["barriers"] == smem_bytes(q)["barriers"] + 8
    for bad, words in [
        (dict(_PRE, prepass_sync="flags"), "prepass_chunk phase 1"),
        (dict(_RS, prepass_sync="flags"), "prepass_chunk phase 1"),
        (dict(_PRE, prepass_chunk=1, prepass_sync="grid"), "prepass_sync must be 'barrier' or 'flags'"),
    ]:
        problems = config_problems(HopperConfig(**bad))
        assert any(words in p for p in problems), (bad, problems)
    assert HopperConfig().prepass_sync == "barrier"
    assert all(c.prepass_sync == "barrier" for c in PRODUCTION_VARIANTS)
    assert sum(re.search(r"_prec\dx?f", c.label) is not None for c in DECLARED_VARIANTS) == \
        sum(c.prepass_sync == "flags" for c in DECLARED_VARIANTS)


def test_prepass_flags_declared_variants():
    """The flags path is declared on the two prepass tiles the brief names: the 128-row Y tile
    with 8 Y buffers and the 64-row Y tile with 16, both prec1x (run-time chunks, early X); each
    is its barrier twin (declared too) with prepass_sync="flags" only, and fits shared memory."""
    import dataclasses

    from kernel.hopper.config import EXPERIMENTAL_VARIANTS

    flags = [c for c in DECLARED_VARIANTS if c.prepass_sync == "flags" and not c.prepass_decoders]
    assert [c.label for c in flags] == [
        "h90_m128n128k256_s4_wg2_b8_swap_fp16_tma_prmt_rs_prec1xf",
        "h90_m64n128k256_s4_wg2_b16_swap_fp16_tma_prmt_rs_prec1xf",
    ]
    for c in flags:
        assert c in EXPERIMENTAL_VARIANTS and config_problems(c) == []
        assert dataclasses.replace(c, prepass_sync="barrier") in DECLARED_VARIANTS
        assert smem_bytes(c)["total"] <= SMEM_CAPACITY_BYTES
    assert len({c.label for c in DECLARED_VARIANTS}) == len(DECLARED_VARIANTS)


# ---- issue 14, session 6: epilogue="smem" (C staged through shared memory) ------------------
def test_staged_epilogue_label_smem_and_declared_twins():
    """Off by default (every earlier label and byte count unchanged); "_es" last in the label;
    declared (experimental) for the two variants of the default dispatch, each its production
    twin with epilogue="smem" only; the staging region fits beside everything else: the whole
    tile (2 x 128 rows x 128 B) on the fastest tile, half of it on the mixed-tail prepass tile."""
    import dataclasses

    from kernel.hopper.config import (
        EPILOGUE_BARRIER_ID0, EXPERIMENTAL_VARIANTS, FASTEST_CONFIG, MIXED_TAIL_CONFIG, PRODUCTION_VARIANTS,
        SMEM_ALIGN, epilogue_stage_rows,
    )

    assert HopperConfig().epilogue == "direct"
    # production since session 6: the simplest pipeline (direct stores) and two staged tiles
    assert [c.epilogue for c in PRODUCTION_VARIANTS] == ["direct", "smem", "smem"]
    assert all("epilogue_staging" not in smem_bytes(c) and epilogue_stage_rows(c) == 0
               for c in DECLARED_VARIANTS if c.epilogue == "direct")
    staged = [c for c in DECLARED_VARIANTS
              if c.epilogue == "smem" and not c.x_prefetch and c.prepass_store == "direct" and not c.pdl]
    assert staged == [dataclasses.replace(FASTEST_CONFIG, epilogue="smem"),
                      dataclasses.replace(MIXED_TAIL_CONFIG, epilogue="smem")]
    assert [c.label for c in staged] == [FASTEST_CONFIG.label + "_es", MIXED_TAIL_CONFIG.label + "_es"]
    assert all(config_problems(c) == [] for c in staged)
    # production: the fastest tile's twin; the mixed tile's twin gave its place to the same tile
    # with phase 1's items staged as well (session 7), and that one to its build with the
    # balanced split searched by a warp (session 10); its lean-exit build is experimental
    # (session 12: the fastest tile's twin is production with programmatic dependent launch;
    # session 15: that one's build with two wgmma groups in flight, the pdl twin experimental)
    pdl_twin = dataclasses.replace(staged[0], pdl=True)
    assert pdl_twin in EXPERIMENTAL_VARIANTS and staged[0] in EXPERIMENTAL_VARIANTS
    assert dataclasses.replace(pdl_twin, wgmma_in_flight=2, fp16_buffers=4, num_ab_stages=3) in PRODUCTION_VARIANTS
    assert staged[1] in EXPERIMENTAL_VARIANTS
    phase1 = dataclasses.replace(staged[1], prepass_store="staged")
    assert phase1 in EXPERIMENTAL_VARIANTS and dataclasses.replace(phase1, prepass_lean_exit=True) in EXPERIMENTAL_VARIANTS
    assert dataclasses.replace(phase1, prepass_split_warp=True) in PRODUCTION_VARIANTS
    assert FASTEST_CONFIG in EXPERIMENTAL_VARIANTS and MIXED_TAIL_CONFIG in EXPERIMENTAL_VARIANTS
    # (+ the prepass_store="staged", lean-exit, x-before, split-warp and its three lean-change
    # builds; x_prefetch's ends in "_es_xp")
    # (session 10: + the two background phase-1 builds and the y_tail16 build; session 11: + the
    # zero-padded workspace build and the first-K-tile-local build; session 12: none, the
    # background build with a local first K tile is measured but not declared; session 16: + the
    # build with phase 1 in a launch of its own, "..._prec1xswk4e_t64_es"; session 18: + the
    # stream-K build, "..._t64_sk_es")
    assert sum(c.label.endswith("_es") for c in DECLARED_VARIANTS) == 16
    # session 12 (bench4's), session 13 (its cluster-decode build, "_c2d_es_pdl"), session 14 (the
    # same with the bulk peer copy, "_c2db_es_pdl"), session 15 (two wgmma groups in flight, "_w2_es_pdl")
    assert sum(c.label.endswith("_es_pdl") for c in DECLARED_VARIANTS) == 4
    fast, t64 = staged
    assert smem_bytes(fast) == {"barriers": 64, "raw_stages": 147456, "dequant_buffers": 32768,
                                "epilogue_staging": 2 * 128 * 128, "total": 183360 + SMEM_ALIGN + 32768}
    assert epilogue_stage_rows(fast) == 128
    # 208088 B before staging: 128 rows would need 241880 > 232448, 64 rows take 225496
    assert smem_bytes(t64)["epilogue_staging"] == 2 * 64 * 128 and smem_bytes(t64)["total"] == 225496
    assert epilogue_stage_rows(t64) == 64
    assert smem_bytes(dataclasses.replace(t64, epilogue="direct"))["total"] == 208088
    # named barriers 4 + warpgroup: none of the kernel's other ids (0 CTA, 1 consumers, 1 + w y_per_warpgroup)
    assert EPILOGUE_BARRIER_ID0 > max(1 + w for w in range(3))


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(epilogue="smem"), "swapped tiles with x_operand='regs'"),  # the default tile: unswapped, X in smem
        (dict(_RS, swapped=False, epilogue="smem"), "swapped tiles with x_operand='regs'"),
        (dict(tile_m=128, tile_n=128, swapped=True, consumer_warpgroups=2, num_ab_stages=3, epilogue="smem"),
         "swapped tiles with x_operand='regs'"),
        (dict(_RS, epilogue="stmatrix"), "epilogue must be 'direct' or 'smem'"),
        # 6 X stages + 7 Y buffers (228568 B) leave less than 16 rows of staging (4096 + 1024 B)
        (dict(_PRE, num_ab_stages=6, fp16_buffers=7, epilogue="smem"), "4096 B epilogue staging"),
    ],
)
def test_staged_epilogue_rules(kwargs, words):
    problems = config_problems(HopperConfig(**kwargs))
    assert any(words in p for p in problems), problems


def test_staged_epilogue_rows_shrink_to_fit():
    """The staging pass shrinks (128 -> 64 -> 32 -> 16 rows of C) until it fits beside the rest."""
    from kernel.hopper.config import epilogue_stage_rows

    rows = {b: epilogue_stage_rows(HopperConfig(**dict(_PRE, fp16_buffers=b, epilogue="smem"))) for b in (2, 7, 8, 9)}
    assert rows == {2: 128, 7: 128, 8: 64, 9: 16}
    assert config_problems(HopperConfig(**dict(_PRE, fp16_buffers=9, epilogue="smem"))) == []


def test_prepass_store_rules_and_label():
    q = dict(_PRE, prepass_chunk=1, prepass_x_early=True)
    pre, staged = HopperConfig(**q), HopperConfig(**dict(q, prepass_store="staged"))
    assert config_problems(staged) == [] and pre.prepass_store == "direct"
    assert "_prec1x_" in pre.label + "_" and staged.label == (pre.label + "_").replace("_prec1x_", "_prec1xs_")[:-1]
    assert any("prepass_store must be" in p for p in config_problems(HopperConfig(**dict(q, prepass_store="tma"))))
    for other in (dict(_RS, prepass_store="staged"), dict(_PRE, prepass_store="staged")):  # no prepass / no chunks
        assert any("prepass_store='staged' is built for" in p for p in config_problems(HopperConfig(**other)))
    # every warp's 32 slots must fit in the Y ring
    small = HopperConfig(**dict(q, prepass_store="staged", fp16_buffers=2))
    assert any("stages" in p and "Y ring" in p for p in config_problems(small))


def test_background_phase1_and_tail16_rules_and_labels():
    """Session 10: prepass_decoders (phase 1 on warps of its own, label "g<n>") is built on the
    flags path with the split's warp search, adds 32 threads per decoder warp (the launch cap
    unchanged at 384 threads), and with staged stores its own shared region; y_tail16 ("_t16")
    goes with schedule="snake" only and replaces y_tail64. Both stay out of production."""
    import dataclasses

    from kernel.hopper.config import (BACKGROUND_B7_CONFIG, BACKGROUND_CONFIG, PREPASS_STAGED_WARP_BYTES, PRODUCTION_VARIANTS,
                                      SPLIT_WARP_CONFIG, TAIL16_CONFIG, decoder_staging_bytes)

    bg = BACKGROUND_CONFIG
    assert bg == dataclasses.replace(SPLIT_WARP_CONFIG, prepass_sync="flags", prepass_decoders=3)
    assert bg.label == "h90_m128n128k256_s4_wg2_b8_swap_fp16_tma_prmt_rs_prec1xfswg3_t64_es"
    assert bg.threads == SPLIT_WARP_CONFIG.threads + 96 == 384 and bg.launch_register_cap == 168
    assert decoder_staging_bytes(bg) == 3 * PREPASS_STAGED_WARP_BYTES == smem_bytes(bg)["decoder_staging"]
    assert "decoder_staging" not in smem_bytes(SPLIT_WARP_CONFIG)
    assert config_problems(bg) == [] and config_problems(BACKGROUND_B7_CONFIG) == []
    for bad, words in [
        (dict(prepass_sync="barrier"), "prepass_sync='flags'"),
        (dict(prepass_split_warp=False), "needs prepass_split_warp"),
        (dict(prepass_decoders=4), "prepass_decoders must be an int in 0..3"),
        (dict(prepass_decoders=True), "prepass_decoders must be an int"),
        (dict(prepass_count_after=True), "without the barrier exit's options"),
    ]:
        problems = config_problems(dataclasses.replace(bg, **bad))
        assert any(words in p for p in problems), (bad, problems)
    t16 = TAIL16_CONFIG
    assert t16.label == "h90_m128n128k256_s4_wg2_b8_swap_fp16_tma_prmt_rs_prec1xs_t16_es" and config_problems(t16) == []
    for bad, words in [
        (dict(schedule="balanced"), "schedule='snake' and y_tail16 go together"),
        (dict(y_tail64=True), "in place of y_tail64"),
        (dict(y_tail16=False), "schedule='snake' and y_tail16 go together"),
    ]:
        problems = config_problems(dataclasses.replace(t16, **bad))
        assert any(words in p for p in problems), (bad, problems)
    assert not any(c.prepass_decoders or c.y_tail16 for c in PRODUCTION_VARIANTS)
    assert {bg, BACKGROUND_B7_CONFIG, t16} <= set(DECLARED_VARIANTS)


def test_y_row_pad_rules_and_label():
    import dataclasses

    from kernel.hopper.config import (BACKGROUND_CONFIG, FASTEST_STAGED_CONFIG, SPLIT_WARP_CONFIG, TAIL16_CONFIG,
                                      ZERO_PAD_CONFIG)

    assert ZERO_PAD_CONFIG.label == SPLIT_WARP_CONFIG.label.replace("_prec1xsw_", "_prec1xswz_")
    assert not config_problems(ZERO_PAD_CONFIG) and ZERO_PAD_CONFIG in DECLARED_VARIANTS
    assert (ZERO_PAD_CONFIG.y_row_align, SPLIT_WARP_CONFIG.y_row_align) == (64, 1)
    assert dataclasses.replace(ZERO_PAD_CONFIG, y_tail64=False, schedule="contiguous").y_row_align == ZERO_PAD_CONFIG.mma_n
    for bad in (dataclasses.replace(FASTEST_STAGED_CONFIG, y_row_pad=True),  # no workspace
                dataclasses.replace(BACKGROUND_CONFIG, y_row_pad=True),  # the flags layout
                dataclasses.replace(TAIL16_CONFIG, y_row_pad=True)):
        assert any("y_row_pad pads the workspace rows of the barrier prepass" in p for p in config_problems(bad)), bad
    assert any("y_row_pad must be a bool" in p
               for p in config_problems(dataclasses.replace(SPLIT_WARP_CONFIG, y_row_pad=1)))


def test_prepass_first_local_rules_and_label():
    import dataclasses

    from kernel.hopper.config import (BACKGROUND_CONFIG, FIRST_LOCAL_CONFIG, LEAN_EXIT_CONFIG, PHASE1_STAGED_CONFIG,
                                      SPLIT_WARP_CONFIG, ZERO_PAD_CONFIG)

    assert FIRST_LOCAL_CONFIG.label == SPLIT_WARP_CONFIG.label.replace("_prec1xsw_", "_prec1xswh_")
    assert not config_problems(FIRST_LOCAL_CONFIG) and FIRST_LOCAL_CONFIG in DECLARED_VARIANTS
    assert not config_problems(dataclasses.replace(ZERO_PAD_CONFIG, prepass_first_local=True))
    # session 12: on the background phase 1 too, with one or two local K tiles
    assert not config_problems(dataclasses.replace(BACKGROUND_CONFIG, prepass_first_local=True))
    two = dataclasses.replace(BACKGROUND_CONFIG, prepass_first_local=True, first_local_tiles=2)
    assert not config_problems(two) and two.label == BACKGROUND_CONFIG.label.replace("g3_", "g3h2_")
    assert dataclasses.replace(two, first_local_tiles=1) not in DECLARED_VARIANTS  # (measured, not declared)
    for bad, rule in ((dataclasses.replace(BACKGROUND_CONFIG, first_local_tiles=2), "first_local_tiles is"),
                      (dataclasses.replace(two, first_local_tiles=3), "first_local_tiles must be 1 or 2"),
                      (dataclasses.replace(two, fp16_buffers=7), "8 buffers, the ring has 7")):
        assert any(rule in p for p in config_problems(bad)), (bad, config_problems(bad))
    for bad in (dataclasses.replace(SPLIT_WARP_CONFIG, prepass_sync="flags", prepass_first_local=True),  # flags
                dataclasses.replace(LEAN_EXIT_CONFIG, prepass_first_local=True),  # the lean exit
                dataclasses.replace(PHASE1_STAGED_CONFIG, prepass_store="direct", prepass_first_local=True)):
        assert any("prepass_first_local is built on the barrier prepass" in p for p in config_problems(bad)), bad
    assert any("prepass_first_local must be a bool" in p
               for p in config_problems(dataclasses.replace(SPLIT_WARP_CONFIG, prepass_first_local=1)))


def test_pdl_rules_label_and_declared_twins():
    """Session 12: programmatic dependent launch is off by default, a bool, the label's last
    suffix; declared on the default dispatch's two builds, each its twin's config but pdl."""
    import dataclasses

    from kernel.hopper.config import (FASTEST_STAGED_CONFIG, FASTEST_STAGED_PDL_CONFIG, SPLIT_WARP_CONFIG,
                                      SPLIT_WARP_PDL_CONFIG)

    assert HopperConfig().pdl is False
    for twin, pdl in ((SPLIT_WARP_CONFIG, SPLIT_WARP_PDL_CONFIG), (FASTEST_STAGED_CONFIG, FASTEST_STAGED_PDL_CONFIG)):
        assert pdl == dataclasses.replace(twin, pdl=True) and pdl.label == twin.label + "_pdl"
        assert not config_problems(pdl) and twin in DECLARED_VARIANTS
    # declared: bench4's (production); the prepass build's twin is measured, not declared
    assert FASTEST_STAGED_PDL_CONFIG in DECLARED_VARIANTS and SPLIT_WARP_PDL_CONFIG not in DECLARED_VARIANTS
    assert any("pdl must be a bool" in p for p in config_problems(dataclasses.replace(SPLIT_WARP_CONFIG, pdl=1)))
