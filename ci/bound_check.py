"""How close a subject comes to the oracle's error bound at the standard shapes' K: one table.

    python -m ci.bound_check [--subject=hopper] [--quick]

For each problem (the four standard shapes on uniform codes, and a truncation adversary at
K = 7168: no cancellation, every product under one fp32 ulp of the running sum) and for two
accumulation declarations (none, and the subject's own ``accumulation_chunk`` and ``k_split``):
elements checked, violations, the median bound in fp16 ulps, elements that differ from the
reference at all, and the largest |got - reference| / bound. Exit status 1 when an element is outside the
bound of the subject's own declaration (or of no declaration when it declares none), 2 when the
subject cannot run here. ``--quick``: small problems (the CPU test, ci/test_bound_check.py).
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

import oracle
from oracle.distributions import truncation_adversary
from properties.strategies import STANDARD_K, STANDARD_SHAPES

SEED = 11


def problems(quick: bool):
    """name -> CPU problem tuple."""
    if quick:
        return {"uniform_k7168": oracle.make_inputs([(24, 40, STANDARD_K, 1)], SEED, "uniform"),
                "adversary_k7168": oracle.data_from_codes([truncation_adversary(8, 16, STANDARD_K)])}
    out = {name: oracle.make_inputs([(m, n, k, 1) for m in ms], SEED, "uniform")
           for name, (ms, n, k) in STANDARD_SHAPES.items()}
    out["adversary_k7168"] = oracle.data_from_codes([truncation_adversary(128, 256, STANDARD_K)])
    return out


def measure(expected, outputs) -> dict:
    bound = torch.cat([e.bound.flatten() for e in expected])
    reference = torch.cat([e.reference.flatten() for e in expected]).double()
    got = torch.cat([o.flatten().to(reference.device) for o in outputs]).double()
    report = oracle.compare(outputs, [e.reference for e in expected], [e.bound for e in expected],
                            exact=[e.exact_sum for e in expected])
    finite = torch.isfinite(reference) & torch.isfinite(got)
    diff = (got - reference).abs()[finite]
    ulps = (bound[finite] / oracle.ulp16(reference[finite]))
    positive = bound[finite] > 0
    ratio = float((diff[positive] / bound[finite][positive]).max()) if bool(positive.any()) else 0.0
    return {"checked": report.checked, "violations": report.violations,
            "median_bound_ulps": float(ulps.median()) if ulps.numel() else 0.0,
            "differ": int((diff > 0).sum()), "max_diff_over_bound": ratio, "report": report}


def _label(chunk, k_split) -> str:
    """The table's chunk column: "none", "16", or "16 cut 256" for a chunk with a k_split."""
    if chunk is None:
        return "none"
    return str(chunk) if k_split is None else f"{chunk} cut {k_split}"


def check(variant, quick: bool) -> bool:
    """Run the subject on every problem, print the table; True when within the declared bound."""
    chunk, k_split = variant.constraints.accumulation_chunk, variant.constraints.k_split
    declared = (chunk, None if chunk is None else k_split)      # no chunk: k_split changes nothing
    rows, failed = [], False
    for name, data in problems(quick).items():
        start = time.perf_counter()
        data = oracle.data_to(data, variant.device)
        outputs = [o.clone() for o in variant.run(data)]
        if variant.device == "cuda":
            torch.cuda.synchronize()
        for declaration in dict.fromkeys([(None, None), declared]):
            result = measure(oracle.expected_outputs(data, *declaration), outputs)
            binding = declaration == declared
            failed |= binding and result["violations"] > 0
            rows.append((name, _label(*declaration), "yes" if binding else "no", result,
                         time.perf_counter() - start))
            if binding and result["violations"]:
                print(f"{name}, chunk {_label(*declaration)}:\n{result['report']}")
    print(f"\n{variant.test_id} (declares accumulation_chunk={declared[0]}, k_split={declared[1]})")
    head = ("problem", "chunk", "binding", "checked", "violations", "median bound ulps", "differ", "max diff/bound", "s")
    table = [head] + [(n, c, b, str(r["checked"]), str(r["violations"]), f"{r['median_bound_ulps']:.1f}",
                       str(r["differ"]), f"{r['max_diff_over_bound']:.3f}", f"{t:.1f}") for n, c, b, r, t in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)))
    print("FAIL: elements outside the declared bound" if failed else "OK: every element within the declared bound")
    return not failed


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--subject", default="hopper")
    p.add_argument("--quick", action="store_true")
    a = p.parse_args(argv)
    from properties.subjects import resolve_subject

    variant = resolve_subject(a.subject)[0]
    if variant.skip_reason:
        print(f"SKIP {variant.test_id}: {variant.skip_reason}")
        return 2
    return 0 if check(variant, a.quick) else 1


if __name__ == "__main__":
    sys.exit(main())
