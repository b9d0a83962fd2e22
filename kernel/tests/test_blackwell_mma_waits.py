"""The sm_100a MMA never consumes an A/B stage it has not waited for, checked from the SASS.

Each k tile the MMA issuer waits on the stage's full mbarrier (``SYNCS.PHASECHK``), issues the
block-scaled MMAs (``UTC*MMA``) and frees the stage with ``tcgen05.commit`` (``UTCBAR``). A
missing wait compiles to the same census (same MMA, copy and commit counts) and races only on a
GPU: the MMA reads a stage the TMA is still filling. In the code layout: walking up from every
MMA, the first full-barrier wait or commit met must be a wait (the MMAs of one k tile share it).

(mutation testing: ci/mutants.py, blackwell_spec_mma_without_stage_wait,
blackwell_mono_mma_without_stage_wait)
"""

import pytest

from profiling import sass

pytestmark = pytest.mark.compile

LABELS = ("bw-spec-t128x128x256-ab2-acc2", "bw-mono-t128x128x256-ab2-acc1")


@pytest.fixture(scope="module")
def instructions(static_builds):
    out = {}
    for label in LABELS:
        row = static_builds.row("blackwell", label)
        out[label] = [i for i in sass.parse_sass(sass.disassemble(row["cubin"])) if i.function == row["function"]]
    return out


def _loop_head(code, k):
    """Offset of the head of the innermost loop around instruction ``k``: the target of the
    first backward branch after it that jumps to or above it (None outside any loop)."""
    for j in range(k + 1, len(code)):
        ins = code[j]
        if ins.opcode.startswith("BRA") and ins.operands.startswith("0x"):
            target = int(ins.operands.split()[0].rstrip(";"), 16)
            if target <= code[k].offset:
                return target
    return None


@pytest.mark.parametrize("label", LABELS)
def test_every_mma_follows_a_stage_wait(instructions, label):
    code = instructions[label]
    mmas = [k for k, i in enumerate(code) if "mma_tcgen05" in sass.family_of(i.opcode)]
    assert mmas, f"{label}: no tcgen05 MMA found (the test no longer matches the kernel)"
    for k in mmas:
        head = _loop_head(code, k)
        # inside a loop: the wait must be in this iteration (between the loop head and the MMA);
        # outside: the nearest wait-or-commit above must be a wait
        lo = 0 if head is None else next(j for j, i in enumerate(code) if i.offset >= head)
        above = next((code[j] for j in range(k - 1, lo - 1, -1)
                      if {"mbarrier_wait", "tcgen05_commit"} & set(sass.family_of(code[j].opcode))), None)
        assert above is not None and "mbarrier_wait" in sass.family_of(above.opcode), (
            f"{label}: the MMA at 0x{code[k].offset:x} is reached from "
            f"{'its loop head' if above is None else f'{above.opcode} at 0x{above.offset:x}'} "
            "without a wait on its stage's full barrier: it may read a stage the TMA is still filling"
        )
