"""Phase 1 in a launch of its own (``HopperConfig.prepass_kernel_warps``, issue 14 sessions 16-17).

The phase-1 grid decodes Y into the workspace beside the GEMM's CTAs, so three things must hold
by construction, and each is checked here on the CPU:

* the rules: the option exists only on the chunked prepass build it is made for;
* the budget: one phase-1 CTA fits on an SM beside one GEMM CTA (shared memory by the config's
  arithmetic, registers by the compiled cubin's figures on the fullest SM sub-partition): if it
  did not, the two grids would run one after the other and the GEMM's early start would be lost
  (or, with flags, the GEMM's producers would spin while phase 1 waits for an SM);
* the launch order in the SASS: the phase-1 grid touches no global memory before its
  ``griddepcontrol.wait`` (SASS ``ACQBULK``) and lets the GEMM launch (``PREEXIT``) only after
  it, so the GEMM's reads of B, its scales and the tables before its own wait see the previous
  kernel's writes; the GEMM waits for phase 1 before its Y boxes (barrier build) or, with flags,
  only at its end, before it counts itself through (the generation advances after every flag
  wait of the grid); where it lets the next launch in follows ``prepass_kernel_trigger``.

The GPU side (bit-identical to the build with phase 1 inside the launch, launches that read the
previous launch's output) is ``ci.schedule_smoke`` and ``test_gpu_pdl.py``.
"""

from __future__ import annotations

import dataclasses
import math

import pytest

from kernel.hopper import config as cfgmod
from kernel.hopper.config import (DECLARED_VARIANTS, PHASE1_FLAGS_CONFIG, PHASE1_FLAGS_STAGED_CONFIG,
                                  PHASE1_KERNEL_CONFIG, PHASE1_KERNEL_R48_CONFIG, PHASE1_KERNEL_START_CONFIG,
                                  HopperConfig, check_config, config_problems, phase1_inside_twin,
                                  phase1_launch_smem, smem_bytes)

GLOBAL = ("LDG", "STG", "ATOMG", "ATOM.", "REDG", "RED.", "LDGSTS", "UTMALDG", "UTMASTG", "UTMAPF", "UBLKCP", "CCTL")
# every own-launch build: the declared ones, and the measured ones named by the config module
OWN_LAUNCH = list({c.label: c for c in [c for c in DECLARED_VARIANTS if c.prepass_kernel_warps]
                   + [PHASE1_KERNEL_CONFIG, PHASE1_KERNEL_START_CONFIG, PHASE1_KERNEL_R48_CONFIG,
                      PHASE1_FLAGS_CONFIG, PHASE1_FLAGS_STAGED_CONFIG]}.values())


def test_rules_admit_the_option_only_on_the_chunked_prepass_build():
    assert not config_problems(PHASE1_KERNEL_CONFIG) and not config_problems(PHASE1_FLAGS_CONFIG)
    base = PHASE1_KERNEL_CONFIG
    for bad in (dict(prepass_kernel_warps=cfgmod.PHASE1_KERNEL_WARPS_MAX + 1), dict(prepass_kernel_warps=True),
                dict(prepass_kernel_warps=-1), dict(prepass_kernel_trigger="soon"), dict(pdl=True),
                dict(prepass_chunk=0), dict(prepass_decoders=3, prepass_sync="flags"),
                dict(prepass_kernel_regs=44), dict(prepass_kernel_regs=64), dict(prepass_kernel_regs=16)):
        problems = config_problems(dataclasses.replace(base, **bad))
        assert problems, f"{bad} accepted"
    # a trigger without the option, and the option on the build that decodes Y in shared memory
    assert config_problems(dataclasses.replace(phase1_inside_twin(base), prepass_kernel_trigger="exit"))
    assert config_problems(dataclasses.replace(phase1_inside_twin(base), prepass_kernel_regs=48))
    inline = next(c for c in DECLARED_VARIANTS if c.y_source != "prepass" and c.x_operand == "regs")
    assert config_problems(dataclasses.replace(inline, prepass_kernel_warps=4))


def test_twin_is_the_production_kind_of_build():
    for config in OWN_LAUNCH:
        twin = phase1_inside_twin(config)
        check_config(twin)
        assert not twin.prepass_kernel_warps and twin.prepass_sync == "barrier"
        # nothing but phase 1's place (and its stores, sync) differs
        same = {f.name for f in dataclasses.fields(HopperConfig)} - {
            "prepass_kernel_warps", "prepass_kernel_trigger", "prepass_kernel_regs", "prepass_store", "prepass_sync"}
        assert all(getattr(twin, f) == getattr(config, f) for f in same)


@pytest.mark.parametrize("config", OWN_LAUNCH, ids=[c.label for c in OWN_LAUNCH])
def test_shared_memory_leaves_room_for_a_phase1_cta(config):
    gemm = smem_bytes(config)["total"] + cfgmod.SMEM_PER_CTA_OVERHEAD
    phase1 = phase1_launch_smem(config) + cfgmod.SMEM_PER_CTA_OVERHEAD
    assert gemm + phase1 <= cfgmod.SMEM_PER_SM_BYTES, (gemm, phase1)
    # and a build that would not leave that room is refused (the production build's 4 raw
    # stages with 4 warps' staged item slots: the GEMM then takes too much)
    if config.prepass_store == "staged" and config.num_ab_stages == 3:
        assert config_problems(dataclasses.replace(config, num_ab_stages=4))


def test_phase1_smem_holds_the_staged_slots():
    assert phase1_launch_smem(PHASE1_KERNEL_CONFIG) == 0  # direct stores: none
    assert phase1_launch_smem(PHASE1_FLAGS_CONFIG) == 0
    assert phase1_launch_smem(PHASE1_FLAGS_STAGED_CONFIG) == 4 * cfgmod.PREPASS_STAGED_WARP_BYTES
    assert phase1_launch_smem(phase1_inside_twin(PHASE1_FLAGS_STAGED_CONFIG)) == 0


# ------------------------------------------------------------------ compiled (sm_90a, CPU)
@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """label -> (GEMM instructions, phase-1 instructions, GEMM registers, phase-1 registers)."""
    from kernel.hopper import static_build
    from profiling import sass

    out = {}
    for config in OWN_LAUNCH:
        try:
            cubin = static_build(config, tmp_path_factory.mktemp("p1"), num_groups=8)["cubin"]
            instrs = sass.parse_sass(sass.disassemble(cubin))
            usage = {u.function: u.registers for u in sass.resource_usage(cubin)}
        except sass.ToolMissing as e:
            pytest.skip(str(e))
        (p1,) = [f for f in usage if "phase1_kernel" in f]
        (gemm,) = [f for f in usage if f != p1]
        out[config.label] = ([i.opcode for i in instrs if i.function == gemm],
                             [i.opcode for i in instrs if i.function == p1], usage[gemm], usage[p1])
        out[config.label + "/cubin"] = (cubin, gemm, p1)
    return out


def _at(ops, prefix):
    return [n for n, o in enumerate(ops) if o.startswith(prefix)]



@pytest.mark.compile
@pytest.mark.parametrize("config", OWN_LAUNCH, ids=[c.label for c in OWN_LAUNCH])
def test_registers_fit_beside_each_other(config, builds):
    """The fullest sub-partition (warps are dealt to the 4 by index) holds the GEMM's warps and the
    phase-1 CTA's at their allocated registers (8 per thread granularity)."""
    _gemm_ops, _p1_ops, gemm_regs, p1_regs = builds[config.label]
    assert p1_regs <= config.prepass_kernel_regs, p1_regs
    per_warp = lambda regs: 32 * 8 * math.ceil(regs / 8)  # noqa: E731
    gemm_warps = config.threads // 32
    fullest = math.ceil(gemm_warps / 4) * per_warp(gemm_regs) + math.ceil(config.prepass_kernel_warps / 4) * per_warp(
        p1_regs)
    assert fullest <= cfgmod.SM_SUBPARTITION_REGISTERS, (gemm_regs, p1_regs, fullest)


@pytest.mark.compile
@pytest.mark.parametrize("config", OWN_LAUNCH, ids=[c.label for c in OWN_LAUNCH])
def test_phase1_waits_first_and_lets_the_gemm_in_after(config, builds):
    _gemm, ops, _r, _r1 = builds[config.label]
    waits, triggers = _at(ops, "ACQBULK"), _at(ops, "PREEXIT")
    assert len(waits) == 1 and len(triggers) == 1, (waits, triggers)
    assert not [o for o in ops[:waits[0]] if o.startswith(GLOBAL)], "phase 1 touched memory before its wait"
    assert waits[0] < triggers[0], "the GEMM may launch before phase 1 waited for the previous kernel"
    assert _at(ops, ("STG", "STS")) and not _at(ops, "HGMMA")
    if config.prepass_sync == "flags":
        # the warps' claims (atomics) and publishes (release adds), and no CTA barrier: the
        # warps run on their own; no count through (the GEMM's)
        assert _at(ops, "ATOMG") and _at(ops, ("RED", "REDG")) and not _at(ops, "BAR.SYNC")


@pytest.mark.compile
@pytest.mark.parametrize("config", OWN_LAUNCH, ids=[c.label for c in OWN_LAUNCH])
def test_gemm_waits_for_phase1_where_its_sync_says(config, builds):
    ops, _p1, _r, _r1 = builds[config.label]
    waits, triggers, loads = _at(ops, "ACQBULK"), _at(ops, "PREEXIT"), _at(ops, "UTMALDG")
    assert len(waits) == 1, waits
    assert loads and _at(ops, "HGMMA")
    if config.prepass_sync == "flags":
        # no wait before the loads (the flags order them); the one wait after the last box, and
        # before the count through (the atomic that may advance the generation)
        assert waits[0] > loads[-1], (waits, loads[-1])
        atomics = _at(ops, "ATOMG")
        assert atomics and all(a > waits[0] for a in atomics), (waits, atomics)
    else:
        # X stages may go out before it, the Y boxes after (several per K tile)
        assert len([n for n in loads if n > waits[0]]) > len([n for n in loads if n < waits[0]])
    if config.prepass_kernel_trigger == "exit":
        assert not triggers
    elif config.prepass_kernel_trigger == "late":
        assert len(triggers) == 1 and triggers[0] > loads[-1]
    else:  # "start": before any global access
        assert len(triggers) == 1 and not [o for o in ops[:triggers[0]] if o.startswith(GLOBAL)]


@pytest.mark.compile
def test_the_sass_tools_take_the_gemm_as_the_main_kernel_and_compare_both(builds):
    """profiling.sass.census (the static report) reports the GEMM of a two-kernel cubin, and
    ci.sass_identity compares the phase-1 kernel's instructions too."""
    from ci.sass_identity import normalized_sass
    from profiling import sass

    cubin, gemm, p1 = builds[PHASE1_KERNEL_CONFIG.label + "/cubin"]
    census = sass.census(cubin)
    assert census.function == gemm and census.families["mma_hgmma"] > 0
    lines = normalized_sass(cubin, gemm)
    assert f"// {p1}" in lines
    gemm_ops, p1_ops, _r, _r1 = builds[PHASE1_KERNEL_CONFIG.label]
    assert len(lines) == len(gemm_ops) + 1 + len(p1_ops)
