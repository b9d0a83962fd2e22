"""Where the poison stores of a perturbed cubin sit (kernel/perturbation.py), from its SASS.

A poison store is a ``STS.128`` whose data registers were just set to all-ones (``IMAD.MOV.U32
R, RZ, RZ, -0x1`` or ``MOV R, 0xffffffff``). The protocol says a region is free after a hand-back
point: a barrier (``BAR.SYNC``) or an mbarrier wait (``SYNCS.PHASECHK``). So, in program order:

* before a poison store, the nearest hand-back point or shared read/write/wgmma must be a
  hand-back point (no ``LDS`` or ``HGMMA`` of the region after it was handed back and before
  it is poisoned; a late reader would then read poison in a correct kernel);
* after it, the nearest release (``BAR.SYNC``, an mbarrier arrive), shared access or async copy
  must be a release, or an async copy (``LDGSTS``, ``UBLKCP``, ``UTMALDG``) with a
  ``FENCE.VIEW.ASYNC`` in between (the producer's own fill): nobody reads poison before the
  region is published again, and no real store can be overtaken by a poison store.

Linear program order is an approximation of the control flow (the sites are inside straight-line
code between barriers), which is what the tests need, with one step of control flow: ptxas may
place a poison run out of line, in a block entered by a branch from the wait and left by an
unconditional ``BRA`` back to the fill, so forward an unconditional ``BRA`` is followed, and
backward, at the start of a block control cannot fall into, the one branch that enters it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from profiling.sass import Instruction

_ALL_ONES = ("-0x1", "0xffffffff")
HANDBACK = ("BAR.SYNC", "SYNCS.PHASECHK")
RELEASE = ("BAR.SYNC", "BAR.ARV", "SYNCS.ARRIVE", "ARRIVES")
ASYNC_COPY = ("LDGSTS", "UBLKCP", "UTMALDG")
SHARED_USE = ("LDS", "STS", "HGMMA", "LDSM")


def _dest(ins: Instruction) -> str | None:
    ops = [o.strip() for o in ins.operands.split(",")]
    if not ops or not ops[0].startswith("R") or ins.opcode.startswith(("STS", "STG", "ST.", "RED", "ATOM", "SYNCS", "BAR")):
        return None
    return ops[0].split(".")[0]


def poison_stores(code: Sequence[Instruction]) -> list[int]:
    """Indices (into ``code``) of the poison stores."""
    ones: set[str] = set()
    out = []
    for idx, ins in enumerate(code):
        if ins.opcode.startswith("STS.128"):
            data = ins.operands.split(",")[-1].strip().rstrip(";")
            if data in ones:
                out.append(idx)
            continue
        d = _dest(ins)
        if d is None:
            continue
        ops = [o.strip() for o in ins.operands.split(",")]
        setting_ones = (ins.opcode.startswith("IMAD.MOV") and ops[-1] in _ALL_ONES) or (
            ins.opcode.split(".")[0] == "MOV" and len(ops) == 2 and ops[1] in _ALL_ONES)
        if setting_ones:
            ones.add(d)
        else:
            ones.discard(d)
    return out


@dataclass(frozen=True)
class PoisonSite:
    first: int  # index of the first poison store of a run
    last: int
    before: str  # opcode of the nearest hand-back point / shared use before the run
    after: str  # opcode of the nearest release / shared use / copy after the run
    fenced: bool  # a FENCE.VIEW.ASYNC between the run and ``after``

    @property
    def legal(self) -> bool:
        handed_back = self.before.startswith(HANDBACK)
        released = self.after.startswith(RELEASE) or (self.after.startswith(ASYNC_COPY) and self.fenced)
        return handed_back and released


def poison_sites(code: Sequence[Instruction]) -> list[PoisonSite]:
    """Runs of poison stores (consecutive but for non-shared instructions), each with what
    surrounds it."""
    stores = poison_stores(code)
    poison = set(stores)
    at = {ins.offset: idx for idx, ins in enumerate(code)}
    jumps_to: dict[int, list[int]] = {}  # offset -> indices of the branches to it
    for idx, ins in enumerate(code):
        if ins.mnemonic == "BRA":
            target = _operand_offset(ins)
            if target is not None:
                jumps_to.setdefault(target, []).append(idx)
    runs: list[list[int]] = []
    for idx in stores:
        if runs and not any(_shared_or_sync(code[j]) for j in range(runs[-1][-1] + 1, idx) if j not in poison):
            runs[-1].append(idx)
        else:
            runs.append([idx])
    sites = []
    for run in runs:
        before, j, seen = "START", run[0] - 1, set()
        while j >= 0 and j not in seen:
            seen.add(j)
            ins = code[j]
            if j not in poison and _shared_or_sync(ins) and not _placeholder(ins):
                before = ins.opcode
                break
            # the first instruction of a block only a branch enters: go on before that branch
            into = jumps_to.get(ins.offset, [])
            j = into[0] - 1 if len(into) == 1 and j > 0 and _ends_block(code[j - 1]) else j - 1
        fenced, after = False, "END"
        j, seen = run[-1] + 1, set()
        while j < len(code) and j not in seen:
            seen.add(j)
            ins = code[j]
            if j in poison or _placeholder(ins):
                j += 1
                continue
            if ins.opcode.startswith("FENCE.VIEW.ASYNC"):
                fenced = True
            if _shared_or_sync(ins) or ins.opcode.startswith(RELEASE + ASYNC_COPY):
                after = ins.opcode
                break
            target = _branch_target(ins, at)
            j = target if target is not None else j + 1
        sites.append(PoisonSite(run[0], run[-1], before, after, fenced))
    return sites


def _operand_offset(ins: Instruction) -> int | None:
    """A ``BRA``'s target offset (its last operand, hex), None if it names none."""
    try:
        return int(ins.operands.strip().rstrip(";").split()[-1], 16)
    except (ValueError, IndexError):
        return None


def _ends_block(ins: Instruction) -> bool:
    """Control never falls through it: an unconditional ``BRA`` or ``EXIT``."""
    return ins.mnemonic in ("BRA", "EXIT") and not ins.predicate


def _branch_target(ins: Instruction, at: dict[int, int]) -> int | None:
    """The index an unconditional ``BRA`` jumps to (None for anything else): ptxas may place a
    poison run in a block of its own, out of line, that branches back to the fill."""
    if ins.mnemonic != "BRA" or ins.predicate:
        return None
    target = _operand_offset(ins)
    return None if target is None else at.get(target)


def _shared_or_sync(ins: Instruction) -> bool:
    return ins.opcode.startswith(SHARED_USE + HANDBACK)


def _placeholder(ins: Instruction) -> bool:
    """``@!PT LDS RZ, [RZ]``: never executed (scheduling filler)."""
    return ins.predicate == "@!PT"
