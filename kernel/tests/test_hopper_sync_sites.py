"""Synchronization sites the sm_90a cubins must show, checked on a CPU from their SASS.

The property suite on the H200 cannot see a missing wgmma wait or a missing barrier when the
race does not happen to fire in 50 examples (ci/mutants.py: hopper_no_wait_before_epilogue and
hopper_no_barrier_before_buffer_reuse survived it). The code layout shows both:

* the epilogue reads the accumulators only after ``wgmma.wait_group 0``: between the last HGMMA
  and the first global store (or ``STSM``, the staged epilogue's stmatrix), the last
  ``WARPGROUP.DEPBAR`` waits for zero groups in flight;
* a dequant buffer is rewritten only after every consumer warp retired the wgmma that read it:
  with B fp16 buffers and N wgmma groups left in flight by each wait, the buffer a wait frees is
  rewritten B - N sub-blocks later, so after each ``WARPGROUP.DEPBAR.LE gsb0, N`` a ``BAR.SYNC``
  (the consumers' named barrier, which every warp passes after its own wait) comes before the
  (B - N)-th run of shared stores (two buffers, one group: before the first one);
* a Y buffer that TMA refills (the prepass builds' Y ring) is released to the producer only after
  the wgmma that read it retired: between the last HGMMA before a consumer's release arrive
  (``SYNCS.ARRIVE.TRANS64.ART0``) and that arrive, a ``WARPGROUP.DEPBAR`` leaves at most N groups.

Every production variant (kernel.hopper.variants PRODUCTION_VARIANTS) is in the rule set.
"""

import pytest

from kernel.hopper.variants import PRODUCTION_VARIANTS, named_configs
from profiling import sass

pytestmark = pytest.mark.compile

# one variant per consumer layout (1 warpgroup; 2 warpgroups on a swapped tile), per dequant path
LABELS = (
    "h90_m128n128k256_s3_wg1_fp16",
    "h90_m128n128k256_s3_wg2_swap_fp16",
    "h90_m128n128k256_s3_wg1_fp16_prmt",
    # the A operand from registers (x_operand="regs"), TMA loads, two fp16 buffers
    "h90_m128n128k256_s4_wg2_swap_fp16_tma_prmt_rs",
    # C staged through shared memory (stmatrix reads the accumulators)
    "h90_m128n128k256_s4_wg2_swap_fp16_tma_prmt_rs_es",
)
# ... and every production variant: bench4's (4 fp16 buffers, two groups in flight) and the
# prepass build (Y from the workspace by TMA into a ring of fp16 buffers)
LABELS += tuple(c.label for c in PRODUCTION_VARIANTS if c.label not in LABELS)
CONFIGS = named_configs()
# the consumers decode Y into fp16 buffers they rewrite themselves / the producer's TMA refills them
DECODED_Y = tuple(label for label in LABELS if CONFIGS[label].y_source != "prepass")
TMA_Y_RING = tuple(label for label in LABELS if CONFIGS[label].y_source == "prepass")


class _Instructions(dict):
    """label -> the main kernel's instructions (``profiling.sass.kernel_code``: the function with
    the most instructions, the static report's too), compiled on first use (so a selection of
    some labels, ``-k LABEL`` or node ids, compiles only those variants), from the process's
    shared builds."""

    def __init__(self, static_builds):
        super().__init__()
        self.static_builds = static_builds

    def __missing__(self, label):
        self[label] = self.static_builds.code(CONFIGS[label])
        return self[label]


@pytest.fixture(scope="module")
def instructions(static_builds):
    return _Instructions(static_builds)


def _groups_left(ins: sass.Instruction) -> int:
    """``WARPGROUP.DEPBAR.LE gsb0, 0xN`` -> N."""
    return int(ins.operands.split(",")[-1].strip().rstrip(";"), 16)


@pytest.mark.parametrize("label", LABELS)
def test_epilogue_waits_for_all_wgmma_before_storing(instructions, label):
    code = instructions[label]
    last_mma = max(i.offset for i in code if i.opcode.startswith("HGMMA"))
    # the epilogue's first read of the accumulators: a global store, or (epilogue="smem") stmatrix
    first_store = min(i.offset for i in code if i.opcode.startswith(("STG", "STSM")) and i.offset > last_mma)
    waits = [i for i in code if i.opcode.startswith("WARPGROUP.DEPBAR") and last_mma < i.offset < first_store]
    assert waits, f"{label}: no wgmma wait between the last HGMMA (0x{last_mma:x}) and the epilogue (0x{first_store:x})"
    assert _groups_left(waits[-1]) == 0, (
        f"{label}: the last wgmma wait before the epilogue leaves {_groups_left(waits[-1])} group(s) in flight: "
        "the epilogue may read accumulators a wgmma is still writing"
    )


def _barrier_before_store_run(code, start: int, run: int):
    """From instruction ``start`` on: whether a ``BAR.SYNC`` comes before the ``run``-th run of
    shared stores (a run: ``STS*`` instructions with no barrier, HGMMA or wgmma wait among them);
    True when the code ends first."""
    runs, in_run = 0, False
    for i in code[start:]:
        if i.opcode.startswith("BAR.SYNC"):
            return True
        if i.opcode.startswith("STS"):
            if not in_run:
                runs, in_run = runs + 1, True
                if runs == run:
                    return False
        elif i.opcode.startswith(("HGMMA", "WARPGROUP.DEPBAR")):
            in_run = False
    return True


@pytest.mark.parametrize("label", DECODED_Y)
def test_barrier_before_a_dequant_buffer_is_rewritten(instructions, label):
    code = instructions[label]
    cfg = CONFIGS[label]
    left = cfg.wgmma_in_flight
    partial_waits = [n for n, i in enumerate(code) if i.opcode.startswith("WARPGROUP.DEPBAR") and _groups_left(i) > 0]
    assert partial_waits, f"{label}: no partial wgmma wait found (the test no longer matches the kernel)"
    assert {_groups_left(code[n]) for n in partial_waits} == {left}, (label, {_groups_left(code[n]) for n in partial_waits})
    for n in partial_waits:
        assert _barrier_before_store_run(code, n + 1, cfg.fp16_buffers - left), (
            f"{label}: after the wgmma wait at 0x{code[n].offset:x} the decode stores of sub-block "
            f"+{cfg.fp16_buffers - left} come before any barrier: a warp may overwrite a buffer another warp's "
            "wgmma still reads"
        )


@pytest.mark.parametrize("label", TMA_Y_RING)
def test_a_tma_refilled_buffer_is_released_after_its_wgmma_retired(instructions, label):
    code = instructions[label]
    left = CONFIGS[label].wgmma_in_flight
    releases = [n for n, i in enumerate(code) if i.opcode.startswith("SYNCS.ARRIVE.TRANS64.ART0")]
    mmas = [n for n, i in enumerate(code) if i.opcode.startswith("HGMMA")]
    checked = 0
    for n in releases:
        last = [m for m in mmas if m < n]
        if not last:
            continue  # before the first wgmma in code order (a raw stage's first release)
        waits = [i for i in code[last[-1]:n] if i.opcode.startswith("WARPGROUP.DEPBAR")]
        assert waits and min(_groups_left(w) for w in waits) <= left, (
            f"{label}: the release arrive at 0x{code[n].offset:x} follows the HGMMA at 0x{code[last[-1]].offset:x} "
            f"with no wgmma wait leaving at most {left} group(s): the producer may refill a buffer a wgmma still reads")
        checked += 1
    assert checked >= 4, f"{label}: {checked} release arrives after a wgmma (the test no longer matches the kernel)"
