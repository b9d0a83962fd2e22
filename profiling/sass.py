"""Cubin inspection that needs no GPU: resource usage and a SASS instruction census.

Arch-neutral: the same parser reads sm_90a (HGMMA, UTMALDG) and sm_100a (UTCxMMA, LDTM, UTCCP)
cubins; the census only names instruction families by opcode pattern. Tools: ``cuobjdump``
(and ``nvdisasm``, which cuobjdump calls for SASS) from PATH or from the PyPI wheels
``nvidia-cuda-cuobjdump`` / ``nvidia-cuda-nvdisasm`` (site-packages/nvidia/cu*/bin).

What a census can and cannot show: it counts instruction *sites* in the binary, not executed
instructions. A loop body appears once however many times it runs (unless the compiler unrolled
it), so "4 MMA sites" in a kernel whose K loop is not unrolled means 4 MMAs per K-loop trip.
Which warp executes a site is a run-time fact; :func:`role_spans` can only show how the code
of each instruction family is laid out (disjoint address ranges = separate code regions).
"""

from __future__ import annotations

from kernel.errors import PicklableError
import functools
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

# Instruction families, by a regex on the full opcode (mnemonic plus modifiers).
CENSUS_PATTERNS: Mapping[str, str] = {
    "mma_tcgen05": r"^UTC[A-Z]*MMA",  # tcgen05.mma: UTCOMMA (block-scaled FP4), UTCQMMA, UTCHMMA, ...
    "mma_hgmma": r"^HGMMA",  # Hopper wgmma
    "mma_legacy": r"^(HMMA|IMMA|QMMA|OMMA)",  # warp-level mma.sync
    "tma_load": r"^UTMALDG",
    "tma_store": r"^UTMASTG",
    "tma_desc_ctl": r"^UTMA(CCTL|PF|CMDFLUSH)",
    "tmem_load": r"^LDTM",
    "tmem_store": r"^STTM",
    "tmem_copy": r"^UTCCP",  # tcgen05.cp (scale factors smem -> TMEM)
    "tcgen05_commit": r"^UTCBAR",
    "tmem_alloc": r"^UTCATOMSWS",
    "mbarrier_wait": r"^SYNCS\.PHASECHK",
    "mbarrier_arrive": r"^SYNCS\.ARRIVE",
    "barrier_sync": r"^BAR\.",
    "warpgroup_sync": r"^WARPGROUP",
    "global_store": r"^STG",
    "global_store_128": r"^STG.*\.128$",
    "global_load": r"^LDG",
    "shared_store": r"^STS",
    "shared_load": r"^LDS",
    "ldsm": r"^LDSM",
    "local_store": r"^STL",  # register spills (or local arrays)
    "local_load": r"^LDL",
    "convert": r"^F2F|^F2FP|^I2F|^F2I",
}
_COMPILED = {k: re.compile(v) for k, v in CENSUS_PATTERNS.items()}

_FUNC_RE = re.compile(r"^\s*Function\s*:\s*(\S+)")
_INSTR_RE = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
_PRED_RE = re.compile(r"^(@!?U?P[0-9T]+)\s+")
_RESOURCE_FUNC_RE = re.compile(r"^\s*Function\s+(\S+):\s*$")
_RESOURCE_RE = re.compile(r"([A-Z_]+(?:\[\d+\])?):(\d+)")


class ToolMissing(PicklableError, RuntimeError):
    pass


@functools.lru_cache(maxsize=None)
def find_tool(name: str) -> str:
    """Path of a CUDA binary tool: PATH first, then the nvidia-cuda-* wheels."""
    found = shutil.which(name)
    if found:
        return found
    for base in {Path(p) for p in sys.path if p} | {Path(sys.prefix)}:
        for candidate in sorted(base.glob(f"nvidia/cu*/bin/{name}")) + sorted(base.glob(f"nvidia/*/bin/{name}")):
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    raise ToolMissing(f"{name} not found on PATH or in site-packages/nvidia/*/bin (pip install nvidia-cuda-{name})")


def _run(tool: str, *args: str) -> str:
    exe = find_tool(tool)
    env = dict(os.environ)
    # cuobjdump --dump-sass needs nvdisasm next to it or on PATH
    try:
        env["PATH"] = os.path.dirname(find_tool("nvdisasm")) + os.pathsep + env.get("PATH", "")
    except ToolMissing:
        pass
    out = subprocess.run([exe, *args], capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{tool} {' '.join(args)} failed ({out.returncode}): {out.stderr.strip()}")
    return out.stdout


@dataclass(frozen=True)
class ResourceUsage:
    function: str
    registers: int
    stack_bytes: int
    shared_bytes: int  # static shared memory (dynamic smem is a launch parameter)
    local_bytes: int
    constant0_bytes: int


def resource_usage(cubin: str | os.PathLike) -> list[ResourceUsage]:
    return parse_resource_usage(_run("cuobjdump", "--dump-resource-usage", os.fspath(cubin)))


def parse_resource_usage(text: str) -> list[ResourceUsage]:
    result, func = [], None
    for line in text.splitlines():
        m = _RESOURCE_FUNC_RE.match(line)
        if m:
            func = m.group(1)
            continue
        if func and "REG:" in line:
            kv = dict(_RESOURCE_RE.findall(line))
            result.append(
                ResourceUsage(
                    function=func,
                    registers=int(kv.get("REG", 0)),
                    stack_bytes=int(kv.get("STACK", 0)),
                    shared_bytes=int(kv.get("SHARED", 0)),
                    local_bytes=int(kv.get("LOCAL", 0)),
                    constant0_bytes=int(kv.get("CONSTANT[0]", 0)),
                )
            )
            func = None
    return result


@dataclass(frozen=True)
class Instruction:
    function: str
    offset: int
    predicate: str  # "" or "@P0", "@!UP1", ...
    opcode: str  # mnemonic with modifiers, e.g. "UTMALDG.3D"
    operands: str

    @property
    def mnemonic(self) -> str:
        return self.opcode.split(".", 1)[0]


def disassemble(cubin: str | os.PathLike) -> str:
    return _run("cuobjdump", "--dump-sass", os.fspath(cubin))


def parse_sass(text: str) -> list[Instruction]:
    out, func = [], ""
    for line in text.splitlines():
        fm = _FUNC_RE.match(line)
        if fm:
            func = fm.group(1)
            continue
        im = _INSTR_RE.match(line)
        if not im:
            continue
        body = im.group(2).strip()
        pred = ""
        pm = _PRED_RE.match(body)
        if pm:
            pred, body = pm.group(1), body[pm.end():]
        opcode, _, operands = body.partition(" ")
        out.append(Instruction(func, int(im.group(1), 16), pred, opcode, operands.strip()))
    return out


def family_of(opcode: str) -> list[str]:
    return [name for name, rx in _COMPILED.items() if rx.search(opcode)]


def family_counts(instructions: Iterable[Instruction]) -> dict[str, int]:
    counts = {name: 0 for name in CENSUS_PATTERNS}
    for ins in instructions:
        for name in family_of(ins.opcode):
            counts[name] += 1
    return counts


def role_spans(instructions: Sequence[Instruction], families: Sequence[str]) -> dict[str, tuple[int, int] | None]:
    """[first, last] code offset of each family's sites (None when absent)."""
    spans: dict[str, tuple[int, int] | None] = {}
    for fam in families:
        offs = [i.offset for i in instructions if fam in family_of(i.opcode)]
        spans[fam] = (min(offs), max(offs)) if offs else None
    return spans


def runs(instructions: Sequence[Instruction], prefix: str, breaks: Sequence[str]) -> list[tuple[int, int]]:
    """(first, last) index of each run of instructions whose opcode starts with ``prefix``: a run
    ends at the first instruction whose opcode starts with one of ``breaks`` (others inside it,
    such as address arithmetic, do not end it). E.g. the staged epilogue's ``STSM`` runs, one per
    pass, broken by barriers, shared loads and wgmma."""
    out: list[tuple[int, int]] = []
    start = last = None
    for n, ins in enumerate(instructions):
        if ins.opcode.startswith(prefix):
            start = n if start is None else start
            last = n
        elif start is not None and ins.opcode.startswith(tuple(breaks)):
            out.append((start, last))
            start = None
    if start is not None:
        out.append((start, last))
    return out


def spans_disjoint(a: tuple[int, int] | None, b: tuple[int, int] | None) -> bool:
    return a is None or b is None or a[1] < b[0] or b[1] < a[0]


@dataclass
class Census:
    function: str
    registers: int
    stack_bytes: int
    static_shared_bytes: int
    local_bytes: int
    instructions: int
    families: dict[str, int]
    opcodes: dict[str, int] = field(repr=False)
    spans: dict[str, tuple[int, int] | None] = field(repr=False)

    @property
    def spill_stores(self) -> int:
        return self.families["local_store"]

    @property
    def spill_loads(self) -> int:
        return self.families["local_load"]

    def to_json(self) -> dict:
        d = asdict(self)
        d["spill_stores"] = self.spill_stores
        d["spill_loads"] = self.spill_loads
        d["spans"] = {k: list(v) if v else None for k, v in self.spans.items()}
        return d


def kernel_code(cubin: str | os.PathLike) -> list[Instruction]:
    """The instructions of the cubin's main kernel: the function with the most instructions
    (a CuTe DSL cubin may hold small helper functions next to the kernel)."""
    ins = parse_sass(disassemble(cubin))
    fn = max({i.function for i in ins}, key=lambda f: sum(i.function == f for i in ins))
    return [i for i in ins if i.function == fn]


def census(cubin: str | os.PathLike, function: str | None = None) -> Census:
    """Resources and instruction families of the named kernel in ``cubin``, or of its main kernel:
    the only one, or the one with the most instructions (a Hopper build with phase 1 in a launch
    of its own holds two kernels: the GEMM and the smaller phase-1 kernel)."""
    usage = resource_usage(cubin)
    instrs = parse_sass(disassemble(cubin))
    names = sorted({u.function for u in usage})
    if function is None:
        function = max(names, key=lambda f: sum(i.function == f for i in instrs))
    (res,) = [u for u in usage if u.function == function]
    mine = [i for i in instrs if i.function == function]
    return Census(
        function=function,
        registers=res.registers,
        stack_bytes=res.stack_bytes,
        static_shared_bytes=res.shared_bytes,
        local_bytes=res.local_bytes,
        instructions=len(mine),
        families=family_counts(mine),
        opcodes=dict(Counter(i.opcode for i in mine).most_common()),
        spans=role_spans(mine, list(CENSUS_PATTERNS)),
    )
