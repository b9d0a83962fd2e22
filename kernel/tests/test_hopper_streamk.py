"""The stream-K build (``HopperConfig.stream_k``, label ``_sk``) on a CPU: its rules, its part
of the workspace, the harness option that forces the protocol's take path, and its SASS.

The schedule itself (every K tile once, in order, even weights, the boundary protocol with and
without co-residency, the device twins) is ``test_streamk_schedule.py``; the GPU check that C is
bit-identical to the build without stream-K is ``test_gpu_streamk.py``. Here, from the compiled
kernel: a partial is stored by 16-byte stores, then the consumers' named barrier (id
STREAMK_BARRIER_ID, 256 threads), then a gpu-scope fence before the one release that publishes
it; a partial is loaded only after an acquire spin on its word and the same barrier, through L2
(the L1 of this SM may hold nothing of it, but the loads must not be served before the acquire);
the two compare-and-swaps (the claim and the take) are there; no spill; and the build without
stream-K is not touched by any of it (it has none of these instructions).
"""

import dataclasses
import os

import pytest
import torch

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

from kernel.errors import UnsupportedConfigError  # noqa: E402
from kernel.hopper import config as cfgmod  # noqa: E402
from kernel.hopper import workspace as W  # noqa: E402
from kernel.hopper.config import SPLIT_WARP_CONFIG, STREAM_K_CONFIG, check_config  # noqa: E402
from kernel.perturbation import Perturbation  # noqa: E402
from kernel.plan import make_plan  # noqa: E402

SIZES = [(80, 4096, 7168, 1), (176, 4096, 7168, 1), (0, 128, 256, 1), (33, 256, 1024, 1)]


def test_label_and_rules():
    assert STREAM_K_CONFIG.label.endswith("_t64_sk_es") and STREAM_K_CONFIG in cfgmod.EXPERIMENTAL_VARIANTS
    assert dataclasses.replace(STREAM_K_CONFIG, stream_k=False) == SPLIT_WARP_CONFIG
    for bad in (dict(prepass_sync="flags", prepass_split_warp=False, prepass_store="direct"), dict(x_prefetch=True),
                dict(stream_k=1)):
        with pytest.raises(UnsupportedConfigError, match="stream_k"):
            check_config(dataclasses.replace(STREAM_K_CONFIG, **bad))
    with pytest.raises(UnsupportedConfigError, match="stream_k"):  # the balanced lists are its schedule
        check_config(dataclasses.replace(cfgmod.IN_FLIGHT_CONFIG, stream_k=True))
    # the share grows by its 16 bytes, nothing else in shared memory
    a, b = cfgmod.smem_bytes(SPLIT_WARP_CONFIG), cfgmod.smem_bytes(STREAM_K_CONFIG)
    assert b["barriers"] - a["barriers"] == cfgmod.STREAMK_SHARE_BYTES and b["total"] <= cfgmod.SMEM_CAPACITY_BYTES


def test_workspace_region_and_pool():
    """After the data rows: the state words (zeroed when the workspace is made), then one partial
    per boundary of the plan's grid; the pool keys the stream-K region, so a build without it
    never shares a workspace whose words it would not reset."""
    plan = make_plan(SIZES, tile_m=128, tile_n=128, tile_k=256, max_ctas=132, schedule="balanced")
    part = 4 * STREAM_K_CONFIG.acc_regs_per_thread * STREAM_K_CONFIG.consumer_threads
    assert part == 128 * 128 * 4
    g = W.geometry(plan.sizes)
    gs = W.geometry(plan.sizes, streamk_ctas=plan.num_ctas, streamk_partial_bytes=part)
    assert (gs.rows, gs.pitch, gs.row_offsets, gs.items) == (g.rows, g.pitch, g.row_offsets, g.items)
    assert gs.streamk_offset == W.DATA_OFFSET + g.rows * g.pitch == g.nbytes
    assert gs.nbytes == gs.streamk_offset + W.STREAMK_STATE_BYTES + (plan.num_ctas + 1) * part
    pool = W.WorkspacePool(encoder=lambda rm: bytes(128))
    a = pool.get(g, 128, stream=3, device=torch.device("cpu"))
    s = pool.get(gs, 128, stream=3, device=torch.device("cpu"))
    assert s is not a and s.numel() == gs.nbytes and not s[gs.streamk_offset:].any()
    with pytest.raises(ValueError, match="stream-K"):
        W.geometry(plan.sizes, streamk_ctas=W.STREAMK_MAX_CTAS + 1, streamk_partial_bytes=part)


def test_hook_gives_the_stream_k_build_its_region(monkeypatch):
    import importlib

    launch = importlib.import_module("kernel.hopper.launch")
    hooks = launch.HopperHooks()
    monkeypatch.setattr(hooks.workspaces, "_encoder", lambda rm: bytes(128))
    plan = make_plan(SIZES, tile_m=128, tile_n=128, tile_k=256, max_ctas=132, schedule="balanced")
    plain = hooks.workspace(SPLIT_WARP_CONFIG, plan, 1, torch.device("cpu"))
    ws = hooks.workspace(STREAM_K_CONFIG, plan, 1, torch.device("cpu"))
    assert ws.numel() == plain.numel() + W.STREAMK_STATE_BYTES + (plan.num_ctas + 1) * 128 * 128 * 4


def test_forced_take_is_a_compiled_harness_option():
    p = Perturbation(0, 0, 0, poison=True, delays=False, runtime=True, max_ctas=2, streamk_take=True)
    assert p.compile_form.streamk_take and Perturbation.from_tag(p.tag) == p and "-sk" in p.tag
    assert p.compile_form != dataclasses.replace(p, streamk_take=False).compile_form


def _code(config, tmp_path, perturbation=None):
    from kernel.hopper import static_build
    from profiling import sass

    build = static_build(config, tmp_path, num_groups=8, perturbation=perturbation)
    ins = sass.kernel_code(build["cubin"])
    usage = [u for u in sass.resource_usage(build["cubin"]) if u.function == ins[0].function][0]
    assert usage.stack_bytes == 0 and usage.local_bytes == 0
    return ins


def _barrier_14(i):
    return i.opcode.startswith("BAR.SYNC") and i.operands.replace(" ", "").startswith(
        f"{hex(cfgmod.STREAMK_BARRIER_ID)},{hex(STREAM_K_CONFIG.consumer_threads)}")


def test_sass_publish_and_load_order(tmp_path):
    pytest.importorskip("cutlass")
    ins = _code(STREAM_K_CONFIG, tmp_path)
    ops = [i.opcode for i in ins]
    assert sum(o.startswith("ATOMG.E.CAS") for o in ops) == 2  # the claim and the take
    bars = [k for k, i in enumerate(ins) if _barrier_14(i)]
    assert len(bars) == 2, [ins[k] for k in bars]
    load_bar, store_bar = sorted(bars, key=lambda k: any(ins[j].opcode.startswith("REDG") for j in range(k, k + 40)))
    # the store side: 16 partial stores right before the barrier, then a gpu fence, then the release
    before = [i.opcode for i in ins[store_bar - 20:store_bar]]
    assert sum(o == "STG.E.128" for o in before) == 16
    after = [i.opcode for i in ins[store_bar:store_bar + 40]]
    red = next(k for k, o in enumerate(after) if o.startswith("REDG"))
    assert "MEMBAR.ALL.GPU" in after[:red]
    # the load side: the acquire spin (a strong load and the L1 invalidation) before the barrier,
    # the 16 partial loads (through L2) after it
    spin = [i.opcode for i in ins[load_bar - 12:load_bar]]
    assert "LDG.E.STRONG.GPU" in spin and "CCTL.IVALL" in spin
    loads = [k for k, i in enumerate(ins) if i.opcode == "LDG.E.128.STRONG.GPU"]
    assert len(loads) == 16 and min(loads) > load_bar


def test_the_plain_build_has_none_of_it(tmp_path):
    pytest.importorskip("cutlass")
    ins = _code(SPLIT_WARP_CONFIG, tmp_path)
    assert not [i for i in ins if _barrier_14(i) or i.opcode.startswith("ATOMG.E.CAS") or i.opcode == "LDG.E.128.STRONG.GPU"]


def test_forced_take_build_compiles_without_the_claim(tmp_path):
    pytest.importorskip("cutlass")
    p = Perturbation(0, 0, 0, poison=True, delays=False, runtime=True, streamk_take=True)
    ins = _code(STREAM_K_CONFIG, tmp_path, p.compile_form)
    assert sum(i.opcode.startswith("ATOMG.E.CAS") for i in ins) == 1  # the take only


def _wgmma_waits(ins):
    mmas = [i for i in ins if i.opcode.startswith("HGMMA")]
    return (len(mmas), sum("gsb0" in i.operands for i in mmas),
            sum(i.opcode.startswith("WARPGROUP.DEPBAR") for i in ins))


@pytest.mark.parametrize("take", [False, True], ids=["production", "forced_take"])
def test_the_k_loop_keeps_production_wgmma_pipelining(take, tmp_path):
    """The accumulators of a piece come from its partial or are zero, through predicated loads on
    one path: when they were set in a branch (load or reset), ptxas serialized every wgmma of the
    K loop (C7515, "non wgmma instructions defining accumulator registers": 32 of 32 HGMMAs
    closing a group, a wait after each). The build must keep production's groups and waits."""
    pytest.importorskip("cutlass")
    p = Perturbation(0, 0, 0, poison=False, delays=False, runtime=True, streamk_take=True).compile_form if take else None
    base = Perturbation(0, 0, 0, poison=False, delays=False, runtime=True).compile_form if take else None
    want = _wgmma_waits(_code(SPLIT_WARP_CONFIG, tmp_path / "a", base))
    got = _wgmma_waits(_code(STREAM_K_CONFIG, tmp_path / "b", p))
    assert got == want, f"(HGMMA, closing, waits): stream-K {got}, production {want}"
