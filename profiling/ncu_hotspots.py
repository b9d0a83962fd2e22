"""The SASS instructions where a kernel's warps spend their samples, from Nsight Compute's source
page (``ncu --import R --page source --csv --print-source sass``, SourceCounters section):

    python -m profiling.ncu_hotspots hot.csv [--top 40]

Prints the instructions with the most warp samples (address, opcode, samples, share, and the
stall reasons sampled there, largest first), then the samples summed per opcode. ncu's column
names vary between versions: the address, source and sample columns are found by name
(``Address``, ``Source``, ``Warp Stall Sampling (All Samples)``; per-reason columns are the
``stall_*`` ones, or those naming a stall reason). Pure parsing, tested on a small recorded export.
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
from collections import defaultdict
from pathlib import Path


def _num(x) -> float:
    try:
        return float(str(x).replace(",", "").strip() or 0)
    except ValueError:
        return 0.0


def read_rows(text: str) -> tuple[list[str], list[dict]]:
    lines = [l for l in text.splitlines() if l.startswith('"')]
    if not lines:
        return [], []
    reader = list(csv.reader(io.StringIO("\n".join(lines))))
    # ncu puts a "Kernel Name" line before the header: the header is the row naming "Address"
    at = next((i for i, r in enumerate(reader) if "Address" in r), None)
    if at is None:
        return [], []
    header = reader[at]
    return header, [dict(zip(header, r)) for r in reader[at + 1:] if len(r) == len(header)]


def columns(header: list[str]) -> dict:
    def find(*keys):
        for h in header:
            if all(k.lower() in h.lower() for k in keys):
                return h
        return None

    total = find("Warp Stall Sampling", "All") or find("Sampling", "All") or find("Samples")
    reasons = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]
    return {"address": find("Address"), "source": find("Source"), "total": total, "reasons": reasons}


def hotspots(text: str, top: int = 40) -> str:
    header, rows = read_rows(text)
    if not rows:
        return "no instruction rows"
    col = columns(header)
    if not col["total"]:
        return "no sample column in: " + ", ".join(header[:20])
    total = sum(_num(r[col["total"]]) for r in rows) or 1.0
    ranked = sorted(rows, key=lambda r: -_num(r[col["total"]]))[:top]
    out = [f"{len(rows)} instructions, {total:.0f} samples"]
    for r in ranked:
        n = _num(r[col["total"]])
        if n <= 0:
            break
        why = sorted(((c, _num(r[c])) for c in col["reasons"]), key=lambda cv: -cv[1])
        why = ", ".join(f"{c.replace('stall_', '')} {v:.0f}" for c, v in why[:3] if v > 0)
        out.append(f"{r.get(col['address'], '?'):>8}  {n:7.0f} {100 * n / total:5.1f} %  "
                   f"{(r.get(col['source']) or '').strip()[:70]:70s}  {why}")
    per_op = defaultdict(float)
    for r in rows:
        op = (r.get(col["source"]) or "").split()
        op = op[1] if op and op[0].startswith("@") and len(op) > 1 else (op[0] if op else "?")
        per_op[op.split(".")[0]] += _num(r[col["total"]])
    out.append("per opcode: " + ", ".join(f"{op} {100 * v / total:.1f} %"
                                          for op, v in sorted(per_op.items(), key=lambda kv: -kv[1])[:15]))
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", type=Path)
    ap.add_argument("--top", type=int, default=40)
    args = ap.parse_args(argv)
    print(hotspots(args.csv.read_text(errors="replace"), args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
