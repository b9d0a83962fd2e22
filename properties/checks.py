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
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

import oracle
from properties.strategies import Example
from properties.subjects import SubjectVariant

POISON_BITS = 0x7E01  # a quiet NaN with a payload no arithmetic produces
CANARY_BITS = 0x7D5A  # a signalling-NaN pattern, distinct from the poison
GUARD_ELEMENTS = 64  # fp16 elements of canary on each side of every output (128 bytes)


class SubjectCheckFailed(AssertionError):
    pass


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


def check_example(variant: SubjectVariant, example: Example, *, rerun: bool = True) -> None:
    """Run every check of the module docstring; raise SubjectCheckFailed on the first failure.

    GPU subjects run in a worker process by default (``properties.isolation``: ``--isolate``),
    so a fault or a hang is reported as a failure of this example (``SubjectFaulted``,
    ``SubjectTimedOut``) and the next example gets a fresh CUDA context."""
    from properties import isolation  # imports this module: import here, not at the top

    try:
        if isolation.should_isolate(variant):
            isolation.check_isolated(variant, example, rerun=rerun)
        else:
            check_example_in_process(variant, example, rerun=rerun)
    except BaseException:
        _log_example(variant, example, "fail")
        raise
    _log_example(variant, example, "pass")


def _log_example(variant: SubjectVariant, example: Example, outcome: str) -> None:
    """NVFP4_EXAMPLE_LOG=path: append one line per checked example (ci.mutation_runner counts them)."""
    path = os.environ.get("NVFP4_EXAMPLE_LOG")
    if path:
        with open(path, "a") as f:
            f.write(f"{outcome}\t{variant.test_id}\t{example.repro(variant.repro_subject, variant.label)}\n")


def check_example_in_process(variant: SubjectVariant, example: Example, *, rerun: bool = True) -> None:
    """``check_example`` in this process (what an isolation worker runs)."""
    data = oracle.make_inputs(
        example.sizes, example.seed, distribution=example.distribution, device=variant.device, layout=example.layout
    )
    # one exact computation: reference, bound (for the subject's declared accumulation), exact sums
    expected = oracle.expected_outputs(data, variant.constraints.accumulation_chunk)
    cs = [abc[2] for abc in data[0]]
    guarded = GuardedOutputs.like(cs, packed=example.layout == "packed_c")

    result = run_subject(variant, data, guarded)
    _check_identity(variant, example, result, guarded)
    _check_canaries(variant, example, guarded)
    _check_values(variant, example, guarded.outputs, expected)
    if rerun:
        first = [c.clone() for c in guarded.outputs]
        run_subject(variant, data, guarded)
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
