"""The public leaderboard's problem (gpu-mode ``nvfp4_group_gemm``): its cases, inputs and check.

Written from the problem's public definition, in this project's own code:

* cases: each test or benchmark is ``m``, ``n``, ``k`` (one entry per group), ``g`` and ``seed``;
  :data:`TEST_CASES` and :data:`BENCHMARK_CASES` are the problem's lists, :func:`read_cases`
  reads them from a ``task.yml``-style file (flow mappings under ``tests:`` / ``benchmarks:``);
* seeds: with a secret seed ``s`` each case's seed ``a`` becomes ``a + (a + s)(a + s + 1) / 2``
  (:func:`combine_seeds`); a benchmark draws its 15 inputs from seeds ``seed + 42``,
  ``seed + 84``, ... (:func:`benchmark_seeds`);
* inputs (:func:`generate_input`): the ``leaderboard`` distribution (oracle.distributions) in the
  ``leaderboard`` layout (oracle.inputs): permuted (l, mn, k) views, c prefilled with normals,
  the blocked scales' padding random {1, 2}, the plain scales in host memory. Values come from
  this project's seeded generator on the inputs' device, not the leaderboard's RNG stream: the
  layouts, devices and value distribution are the leaderboard's, the bytes are not;
* check (:func:`check_outputs`): every element within ``atol + rtol * |reference|`` (NaN,
  +inf and -inf where the reference has them), the leaderboard's rule, against this project's
  exact reference instead of ``torch._scaled_mm`` (which needs an sm_100 GPU). The problem's
  ``reference.py`` passes ``rtol = atol = 1e-3``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import torch

from .inputs import make_inputs
from .reference import reference

RTOL = 1e-3
ATOL = 1e-3
INPUTS_PER_BENCHMARK = 15
BENCHMARK_SEED_STEP = 42
MAX_MISMATCHES_SHOWN = 5


@dataclass(frozen=True)
class Case:
    """One test or benchmark of the problem: per-group M, N, K, the group count and the seed."""

    m: tuple[int, ...]
    n: tuple[int, ...]
    k: tuple[int, ...]
    g: int
    seed: int

    def __post_init__(self):
        if not (len(self.m) == len(self.n) == len(self.k) == self.g):
            raise ValueError(f"case {self.spec}: m, n, k need g = {self.g} entries each")

    @property
    def sizes(self) -> tuple[tuple[int, int, int, int], ...]:
        return tuple((m, n, k, 1) for m, n, k in zip(self.m, self.n, self.k))

    @property
    def spec(self) -> str:
        """The evaluator's one-line form of the case (``k: v; ...``)."""
        lists = "; ".join(f"{name}: [{', '.join(map(str, getattr(self, name)))}]" for name in ("m", "n", "k"))
        return f"{lists}; g: {self.g}; seed: {self.seed}"

    @classmethod
    def from_mapping(cls, entry: dict) -> "Case":
        missing = {"m", "n", "k", "g", "seed"} - set(entry)
        if missing:
            raise ValueError(f"case {entry}: missing {sorted(missing)}")
        return cls(tuple(entry["m"]), tuple(entry["n"]), tuple(entry["k"]), int(entry["g"]), int(entry["seed"]))


# The problem's lists, kept as data (oracle/leaderboard_cases.json) so that modules which must
# not import torch (profiling.shape_suite) read the same lists.
CASES_PATH = Path(__file__).with_name("leaderboard_cases.json")


def _cases(section: str) -> tuple[Case, ...]:
    table = json.loads(CASES_PATH.read_text())
    return tuple(Case(tuple(m), tuple(n), tuple(k), len(m), table["seed"]) for m, n, k in table[section])


TEST_CASES = _cases("tests")
BENCHMARK_CASES = _cases("benchmarks")
SECTIONS = {"tests": TEST_CASES, "benchmarks": BENCHMARK_CASES}

_SECTION = re.compile(r"^([A-Za-z_]\w*)\s*:\s*(#.*)?$")
_ENTRY = re.compile(r"^\s*-\s*(\{.*\})\s*(#.*)?$")


def read_cases(path: str | Path) -> dict[str, tuple[Case, ...]]:
    """The ``tests`` and ``benchmarks`` lists of a ``task.yml``-style file (each entry a flow
    mapping on one line, as the problem's file has them); a section the file lacks is absent."""
    found: dict[str, list[Case]] = {}
    section = None
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        head = _SECTION.match(line)
        if head:
            section = head.group(1) if head.group(1) in SECTIONS else None
            continue
        entry = _ENTRY.match(line)
        if entry and section is not None:
            try:
                found.setdefault(section, []).append(Case.from_mapping(json.loads(entry.group(1))))
            except (ValueError, TypeError) as exc:
                raise ValueError(f"{path}:{number}: not a case: {line.strip()} ({exc})") from exc
    return {name: tuple(cases) for name, cases in found.items()}


def combine_seeds(case_seed: int, secret: int) -> int:
    """The evaluator's combination of a public case seed with the secret seed (a Cantor pairing
    plus the case seed): a large secret gives a large combined seed."""
    return int(case_seed + (case_seed + secret) * (case_seed + secret + 1) // 2)


def benchmark_seeds(case: Case, count: int = INPUTS_PER_BENCHMARK) -> list[int]:
    """The seeds of a benchmark's inputs: the case seed advanced by 42 before each draw."""
    return [case.seed + BENCHMARK_SEED_STEP * (i + 1) for i in range(count)]


def generate_input(case: Case, seed: int | None = None, device="cuda"):
    """The leaderboard's input tuple for ``case`` (``seed`` overrides the case's), its codes drawn
    on ``device`` as the leaderboard draws them on the GPU."""
    return make_inputs(case.sizes, case.seed if seed is None else seed, distribution="leaderboard",
                       device=device, layout="leaderboard", draw_device=device)


def _mismatches(received: torch.Tensor, expected: torch.Tensor, rtol: float, atol: float) -> list[str]:
    """The leaderboard's ``verbose_allclose``: count and first elements out of tolerance."""
    if received.shape != expected.shape:
        return [f"SIZE MISMATCH: got {tuple(received.shape)}, expected {tuple(expected.shape)}"]
    got, want = received.to(torch.float64), expected.to(torch.float64)
    bad = (got - want).abs() > atol + rtol * want.abs()
    bad |= torch.isnan(got) ^ torch.isnan(want)
    bad |= torch.isposinf(got) ^ torch.isposinf(want)
    bad |= torch.isneginf(got) ^ torch.isneginf(want)
    count = int(bad.sum())
    if not count:
        return []
    lines = [f"Number of mismatched elements: {count}"]
    for index in bad.nonzero()[:MAX_MISMATCHES_SHOWN].tolist():
        i = tuple(index)
        lines.append(f"ERROR AT {i}: {received[i].item()} {expected[i].item()}")
    if count > MAX_MISMATCHES_SHOWN:
        lines.append(f"... and {count - MAX_MISMATCHES_SHOWN} more mismatched elements.")
    return lines


def check_outputs(data, outputs, *, rtol: float = RTOL, atol: float = ATOL) -> tuple[bool, str]:
    """(passed, message) as the leaderboard's ``check_implementation`` reports it, with the exact
    reference of ``data`` (computed before or after the run: the reference reads only inputs)."""
    expected = reference(data)
    if not isinstance(outputs, (list, tuple)):
        return False, f"output is a {type(outputs).__name__}, expected a list of {len(expected)} tensors"
    if len(outputs) != len(expected):
        return False, f"output length mismatch: got {len(outputs)}, expected {len(expected)}"
    for i, (got, want) in enumerate(zip(outputs, expected)):
        if not isinstance(got, torch.Tensor):
            return False, f"output {i} is a {type(got).__name__}, not a tensor"
        reasons = _mismatches(got.detach().to(want.device), want, rtol, atol)
        if reasons:
            return False, f"mismatch found! custom implementation doesn't match reference: {i} {reasons}"
    return True, ""
