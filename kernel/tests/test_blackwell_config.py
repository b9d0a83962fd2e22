"""The Blackwell family's configs, budgets and host path: pure Python, no compile, no GPU."""

from dataclasses import replace

import pytest

import kernel.blackwell as bw
from kernel.blackwell import config as cfg
from kernel.errors import UnsupportedConfigError

ALL_CONFIGS = sorted(set(bw.STATIC_MATRIX) | set(bw.DECLARED_VARIANTS), key=lambda c: c.label)


def test_labels_are_unique_and_name_every_axis():
    labels = [c.label for c in ALL_CONFIGS]
    assert len(labels) == len(set(labels))
    assert bw.DEFAULT_CONFIG.label == "bw-spec-t128x128x256-abmax-acc2"
    assert cfg.BlackwellConfig(num_ab_stages=6).label == "bw-spec-t128x128x256-ab6-acc2"
    assert cfg.BlackwellConfig(schedule="strided").label.endswith("-strided")


@pytest.mark.parametrize("config", ALL_CONFIGS, ids=lambda c: c.label)
def test_declared_configs_are_valid_and_resolve(config):
    assert bw.config_problems(config) == []
    r = config.resolved()
    assert r.num_ab_stages is not None and 1 <= r.num_ab_stages <= 8
    assert r.resolved() == r
    assert hash(r) == hash(replace(r))
    assert cfg.smem_budget(r).total_bytes <= cfg.SMEM_CAPACITY_BYTES
    assert cfg.tmem_budget(r).used_columns <= cfg.TMEM_COLUMNS


def test_matrix_covers_the_axes():
    m = bw.STATIC_MATRIX
    assert {c.warp_roles for c in m} == {"monolithic", "specialized"}
    assert {c.num_acc_stages for c in m} == {1, 2}
    assert {1, 2, 4, 6, None} <= {c.num_ab_stages for c in m}
    assert {tuple(c.tile_mnk) for c in m} == set(cfg.SUPPORTED_TILES)
    assert bw.DEFAULT_CONFIG in m and set(bw.DECLARED_VARIANTS) <= set(m)


def test_default_stages_are_as_many_as_fit():
    # 128x128x256: a stage is 16384 A + 16384 B + 2048 SFA + 2048 SFB = 36864 B; 1024 B header
    assert cfg.smem_budget(bw.DEFAULT_CONFIG, 1).stage_bytes == 36864
    assert bw.DEFAULT_CONFIG.resolved().num_ab_stages == 6  # 1024 + 6 * 36864 = 222208 <= 232448
    wide = cfg.BlackwellConfig(tile_mnk=(128, 256, 256), num_acc_stages=1)
    assert cfg.smem_budget(wide, 1).stage_bytes == 55296
    assert wide.resolved().num_ab_stages == 4


def test_stage_that_does_not_fit_raises_with_the_byte_arithmetic():
    too_deep = cfg.BlackwellConfig(num_ab_stages=7)
    with pytest.raises(UnsupportedConfigError) as info:
        too_deep.resolved()
    (reason,) = info.value.reasons
    assert "7 stages x" in reason and "36864" in reason and "259072" in reason and "232448" in reason
    assert info.value.label == too_deep.label


@pytest.mark.parametrize(
    "config, rule",
    [
        (cfg.BlackwellConfig(tile_mnk=(128, 256, 256), num_acc_stages=2), "TMEM does not fit"),
        (cfg.BlackwellConfig(tile_mnk=(64, 128, 256)), "tile"),
        (cfg.BlackwellConfig(num_acc_stages=3), "num_acc_stages"),
        (cfg.BlackwellConfig(warp_roles="monolithic", num_acc_stages=2), "one accumulator stage"),
        (cfg.BlackwellConfig(warp_roles="monolithic", num_acc_stages=1, schedule="strided"), "schedule"),
        (cfg.BlackwellConfig(num_ab_stages=0), "num_ab_stages"),
        (cfg.BlackwellConfig(num_ab_stages=9), "num_ab_stages"),
        (cfg.BlackwellConfig(arch="sm_90a"), "arch"),
    ],
    ids=lambda x: x.label if isinstance(x, cfg.BlackwellConfig) else x,
)
def test_invalid_configs_name_the_rule(config, rule):
    problems = bw.config_problems(config)
    assert any(rule in p for p in problems), problems
    with pytest.raises(UnsupportedConfigError):
        bw.compile_for(config, 2)  # rejected before any CuTe DSL work


def test_tmem_arithmetic():
    t = cfg.tmem_budget(bw.DEFAULT_CONFIG)
    assert (t.acc_columns, t.sfa_columns, t.sfb_columns, t.used_columns, t.alloc_columns) == (128, 16, 16, 288, 512)
    w = cfg.tmem_budget(cfg.BlackwellConfig(tile_mnk=(128, 256, 256), num_acc_stages=1))
    assert (w.used_columns, w.alloc_columns) == (304, 512)
    mono = cfg.tmem_budget(cfg.BlackwellConfig(warp_roles="monolithic", num_acc_stages=1))
    assert mono.alloc_columns == 256  # two monolithic CTAs can share an SM's TMEM


def test_constraints():
    c = bw.constraints(bw.DEFAULT_CONFIG)
    assert (c.k_granularity, c.device_type, c.alignment_bytes) == (256, "cuda", 16)
    assert c.max_groups == cfg.MAX_GROUPS


def test_unavailable_reason_on_this_machine():
    from kernel.device import cuda_capability

    cap = cuda_capability()
    reason = bw.unavailable_reason()
    assert (reason is None) == (cap is not None and cap[0] == 10)
