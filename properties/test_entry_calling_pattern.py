"""The production entry as callers use it: ``custom_kernel(data)`` without a config, again and again.

A benchmark, a model or the leaderboard calls the entry with the same tensors over and over,
writing new values into them between calls; the host pipeline (kernel.host_pipeline) answers
such a repeated call from its fast path (kernel.fast_path) with a launch prepared for an earlier
call. The main property (test_subject_vs_oracle.py) never gets there: it gives every run fresh
outputs. Here, per example, two problems of two groups each (P and Q, other shapes; the two
groups of a problem share M and N, so their outputs can trade places) go through one calling
pattern, every call with no config (the entry's per-shape choice runs on a miss):

1. P's first call;
2. ``repeats`` calls on the same tensors, each after A, B and every scale were refilled in place
   with new values and C poisoned;
3. Q's first call, then refilled P and Q calls alternating;
4. P's two outputs swapped between its groups, nothing else written (so each holds the other
   group's last result until the call overwrites it);
5. some of P's tensors freed and reallocated (new tensor objects, new storage, same shapes);
6. some of P's tensors given new storage under the same tensor objects (``set_``: what a resize
   or a reallocation in place does), the old storage kept alive until the example ends.

Every call's outputs are the caller's ``c`` tensors, checked against the exact oracle for the
values the call was given (properties.checks' comparison: poison left anywhere fails, and so does
a result left from an earlier call). Every
call's fast-path outcome is asserted too (the pipeline's ``FastPathStats``): each call after an
in-place refill alone is a **hit** (so a change that silently disables the fast path fails
here), and each call whose tensors, outputs or storage changed is a **miss** (so a stale launch
is never served, even where its results would happen to look right).
``test_entry_on_another_stream`` calls the same problem on a second CUDA stream: a miss there,
then hits on it, and a miss back on the first one (CUDA subjects only).

Subjects: the GPU families' ``custom_kernel`` (``--subject=hopper|blackwell|auto``), and the CPU
model through the same host pipeline (:func:`kernel.model.pipeline_kernel`, whose launches read
and write memory by the addresses in the device tables, as a GPU kernel does) with the Python
fast-path probe and with the native one. A file subject has no host pipeline to inspect: skipped.

Cost: few examples (the ``ci`` profile: 8 on the CPU model per probe, 3 and 2 on a GPU) of small
problems; every problem has two groups, so a GPU family compiles one kernel for the whole module.
On a GPU: 13 to 15 launches per example of the calling pattern, 6 per example of the stream
property (51 to 57 in all in the ``ci`` profile).

A failure ends with a line that runs the failing case again in a fresh process:
``python3 -m properties.test_entry_calling_pattern --subject=S [--probe=P] [--stream] --case='...'``
(exit 1 when it fails again, 3 when the subject cannot run here, 2 for a usage mistake).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass, replace
from typing import Any, Callable

import pytest
import torch
from hypothesis import given, note, settings
from hypothesis import strategies as st

import oracle
from properties.checks import POISON_BITS
from properties.failures import SubjectCheckFailed
from properties.subject_variant import SizeLimits

pytestmark = pytest.mark.properties

GROUPS = 2  # one compile per GPU family for the whole module
COLUMNS = ("a", "b", "c", "sfa", "sfb", "sfa_blocked", "sfb_blocked")
READ_BY_KERNEL = ("a", "b", "c", "sfa_blocked", "sfb_blocked")
CPU_LIMITS = SizeLimits(max_groups=GROUPS, max_m=140, max_n=140, max_k_blocks=2)
GPU_LIMITS = SizeLimits(max_groups=GROUPS, max_m=256, max_n=256, max_k_blocks=2)
EXIT_FAILED, EXIT_USAGE, EXIT_NOTHING_RAN = 1, 2, 3


# ---- the entries under test ------------------------------------------------------------------

@dataclass
class EntrySubject:
    """One entry: ``run(data)`` (no config), its host pipeline, what its problems may be."""

    subject: str  # the --subject value
    probe: str  # "python" or "native" (the CPU model), "loaded" (a GPU family: whichever is loaded)
    run: Callable[[Any], list] | None
    pipeline: Any
    constraints: Any  # kernel.validation.KernelConstraints of every config the entry may choose
    limits: SizeLimits
    skip_reason: str | None = None

    @property
    def device(self) -> str:
        return self.constraints.device_type

    @property
    def test_id(self) -> str:
        return f"{self.subject}-{self.probe}-probe" if self.probe != "loaded" else self.subject

    def repro(self, case: "Case", stream: bool) -> str:
        probe = f" --probe={self.probe}" if self.probe != "loaded" else ""
        return (f"python3 -m properties.test_entry_calling_pattern --subject={self.subject}{probe}"
                f"{' --stream' if stream else ''} --case='{case.to_json()}'")


def _model_entry(probe: str) -> EntrySubject:
    from kernel import model

    return EntrySubject("model", probe, model.pipeline_kernel, None, model.constraints(model.DEFAULT_CONFIG),
                        CPU_LIMITS)


def _family_entry(name: str) -> EntrySubject:
    from kernel.family import FAMILIES, missing_dependency

    family = FAMILIES[name]
    try:
        reason = family.unavailable_reason()
        if name == "hopper":  # custom_kernel(data) runs the per-shape rule's choice
            from kernel.hopper.dispatch import DEFAULT_RULE

            configs = DEFAULT_RULE.configs()
        else:
            configs = [family.default_config]
        all_constraints = [family.constraints(c) for c in configs]
    except ImportError as exc:
        if not missing_dependency(exc):
            raise
        return EntrySubject(name, "loaded", None, None, None, GPU_LIMITS, f"{family.package}: {exc}")
    granularity = math.lcm(*(c.k_granularity for c in all_constraints))
    chunk, k_split = _common_accumulation(all_constraints)
    constraints = replace(all_constraints[0], k_granularity=granularity, accumulation_chunk=chunk,
                          k_split=k_split)
    return EntrySubject(name, "loaded", None, None, constraints, GPU_LIMITS, reason)


def _common_accumulation(all_constraints) -> tuple[int | None, int | None]:
    """(accumulation_chunk, k_split) whose oracle bound covers every config the entry may choose.
    One k_split where some configs cut K and the others do not: that k_split, sound for both
    since the bound is max(chain, cut). Different chunks, or different cuts (one k_split cannot
    name two cut points): no declared order, the bound of any tree of fp32 additions over K,
    cut or not (oracle.bounds)."""
    chunks = {c.accumulation_chunk for c in all_constraints}
    splits = {c.k_split for c in all_constraints} - {None}
    if len(chunks) != 1 or len(splits) > 1:
        return None, None
    return chunks.pop(), (splits.pop() if splits else None)


def entry_subjects(subject: str) -> list[EntrySubject]:
    """The entries ``--subject`` names (a file or perturbed subject: one skipped entry saying why)."""
    from properties.subjects import auto_subject_name

    name = auto_subject_name() if subject == "auto" else subject
    if name == "model":
        return [_model_entry("python"), _model_entry("native")]
    from kernel.family import FAMILIES

    if name in FAMILIES:
        return [_family_entry(name)]
    why = ("a perturbed build is a harness build, which never takes the fast path" if "~" in name
           else "a file subject's custom_kernel has no host pipeline whose fast path this property inspects")
    return [EntrySubject(name, "loaded", None, None, None, CPU_LIMITS, why)]


def ready(entry: EntrySubject) -> EntrySubject:
    """``entry`` with its entry point and pipeline (the native probe loaded or left out, as named)."""
    if entry.subject == "model":
        from kernel import model, native_probe

        pipeline = model.pipeline()
        native = entry.probe == "native"
        if native and native_probe.load() is None:
            pytest.skip(f"the native probe is not available here: {native_probe.describe()}")
        pipeline.fast_path.native = pipeline.native_seen = native
        entry.pipeline = pipeline
        return entry
    from kernel.family import FAMILIES

    family = FAMILIES[entry.subject]
    entry.run, entry.pipeline = family.module.custom_kernel, family.pipeline
    return entry


def pytest_generate_tests(metafunc):
    if "entry" not in metafunc.fixturenames:
        return
    params = []
    for entry in entry_subjects(metafunc.config.getoption("subject")):
        marks = [pytest.mark.gpu] if entry.constraints is not None and entry.device == "cuda" else []
        if entry.skip_reason:
            marks.append(pytest.mark.skip(reason=entry.skip_reason))
        params.append(pytest.param(entry, id=entry.test_id, marks=marks))
    metafunc.parametrize("entry", params)


# ---- one case of the calling pattern ---------------------------------------------------------

@dataclass(frozen=True)
class Case:
    first: tuple  # P's sizes: two (m, n, k, 1), one m and n
    second: tuple  # Q's sizes
    seed: int
    distribution: str
    layout: str
    repeats: int
    reallocated: tuple  # P's tensors replaced by new ones: "a0", "c1", "sfb_blocked0", ...
    restored: tuple  # P's tensors given new storage in place

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> "Case":
        raw = json.loads(text)
        raw["first"], raw["second"] = (tuple(tuple(s) for s in raw[k]) for k in ("first", "second"))
        raw["reallocated"], raw["restored"] = tuple(raw["reallocated"]), tuple(raw["restored"])
        return cls(**raw)


def _slot(name: str) -> tuple[str, int]:
    return name[:-1], int(name[-1])


@st.composite
def cases(draw, entry: EntrySubject) -> Case:
    c, limits = entry.constraints, entry.limits

    def sizes():
        m, n = draw(st.integers(1, limits.max_m)), draw(st.integers(1, limits.max_n))
        return tuple((m, n, c.k_granularity * draw(st.integers(1, limits.max_k_blocks)), 1) for _ in range(GROUPS))

    first = sizes()
    second = sizes()
    if second == first:  # another shape
        m, n, k, l = first[0]
        second = tuple((m, n % limits.max_n + 1, k, l) for _ in range(GROUPS))
    slots = [f"{col}{g}" for col in COLUMNS for g in range(GROUPS)]
    read = [f"{col}{g}" for col in READ_BY_KERNEL for g in range(GROUPS)]
    layouts = ["separate", "leaderboard"] if entry.device == "cuda" else ["separate"]
    restored = [draw(st.sampled_from(read))] + draw(st.lists(st.sampled_from(slots), max_size=2))
    return Case(first, second, draw(st.integers(0, 2**16)), draw(st.sampled_from(["uniform", "sparse", "exact_sum"])),
                draw(st.sampled_from(layouts)), draw(st.integers(1, 3)),
                tuple(draw(st.lists(st.sampled_from(slots), min_size=1, max_size=3, unique=True))),
                tuple(dict.fromkeys(restored)))


class Problem:
    """One caller's problem: the tuple it passes (the same objects every call) and its tensors."""

    _PART = {"a": (0, 0), "b": (0, 1), "c": (0, 2), "sfa": (1, 0), "sfb": (1, 1),
             "sfa_blocked": (2, 0), "sfb_blocked": (2, 1)}

    def __init__(self, name: str, sizes: tuple, case: Case, device: str, seed: int):
        self.name, self.case, self.device = name, case, device
        abc, sfs, blocked, problem_sizes = oracle.make_inputs(list(sizes), seed, case.distribution, device=device,
                                                              layout=case.layout)
        self.data = [list(abc), list(sfs), list(blocked), [tuple(s) for s in problem_sizes]]
        self.kept: list = []  # storage replaced under a tensor: alive until the example ends

    def get(self, col: str, g: int) -> torch.Tensor:
        part, i = self._PART[col]
        return self.data[part][g][i]

    def set(self, col: str, g: int, t: torch.Tensor) -> None:
        part, i = self._PART[col]
        entry = list(self.data[part][g])
        entry[i] = t
        self.data[part][g] = tuple(entry)

    def refill(self, seed: int) -> None:
        """New values in every input, in place (the same tensors, the same storage)."""
        new = oracle.make_inputs([list(s) for s in self.data[3]], seed, self.case.distribution, device="cpu")
        for col in COLUMNS:
            if col == "c":
                continue
            part, i = self._PART[col]
            for g in range(GROUPS):
                self.get(col, g).view(torch.uint8).copy_(new[part][g][i].view(torch.uint8))

    def poison(self) -> None:
        for g in range(GROUPS):
            self.get("c", g).view(torch.int16).fill_(POISON_BITS)

    def swap_outputs(self) -> None:
        c0, c1 = self.get("c", 0), self.get("c", 1)
        self.set("c", 0, c1)
        self.set("c", 1, c0)

    @staticmethod
    def _storage_like(t: torch.Tensor) -> torch.Tensor:
        return torch.empty(t.untyped_storage().nbytes(), dtype=torch.uint8, device=t.device)

    def reallocate(self, names: tuple) -> None:
        """Each named tensor replaced by a new one (new storage, same shape and strides); the old
        one is freed (nothing else holds it)."""
        for col, g in map(_slot, names):
            old = self.get(col, g)
            new = torch.empty(0, dtype=old.dtype, device=old.device).set_(
                self._storage_like(old).untyped_storage(), old.storage_offset(), old.shape, old.stride())
            self.set(col, g, new)
            del old

    def restore(self, names: tuple) -> None:
        """Each named tensor keeps its object and gets new storage (``set_``); the old storage is
        kept alive, so a stale launch writes into memory that exists, and shows as wrong results."""
        for col, g in map(_slot, names):
            t = self.get(col, g)
            self.kept.append(t.untyped_storage())
            t.set_(self._storage_like(t).untyped_storage(), t.storage_offset(), t.shape, t.stride())


HIT, MISS = "hit", "miss"


class Pattern:
    """Runs the steps of a case on an entry, checking every call."""

    def __init__(self, entry: EntrySubject, case: Case, stream: bool = False):
        self.entry, self.case, self.stream = entry, case, stream
        self.calls = 0
        self.seed = case.seed

    def fail(self, what: str, detail: str) -> None:
        raise SubjectCheckFailed(f"{self.entry.test_id}, call {self.calls}, {what}: {detail}\n{self.case}\n"
                                 f"reproduce: {self.entry.repro(self.case, self.stream)}")

    def call(self, problem: Problem, expect: str, what: str, refill: bool = True, poison: bool = True) -> None:
        """Refill (new values) and poison C unless told not to, call, check outputs and outcome."""
        self.calls += 1
        entry = self.entry
        if refill:
            self.seed += 1
            problem.refill(self.seed)
        data = problem.data
        declared = entry.constraints
        expected = oracle.expected_outputs(data, declared.accumulation_chunk, declared.k_split)
        if poison:
            problem.poison()
        stats = entry.pipeline.fast_path.stats
        hits, rechecked = stats.hits, stats.rechecked
        result = entry.run(data)
        if entry.device == "cuda":
            torch.cuda.synchronize()
        hit, recheck = stats.hits - hits, stats.rechecked - rechecked
        outputs = [problem.get("c", g) for g in range(GROUPS)]
        if not isinstance(result, (list, tuple)) or len(result) != GROUPS or not all(
                r is o for r, o in zip(result, outputs)):
            self.fail(what, "the result is not the caller's c tensors in the caller's order")
        report = oracle.compare(outputs, [e.reference for e in expected], [e.bound for e in expected],
                                exact=[e.exact_sum for e in expected])
        if report.violations:
            self.fail(what, f"{problem.name}'s outputs are not those of the values it was given "
                            f"(a stale launch?): {report}")
        if expect == HIT and (hit, recheck) != (1, int(refill or poison)):
            self.fail(what, f"expected a fast-path hit (only values were written in place since the last "
                            f"call), got hits +{hit}, rechecked +{recheck}: the fast path was not taken")
        if expect == MISS and hit:
            self.fail(what, "expected a fast-path miss (the tensors, outputs or storage changed), got a hit: "
                            "a launch prepared for other tensors was served")

    def run(self) -> None:
        case, device = self.case, self.entry.device
        p = Problem("P", case.first, case, device, case.seed)
        q = Problem("Q", case.second, case, device, case.seed + 1000)
        self.call(p, MISS, "P's first call", refill=False)
        for r in range(case.repeats):
            self.call(p, HIT, f"P refilled in place, repeat {r + 1}")
        self.call(q, MISS, "Q's first call", refill=False)
        for _ in range(2):
            self.call(q, HIT, "Q refilled in place, alternating with P")
            self.call(p, HIT, "P refilled in place, alternating with Q")
        # nothing written in place: each swapped c holds the other group's result of the last call
        p.swap_outputs()
        self.call(p, MISS, "P's outputs swapped between its groups", refill=False, poison=False)
        self.call(p, HIT, "P refilled in place after the swap")
        p.reallocate(case.reallocated)
        self.call(p, MISS, f"P's {', '.join(case.reallocated)} freed and reallocated")
        self.call(p, HIT, "P refilled in place after the reallocation")
        p.restore(case.restored)
        self.call(p, MISS, f"P's {', '.join(case.restored)} given new storage in place (set_)")
        self.call(p, HIT, "P refilled in place after the new storage")

    def run_on_streams(self) -> None:
        case = self.case
        p = Problem("P", case.first, case, "cuda", case.seed)
        self.call(p, MISS, "P's first call", refill=False)
        torch.cuda.synchronize()
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            self.call(p, MISS, "P on another stream")
            self.call(p, HIT, "P refilled in place on the other stream")
            self.call(p, HIT, "P refilled in place on the other stream, again")
        torch.cuda.synchronize()
        self.call(p, MISS, "P back on the first stream")
        self.call(p, HIT, "P refilled in place on the first stream")


def _examples(share: int) -> int:
    return max(1, settings.default.max_examples // share)


def test_entry_calling_pattern(entry):
    """The steps of the module docstring, on small problems (few examples: see its Cost)."""
    entry = ready(entry)

    @settings(max_examples=_examples(6 if entry.device == "cpu" else 16), deadline=None)
    @given(case=cases(entry))
    def pattern(case):
        note(entry.repro(case, False))
        Pattern(entry, case).run()

    pattern()


def test_entry_on_another_stream(entry):
    """A call on a second CUDA stream misses (the entry belongs to the first stream's launches),
    then hits there; back on the first stream it misses once more."""
    if entry.device != "cuda":
        pytest.skip("the CPU model has one stream: a call on another CUDA stream needs a CUDA subject")
    entry = ready(entry)

    @settings(max_examples=_examples(25), deadline=None)
    @given(case=cases(entry))
    def on_streams(case):
        note(entry.repro(case, True))
        Pattern(entry, case, stream=True).run_on_streams()

    on_streams()


def test_the_combined_accumulation_covers_every_config():
    from kernel.validation import KernelConstraints

    def common(*declared):
        return _common_accumulation([KernelConstraints(accumulation_chunk=c, k_split=s) for c, s in declared])

    assert common((16, None), (16, None)) == (16, None)
    assert common((16, None), (16, 256)) == (16, 256)          # max(chain, cut) covers the uncut config
    assert common((16, 256), (16, 256)) == (16, 256)
    assert common((16, 128), (16, 256)) == (None, None)        # two cut points: the any-order bound
    assert common((16, None), (64, 256)) == (None, None)


# ---- python -m properties.test_entry_calling_pattern: one case again --------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m properties.test_entry_calling_pattern",
                                     description="Run one case of the entry's calling pattern again.")
    parser.add_argument("--subject", default="auto")
    parser.add_argument("--probe", choices=("python", "native"), default=None, help="the CPU model's probe")
    parser.add_argument("--stream", action="store_true", help="the other-stream pattern")
    parser.add_argument("--case", required=True, help="the JSON case of a 'reproduce:' line")
    args = parser.parse_args(argv)
    try:
        case = Case.from_json(args.case)
    except (ValueError, TypeError, KeyError) as exc:
        print(f"error: --case is not a case of this property ({exc}): paste the whole 'reproduce:' line",
              file=sys.stderr)
        return EXIT_USAGE
    entries = [e for e in entry_subjects(args.subject) if args.probe is None or e.probe in (args.probe, "loaded")]
    entry = entries[0]
    if entry.skip_reason:
        print(f"not run: {entry.skip_reason}")
        return EXIT_NOTHING_RAN
    if args.stream and entry.device != "cuda":
        print("not run: the other-stream pattern needs a CUDA subject")
        return EXIT_NOTHING_RAN
    try:
        entry = ready(entry)
    except pytest.skip.Exception as exc:
        print(f"not run: {exc}")
        return EXIT_NOTHING_RAN
    pattern = Pattern(entry, case, stream=args.stream)
    try:
        pattern.run_on_streams() if args.stream else pattern.run()
    except SubjectCheckFailed as exc:
        print(f"FAIL {exc}")
        return EXIT_FAILED
    print(f"PASS ({pattern.calls} calls)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
