"""The checks applied to every subject run, and the report a failure prints.

For one :class:`~properties.strategies.Example` and one subject variant:

1. build the inputs (``oracle.make_inputs``), the exact reference, the per-element error bound
   and the mask of elements whose fp32 sums are provably exact;
2. give every output ``c`` guard regions (canaries) on both sides inside one buffer, and poison
   ``c`` with NaN, so an element left unwritten or a write outside C cannot pass;
3. run the subject; the returned list must be the caller's ``c`` tensors in the caller's order;
4. canaries intact; every element within the bound of the exact result for the subject's
   declared accumulation order (NaN exactly where the oracle has NaN, infinities only where the
   bound allows); where the sums are exact the bound is 0: bitwise equal (signed zeros equal);
5. poison again and rerun: the outputs must be bitwise identical (determinism).

A failure raises ``SubjectCheckFailed`` whose message ends with a one-line reproduction.

``check_example`` hands the example to the installed :class:`ExampleRunner` (this process by
default; the conftest installs ``properties.isolation.IsolatingRunner``, which runs GPU subjects in
worker processes). This module never imports ``properties.isolation``; isolation imports it.
Every checked example reports to the runner's observers (``ExampleReport``: outcome, seconds,
time per stage, whether its (variant, group count) was new to the process, i.e. paid compiles).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Callable

import torch

import oracle
from properties.failures import SubjectCheckFailed
from properties.strategies import Example
from properties.subjects import SubjectVariant

# where one example's time goes, in the order check_example_in_process spends it
STAGES = ("inputs", "transfers", "oracle", "subject", "checks")

POISON_BITS = 0x7E01  # a quiet NaN with a payload no arithmetic produces
CANARY_BITS = 0x7D5A  # a signalling-NaN pattern, distinct from the poison
GUARD_ELEMENTS = 64  # fp16 elements of canary on each side of every output (128 bytes)


@dataclass
class GuardedOutputs:
    """Outputs placed inside one buffer with canaries around each (and around the whole)."""

    buffer: torch.Tensor  # int16 view of everything
    outputs: list[torch.Tensor]
    guards: list[tuple[int, int]]  # [start, end) element ranges that must stay CANARY_BITS

    @classmethod
    def like(cls, cs: list[torch.Tensor], packed: bool) -> "GuardedOutputs":
        """Every element of the buffer outside an output is a canary. ``packed``: outputs follow
        each other at 16-byte alignment (as the ``packed_c`` layout has them); otherwise a
        guard of GUARD_ELEMENTS separates every two outputs. Both ends are always guarded."""
        align = 8 if packed else 64  # elements: 16-byte / 128-byte aligned outputs
        gap = 0 if packed else GUARD_ELEMENTS
        offsets, pos = [], GUARD_ELEMENTS
        for i, c in enumerate(cs):
            if i:
                pos += gap
            pos = -(-pos // align) * align
            offsets.append(pos)
            pos += c.numel()
        total = pos + GUARD_ELEMENTS
        buffer = torch.full((total,), CANARY_BITS, dtype=torch.int16, device=cs[0].device)
        outputs = [buffer[o : o + c.numel()].view(torch.float16).view(c.shape) for o, c in zip(offsets, cs)]
        return cls(buffer, outputs, _merge_gaps(offsets, [c.numel() for c in cs], total))

    def poison(self) -> None:
        for c in self.outputs:
            c.view(torch.int16).fill_(POISON_BITS)

    def damaged_guards(self) -> list[tuple[int, int]]:
        bad = []
        for lo, hi in self.guards:
            region = self.buffer[lo:hi]
            if hi > lo and bool((region != CANARY_BITS).any()):
                bad.append((lo, hi))
        return bad


def _merge_gaps(offsets, numels, total):
    """Every element of the buffer that is not inside an output is a guard element."""
    guards, pos = [], 0
    for o, n in zip(offsets, numels):
        guards.append((pos, o))
        pos = o + n
    guards.append((pos, total))
    return guards


def _fail(variant: SubjectVariant, example: Example, what: str) -> None:
    raise SubjectCheckFailed(
        f"{variant.test_id} failed on {len(example.sizes)} groups {list(example.sizes)} "
        f"({example.distribution}, {example.layout}, seed {example.seed}): {what}\n"
        f"reproduce: {example.repro(variant.repro_subject, variant.label)}"
    )


def _bitwise_differences(got: torch.Tensor, want: torch.Tensor) -> torch.Tensor:
    """Mask of elements whose fp16 bits differ, treating +0 and -0 as equal and NaN as NaN."""
    g, w = got.view(torch.int16), want.view(torch.int16)
    both_zero = (got == 0) & (want == 0)
    both_nan = torch.isnan(got) & torch.isnan(want)
    return (g != w) & ~both_zero & ~both_nan


def run_subject(variant: SubjectVariant, data, guarded: GuardedOutputs) -> list[torch.Tensor]:
    guarded.poison()
    result = variant.run(oracle.replace_outputs(data, guarded.outputs))
    if variant.device == "cuda":
        torch.cuda.synchronize()
    return result


@dataclass
class ExampleReport:
    """What an observer learns about one checked example."""

    variant: SubjectVariant
    example: Example
    outcome: str  # "pass" or the failure kind ("fail", "fault", "timeout", "error")
    seconds: float  # wall time seen by the caller (worker round trip included)
    stages: dict[str, float] = field(default_factory=dict)  # STAGES -> seconds (where measured)
    warm: bool = False  # its (variant, group count) had run before in the same process: no compile


class ExampleRunner:
    """Runs checked examples in this process and tells its observers about each one."""

    def __init__(self):
        self.observers: list[Callable[[ExampleReport], None]] = []
        self._seen: set[tuple[str, int]] = set()  # (test id, group count) run in this process

    def check(self, variant: SubjectVariant, example: Example, *, rerun: bool = True) -> None:
        start = time.perf_counter()
        stages: dict[str, float] = {}
        warm = False
        outcome = "fail"
        try:
            warm = self.run(variant, example, rerun=rerun, stages=stages)
            outcome = "pass"
        except SubjectCheckFailed as exc:
            outcome = getattr(exc, "kind", "fail")
            raise
        finally:
            _log_example(variant, example, "pass" if outcome == "pass" else "fail")
            report = ExampleReport(variant, example, outcome, time.perf_counter() - start, stages, warm)
            for observe in self.observers:
                observe(report)

    def run(self, variant: SubjectVariant, example: Example, *, rerun: bool, stages: dict) -> bool:
        """Check in this process; fill ``stages``; return whether no compile could have happened."""
        key = (variant.test_id, len(example.sizes))
        warm = key in self._seen
        self._seen.add(key)
        check_example_in_process(variant, example, rerun=rerun, stages=stages)
        return warm

    def close(self) -> None:
        pass


_runner: ExampleRunner = ExampleRunner()


def install_runner(runner: ExampleRunner) -> ExampleRunner:
    """Make ``runner`` the one ``check_example`` uses (the conftest installs an isolating one);
    the previous runner is closed. Returns ``runner``."""
    global _runner
    previous, _runner = _runner, runner
    if previous is not runner:
        previous.close()
    return runner


def installed_runner() -> ExampleRunner:
    return _runner


def check_example(variant: SubjectVariant, example: Example, *, rerun: bool = True) -> None:
    """Run every check of the module docstring through the installed runner; raise
    SubjectCheckFailed (or a subclass: a fault, a hang) on the first failure."""
    _runner.check(variant, example, rerun=rerun)


def _log_example(variant: SubjectVariant, example: Example, outcome: str) -> None:
    """NVFP4_EXAMPLE_LOG=path: append one line per checked example (ci.mutation_runner counts them)."""
    path = os.environ.get("NVFP4_EXAMPLE_LOG")
    if path:
        with open(path, "a") as f:
            f.write(f"{outcome}\t{variant.test_id}\t{example.repro(variant.repro_subject, variant.label)}\n")


class _StageClock:
    """Adds the seconds of each stage to ``stages`` (the device synchronized at each boundary,
    so asynchronous work is charged to the stage that queued it)."""

    def __init__(self, stages: dict | None, device: str):
        self.stages = stages
        self.sync = device == "cuda"
        self.last = time.perf_counter()

    def lap(self, stage: str) -> None:
        if self.stages is None:
            return
        if self.sync:
            torch.cuda.synchronize()
        now = time.perf_counter()
        self.stages[stage] = self.stages.get(stage, 0.0) + now - self.last
        self.last = now


def check_example_in_process(variant: SubjectVariant, example: Example, *, rerun: bool = True,
                             stages: dict | None = None) -> None:
    """The checks in this process (what an isolation worker runs); ``stages``, when given, gets
    the seconds spent per stage (STAGES)."""
    clock = _StageClock(stages, variant.device)
    # built from the seeded CPU generator (the same bytes on every device), then moved once
    data = oracle.make_inputs(
        example.sizes, example.seed, distribution=example.distribution, device="cpu", layout=example.layout
    )
    clock.lap("inputs")
    data = oracle.place(data, variant.device, example.layout)
    clock.lap("transfers")
    # one exact computation on the subject's device: reference, bound (for the subject's declared
    # accumulation order and cut), exact sums
    expected = oracle.expected_outputs(data, variant.constraints.accumulation_chunk,
                                       variant.constraints.k_split)
    cs = [abc[2] for abc in data[0]]
    guarded = GuardedOutputs.like(cs, packed=example.layout == "packed_c")
    clock.lap("oracle")

    result = run_subject(variant, data, guarded)
    clock.lap("subject")
    _check_identity(variant, example, result, guarded)
    _check_canaries(variant, example, guarded)
    _check_values(variant, example, guarded.outputs, expected)
    clock.lap("checks")
    if rerun:
        first = [c.clone() for c in guarded.outputs]
        clock.lap("checks")
        run_subject(variant, data, guarded)
        clock.lap("subject")
        _check_canaries(variant, example, guarded)
        for g, (a, b) in enumerate(zip(first, guarded.outputs)):
            diff = _bitwise_differences(b, a)
            if bool(diff.any()):
                idx = diff.nonzero()[0].tolist()
                _fail(
                    variant,
                    example,
                    f"not deterministic: group {g} differs bitwise between two runs at {int(diff.sum())} "
                    f"elements, first at (row, col) {tuple(idx[:2])}",
                )
        clock.lap("checks")


def _check_identity(variant, example, result, guarded: GuardedOutputs) -> None:
    if not isinstance(result, (list, tuple)) or len(result) != len(guarded.outputs):
        _fail(variant, example, f"returned {type(result).__name__} of length "
              f"{len(result) if hasattr(result, '__len__') else '?'}, expected {len(guarded.outputs)} outputs")
    for g, (got, want) in enumerate(zip(result, guarded.outputs)):
        if not isinstance(got, torch.Tensor) or got.shape != want.shape or (
            want.numel() and got.data_ptr() != want.data_ptr()
        ):
            _fail(variant, example, f"output {g} is not the caller's c of group {g} (wrong group order?)")


def _check_canaries(variant, example, guarded: GuardedOutputs) -> None:
    bad = guarded.damaged_guards()
    if bad:
        _fail(variant, example, f"wrote outside C: canary regions {bad[:4]} were overwritten")


def _check_values(variant, example, outputs, expected: list[oracle.Expected]) -> None:
    """Every element within the bound; on exact-sum elements the bound is 0, so this is also the
    bitwise check there (the report marks those elements "exact fp32 sum")."""
    report = oracle.compare(outputs, [e.reference for e in expected], [e.bound for e in expected],
                            exact=[e.exact_sum for e in expected])
    if report.violations:
        _fail(variant, example, f"{report}")
