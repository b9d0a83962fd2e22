"""Structure the sm_100a cubins must show, checked on a CPU from the static report.

Each variant of the matrix is compiled once per pytest process, on first use (the whole matrix:
about 15 s on 2 cores; a selection of some variants compiles only those). What SASS can prove here:
instruction *sites* and their layout in the binary. It cannot prove which warp runs a site;
the role checks below say what they do establish.
"""

import glob
import os

import pytest

import kernel.blackwell as bw
from ci.ptx_convergence import check_ptx
from kernel.blackwell import config as cfg

pytestmark = pytest.mark.compile


class _Rows(dict):
    """label -> the static report's row of that variant, compiled on first use (the process's
    shared builds, ci.static_builds)."""

    def __init__(self, static_builds):
        super().__init__()
        self.static_builds = static_builds

    def __missing__(self, label):
        row = self.static_builds.row("blackwell", label)
        self[label] = row
        return row


@pytest.fixture(scope="module")
def rows(static_builds):
    return _Rows(static_builds)


def _row(rows, config):
    return rows[config.label]


MATRIX = [pytest.param(c, id=c.label) for c in bw.STATIC_MATRIX]


def test_every_variant_compiles(rows):
    for config in bw.STATIC_MATRIX:
        row = rows[config.label]
        assert row["label"] == config.label
        assert row["arch"] == "sm_100a" and row["cubin"].endswith(".sm_100a.cubin")


@pytest.mark.parametrize("config", MATRIX)
def test_barriers_and_aligned_instructions_are_convergent(rows, config):
    """ci.ptx_convergence on the PTX kept beside the cubin: CTA-wide barriers at one instruction
    of the whole CTA, .aligned instructions (tcgen05 waits, named barriers) by whole warps."""
    (ptx,) = glob.glob(os.path.join(os.path.dirname(_row(rows, config)["cubin"]), "*.ptx"))
    with open(ptx) as f:
        found = check_ptx(f.read())
    assert not found, "\n".join(str(v) for _, v in found)


@pytest.mark.parametrize("config", MATRIX)
def test_no_spills_no_stack(rows, config):
    """The seed: 255 registers, a 208-byte stack, STL/LDL in the epilogue. Ours: none."""
    row = _row(rows, config)
    assert (row["spill_stores"], row["spill_loads"], row["stack_bytes"], row["local_bytes"]) == (0, 0, 0, 0)
    assert row["registers"] <= 128, "the epilogue moves 32 columns per step; it should need few registers"


@pytest.mark.parametrize("config", MATRIX)
def test_mma_and_copy_sites_per_k_tile(rows, config):
    """The K loop is not unrolled, so sites per loop body = instructions per K tile."""
    r = config.resolved()
    row = _row(rows, config)
    assert row["mma_tcgen05"] == r.tile_k // cfg.MMA_INST_K == 4
    assert set(op for op in row["opcodes"] if op.startswith("UTC") and "MMA" in op) == {"UTCOMMA.4X"}
    # scale factors smem -> TMEM: one 4x32dp128bit copy per 128 rows per 64-wide K block
    assert row["tmem_copy"] == (r.tile_m // 128 + r.tile_n // 128) * (r.tile_k // cfg.MMA_INST_K)
    assert row["tcgen05_commit"] == 2  # A/B stage release + accumulator full


@pytest.mark.parametrize("config", MATRIX)
def test_epilogue_shape(rows, config):
    r = config.resolved()
    row = _row(rows, config)
    subtiles = r.tile_n // cfg.EPILOGUE_COLUMNS
    assert row["tmem_load"] == subtiles  # one tcgen05.ld 32x32b.x32 per 32-column step
    assert row["opcodes"].get("LDTM.x32", 0) == subtiles
    assert row["global_store_128"] == 4 * subtiles  # 16-byte stores on the aligned path
    assert row["opcodes"].get("STG.E.U16", 0) == cfg.EPILOGUE_COLUMNS * subtiles  # predicated path


@pytest.mark.parametrize("config", [c for c in MATRIX if c.values[0].warp_roles == "specialized"])
def test_specialized_roles_are_separate_code(rows, config):
    """One UTMALDG site per operand (A, B, SFA, SFB): a single code path issues every TMA load,
    and the TMA, MMA and TMEM-load sites sit in three disjoint code ranges (the three role
    branches); nothing here shows *which* warp enters each range."""
    row = _row(rows, config)
    assert row["tma_load"] == 4
    spans = {k: tuple(v) for k, v in row["spans"].items() if k in ("tma_load", "mma_tcgen05", "tmem_copy", "tmem_load")}
    order = sorted(spans.items(), key=lambda kv: kv[1][0])
    assert [k for k, _ in order] == ["tma_load", "tmem_copy", "mma_tcgen05", "tmem_load"]
    assert spans["tma_load"][1] < spans["tmem_copy"][0]
    assert spans["mma_tcgen05"][1] < spans["tmem_load"][0]


@pytest.mark.parametrize("config", [c for c in MATRIX if c.values[0].warp_roles == "monolithic"])
def test_monolithic_interleaves_loads_and_mmas(rows, config):
    """Warp 0 issues both: prologue loads (4 sites) + refill loads (4 sites) around the MMAs."""
    row = _row(rows, config)
    assert row["tma_load"] == 8
    tma, mma = row["spans"]["tma_load"], row["spans"]["mma_tcgen05"]
    assert tma[0] < mma[0] and mma[1] < tma[1]
    assert row["threads_per_cta"] == 128


def test_stage_count_changes_shared_memory_by_one_stage(rows):
    base = cfg.BlackwellConfig(num_ab_stages=1)
    for stages in (2, 4, 6):
        grown = cfg.BlackwellConfig(num_ab_stages=stages)
        assert rows[grown.label]["shared_bytes"] - rows[base.label]["shared_bytes"] == (stages - 1) * 36864
    wide1 = cfg.BlackwellConfig(tile_mnk=(128, 256, 256), num_ab_stages=2, num_acc_stages=1)
    wide4 = cfg.BlackwellConfig(tile_mnk=(128, 256, 256), num_acc_stages=1)
    assert rows[wide4.label]["shared_bytes"] - rows[wide1.label]["shared_bytes"] == 2 * 55296
    # deeper pipelines add no MMA or TMA code (only the teardown's producer_tail gets one
    # mbarrier-wait site per possible stage index)
    deep = rows[cfg.BlackwellConfig(num_ab_stages=6).label]
    assert (deep["mma_tcgen05"], deep["tma_load"]) == (rows[base.label]["mma_tcgen05"], rows[base.label]["tma_load"])


def test_default_is_the_deepest_pipeline(rows):
    default, explicit = rows[bw.DEFAULT_CONFIG.label], rows[cfg.BlackwellConfig(num_ab_stages=6).label]
    assert default["opcodes"] == explicit["opcodes"] and default["shared_bytes"] == explicit["shared_bytes"]


@pytest.mark.parametrize("config", MATRIX)
def test_shared_memory_is_the_planned_budget(rows, config):
    """The kernel traced its shared storage and checked it equals config.smem_budget (the build
    fails otherwise); here: the report shows that number plus the 1 KiB static reservation."""
    row = _row(rows, config)
    assert row["dynamic_shared_bytes"] == cfg.smem_budget(config.resolved()).total_bytes
    assert row["shared_bytes"] <= cfg.SMEM_CAPACITY_BYTES + row["static_shared_bytes"]
    assert row["threads_per_cta"] == cfg.threads_per_cta(config)
