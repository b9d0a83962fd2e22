"""Two CTAs per SM (``HopperConfig.ctas_per_sm=2``, ``TWO_CTA_CONFIG``, label ``..._cta2``) on
the CPU: the rules, the per-CTA budgets (half of the SM's shared memory, the registers the
warps of both CTAs leave on the fullest sub-partition), the host plan's grid of twice the SM
count, and the compile: ptxas is told the occupancy (``.maxntid``, ``.minnctapersm 2``), keeps
to its register cap with no spill, and keeps production's wgmma pipelining. The GPU side (the
same bits as production; both CTAs of an SM resident at once) is kernel/tests/test_gpu_two_cta.py.
"""

from __future__ import annotations

import dataclasses
import re

import pytest

import kernel.hopper.config as cfgmod
from kernel.hopper.config import SPLIT_WARP_CONFIG, TWO_CTA_CONFIG, HopperConfig, config_problems

BENCH = {
    "bench1": ([80, 176, 128, 72, 64, 248, 96, 160], 4096, 7168),
    "bench4": ([128, 384], 4096, 1536),
}


def test_label_and_rules():
    assert TWO_CTA_CONFIG.label.endswith("_es_cta2") and config_problems(TWO_CTA_CONFIG) == []
    assert TWO_CTA_CONFIG in cfgmod.EXPERIMENTAL_VARIANTS and TWO_CTA_CONFIG not in cfgmod.PRODUCTION_VARIANTS
    assert "_cta" not in SPLIT_WARP_CONFIG.label
    for bad in (3, 0, True):
        assert any("ctas_per_sm must be one of" in p
                   for p in config_problems(dataclasses.replace(TWO_CTA_CONFIG, ctas_per_sm=bad))), bad
    # two cooperative warpgroups do not fit twice (nor does the 2-warpgroup shared memory)
    two_wg = dataclasses.replace(SPLIT_WARP_CONFIG, ctas_per_sm=2)
    assert any("consumer_warpgroups=1" in p for p in config_problems(two_wg))
    # the build is the prepass one: a shared-memory decode of Y per CTA is refused
    assert any("y_source='prepass'" in p
               for p in config_problems(dataclasses.replace(HopperConfig(), ctas_per_sm=2)))


def test_each_cta_takes_at_most_half_of_the_sm():
    """Two CTAs' shared memory (each with the 2 KB a CuTe DSL CTA adds) fit the SM's 228 KB;
    a Y ring one box deeper does not fit and is refused."""
    cap = cfgmod.smem_capacity(TWO_CTA_CONFIG)
    total = cfgmod.smem_bytes(TWO_CTA_CONFIG)["total"]
    assert total <= cap and 2 * (cap + cfgmod.SMEM_PER_CTA_OVERHEAD) <= cfgmod.SMEM_PER_SM_BYTES
    assert cfgmod.smem_capacity(SPLIT_WARP_CONFIG) == cfgmod.SMEM_CAPACITY_BYTES  # one CTA: unchanged
    deeper = dataclasses.replace(TWO_CTA_CONFIG, fp16_buffers=5)
    assert cfgmod.smem_bytes(deeper)["total"] > cap
    assert any(p.startswith("shared memory") for p in config_problems(deeper))


@pytest.mark.parametrize("threads,ctas,cap", [(288, 1, 168), (416, 1, 128), (384, 1, 168), (160, 1, 255),
                                              (160, 2, 168), (288, 2, 96)])
def test_register_cap_is_the_fullest_sub_partition(threads, ctas, cap):
    """The cap ptxas applies (measured: 288 threads -> 168, 416 -> 128; two CTAs of 160 at
    .minnctapersm 2 compile at 161): the warps of all CTAs spread over four sub-partitions of
    16384 registers, in units of 8 registers. Whatever the cap, every warp fits."""
    # a config with that many threads: producer warps 1, consumer warpgroups (threads - 32) / 128
    c = HopperConfig(consumer_warpgroups=(threads - 32) // 128, ctas_per_sm=ctas) if threads % 128 == 32 \
        else HopperConfig(consumer_warpgroups=threads // 128 - 1, consumer_regs=0, producer_warps=4, ctas_per_sm=ctas)
    assert c.threads == threads
    assert c.launch_register_cap == cap
    warps_on_fullest = -(-(-(-threads // 32) * ctas) // 4)
    assert warps_on_fullest * 32 * cap <= cfgmod.SM_SUBPARTITION_REGISTERS
    assert cap == cfgmod.MAX_REGS_PER_THREAD or warps_on_fullest * 32 * (cap + 8) > cfgmod.SM_SUBPARTITION_REGISTERS


def test_the_plan_grid_is_twice_the_sms():
    oracle = pytest.importorskip("oracle")
    from kernel import hopper
    from kernel.hopper.launch import PIPELINE

    # the SMs the plan counts: this GPU's, or an H100/H200's on a machine without an sm_90 GPU
    sms = PIPELINE.hooks.max_ctas(SPLIT_WARP_CONFIG, dry_run=True)
    assert PIPELINE.hooks.max_ctas(TWO_CTA_CONFIG, dry_run=True) == 2 * sms
    for name, (ms, n, k) in BENCH.items():
        data = oracle.make_inputs([(m, n, k, 1) for m in ms], 3)
        one = hopper.prepare(data, SPLIT_WARP_CONFIG, dry_run=True).plan
        two = hopper.prepare(data, TWO_CTA_CONFIG, dry_run=True).plan
        # the 64-row X tile: twice the tiles, on up to twice the CTAs
        assert two.total_tiles == 2 * one.total_tiles, name
        assert two.num_ctas == min(2 * sms, two.total_tiles) and one.num_ctas == min(sms, one.total_tiles), name


def _build(config, tmp_path):
    from kernel.hopper import static_build
    from profiling import sass

    build = static_build(config, tmp_path, num_groups=8)
    ins = sass.kernel_code(build["cubin"])
    usage = [u for u in sass.resource_usage(build["cubin"]) if u.function == ins[0].function][0]
    ptx = "\n".join(p.read_text() for p in tmp_path.rglob("*.ptx"))
    return ins, usage, ptx


def _wgmma_waits(ins):
    mmas = [i for i in ins if i.opcode.startswith("HGMMA")]
    return (len(mmas), sum("gsb0" in i.operands for i in mmas),
            sum(i.opcode.startswith("WARPGROUP.DEPBAR") for i in ins))


def test_compile_tells_ptxas_the_occupancy_and_keeps_the_k_loop(tmp_path):
    pytest.importorskip("cutlass")
    ins, usage, ptx = _build(TWO_CTA_CONFIG, tmp_path / "two")
    assert re.search(r"\.maxntid 160, 1, 1", ptx) and re.search(r"\.minnctapersm 2\b", ptx), \
        "the launch bounds that keep two CTAs' registers on one SM are missing from the PTX"
    assert usage.stack_bytes == 0 and usage.local_bytes == 0
    assert usage.registers <= TWO_CTA_CONFIG.launch_register_cap
    # the budget counts 2 KB per CTA besides its dynamic shared memory: the static part and the
    # 1 KB the driver reserves
    assert usage.shared_bytes + 1024 <= cfgmod.SMEM_PER_CTA_OVERHEAD
    # the one-CTA build states no minimum (ptxas may use the whole cap of one CTA)
    one_ins, _u, one_ptx = _build(SPLIT_WARP_CONFIG, tmp_path / "one")
    assert not re.search(r"\.minnctapersm [2-9]", one_ptx)
    # one warpgroup issues the same wgmma groups as each of production's two
    assert _wgmma_waits(ins) == _wgmma_waits(one_ins)
