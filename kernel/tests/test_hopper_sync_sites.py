"""Synchronization sites the sm_90a cubins must show, checked on a CPU from their SASS.

The property suite on the H200 cannot see a missing wgmma wait or a missing barrier when the
race does not happen to fire in 50 examples (ci/mutants.py: hopper_no_wait_before_epilogue and
hopper_no_barrier_before_buffer_reuse survived it). The code layout shows both:

* the epilogue reads the accumulators only after ``wgmma.wait_group 0``: between the last HGMMA
  and the first global store (or ``STSM``, the staged epilogue's stmatrix), the last
  ``WARPGROUP.DEPBAR`` waits for zero groups in flight;
* a dequant buffer is rewritten only after every consumer warp retired the wgmma that read it:
  after each ``WARPGROUP.DEPBAR.LE gsb0, 0x1`` (one group still in flight) the next instruction
  that is a barrier or a shared store is a ``BAR.SYNC`` (the consumers' named barrier).
"""

import pytest

from profiling import sass, static_report

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


@pytest.fixture(scope="module")
def instructions(tmp_path_factory):
    out = {}
    for label in LABELS:
        report = static_report.build_report(
            ["hopper"], dump_dir=tmp_path_factory.mktemp("h90_sync"), match=label, isolate=False
        )
        (row,) = [r for r in report["variants"] if r["label"] == label]
        out[label] = [i for i in sass.parse_sass(sass.disassemble(row["cubin"])) if i.function == row["function"]]
    return out


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


@pytest.mark.parametrize("label", LABELS)
def test_barrier_before_a_dequant_buffer_is_rewritten(instructions, label):
    code = instructions[label]
    partial_waits = [i for i in code if i.opcode.startswith("WARPGROUP.DEPBAR") and _groups_left(i) > 0]
    assert partial_waits, f"{label}: no double-buffered wgmma wait found (the test no longer matches the kernel)"
    for wait in partial_waits:
        after = [i for i in code if i.offset > wait.offset and (i.opcode.startswith("BAR.SYNC") or i.opcode.startswith("STS"))]
        assert after and after[0].opcode.startswith("BAR.SYNC"), (
            f"{label}: after the wgmma wait at 0x{wait.offset:x} the next barrier-or-shared-store is "
            f"{after[0].opcode if after else 'nothing'}: a warp may overwrite a buffer another warp's wgmma still reads"
        )
