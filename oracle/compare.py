"""Compare kernel outputs with the reference under the per-element bound of bounds.py.

Rules: NaN positions must match exactly. Infinities are replaced by +-65520, the fp16 overflow
threshold, on both sides before the bound is applied: an honest fp32 result y becomes +inf
exactly when y >= 65520, so
  - reference +inf (x >= 65520), kernel finite g: allowed iff 65520 - g <= bound;
  - reference finite r, kernel +inf: allowed iff r + bound >= 65520 (i.e. |x| + E may reach it);
  - opposite infinities only when the bound exceeds 131040 (massive cancellation);
which is the "inf must match in sign unless |exact| + E >= 65520" rule made precise.
-0 and +0 are equal.

Elements whose fp32 sums are provably exact (``exact``, bounds.exact_sum_mask) have bound 0;
a violation there is reported as such ("exact fp32 sum"), the bitwise check of those elements.

The worst elements are ranked on the CPU and only when a group has violations: torch.topk on a
CUDA tensor of 20000 or more elements takes the multi-block path, whose scratch buffers
compute-sanitizer's initcheck reports as uninitialized reads (ci/sanitize.py).
"""

from dataclasses import dataclass, field

import torch

from .bounds import expected_outputs
from .rounding import FP16_OVERFLOW_THRESHOLD


@dataclass(frozen=True)
class Violation:
    group: int
    row: int
    col: int
    got: float
    expected: float
    bound: float
    exact_sum: bool = False          # the oracle proved the fp32 sum exact: must match bit for bit


@dataclass
class Report:
    checked: int = 0
    violations: int = 0
    nan_mismatches: int = 0          # included in violations
    worst: list[Violation] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.violations == 0

    def __str__(self) -> str:
        head = (f"{self.violations} of {self.checked} elements out of bound "
                f"({self.nan_mismatches} NaN mismatches)")
        rows = [f"  group {v.group} [{v.row}, {v.col}]: got {v.got!r} expected {v.expected!r} "
                f"bound {v.bound:.3g}" + (" (exact fp32 sum: must be bitwise equal)" if v.exact_sum else "")
                for v in self.worst]
        return "\n".join([head, *rows])


def _inf_as_threshold(x: torch.Tensor) -> torch.Tensor:
    return torch.clamp(x, -FP16_OVERFLOW_THRESHOLD, FP16_OVERFLOW_THRESHOLD)


def compare(outputs, reference, bound, *, exact=None, max_worst: int = 10) -> Report:
    """Check outputs[g] (fp16 [m, n, 1]) against reference[g] within bound[g]; see module doc.
    ``exact[g]`` (optional bool [m, n, 1]) marks the exact-sum elements, for the report."""
    exact = [None] * len(outputs) if exact is None else exact
    if not (len(outputs) == len(reference) == len(bound) == len(exact)):
        raise ValueError(f"{len(outputs)} outputs, {len(reference)} references, "
                         f"{len(bound)} bounds, {len(exact)} exact-sum masks")
    report, candidates = Report(), []
    for group, (got, ref, allowed, exact_g) in enumerate(zip(outputs, reference, bound, exact)):
        if got.shape != ref.shape or got.dtype != torch.float16:
            raise ValueError(f"group {group}: output {got.dtype} {tuple(got.shape)}, expected "
                             f"float16 {tuple(ref.shape)}")
        got = got.to(ref.device, torch.float64)[..., 0]
        ref64, allowed = ref.to(torch.float64)[..., 0], allowed.to(ref.device)[..., 0]
        nan_mismatch = torch.isnan(got) != torch.isnan(ref64)
        difference = (_inf_as_threshold(got) - _inf_as_threshold(ref64)).abs()
        difference = torch.where(torch.isnan(difference), 0.0, difference)  # both NaN: fine
        bad = nan_mismatch | (difference > allowed)
        report.checked += got.numel()
        violations = int(bad.sum())
        report.violations += violations
        report.nan_mismatches += int(nan_mismatch.sum())
        if not violations:
            continue
        # badness: how many bounds away (inf for NaN mismatch or zero bound), ranked on the CPU
        badness = torch.where(nan_mismatch, float("inf"),
                              difference / allowed.clamp(min=torch.finfo(torch.float64).tiny))
        badness = torch.where(bad, badness, -1.0).flatten().cpu()
        top = torch.topk(badness, min(max_worst, badness.numel()))
        n_cols = got.shape[1]
        for score, index in zip(top.values.tolist(), top.indices.tolist()):
            if score < 0:
                break
            row, col = divmod(index, n_cols)
            on_exact = exact_g is not None and bool(exact_g[row, col, 0])
            candidates.append((score, Violation(group, row, col, float(got[row, col]),
                                                float(ref64[row, col]),
                                                float(allowed[row, col]), on_exact)))
    candidates.sort(key=lambda item: -item[0])
    report.worst = [v for _, v in candidates[:max_worst]]
    return report


def check_outputs(data, outputs=None, *, chunk: int | None = None, k_split: int | None = None,
                  max_worst: int = 10) -> Report:
    """Compare outputs (default: each group's c in data) with the oracle's expectation for a
    subject that declares accumulation ``chunk`` and ``k_split`` (bounds.py)."""
    outputs = [c for _, _, c in data[0]] if outputs is None else outputs
    expected = expected_outputs(data, chunk, k_split)
    return compare(outputs, [e.reference for e in expected], [e.bound for e in expected],
                   exact=[e.exact_sum for e in expected], max_worst=max_worst)
