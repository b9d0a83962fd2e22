"""profiling.poison_sites on hand-written SASS: it finds poison stores and can reject them."""

from profiling.poison_sites import poison_sites, poison_stores
from profiling.sass import Instruction


def _code(*lines):
    out = []
    for k, line in enumerate(lines):
        pred, _, rest = line.partition("|") if "|" in line else ("", "", line)
        opcode, _, operands = rest.strip().partition(" ")
        out.append(Instruction("k", 16 * k, pred.strip(), opcode, operands.strip()))
    return out


ONES = ["IMAD.MOV.U32 R4, RZ, RZ, -0x1", "IMAD.MOV.U32 R5, RZ, RZ, -0x1",
        "IMAD.MOV.U32 R6, RZ, RZ, -0x1", "IMAD.MOV.U32 R7, RZ, RZ, -0x1"]


def test_release_after_barrier_is_legal():
    code = _code("LDS.128 R8, [R2]", "BAR.SYNC.DEFER_BLOCKING 0x1, 0x80", *ONES, "STS.128 [R3], R4",
                 "STS.128 [R3+0x800], R4", "FENCE.VIEW.ASYNC.S", "SYNCS.ARRIVE.TRANS64.ART0 RZ, [UR4], RZ")
    (site,) = poison_sites(code)
    assert site.legal and site.last - site.first == 1 and site.fenced


def test_poison_before_the_barrier_is_rejected():
    # a warp poisons a stage other warps may still read: no hand-back point since the last read
    code = _code("LDS.128 R8, [R2]", *ONES, "STS.128 [R3], R4", "BAR.SYNC.DEFER_BLOCKING 0x1, 0x80")
    (site,) = poison_sites(code)
    assert not site.legal and site.before.startswith("LDS")


def test_poison_followed_by_a_read_is_rejected():
    code = _code("BAR.SYNC.DEFER_BLOCKING 0x1, 0x80", *ONES, "STS.128 [R3], R4", "LDS.128 R8, [R3]",
                 "BAR.SYNC.DEFER_BLOCKING 0x1, 0x80")
    assert not poison_sites(code)[0].legal


def test_producer_fill_needs_the_proxy_fence():
    fenced = _code("SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R9], R7", *ONES, "STS.128 [R3], R4",
                   "FENCE.VIEW.ASYNC.S", "UTMALDG.2D [UR8], [UR4]")
    unfenced = _code("SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R9], R7", *ONES, "STS.128 [R3], R4", "UTMALDG.2D [UR8], [UR4]")
    assert poison_sites(fenced)[0].legal and not poison_sites(unfenced)[0].legal


def test_only_all_ones_stores_are_poison():
    code = _code("IMAD.MOV.U32 R4, RZ, RZ, 0x3c00", "STS.128 [R3], R4", *ONES, "IADD3 R4, R4, 0x1, RZ",
                 "STS.128 [R3], R4", "IMAD.MOV.U32 R4, RZ, RZ, -0x1", "STS.128 [R3], R4")
    assert poison_stores(code) == [len(code) - 1]


def test_an_out_of_line_poison_block_is_followed_back_to_its_fill():
    """ptxas may put a poison run in a block of its own, after unrelated code, ending in an
    unconditional branch back to the fill: the scan follows the branch (offsets are 16 * index)."""
    def out_of_line(fill):
        return _code("SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R9], R7", "BRA 0x60", *fill, "EXIT",
                     *ONES, "STS.128 [R3], R4", "FENCE.VIEW.ASYNC.S", "BRA 0x20",
                     "SYNCS.PHASECHK.TRANS64.TRYWAIT P1, [R10], R7", "BRA 0x0")

    # fill at 0x20: the TMA right after the branch target
    (site,) = poison_sites(out_of_line(["UTMALDG.2D [UR8], [UR4]", "NOP", "NOP"]))
    assert site.legal and site.after.startswith("UTMALDG") and site.fenced
    # ... and where the branch lands on a read of the region, it is rejected
    (site,) = poison_sites(out_of_line(["LDS.128 R8, [R3]", "NOP", "NOP"]))
    assert not site.legal and site.after.startswith("LDS")
    # a conditional branch is not followed: the next instruction in order decides
    code = _code("SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R9], R7", *ONES, "STS.128 [R3], R4", "@P0|BRA 0x0",
                 "LDS.128 R8, [R3]")
    assert not poison_sites(code)[0].legal


def test_an_out_of_line_poison_block_is_judged_by_the_branch_that_enters_it():
    """Backward, the scan leaves a block control cannot fall into (after an EXIT or an
    unconditional BRA) for the one branch that enters it: the instruction before that branch
    decides, not the unrelated code laid out above the block."""
    def entered_after(pre):
        return _code(pre, "BRA 0x60", "UTMALDG.2D [UR8], [UR4]", "EXIT",
                     "SYNCS.PHASECHK.TRANS64.TRYWAIT P1, [R10], R7", "BRA 0x0",  # laid out above, unrelated
                     *ONES, "STS.128 [R3], R4", "FENCE.VIEW.ASYNC.S", "BRA 0x20")

    (site,) = poison_sites(entered_after("SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R9], R7"))
    assert site.legal and site.before.startswith("SYNCS.PHASECHK")
    # the block is entered right after a read of the region: rejected, though a wait sits above it
    (site,) = poison_sites(entered_after("LDS.128 R8, [R3]"))
    assert not site.legal and site.before.startswith("LDS")
