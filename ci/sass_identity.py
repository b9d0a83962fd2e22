"""Production cubins identical instruction by instruction, before and after a change (CPU only).

    python -m ci.sass_identity dump DIR [--family hopper|blackwell ...] [--match SUBSTR] [--label LABEL]
    python -m ci.sass_identity compare BEFORE_DIR AFTER_DIR

``dump`` compiles every variant of ``STATIC_MATRIX`` of each family (profiling.static_report)
and writes one ``LABEL.sass`` per variant: the kernel function's
instructions, one ``opcode operands`` line each (offsets and encodings dropped, so only the
instruction stream is compared; ``--match`` keeps the labels containing it, ``--label`` the one
label). A family compiles in a subprocess of its own, or in this process when it is the only one
and ``CUTE_DSL_ARCH`` is already its architecture. ``compare`` prints one line per label and exits
1 when any label differs or is missing on one side.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from profiling import sass, static_report


def normalized_sass(cubin: str, function: str) -> list[str]:
    """The kernel's instructions, then those of every other kernel in the cubin (a build with
    phase 1 in a launch of its own has two), each after a line naming it."""
    ins = sass.parse_sass(sass.disassemble(cubin))
    out = [f"{i.opcode} {i.operands}".strip() for i in ins if i.function == function]
    for other in sorted({i.function for i in ins} - {function}):
        out.append(f"// {other}")
        out += [f"{i.opcode} {i.operands}".strip() for i in ins if i.function == other]
    return out


def dump(out: Path, families: list[str], match: str | None, label: str | None = None) -> int:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sass_identity_") as tmp:
        in_process = len(families) == 1 and os.environ.get("CUTE_DSL_ARCH") == static_report.FAMILY_ARCH[families[0]]
        report = static_report.build_report(families, dump_dir=tmp, match=match, label=label, isolate=not in_process)
        for row in report["variants"]:
            lines = normalized_sass(row["cubin"], row["function"])
            (out / f"{row['label']}.sass").write_text("\n".join(lines) + "\n")
            print(f"{row['label']}: {len(lines)} instructions", file=sys.stderr)
    return 0


def compare(before: Path, after: Path) -> int:
    labels = sorted({p.stem for p in before.glob("*.sass")} | {p.stem for p in after.glob("*.sass")})
    bad = 0
    for label in labels:
        a, b = before / f"{label}.sass", after / f"{label}.sass"
        if not a.exists() or not b.exists():
            print(f"{label}: MISSING {'before' if not a.exists() else 'after'}")
            bad += 1
            continue
        la, lb = a.read_text().splitlines(), b.read_text().splitlines()
        if la == lb:
            print(f"{label}: identical ({len(la)} instructions)")
        else:
            first = next((i for i, (x, y) in enumerate(zip(la, lb)) if x != y), min(len(la), len(lb)))
            print(f"{label}: DIFFERS ({len(la)} -> {len(lb)} instructions, first at #{first})")
            bad += 1
    print(f"{len(labels) - bad} of {len(labels)} variants identical")
    return 1 if bad or not labels else 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m ci.sass_identity")
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("out", type=Path)
    d.add_argument("--family", action="append", choices=list(static_report.FAMILIES))
    d.add_argument("--match", help="only the labels containing this")
    d.add_argument("--label", help="only this label")
    c = sub.add_parser("compare")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    a = p.parse_args(argv)
    if a.cmd == "dump":
        return dump(a.out, a.family or list(static_report.FAMILIES), a.match, a.label)
    return compare(a.before, a.after)


if __name__ == "__main__":
    sys.exit(main())
