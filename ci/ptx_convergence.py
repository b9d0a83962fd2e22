"""Static convergence check of a kernel's PTX: CTA-wide barriers reached by the whole CTA at one
instruction, warp-collective instructions by whole warps.

PTX defines ``bar.sync a`` (the same as ``barrier.sync.aligned a``) without a thread count only
when every thread of the CTA executes that same instruction, and any ``.aligned`` instruction
(``wgmma.*``, ``stmatrix``, ``ldmatrix``, ``bar.sync a, count``) only when every thread of the warp
executes it. Broken, such a kernel usually still runs right on today's GPUs (the SASS is one
``BAR.SYNC`` either way), so no property notices it; compute-sanitizer synccheck does, on a GPU.
This module finds the class on the CPU, from the PTX CuTe DSL keeps (``CUTE_DSL_KEEP_PTX``):

1. the function body is parsed into basic blocks (inline-asm scopes ``{ }`` with their own
   labels included), and the control-flow graph's post-dominators give each block the branches
   it is control-dependent on;
2. a divergence analysis gives every register one of three levels: ``UNIFORM`` (the same in
   every thread of the CTA), ``WARP`` (the same within a warp: the warp index, a value
   broadcast by ``shfl.sync.idx`` from a fixed lane, a vote) or ``LANE`` (``%tid``, ``%laneid``,
   ``elect.sync``, an atomic's result, anything computed from those). A register defined in a
   block gets at least that block's level, the level of the branches that decide whether the
   block runs (so a value merged from two sides of a divergent branch is divergent too); a block
   gets the highest level of those branches' predicates and of the blocks they sit in;
3. rules: a barrier without a thread count (``bar.sync``, ``bar.arrive``, ``bar.red``,
   ``barrier.*.aligned``) must sit in a ``UNIFORM`` block, unguarded; any other ``.aligned``
   instruction (named barriers with a count among them) must not sit in a ``LANE`` block or
   carry a ``LANE`` guard.

Flow-sensitive (the levels follow reaching definitions, so a register NVVM reuses for a uniform
and a divergent value keeps them apart) but path-insensitive and blind to values that are equal
by arithmetic accident, so it can only over-report; the production kernels are checked clean in
the CPU suite, and the undefined barrier of a mutant (phase 1's completion barrier at two
warp-role sites) is reported.

    python -m ci.ptx_convergence FILE.ptx [...]        (exit status 1 when a rule is broken)
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field

UNIFORM, WARP, LANE = 0, 1, 2
LEVELS = ("uniform", "warp", "lane")

_REG = re.compile(r"%[A-Za-z_$][\w$]*(?:\.[xyz])?|\b[A-Za-z_$][\w$]*\b")
_LABEL = re.compile(r"([A-Za-z_$][\w$]*)\s*:(?!:)")
_SPECIAL_LANE = ("%tid", "%laneid", "%clock", "%clock64", "%globaltimer", "%lanemask")
_SPECIAL_WARP = ("%warpid",)
# no register definition in the first operand
# (opcode prefixes; the bare opcodes "bar" and "st" are in _defines)
_NO_DEF = ("st.", "red.", "bar.", "barrier.", "mbarrier.init", "mbarrier.inval", "mbarrier.expect_tx",
           "cp.", "fence", "membar", "bra", "ret", "exit", "prefetch", "stmatrix", "trap", "setmaxnreg",
           "griddepcontrol", "wgmma.fence", "wgmma.commit_group", "wgmma.wait_group", "tensormap.", "nanosleep",
           "discard", "applypriority", "pmevent", "call", "multimem.st", "multimem.red")
_CTA_BARRIER = re.compile(r"^(bar(\.cta)?\.(sync|arrive|red)|barrier(\.cta)?\.(sync|arrive|red)\.aligned)\b")


@dataclass
class Instr:
    line: int
    text: str
    opcode: str
    guard: str | None  # predicate register of "@p" / "@!p"
    operands: list[str]
    block: int = -1


@dataclass
class Block:
    instrs: list[Instr] = field(default_factory=list)
    succs: set[int] = field(default_factory=set)


@dataclass(frozen=True)
class Violation:
    line: int
    text: str
    rule: str
    level: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.text!r}: {self.rule} (reached in a {self.level}-divergent region)"


def split_operands(s: str) -> list[str]:
    """An instruction's operands: commas outside brackets, braces and parentheses."""
    out, depth, cur = [], 0, []
    for ch in s:
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def parse_function(body: str, first_line: int = 1) -> tuple[list[Block], list[Instr]]:
    """Basic blocks of one function body (the text between its outer braces)."""
    text = _strip_comments(body)
    items: list[tuple[str, int, object]] = []  # ("label", line, uid) / ("instr", line, Instr)
    scopes: list[dict[str, int]] = [{}]
    pending: list[tuple[Instr, list[dict[str, int]], str]] = []  # branch, scope chain, target name
    uid = 0
    i, n, line = 0, len(text), first_line
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
            i += 1
            continue
        if ch.isspace():
            i += 1
            continue
        if ch == "{":
            scopes.append({})
            i += 1
            continue
        if ch == "}":
            scopes.pop()
            i += 1
            continue
        m = _LABEL.match(text, i)
        if m:
            uid += 1
            scopes[-1][m.group(1)] = uid
            items.append(("label", line, uid))
            line += text.count("\n", i, m.end())
            i = m.end()
            continue
        end = text.find(";", i)
        if end < 0:
            break
        stmt = " ".join(text[i:end].split())
        start_line = line
        line += text.count("\n", i, end)
        i = end + 1
        if stmt.startswith("."):
            continue  # .reg / .loc / .pragma ...
        guard = None
        g = re.match(r"@(!?)(%?[\w$]+)\s+", stmt)
        if g:
            guard = g.group(2)
            stmt_body = stmt[g.end():]
        else:
            stmt_body = stmt
        parts = stmt_body.split(None, 1)
        opcode = parts[0]
        operands = split_operands(parts[1]) if len(parts) > 1 else []
        ins = Instr(start_line, stmt, opcode, guard, operands)
        items.append(("instr", start_line, ins))
        if opcode.startswith("bra"):
            pending.append((ins, list(scopes), operands[0] if operands else ""))
    # resolve branch targets through the scope chain they were written in
    target_of: dict[int, int] = {}
    for ins, chain, name in pending:
        for scope in reversed(chain):
            if name in scope:
                target_of[id(ins)] = scope[name]
                break
        else:
            raise ValueError(f"line {ins.line}: branch target {name!r} not found")
    # basic blocks
    blocks: list[Block] = [Block()]
    label_block: dict[int, int] = {}
    instrs: list[Instr] = []
    ends = False
    for kind, _line, obj in items:
        if kind == "label":
            if blocks[-1].instrs or ends:
                blocks.append(Block())
            label_block[obj] = len(blocks) - 1
            ends = False
            continue
        if ends:
            blocks.append(Block())
            ends = False
        ins = obj
        ins.block = len(blocks) - 1
        blocks[-1].instrs.append(ins)
        instrs.append(ins)
        if ins.opcode.startswith(("bra", "ret", "exit", "trap")):
            ends = True
    exit_node = len(blocks)
    for b, block in enumerate(blocks):
        last = block.instrs[-1] if block.instrs else None
        falls = True
        if last is not None and last.opcode.startswith("bra"):
            block.succs.add(label_block[target_of[id(last)]])
            falls = last.guard is not None  # a guarded branch also falls through
        elif last is not None and last.opcode.startswith(("ret", "exit", "trap")):
            block.succs.add(exit_node)
            falls = last.guard is not None
        if falls:
            block.succs.add(b + 1 if b + 1 < len(blocks) else exit_node)
    return blocks, instrs


def _post_dominators(blocks: list[Block]) -> list[int]:
    """Post-dominator sets as bit masks (node len(blocks) is the exit)."""
    n = len(blocks) + 1
    full = (1 << n) - 1
    pdom = [full] * n
    pdom[n - 1] = 1 << (n - 1)
    changed = True
    while changed:
        changed = False
        for b in range(len(blocks) - 1, -1, -1):
            meet = full
            for s in blocks[b].succs:
                meet &= pdom[s]
            new = meet | (1 << b)
            if new != pdom[b]:
                pdom[b] = new
                changed = True
    return pdom


def _control_dependence(blocks: list[Block]) -> list[set[int]]:
    """For each block, the branch blocks it is control-dependent on."""
    pdom = _post_dominators(blocks)
    cd: list[set[int]] = [set() for _ in blocks]
    for x, block in enumerate(blocks):
        if len(block.succs) < 2:
            continue
        strict = pdom[x] & ~(1 << x)
        for s in block.succs:
            mask = pdom[s] & ~strict
            y = 0
            while mask:
                if mask & 1 and y < len(blocks):
                    cd[y].add(x)
                mask >>= 1
                y += 1
    return cd


def _registers(operand: str) -> list[str]:
    return [t for t in _REG.findall(operand) if t.startswith("%") or t[0].isalpha()]


def _defines(ins: Instr) -> bool:
    if not ins.operands or ins.operands[0].startswith("["):
        return False
    return not ins.opcode.startswith(_NO_DEF) and ins.opcode not in ("bar", "st")


def _special(reg: str) -> int | None:
    if reg.startswith(_SPECIAL_LANE):
        return LANE
    if reg.startswith(_SPECIAL_WARP):
        return WARP
    return None


_BFLY_FULL = {1, 2, 4, 8, 16}
_REDUCE_OPS = ("min.", "max.", "add.", "and.", "or.", "xor.")


@dataclass
class _Use:
    reg: str
    defs: tuple[int, ...]  # the definitions that reach this use


def _bits(mask: int) -> tuple[int, ...]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return tuple(out)


class Analysis:
    """Flow-sensitive divergence levels: reaching definitions per use, then a fixed point over
    (definition levels, block levels). A register reused for two values (NVVM coalesces a phi's
    inputs, e.g. a split result and the grid size it defaults to) keeps the two apart."""

    def __init__(self, blocks: list[Block], instrs: list[Instr]):
        self.blocks, self.instrs = blocks, instrs
        self.cd = _control_dependence(blocks)
        # definitions
        self.def_ins: list[Instr] = []
        self.def_reg: list[str] = []
        self.defs_of: dict[str, int] = {}
        self.ins_defs: dict[int, list[int]] = {}
        for ins in instrs:
            if _defines(ins):
                ids = []
                for r in _registers(ins.operands[0]):
                    d = len(self.def_ins)
                    self.def_ins.append(ins)
                    self.def_reg.append(r)
                    self.defs_of[r] = self.defs_of.get(r, 0) | (1 << d)
                    ids.append(d)
                self.ins_defs[id(ins)] = ids
        self._reaching()
        self.level = [UNIFORM] * len(self.def_ins)
        self.blevel = [UNIFORM] * len(blocks)
        self.cover: list[frozenset] = [frozenset()] * len(self.def_ins)
        self._fixed_point()

    # ---- reaching definitions ----------------------------------------------------------------
    def _transfer(self, ins: Instr, cur: int) -> int:
        for d in self.ins_defs.get(id(ins), ()):
            if ins.guard is None:  # a guarded definition may not happen: the old ones still reach
                cur &= ~self.defs_of[self.def_reg[d]]
            cur |= 1 << d
        return cur

    def _reaching(self) -> None:
        blocks = self.blocks
        preds: list[list[int]] = [[] for _ in blocks]
        for b, block in enumerate(blocks):
            for s in block.succs:
                if s < len(blocks):
                    preds[s].append(b)
        out = [0] * len(blocks)
        changed = True
        while changed:
            changed = False
            for b, block in enumerate(blocks):
                cur = 0
                for p in preds[b]:
                    cur |= out[p]
                for ins in block.instrs:
                    cur = self._transfer(ins, cur)
                if cur != out[b]:
                    out[b] = cur
                    changed = True
        # the uses of every instruction, with the definitions reaching each
        self.uses: dict[int, list[_Use]] = {}
        self.guard_use: dict[int, _Use] = {}
        for b, block in enumerate(blocks):
            cur = 0
            for p in preds[b]:
                cur |= out[p]
            for ins in block.instrs:
                srcs = ins.operands[1:] if _defines(ins) else ins.operands
                if ins.opcode.startswith("wgmma.mma_async"):
                    srcs = ins.operands  # the accumulators are read too
                uses = []
                for operand in srcs:
                    for r in _registers(operand):
                        uses.append(_Use(r, _bits(cur & self.defs_of.get(r, 0))))
                self.uses[id(ins)] = uses
                if ins.guard:
                    self.guard_use[id(ins)] = _Use(ins.guard, _bits(cur & self.defs_of.get(ins.guard, 0)))
                cur = self._transfer(ins, cur)

    # ---- levels ------------------------------------------------------------------------------
    def use_level(self, use: _Use) -> int:
        sp = _special(use.reg)
        if sp is not None:
            return sp
        return max((self.level[d] for d in use.defs), default=UNIFORM)

    def _single_def(self, use: _Use) -> int | None:
        return use.defs[0] if len(use.defs) == 1 else None

    def _def_level(self, ins: Instr) -> tuple[int, frozenset]:
        op = ins.opcode
        uses = self.uses[id(ins)]
        lv = max((self.use_level(u) for u in uses), default=UNIFORM)
        if ins.guard:
            lv = max(lv, self.use_level(self.guard_use[id(ins)]))
        cover = frozenset()
        if op.startswith(("atom.", "elect.", "match.")):
            return LANE, cover
        if op.startswith("shfl.sync.idx") and len(ins.operands) >= 3:
            n_src = len(_registers(ins.operands[1]))
            src_lv = max((self.use_level(u) for u in uses[:n_src]), default=UNIFORM)
            lane_lv = max((self.use_level(u) for u in uses[n_src:n_src + len(_registers(ins.operands[2]))]),
                          default=UNIFORM)
            return (min(src_lv, WARP) if lane_lv <= WARP else LANE), cover
        if op.startswith(("vote.sync", "redux.sync", "activemask")):
            return min(lv, WARP), cover
        if op.startswith(_REDUCE_OPS) and len(ins.operands) == 3 and len(uses) == 2:
            # one step of a butterfly reduction: op(x, shfl.sync.bfly(x, k)); after the steps
            # k = 16, 8, 4, 2, 1 every lane holds the same value
            a, b = (self._single_def(u) for u in uses)
            for x, y in ((a, b), (b, a)):
                if x is None or y is None:
                    continue
                sh = self.def_ins[y]
                if sh.opcode.startswith("shfl.sync.bfly") and len(sh.operands) >= 3:
                    src = self._single_def(self.uses[id(sh)][0]) if self.uses[id(sh)] else None
                    try:
                        k = int(sh.operands[2], 0)
                    except ValueError:
                        continue
                    if src == x:
                        cover = self.cover[x] | {k}
                        if cover >= _BFLY_FULL:
                            return min(lv, WARP), cover
                        return lv, cover
        if op.startswith(("shr.", "div.")) and len(ins.operands) == 3 and lv == LANE:
            try:
                amount = int(ins.operands[2], 0)
            except ValueError:
                return lv, cover
            if (op.startswith("shr.") and amount >= 5) or (op.startswith("div.") and amount and amount % 32 == 0):
                rest = max((self.use_level(u) for u in uses[1:]), default=UNIFORM)
                if rest <= WARP and (ins.guard is None or self.use_level(self.guard_use[id(ins)]) <= WARP):
                    return WARP, cover
        return lv, cover

    def _fixed_point(self) -> None:
        changed = True
        while changed:
            changed = False
            for b, block in enumerate(self.blocks):
                lv = self.blevel[b]
                for x in self.cd[b]:
                    last = self.blocks[x].instrs[-1]
                    lv = max(lv, self.blevel[x])
                    if last.guard:
                        lv = max(lv, self.use_level(self.guard_use[id(last)]))
                if lv > self.blevel[b]:
                    self.blevel[b] = lv
                    changed = True
            for ins in self.instrs:
                ids = self.ins_defs.get(id(ins))
                if not ids:
                    continue
                lv, cover = self._def_level(ins)
                lv = max(lv, self.blevel[ins.block])
                for d in ids:
                    if lv > self.level[d]:
                        self.level[d] = lv
                        changed = True
                    if cover and cover != self.cover[d]:
                        self.cover[d] = cover
                        changed = True

    def region(self, ins: Instr) -> int:
        """The divergence level at which ``ins`` is reached (its block's, and its guard's)."""
        lv = self.blevel[ins.block]
        if ins.guard:
            lv = max(lv, self.use_level(self.guard_use[id(ins)]))
        return lv


def check_function(body: str, first_line: int = 1) -> list[Violation]:
    blocks, instrs = parse_function(body, first_line)
    a = Analysis(blocks, instrs)
    out = []
    for ins in instrs:
        region = a.region(ins)
        # without a thread count: bar.sync a / bar.arrive a (one operand), bar.red d, a, c (three)
        counted = len(ins.operands) >= (4 if ".red" in ins.opcode else 2)
        cta_wide = bool(_CTA_BARRIER.match(ins.opcode)) and not counted
        aligned = ".aligned" in ins.opcode or (ins.opcode.startswith("bar.") and not ins.opcode.startswith("bar.warp"))
        if cta_wide and (region > UNIFORM or ins.guard):
            out.append(Violation(ins.line, ins.text, "a CTA-wide aligned barrier must be executed by every thread at "
                                 "one instruction", LEVELS[max(region, WARP)]))
        elif aligned and region == LANE:
            out.append(Violation(ins.line, ins.text, "an .aligned instruction must be executed by whole warps",
                                 LEVELS[region]))
    return out


def functions(ptx: str) -> list[tuple[str, str, int]]:
    """(name, body, first line of the body) of every .entry / .func with a body."""
    out = []
    for m in re.finditer(r"\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)", ptx):
        start = ptx.find("{", m.end())
        semi = ptx.find(";", m.end())
        if start < 0 or 0 <= semi < start:
            continue  # a declaration without a body
        depth, i = 0, start
        while i < len(ptx):
            if ptx[i] == "{":
                depth += 1
            elif ptx[i] == "}":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        out.append((m.group(1), ptx[start + 1:i], ptx.count("\n", 0, start + 1) + 1))
    return out


def check_ptx(ptx: str) -> list[tuple[str, Violation]]:
    return [(name, v) for name, body, line in functions(ptx) for v in check_function(body, line)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ptx", nargs="+")
    args = ap.parse_args(argv)
    bad = 0
    for path in args.ptx:
        with open(path) as f:
            found = check_ptx(f.read())
        for name, v in found:
            print(f"{path}: {name[:60]}: {v}")
        print(f"{path}: {len(found)} violation(s)")
        bad += len(found)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
