"""Static report: compile every variant of every kernel family, inspect the cubins (no GPU).

    python -m profiling.static_report [--arch sm_100a|sm_90a|all] [--family NAME ...]
                                      [--json PATH] [--dump-dir DIR] [--match SUBSTR] [--label LABEL]
                                      [--isolate]

Per variant: label, arch, compile time, threads, registers, stack bytes, shared memory
(dynamic, as planned by the family, plus static), spill stores/loads (STL/LDL sites) and a SASS
census (see ``profiling.sass.CENSUS_PATTERNS``). A markdown table goes to stdout, progress to
stderr, everything (with the full opcode histogram) to ``--json``.

The families come from the registry (:mod:`kernel.family`); each family's package provides

* ``ARCH``: the architecture it compiles for (``"sm_100a"``, ``"sm_90a"``);
* ``STATIC_MATRIX``: the configs to inspect, each with a ``label``;
* ``static_build(config, dump_dir) -> Mapping``: compile one config, keep its cubin, and return
  ``label``, ``arch``, ``cubin`` (path), ``compile_seconds``, ``shared_bytes`` (dynamic shared
  memory per CTA), ``threads_per_cta`` and ``facts`` (a dict of family-specific numbers).

A family whose module does not exist, or lacks the report hooks, is reported as missing, not as an error.

One process can compile for several architectures (measured with nvidia-cutlass-dsl 4.8.1: the
seed compiled for sm_100a in a process whose CUTE_DSL_ARCH was sm_90a, given
``--gpu-arch sm_100a``), but a family may read the architecture at import, so by default each
family runs in its own subprocess (with CUTE_DSL_ARCH set to its ARCH) whenever more than one
family is selected, or always with ``--isolate``.
"""

from __future__ import annotations

from kernel.errors import PicklableError
import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

from kernel.family import families
from profiling import sass

FAMILIES: dict[str, str] = {f.name: f.package for f in families()}  # name -> package

# Columns of the markdown table: (header, row key).
TABLE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("variant", "label"),
    ("arch", "arch"),
    ("compile s", "compile_seconds"),
    ("thr", "threads_per_cta"),
    ("regs", "registers"),
    ("stack B", "stack_bytes"),
    ("smem B", "shared_bytes"),
    ("STL", "spill_stores"),
    ("LDL", "spill_loads"),
    ("MMA tcgen05", "mma_tcgen05"),
    ("HGMMA", "mma_hgmma"),
    ("UTMALDG", "tma_load"),
    ("LDTM", "tmem_load"),
    ("UTCCP", "tmem_copy"),
    ("UTCBAR", "tcgen05_commit"),
    ("mbar wait", "mbarrier_wait"),
    ("BAR", "barrier_sync"),
    ("STG.128", "global_store_128"),
    ("STG", "global_store"),
    ("SASS", "instructions"),
)


# The architecture each family targets, for --arch selection before its module is usable.
FAMILY_ARCH: dict[str, str] = {f.name: f.arch for f in families()}
REQUIRED = ("ARCH", "STATIC_MATRIX", "static_build")


class FamilyMissing(PicklableError, Exception):
    pass


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def load_family(name: str):
    """The family's module; FamilyMissing if it does not exist or lacks the report interface."""
    module_name = FAMILIES[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:  # only the family module itself may be absent
        if e.name is not None and module_name.startswith(e.name):
            raise FamilyMissing(f"{module_name} does not exist") from e
        raise
    lacking = [attr for attr in REQUIRED if not hasattr(module, attr)]
    if lacking:
        raise FamilyMissing(f"{module_name} does not provide {', '.join(lacking)}")
    return module


def inspect_build(build: dict, family: str) -> dict:
    """One report row: the family's build facts plus the cubin's resources and census."""
    c = sass.census(build["cubin"])
    row: dict[str, Any] = {
        "family": family,
        "label": build["label"],
        "arch": build["arch"],
        "compile_seconds": round(float(build["compile_seconds"]), 2),
        "threads_per_cta": build.get("threads_per_cta"),
        "shared_bytes": int(build["shared_bytes"]) + c.static_shared_bytes,
        "dynamic_shared_bytes": int(build["shared_bytes"]),
        "static_shared_bytes": c.static_shared_bytes,
        "registers": c.registers,
        "stack_bytes": c.stack_bytes,
        "local_bytes": c.local_bytes,
        "spill_stores": c.spill_stores,
        "spill_loads": c.spill_loads,
        "instructions": c.instructions,
        "function": c.function,
        "cubin": build["cubin"],
        "facts": dict(build.get("facts", {})),
        "opcodes": c.opcodes,
        "spans": {k: list(v) if v else None for k, v in c.spans.items()},
    }
    row.update(c.families)
    return row


def selected(configs, match: str | None = None, label: str | None = None) -> list:
    """The configs whose label contains ``match`` and, with ``label``, is exactly ``label``."""
    return [c for c in configs if (match is None or match in c.label) and (label is None or c.label == label)]


def build_family(name: str, dump_dir: Path, match: str | None = None, label: str | None = None) -> tuple[list[dict], str]:
    """Compile and inspect one family in this process. Returns (rows, status)."""
    try:
        module = load_family(name)
    except FamilyMissing as e:
        log(f"[{name}] skipped: {e}")
        return [], f"missing: {e}"
    os.environ.setdefault("CUTE_DSL_ARCH", module.ARCH)
    configs = selected(module.STATIC_MATRIX, match, label)
    rows = []
    for i, config in enumerate(configs, 1):
        start = time.perf_counter()
        build = dict(module.static_build(config, dump_dir / name))
        row = inspect_build(build, name)
        rows.append(row)
        log(
            f"[{name} {i}/{len(configs)}] {row['label']}: compiled in {row['compile_seconds']:.2f} s, "
            f"{row['registers']} regs, stack {row['stack_bytes']} B, STL/LDL {row['spill_stores']}/"
            f"{row['spill_loads']} ({time.perf_counter() - start:.1f} s with inspection)"
        )
    return rows, "ok"


def _run_isolated(name: str, dump_dir: Path, match: str | None, label: str | None = None) -> tuple[list[dict], str]:
    try:
        module = load_family(name)
    except FamilyMissing as e:
        log(f"[{name}] skipped: {e}")
        return [], f"missing: {e}"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rows.json"
        cmd = [sys.executable, "-m", "profiling.static_report", "--family", name, "--json", str(out),
               "--dump-dir", str(dump_dir), "--in-process", "--quiet"]
        if match:
            cmd += ["--match", match]
        if label:
            cmd += ["--label", label]
        env = dict(os.environ, CUTE_DSL_ARCH=module.ARCH)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[1]), env.get("PYTHONPATH")]))
        proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"family {name}: {' '.join(cmd)} exited with {proc.returncode}")
        data = json.loads(out.read_text())
    return data["variants"], data["families"][name]


def select_families(arch: str, families: Sequence[str] | None) -> list[str]:
    names = list(families) if families else list(FAMILIES)
    unknown = [n for n in names if n not in FAMILIES]
    if unknown:
        raise SystemExit(f"unknown families {unknown}; known: {list(FAMILIES)}")
    if arch == "all":
        return names
    return [n for n in names if FAMILY_ARCH.get(n) == arch]


def build_report(
    families: Iterable[str] = ("blackwell",),
    *,
    dump_dir: str | os.PathLike,
    match: str | None = None,
    isolate: bool | None = None,
    label: str | None = None,
) -> dict:
    """Compile and inspect the families' variants (``match``: labels containing it; ``label``:
    only that label)."""
    names = list(families)
    isolate = len(names) > 1 if isolate is None else isolate
    dump = Path(dump_dir)
    rows, status = [], {}
    for name in names:
        got, st = (_run_isolated if isolate else build_family)(name, dump, match, label)
        rows.extend(got)
        status[name] = st
    return {
        "generated": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "tools": {"cuobjdump": _tool_or_none("cuobjdump"), "nvdisasm": _tool_or_none("nvdisasm")},
        "families": status,
        "variants": rows,
    }


def _tool_or_none(name: str) -> str | None:
    try:
        return sass.find_tool(name)
    except sass.ToolMissing:
        return None


def markdown_table(rows: Sequence[dict]) -> str:
    head = "| " + " | ".join(h for h, _ in TABLE_COLUMNS) + " |"
    rule = "|" + "|".join("---" for _ in TABLE_COLUMNS) + "|"
    lines = [head, rule]
    for r in rows:
        lines.append("| " + " | ".join(str(r.get(key, "")) for _, key in TABLE_COLUMNS) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m profiling.static_report", description=__doc__.split("\n\n")[0])
    p.add_argument("--arch", default="all", choices=["sm_100a", "sm_90a", "all"])
    p.add_argument("--family", action="append", choices=list(FAMILIES), help="repeatable; default: all")
    p.add_argument("--json", type=Path, help="write the full report here")
    p.add_argument("--dump-dir", type=Path, help="keep cubins here (default: a temporary folder)")
    p.add_argument("--match", help="only variants whose label contains this")
    p.add_argument("--label", help="only the variant of exactly this label")
    iso = p.add_mutually_exclusive_group()
    iso.add_argument("--isolate", action="store_true", help="one subprocess per family")
    iso.add_argument("--in-process", action="store_true", help="compile every family in this process")
    p.add_argument("--quiet", action="store_true", help="no table on stdout")
    args = p.parse_args(argv)

    names = select_families(args.arch, args.family)
    isolate = True if args.isolate else False if args.in_process else None
    with tempfile.TemporaryDirectory(prefix="static_report_") as tmp:
        dump = args.dump_dir or Path(tmp)
        report = build_report(names, dump_dir=dump, match=args.match, isolate=isolate, label=args.label)
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(report, indent=1))
    if not args.quiet:
        print(markdown_table(report["variants"]))
        for name, st in report["families"].items():
            if st != "ok":
                print(f"\n{name}: {st}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
