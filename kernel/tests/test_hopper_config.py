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
from kernel.hopper.config import PREPASS_BATCH, SMEM_CAPACITY_BYTES, stage_tx_bytes


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
    assert {c.consumer_warpgroups for c in DECLARED_VARIANTS} == {1, 2}
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
        dict(tile_n=192),
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
    }
    step1 = [c for c in prmt if c.roles == "cooperative" and c.producer_warps == 1 and c.loader == "cp_async"]
    for c in step1:  # each cp.async prmt variant has its shift twin declared, for a same-run comparison
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
    split = HopperConfig(roles="split", dequant_warpgroups=2, fp16_buffers=4, **_RS)
    # 17 warps: 5 on a sub-partition leave 96 registers: 64 accumulators + 24 + two X fragments
    # of 16 do not fit (ptxas for sm_90a: 96 registers, a 96-byte stack, 120 spill instructions)
    assert split.threads == 256 + 256 + 32 and split.register_cap == 96
    assert any("= 120" in p and "X fragments" in p for p in config_problems(split))
    one = HopperConfig(roles="split", dequant_warpgroups=1, fp16_buffers=4, **_RS)
    assert one.threads == 256 + 128 + 32 and one.register_cap == 128 and not config_problems(one)


_RS = dict(swapped=True, consumer_warpgroups=2, num_ab_stages=4, dequant="prmt", loader="tma", x_operand="regs")
_PRE = dict(_RS, y_source="prepass", fp16_buffers=8, prepass_chunk=1)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(_RS, roles="split", dequant_warpgroups=0), "dequant_warpgroups 1 or 2"),
        (dict(_RS, roles="split", dequant_warpgroups=1, fp16_buffers=7), "2..6 fp16_buffers"),
        (dict(roles="split", dequant_warpgroups=1, fp16_buffers=3), "is built with x_operand='regs'"),
        (dict(dequant_warpgroups=1), "for roles='split' only"),
        (dict(fp16_buffers=3), "takes 2 fp16 buffers"),
        (dict(loader="tma", tile_k=128, num_ab_stages=5), "needs tile_k 256"),
        (dict(producer_warps=3), "producer_warps must be 1, 2 or 4"),
        (dict(producer_warps=2, loader="tma"), "needs loader='cp_async'"),
        (dict(roles="weird"), "roles must be"),
        (dict(loader="tma", dequant="prmt", x_operand="regs"), "64-row wgmma A fragment"),  # wg1, mma_m 128
        # 64 rows of Y = 128 units over 256 threads: units would be left unwritten
        (dict(tile_m=64, swapped=True, consumer_warpgroups=2, loader="tma", dequant="prmt", x_operand="regs"),
         "evenly"),
        (dict(x_operand="regs"), "needs loader='tma'"),
        (dict(_RS, roles="split", dequant_warpgroups=1, fp16_buffers=2), ">= 3 fp16_buffers"),
    ],
)
def test_role_axes_rules(kwargs, words):
    problems = config_problems(HopperConfig(**kwargs))
    assert any(words in p for p in problems), problems


def test_split_smem_counts_the_fp16_ring_and_its_barriers():
    coop = HopperConfig(**_RS)
    split = HopperConfig(roles="split", dequant_warpgroups=1, fp16_buffers=4, **_RS)
    assert smem_bytes(split)["dequant_buffers"] == 4 * 128 * 64 * 2  # Y only: X is in registers
    assert smem_bytes(split)["barriers"] == smem_bytes(coop)["barriers"] + 2 * 4 * 8
    assert "_dq1b4" in split.label and "_p4" in HopperConfig(producer_warps=4).label


def test_ablation_is_not_a_config_field():
    """Ablations are profiling build options (kernel.hopper.ablation), not part of a variant."""
    import dataclasses

    assert not {f.name for f in dataclasses.fields(HopperConfig)} & {"ablate", "ablation", "perturbation"}
    with pytest.raises(TypeError):
        HopperConfig(ablate="no_mma")
    assert not any("ablate" in c.label for c in DECLARED_VARIANTS)


def test_sf_blocks_cover_every_tile_start():
    from kernel.hopper.config import sf_blocks

    assert [sf_blocks(r) for r in (64, 128, 192, 256)] == [1, 1, 2, 2]
    # a tile of `rows` starts at a multiple of `rows`: the 128-row scale blocks it touches
    for rows in (64, 128, 192, 256):
        for start in range(0, 8192, rows):
            touched = (start + rows - 1) // 128 - start // 128 + 1
            assert touched <= sf_blocks(rows), (rows, start)


def test_split_register_x_pairs_sub_blocks_with_one_dequant_warpgroup_only():
    one = HopperConfig(roles="split", dequant_warpgroups=1, fp16_buffers=4, **_RS)
    two = HopperConfig(roles="split", dequant_warpgroups=2, fp16_buffers=4, **_RS)
    assert one.y_pairs_sub_blocks and not two.y_pairs_sub_blocks
    assert not HopperConfig(**_RS).y_pairs_sub_blocks


def test_prepass_smem_arithmetic_and_label():
    from kernel.hopper import PRODUCTION_VARIANTS, SPLIT_WARP_CONFIG, WIDE_Y_CONFIG
    from kernel.hopper.config import raw_stage_layout, y_box_tx_bytes

    pre = HopperConfig(**_PRE)
    assert pre.label == "h90_m128n128k256_s4_wg2_b8_swap_fp16_tma_prmt_rs_prec1xs"
    assert config_problems(pre) == []
    # a raw stage holds X (128 rows x 128 B) and its scale block only; Y comes as 64-K fp16 boxes
    assert raw_stage_layout(pre)["bytes"] == 16384 + 2048 == stage_tx_bytes(pre)
    assert y_box_tx_bytes(pre) == 128 * 64 * 2
    # 4 X stages + 8 Y buffers + barriers (2 x 4 + 2 x 8) x 8 B + 8 B claim slots + 3 x 1024 alignment
    assert smem_bytes(pre) == {"barriers": 200, "raw_stages": 73728, "dequant_buffers": 131072, "total": 208072}
    assert config_problems(HopperConfig(**dict(_PRE, fp16_buffers=9))) == []
    assert any("shared memory" in p for p in config_problems(HopperConfig(**dict(_PRE, fp16_buffers=10))))
    # the production variants with a prepass: mixed 128/64-row tiles, C staged, the split searched
    # by a warp (kernel.hopper.dispatch DEFAULT_RULE's choice on bench1-3 and its fallback), and the
    # 256- and 240-row Y tiles of the dense groups (phase 1 beside the tiles)
    from kernel.hopper import WIDE_BESIDE_240_CONFIG, WIDE_BESIDE_CONFIG

    assert [c for c in PRODUCTION_VARIANTS if c.y_source != "smem_decode"] == [
        SPLIT_WARP_CONFIG, WIDE_BESIDE_CONFIG, WIDE_BESIDE_240_CONFIG]
    assert SPLIT_WARP_CONFIG.label == "h90_m128n128k256_s4_wg2_b8_swap_fp16_tma_prmt_rs_prec1xsw_t64_es"
    assert sum("_prec" in c.label for c in DECLARED_VARIANTS) == sum(c.y_source == "prepass" for c in DECLARED_VARIANTS)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(_PRE, swapped=False), "needs swapped tiles"),
        (dict(_PRE, x_operand="smem"), "needs roles='cooperative' and x_operand='regs'"),
        (dict(_PRE, roles="split", dequant_warpgroups=1), "needs roles='cooperative' and x_operand='regs'"),
        (dict(_PRE, schedule="strided"), "takes schedule='contiguous', 'split_last' or 'balanced'"),
        (dict(_RS, schedule="split_last"), "schedule='split_last' (the last round's tiles cut in K halves) needs y_source='prepass'"),
        (dict(_PRE, y_tail64=True, schedule="split_last"), "needs y_source='prepass' without y_tail64"),
        (dict(_PRE, fp16_buffers=1), "a Y ring of 2..16 fp16 buffers"),
        (dict(_PRE, dequant_warpgroups=1), "dequant_warpgroups is for roles='split' only"),
        (dict(_PRE, prepass_chunk=0), "needs prepass_chunk in"),
        (dict(_PRE, prepass_chunk=3), "needs prepass_chunk in"),
        (dict(_RS, prepass_chunk=1), "prepass_chunk is for y_source='prepass' only"),
        (dict(_PRE, tile_m=64, fp16_buffers=3), "stages 4096 bytes per warp in the Y ring"),
        (dict(_RS, y_source="global"), "y_source must be 'smem_decode' or 'prepass'"),
        (dict(_RS, y_tail64=True, schedule="balanced"), "y_tail64 needs y_source='prepass'"),
        (dict(_PRE, y_tail64=True), "schedule='balanced' and y_tail64 go together"),
        (dict(_PRE, schedule="balanced"), "schedule='balanced' and y_tail64 go together"),
        (dict(_PRE, prepass_split_warp=True), "prepass_split_warp is the balanced split's warp search"),
        (dict(_PRE, y_tail64=1, schedule="balanced"), "y_tail64 must be a bool"),
        (dict(_PRE, prepass_batch=3), "needs prepass_batch in"),
        (dict(_PRE, prepass_batch=True), "needs prepass_batch in"),
        (dict(_RS, prepass_batch=8), "prepass_batch is for y_source='prepass' only"),
        (dict(_PRE, phase1_helpers=True), "phase1_helpers needs producer_warpgroup"),
        (dict(_PRE, phase1_helpers=1), "phase1_helpers must be a bool"),
    ],
)
def test_prepass_rules(kwargs, words):
    problems = config_problems(HopperConfig(**kwargs))
    assert any(words in p for p in problems), problems


def test_narrow_width_is_the_first_half_of_the_tile():
    """y_tail64: a light tile issues wgmma N = 64, the first half of the 128-row Y tile; builds
    without tail tiles none (the m_edges the property strategies draw come from it)."""
    from kernel.hopper import SPLIT_WARP_CONFIG, WIDE_Y_CONFIG

    assert SPLIT_WARP_CONFIG.narrow_widths == (SPLIT_WARP_CONFIG.mma_n // 2,) == (64,)
    assert WIDE_Y_CONFIG.narrow_widths == () and DEFAULT_CONFIG.narrow_widths == ()


def test_producer_warpgroup_rules_and_budget():
    """producer_warpgroup: the prepass build with two consumer warpgroups only; 384 threads, the
    consumers' register cap is what setmaxnreg gives them (232), not the 288-thread launch's 168."""
    wide = dict(_PRE, tile_m=256, fp16_buffers=4, num_ab_stages=3, epilogue="smem")
    with_wg = HopperConfig(**wide, producer_warpgroup=True)
    assert with_wg.threads == 384 and with_wg.register_cap == 232 and not config_problems(with_wg)
    assert with_wg.label.endswith("_pwg")
    assert HopperConfig(**wide).register_cap == 168
    # without the producer warpgroup the 256-row tile's consumers need 128 accumulators + 24 + two
    # X fragments of 16 = 184 registers: more than the 288-thread cap (ptxas spilled in its K loop)
    assert with_wg.mma_regs_per_thread == 184
    assert any("184" in p and "X fragments" in p for p in config_problems(HopperConfig(**wide)))
    for bad in (dict(_RS, producer_warpgroup=True), dict(_PRE, consumer_warpgroups=1, producer_warpgroup=True),
                dict(_PRE, producer_warps=2, producer_warpgroup=True)):
        assert any("producer_warpgroup needs" in p for p in config_problems(HopperConfig(**bad))), bad
    assert any("producer_warpgroup must be a bool" in p
               for p in config_problems(HopperConfig(**dict(_PRE, producer_warpgroup=1))))


def test_phase1_staging_counts_the_decoding_warps_only():
    """Phase 1 stages one 4096-byte slot block per decoding warp in the Y ring: the consumer
    warps (8 with two warpgroups), not the producer warp, so two 16 KB Y buffers hold them."""
    pre = HopperConfig(**dict(_PRE, fp16_buffers=2))
    assert pre.phase1_threads == pre.consumer_threads == 256 < pre.threads
    assert not [p for p in config_problems(pre) if "bytes per warp" in p]


def test_prepass_takes_no_shared_memory_decode_ablation():
    from kernel.hopper.ablation import REGS_PARTS, Ablation

    pre = HopperConfig(**_PRE)
    for part in REGS_PARTS:
        # X's decode (no_x_dequant) and mma_only (with the Y ring's parts) are the parts of the
        # shared-memory Y decode's list a prepass variant has
        assert bool(Ablation(part).problems(pre)) == (part not in ("no_x_dequant", "mma_only")), part


def test_split_warp_is_one_field_off_the_one_lane_search():
    import dataclasses

    from kernel.hopper import SPLIT_WARP_CONFIG
    from kernel.hopper.variants import PHASE1_STAGED_CONFIG

    assert SPLIT_WARP_CONFIG == dataclasses.replace(PHASE1_STAGED_CONFIG, prepass_split_warp=True)
    assert SPLIT_WARP_CONFIG.label == PHASE1_STAGED_CONFIG.label.replace("_prec1xs_", "_prec1xsw_")
    assert PHASE1_STAGED_CONFIG in DECLARED_VARIANTS


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(epilogue="smem"), "epilogue='smem' is built for swapped tiles with x_operand='regs'"),
        (dict(epilogue="stmatrix"), "epilogue must be 'direct' or 'smem'"),
        (dict(_RS, wgmma_in_flight=3), "wgmma_in_flight must be 1 or 2"),
        (dict(_RS, wgmma_in_flight=2), "wgmma_in_flight=2 takes 4 fp16 buffers"),
        (dict(wgmma_in_flight=2, fp16_buffers=4), "wgmma_in_flight=2 is built with x_operand='regs'"),
        (dict(_PRE, wgmma_in_flight=2), "wgmma_in_flight=2 is built with y_source='smem_decode'"),
        (dict(pdl=1), "pdl must be a bool"),
    ],
)
def test_epilogue_in_flight_and_pdl_rules(kwargs, words):
    problems = config_problems(HopperConfig(**kwargs))
    assert any(words in p for p in problems), problems


def test_staged_epilogue_rows_shrink_to_fit():
    """The staging pass shrinks (128 -> 64 -> 32 -> 16 rows of C) until it fits beside the rest."""
    from kernel.hopper.config import epilogue_stage_rows

    rows = {b: epilogue_stage_rows(HopperConfig(**dict(_PRE, fp16_buffers=b, epilogue="smem"))) for b in (7, 8, 9)}
    assert rows == {7: 128, 8: 64, 9: 16}
    assert epilogue_stage_rows(HopperConfig(**dict(_RS, epilogue="smem"))) == 128
    assert epilogue_stage_rows(HopperConfig(**_RS)) == 0
    assert config_problems(HopperConfig(**dict(_PRE, fp16_buffers=9, epilogue="smem"))) == []


def test_y_tile_heights_past_the_powers_of_two():
    """A prepass build may take a Y tile height of config.WIDE_Y_HEIGHTS (no power of two), whose
    staged epilogue then runs in the largest even split of whole 16-row steps that fits; every
    other build keeps 64, 128 or 256."""
    import dataclasses

    from kernel.hopper import config as cfgmod
    from kernel.hopper.config import WIDE_Y_HEIGHTS, epilogue_stage_rows
    from kernel.hopper.variants import WIDE_Y_CONFIG

    assert all(h % 16 == 0 and 128 < h < 256 for h in WIDE_Y_HEIGHTS)
    for h in WIDE_Y_HEIGHTS:
        c = dataclasses.replace(WIDE_Y_CONFIG, tile_m=h)
        assert config_problems(c) == [] and c.mma_n == h
        rows = epilogue_stage_rows(c)
        assert h % rows == 0 and rows % 16 == 0
        assert cfgmod.smem_bytes(c)["total"] <= cfgmod.SMEM_CAPACITY_BYTES
    for h in (232, 248, 96):
        problems = config_problems(dataclasses.replace(WIDE_Y_CONFIG, tile_m=h))
        assert any("tile_m must be" in p for p in problems), problems
    problems = config_problems(HopperConfig(**dict(_RS, tile_m=240)))
    assert any("tile_m must be" in p for p in problems), problems


def test_in_flight_and_pdl_twins_are_declared():
    """IN_FLIGHT_CONFIG (production, bench4) differs from its declared one-group twin only in the
    wgmma groups in flight, the fp16 buffers that need and its stages; that twin differs from the
    staged-epilogue tile only in pdl (the label's last suffix)."""
    import dataclasses

    from kernel.hopper import IN_FLIGHT_CONFIG
    from kernel.hopper.variants import FASTEST_STAGED_CONFIG, FASTEST_STAGED_PDL_CONFIG

    assert HopperConfig().pdl is False
    assert FASTEST_STAGED_PDL_CONFIG == dataclasses.replace(FASTEST_STAGED_CONFIG, pdl=True)
    assert FASTEST_STAGED_PDL_CONFIG.label == FASTEST_STAGED_CONFIG.label + "_pdl"
    assert IN_FLIGHT_CONFIG == dataclasses.replace(FASTEST_STAGED_PDL_CONFIG, wgmma_in_flight=2, fp16_buffers=4,
                                                   num_ab_stages=3)
    assert {FASTEST_STAGED_CONFIG, FASTEST_STAGED_PDL_CONFIG, IN_FLIGHT_CONFIG} <= set(DECLARED_VARIANTS)


def test_a_command_line_names_a_declared_variant_or_one_with_fields_changed():
    """kernel.hopper.variants.resolve_config: a label is its declared config; LABEL:field=value,...
    is that config with those fields (typed as the field: int, bool, str); JSON gives every field."""
    from dataclasses import asdict, replace
    import json

    from kernel.hopper.variants import DECLARED_VARIANTS, resolve_config

    for config in DECLARED_VARIANTS:
        assert resolve_config(config.label) == config
    base = DECLARED_VARIANTS[1]
    assert resolve_config(f"{base.label}:num_ab_stages=4, pdl=false") == replace(base, num_ab_stages=4, pdl=False)
    assert resolve_config(f"{DECLARED_VARIANTS[0].label}:dequant=prmt") == replace(DECLARED_VARIANTS[0], dequant="prmt")
    assert resolve_config(json.dumps(asdict(base))) == base


@pytest.mark.parametrize("suffix, says", [
    ("", "unknown variant .no_such_label."),
    (":stages=4", "not FIELD=VALUE"),
    (":num_ab_stages", "not FIELD=VALUE"),
    (":num_ab_stages=four", "takes an integer"),
    (":pdl=maybe", "takes true or false"),
    (":num_ab_stages=9", "shared memory .* B > .* B: 9 stages"),
    (":dequant=fast", "dequant must be .shift. or .prmt., got .fast."),
])
def test_a_config_it_cannot_name_or_build_is_refused_with_the_reason(suffix, says):
    from kernel.hopper.variants import IN_FLIGHT_CONFIG, resolve_config

    spec = ("no_such_label" if not suffix else IN_FLIGHT_CONFIG.label + suffix)
    with pytest.raises(ValueError, match=says):
        resolve_config(spec)


def test_phase1_helpers_decode_on_the_producer_warpgroups_other_warps():
    """phase1_helpers: phase 1 decoded by the consumer warps and the three warps after the
    producer warp (its warpgroup's others), 352 threads, each staging at its own warp's slot of
    the Y ring; the label says it ("h"), and a larger prepass_batch ("b8")."""
    import dataclasses

    from kernel.hopper.variants import WIDE_Y_CONFIG

    helped = dataclasses.replace(WIDE_Y_CONFIG, phase1_helpers=True, prepass_batch=8)
    plain = dataclasses.replace(WIDE_Y_CONFIG, phase1_helpers=False, prepass_batch=PREPASS_BATCH)
    assert plain.phase1_warps == tuple(range(8)) and plain.phase1_threads == 256
    assert helped.phase1_warps == (0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11) and helped.phase1_threads == 352
    assert helped.threads == plain.threads == 384
    assert config_problems(helped) == [] and config_problems(plain) == []
    assert helped.label == plain.label.replace("_prec1xs_", "_prec1xsb8h_")


def test_split_last_schedule_is_the_sk_suffix_and_declares_its_cut():
    """schedule="split_last": label suffix "_sk" (last); its constraints declare the K cut at
    tile_k granularity to the error bound, and no other schedule declares one."""
    import dataclasses

    from kernel.hopper.launch import constraints
    from kernel.hopper.variants import DECLARED_VARIANTS, WIDE_Y_CONFIG

    plain = dataclasses.replace(WIDE_Y_CONFIG, schedule="contiguous")
    assert WIDE_Y_CONFIG.schedule == "split_last" and WIDE_Y_CONFIG.label == plain.label + "_sk"
    assert config_problems(plain) == []
    for c in DECLARED_VARIANTS:
        assert constraints(c).k_split == (c.tile_k if c.schedule == "split_last" else None), c.label


def test_phase1_beside_decodes_on_the_helper_warps_only():
    """phase1_beside (label letter "o" after "h"): the producer warpgroup's three helper warps
    alone decode phase 1 (96 threads, staging in a shared region of their own: the tiles use the
    Y ring meanwhile), and setmaxnreg splits the launch's 64512 registers between the producer
    warpgroup and the consumers by the helpers' items in flight (two: 72 and 216; four: 88 and 208;
    each at least what the 256-row tile's wgmma warps need). It needs phase1_helpers and no
    y_tail64 (measured slower on the 128-row prepass build: results row D31)."""
    import dataclasses

    from kernel.hopper import config as cfgmod
    from kernel.hopper.variants import SPLIT_WARP_CONFIG, WIDE_BESIDE_CONFIG as B, WIDE_Y_CONFIG

    assert B.phase1_warps == (9, 10, 11) and B.phase1_threads == 96 == 32 * cfgmod.PHASE1_HELPER_WARPS
    assert B.label == dataclasses.replace(WIDE_Y_CONFIG, prepass_batch=2).label.replace("h_es", "ho_es")
    assert B.warpgroup_regs == (72, 216) and B.register_cap == 216 >= B.mma_regs_per_thread
    launch = B.threads * B.launch_register_cap
    assert 128 * cfgmod.PRODUCER_WARPGROUP_REGS + 256 * cfgmod.CONSUMER_WARPGROUP_REGS == launch
    for batch, (give, take) in cfgmod.BESIDE_WARPGROUP_REGS.items():
        wider = dataclasses.replace(B, prepass_batch=batch)
        assert wider.warpgroup_regs == (give, take) and 128 * give + 256 * take == launch
        assert give % 8 == 0 and take % 8 == 0 and take >= wider.mma_regs_per_thread and not config_problems(wider)
    assert any("phase1_beside takes prepass_batch" in p for p in config_problems(dataclasses.replace(B, prepass_batch=8)))
    sm = cfgmod.smem_bytes(B)
    assert sm["phase1_staging"] == cfgmod.PHASE1_HELPER_WARPS * cfgmod.PREPASS_STAGED_WARP_BYTES
    assert "phase1_staging" not in cfgmod.smem_bytes(WIDE_Y_CONFIG) and sm["total"] <= cfgmod.SMEM_CAPACITY_BYTES
    assert config_problems(B) == []
    for bad, says in ((dataclasses.replace(B, phase1_helpers=False), "phase1_beside needs phase1_helpers"),
                      (dataclasses.replace(SPLIT_WARP_CONFIG, producer_warpgroup=True, phase1_helpers=True,
                                           phase1_beside=True, prepass_batch=2), "and no y_tail64"),
                      (dataclasses.replace(SPLIT_WARP_CONFIG, phase1_beside=True), "phase1_beside needs phase1_helpers"),
                      (dataclasses.replace(B, phase1_beside=1), "phase1_beside must be a bool")):
        assert any(says in p for p in config_problems(bad)), (bad.label, config_problems(bad))


def test_chunk_done_skip_is_a_beside_lever_with_its_own_label_letter():
    """chunk_done_skip ends the producer's chunk-flag waits once every chunk is counted: valid
    only with phase1_beside, a bool, and named by the letter "d" after "o" (so its build never
    shares a label, and so a compile cache entry, with the build without it)."""
    import dataclasses

    from kernel.hopper.variants import SPLIT_WARP_CONFIG, WIDE_BESIDE_CONFIG as B

    skip = dataclasses.replace(B, chunk_done_skip=True)
    assert config_problems(skip) == [] and skip.label == B.label.replace("ho_es", "hod_es") != B.label
    assert any("chunk_done_skip needs phase1_beside" in p
               for p in config_problems(dataclasses.replace(SPLIT_WARP_CONFIG, chunk_done_skip=True)))
    assert any("chunk_done_skip must be a bool" in p for p in config_problems(dataclasses.replace(B, chunk_done_skip=1)))
