"""Synchronization sites the sm_100a cubins must show, checked on a CPU from their SASS.

The SASS census (profiling/tests/test_static_blackwell.py) counts MMA, copy and store sites but
not the waits and barriers that order them; a kernel missing one still compiles, with the same
counts, and races only on a GPU. Two orderings that a CPU can check in the code layout:

* the epilogue waits on the accumulator-full mbarrier before its first TMEM load: the nearest
  synchronization site above the first ``LDTM`` is an mbarrier wait (``SYNCS.PHASECHK``), not a
  CTA/named barrier, a TMEM allocation or an MMA commit;
* every warp that reads TMEM meets a barrier (``BAR.SYNC``) after its last ``LDTM`` and before
  TMEM is handed back (the last ``UTCATOMSWS``: relinquish + dealloc).

(mutation testing: ci/mutants.py, blackwell_no_accumulator_wait_in_epilogue,
blackwell_mono_no_barrier_before_tmem_free, blackwell_spec_no_epilogue_barrier_before_tmem_free)
"""

import pytest

from profiling import sass

pytestmark = pytest.mark.compile

# one variant per warp-role kernel (the sync code does not depend on stage counts or tile N)
LABELS = ("bw-spec-t128x128x256-ab2-acc2", "bw-mono-t128x128x256-ab2-acc1")
SYNC_FAMILIES = ("mbarrier_wait", "barrier_sync", "tmem_alloc", "tcgen05_commit")


@pytest.fixture(scope="module")
def instructions(static_builds):
    out = {}
    for label in LABELS:
        row = static_builds.row("blackwell", label)
        out[label] = [i for i in sass.parse_sass(sass.disassemble(row["cubin"])) if i.function == row["function"]]
    return out


def _sync_kind(ins: sass.Instruction) -> str | None:
    fams = sass.family_of(ins.opcode)
    return next((f for f in SYNC_FAMILIES if f in fams), None)


@pytest.mark.parametrize("label", LABELS)
def test_epilogue_waits_for_the_accumulator_before_reading_tmem(instructions, label):
    code = instructions[label]
    first_load = min(i.offset for i in code if "tmem_load" in sass.family_of(i.opcode))
    above = [(i.offset, _sync_kind(i), i.opcode) for i in code if i.offset < first_load and _sync_kind(i)]
    assert above, "no synchronization at all before the first TMEM load"
    offset, kind, opcode = above[-1]
    assert kind == "mbarrier_wait", (
        f"{label}: the nearest sync site above the first LDTM (0x{first_load:x}) is {opcode} at 0x{offset:x}, "
        "not an mbarrier wait: the epilogue may read the accumulator before the MMAs complete"
    )


@pytest.mark.parametrize("label", LABELS)
def test_barrier_between_last_tmem_load_and_tmem_dealloc(instructions, label):
    code = instructions[label]
    last_load = max(i.offset for i in code if "tmem_load" in sass.family_of(i.opcode))
    dealloc = max(i.offset for i in code if "tmem_alloc" in sass.family_of(i.opcode))
    assert last_load < dealloc, f"{label}: TMEM is released (0x{dealloc:x}) above the last LDTM (0x{last_load:x})"
    between = [i for i in code if last_load < i.offset < dealloc and "barrier_sync" in sass.family_of(i.opcode)]
    assert between, (
        f"{label}: no BAR.SYNC between the last TMEM load (0x{last_load:x}) and the TMEM release "
        f"(0x{dealloc:x}): one warp may free TMEM while another still reads it"
    )
