"""Two wgmma groups in flight (``HopperConfig.wgmma_in_flight``, label ``_w2``; bench4's
production build).

On the CPU: the config rules and label; the Y-decoding build's buffer-reuse rule as a model (the
kernel's per-sub-block sequence of decode, fence, barriers, wgmma issue and wait, for every warp,
with a happens-before check of each buffer rewrite against the wgmma that read it last, in every
warp); and the SASS (the wait depth, one consumers' barrier per sub-block). The GPU side: the
property suite on the production build.
"""

import dataclasses
import itertools

import pytest

from kernel.hopper.config import config_problems, smem_bytes
from kernel.hopper.variants import FASTEST_STAGED_PDL_CONFIG, IN_FLIGHT_CONFIG, PRODUCTION_VARIANTS, SPLIT_WARP_CONFIG


# ---------------------------------------------------------------- config (no compile)
def test_in_flight_rules_and_label():
    c = IN_FLIGHT_CONFIG
    assert c in PRODUCTION_VARIANTS and config_problems(c) == [] and smem_bytes(c)["total"] <= 232448
    assert c.label == FASTEST_STAGED_PDL_CONFIG.label.replace("_s4_wg2_", "_s3_wg2_b4_").replace("_rs_", "_rs_w2_")
    for bad, why in [(dict(fp16_buffers=3), "takes 4 fp16 buffers"), (dict(fp16_buffers=2), "takes 4 fp16 buffers"),
                     (dict(wgmma_in_flight=3), "wgmma_in_flight must be 1 or 2"),
                     (dict(wgmma_in_flight=True), "wgmma_in_flight must be 1 or 2"),
                     (dict(x_operand="smem"), "x_operand='regs'")]:
        problems = config_problems(dataclasses.replace(c, **bad))
        assert any(why in p for p in problems), (bad, problems)
    # the prepass consumers release their Y boxes one group behind only
    problems = config_problems(dataclasses.replace(SPLIT_WARP_CONFIG, wgmma_in_flight=2))
    assert any("y_source='smem_decode'" in p for p in problems), problems


# ------------------------------------------------- the Y-decoding build's buffer reuse, as a model
def consumer_sequence(buffers: int, in_flight: int, sub_blocks: int):
    """One consumer warp's events over ``sub_blocks`` sub-blocks of the cooperative build that
    decodes Y into shared memory (kernel.hopper.kernel, the ``x_in_regs`` branch), as the kernel
    orders them: write Y(g) into buffer g % buffers, fence, consumers' barrier ("bar", g), issue
    wgmma g, wait_group(in_flight) (it retires group g - in_flight), and, with the two-buffer
    ping-pong only, a second consumers' barrier ("bar2", g). The tile's last wait_group(0) comes
    after them. Events: (kind, sub-block)."""
    seq = []
    for g in range(sub_blocks):
        seq += [("write", g), ("bar", g), ("issue", g)]
        if g - in_flight >= 0:
            seq.append(("retire", g - in_flight))
        if buffers == 2:
            seq.append(("bar2", g))
    seq += [("retire", j) for j in range(max(0, sub_blocks - in_flight), sub_blocks)]
    return seq


def unsafe_rewrites(buffers: int, in_flight: int, sub_blocks: int = 16):
    """Rewrites of a buffer (sub-block g into buffer g % buffers) that do not happen after every
    warp's retirement of the wgmma that read it last (sub-block g - buffers). Happens-before: a
    warp's program order, and a barrier instance (every consumer warp arrives; none leaves
    before all arrived) from each warp's events before its arrival to every warp's events after
    it. Each warp runs the same sequence, so an event of warp w' happens before an event of
    warp w != w' iff some barrier lies between them in the sequence; for w' == w program order
    suffices. A retirement is placed at the wait that guarantees it (the latest it can be)."""
    seq = consumer_sequence(buffers, in_flight, sub_blocks)
    pos = {e: i for i, e in enumerate(seq)}
    barriers = [i for i, (kind, _g) in enumerate(seq) if kind in ("bar", "bar2")]
    bad = []
    for g in range(buffers, sub_blocks):
        retire, write = pos[("retire", g - buffers)], pos[("write", g)]
        own = retire < write  # this warp's own reader
        others = any(retire < b < write for b in barriers)  # the other consumer warps' readers
        if not (own and others):
            bad.append(g)
    return bad


def test_model_finds_the_race_of_a_ring_too_short_for_its_wait():
    """The model is not vacuous: the bugs of two sync mutants are unsafe in it
    (hopper_sync_wgmma_wait_lax__w2: one group more in flight; hopper_sync_in_flight_three_buffers__w2:
    three buffers with two groups in flight), as is the two-buffer ping-pong with two groups in
    flight, while every schedule the kernel builds is safe."""
    assert unsafe_rewrites(buffers=4, in_flight=3)
    assert unsafe_rewrites(buffers=3, in_flight=2)
    assert unsafe_rewrites(buffers=2, in_flight=2)
    for buffers, in_flight in [(2, 1), (3, 1), (4, 2)]:
        assert unsafe_rewrites(buffers, in_flight) == [], (buffers, in_flight)


@pytest.mark.parametrize("buffers, in_flight", list(itertools.product((2, 3, 4, 5), (1, 2, 3))))
def test_config_rules_accept_only_schedules_the_model_finds_safe(buffers, in_flight):
    """Every (fp16 buffers, groups in flight) pair the config rules accept for the Y-decoding
    build is safe in the model (the rules may reject more: 5 buffers, 3 groups)."""
    config = dataclasses.replace(FASTEST_STAGED_PDL_CONFIG, fp16_buffers=buffers, wgmma_in_flight=in_flight,
                                 num_ab_stages=3)
    if config_problems(config) == []:
        assert unsafe_rewrites(buffers, in_flight) == []


# ------------------------------------------------------------------------- SASS (CPU compile)
def _code(config, static_builds):
    return static_builds.code(config, 8)


def _k_loop(ins):
    """Instructions from the first HGMMA to the tile's wait_group(0) (the K loop's body, in code
    order: its first sub-block's barrier and fragment are above the first HGMMA)."""
    first = next(i for i, x in enumerate(ins) if x.opcode.startswith("HGMMA"))
    last = next(i for i, x in enumerate(ins) if i > first and x.opcode.startswith("WARPGROUP.DEPBAR")
                and x.operands == "gsb0, 0x0")
    return ins[first:last + 1]


@pytest.mark.compile
def test_in_flight_sass_structure(static_builds):
    """bench4's production build: every wgmma wait in the K loop leaves two groups in flight
    (WARPGROUP.DEPBAR.LE gsb0, 0x2; none laxer), one consumers' barrier (id 1, 256 threads) per
    sub-block where the two-buffer twin has two, and no local memory between its first and last wgmma
    (the spill allowance's values are stored before the K loop and loaded after it)."""
    ins = _code(IN_FLIGHT_CONFIG, static_builds)
    loop = _k_loop(ins)
    n_sub = IN_FLIGHT_CONFIG.tile_k // 64
    waits = [x.operands for x in loop if x.opcode.startswith("WARPGROUP.DEPBAR")]
    assert waits == ["gsb0, 0x2"] * n_sub + ["gsb0, 0x0"], waits
    bars = [x for x in loop if x.opcode.startswith("BAR.SYNC") and x.operands == "0x1, 0x100"]
    assert len(bars) == n_sub - 1, [x.operands for x in loop if x.opcode.startswith("BAR")]
    mmas = [i for i, x in enumerate(ins) if x.opcode.startswith("HGMMA")]
    assert not [x for x in ins[mmas[0]:mmas[-1]] if x.opcode.startswith(("STL", "LDL"))]
    twin = _k_loop(_code(dataclasses.replace(IN_FLIGHT_CONFIG, wgmma_in_flight=1, fp16_buffers=2), static_builds))
    twin_bars = [x for x in twin if x.opcode.startswith("BAR.SYNC") and x.operands == "0x1, 0x100"]
    assert len(twin_bars) == 2 * n_sub - 1, len(twin_bars)
    assert [x.operands for x in twin if x.opcode.startswith("WARPGROUP.DEPBAR")] == ["gsb0, 0x1"] * n_sub + ["gsb0, 0x0"]
