"""Every validation rule is broken for every tensor, and each breakage raises exactly its rule.

The CPU model reads the logical view of its inputs, so a validation rule about bytes (strides,
base alignment, the blocked scale layout) can be dropped without the model noticing; these
tests apply every breakage of properties.breakages to a fixed problem on the CPU and check the
typed error, so a dropped rule fails here in every CI run.
"""

from __future__ import annotations

import dataclasses
import inspect
import re

import pytest

import oracle
from kernel import validation
from kernel.errors import InvalidProblemError
from kernel.validation import KernelConstraints, validate_problem
from properties.breakages import broken_problem, other_group, overlap_pair
from properties.strategies import (BREAKAGES, INPUTS, INVALID_BASE_LAYOUTS, OVERLAP_ENDS, PARTIAL_OVERLAPS,
                                   PLAIN_SCALE_RULES, PLAIN_SCALES, PROBLEM_BREAKAGES, TENSOR_RULES, TENSORS,
                                   Example, InvalidExample, applicable_breakages, breakage_tensor,
                                   two_outputs_overlap)

CONSTRAINTS = KernelConstraints(k_granularity=64, max_groups=6, device_type="cpu")
# a kernel that reads the plain scales: every rule applies to them too
READS_PLAIN = dataclasses.replace(CONSTRAINTS, reads_plain_scales=True)
# what a kernel that never reads the plain scales does not hold them to
NOT_HELD = sorted(f"{rule}:{tensor}" for tensor in PLAIN_SCALES for rule in TENSOR_RULES
                  if rule not in PLAIN_SCALE_RULES)
# K > 64 and M > 128 in some group: two 128-row scale blocks and two 4-column scale blocks
SIZES = ((3, 5, 128, 1), (130, 9, 192, 1), (4, 140, 64, 1))
# rules validation raises that no breakage can show on one machine, and why
UNBREAKABLE = {
    "same_device": "needs two devices of the constraints' device type (cuda:0 and cuda:1)",
    "too_large": "needs a tensor with more than max_dim (2^20) rows or K",
    "structure": "the leaderboard tuple's own shape: exercised by kernel/tests/test_validation.py",
}


def _rules_validation_raises() -> set[str]:
    return set(re.findall(r'_fail\(\s*"(\w+)"', inspect.getsource(validation)))


def test_every_rule_has_a_breakage_for_every_tensor():
    """rules x tensors: each pair has a breakage; every rule validation can raise is broken."""
    missing = [f"{rule}:{tensor}" for rule in TENSOR_RULES for tensor in TENSORS
               if BREAKAGES.get(f"{rule}:{tensor}") != rule]
    assert not missing, f"no breakage for {missing}"
    raised = _rules_validation_raises()
    covered = set(BREAKAGES.values()) | set(UNBREAKABLE)
    assert raised - covered == set(), f"validation rules with no breakage: {sorted(raised - covered)}"
    assert set(BREAKAGES.values()) - raised == set(), "a breakage names a rule validation never raises"


def test_every_output_input_pair_has_partial_overlaps():
    """c over either end of every tensor the kernel reads, of its own group and of another, and
    over either end of another group's c: each an aliasing breakage."""
    pairs = [f"aliasing_{end}{owner}:{x}" for end in OVERLAP_ENDS for owner in ("", "_other") for x in INPUTS]
    pairs += [f"aliasing_{end}:c" for end in OVERLAP_ENDS]
    assert set(INPUTS) | {"c"} == set(TENSORS)
    assert sorted(pairs) == sorted(PARTIAL_OVERLAPS)
    assert all(BREAKAGES[b] == "aliasing" and breakage_tensor(b) == "c" for b in pairs)
    assert set(pairs) <= set(applicable_breakages(CONSTRAINTS))


@pytest.mark.parametrize("constraints", [CONSTRAINTS, READS_PLAIN], ids=["plain-scales-unread", "plain-scales-read"])
@pytest.mark.parametrize("breakage", PARTIAL_OVERLAPS)
def test_a_partial_overlap_shares_one_end_by_the_least_the_rules_allow(breakage, constraints):
    """``start``: c's last element over x's first bytes; ``end``: c's first element over x's last
    element. One byte when x is held to no alignment (the plain scales of a kernel that does not
    read them); otherwise c's last element (start), x's last element when x is another c (end),
    else c begins at the last 16-byte aligned address at or before x's last element."""
    end = breakage.split(":")[0].split("_")[1]
    unaligned = breakage.split(":")[1] in PLAIN_SCALES and not constraints.reads_plain_scales
    for layout in INVALID_BASE_LAYOUTS:
        for group in range(len(SIZES)):
            inv = InvalidExample(Example(SIZES, 0, "uniform", layout), breakage, "aliasing", group, "c")
            _, c, x = overlap_pair(broken_problem(inv, constraints, "cpu"), breakage, group)
            (lo, hi), (xlo, xhi) = validation._byte_range(c), validation._byte_range(x)
            assert lo % 16 == 0 and (unaligned or xlo % 16 == 0)
            if end == "start":
                assert lo < xlo < hi < xhi, (lo, hi, xlo, xhi)
                assert hi - xlo == (1 if unaligned else c.element_size()), (breakage, hi - xlo)
            else:
                assert xlo < lo < xhi < hi, (lo, hi, xlo, xhi)
                if unaligned:
                    assert xhi - lo == 1
                elif breakage.endswith(":c"):
                    assert xhi - lo == c.element_size()
                else:
                    assert lo <= xhi - x.element_size() < lo + 16, (breakage, xhi - lo)


def test_the_unbroken_problem_is_valid():
    validate_problem(oracle.make_inputs(list(SIZES), 0), CONSTRAINTS)


@pytest.mark.parametrize("layout", INVALID_BASE_LAYOUTS)
@pytest.mark.parametrize("breakage", sorted(BREAKAGES))
def test_each_breakage_raises_its_rule_naming_group_and_tensor(breakage, layout):
    constraints = READS_PLAIN if breakage in NOT_HELD else CONSTRAINTS
    assert breakage in applicable_breakages(constraints)
    groups = [None] if breakage in ("no_groups", "too_many_groups") else range(len(SIZES))
    for group in groups:
        inv = InvalidExample(Example(SIZES, 0, "uniform", layout), breakage, BREAKAGES[breakage], group,
                             breakage_tensor(breakage))
        problem = broken_problem(inv, constraints, "cpu")
        with pytest.raises(InvalidProblemError) as info:
            validate_problem(problem, constraints)
        err = info.value
        assert (err.rule, err.tensor) == (inv.rule, inv.tensor), f"{breakage} in group {group}: {err}"
        if two_outputs_overlap(breakage):
            assert err.group in (group, other_group(group)), f"{breakage} in group {group}: {err}"
        else:
            assert err.group == group, f"{breakage} in group {group}: {err}"


@pytest.mark.parametrize("layout", INVALID_BASE_LAYOUTS)
@pytest.mark.parametrize("breakage", NOT_HELD)
def test_a_kernel_that_never_reads_the_plain_scales_accepts_them_anywhere(breakage, layout):
    """Plain scales on another device (the leaderboard keeps them in host memory), with other
    strides or misaligned: valid for a kernel that reads only the blocked scales, and not drawn
    as breakages for it."""
    assert breakage not in applicable_breakages(CONSTRAINTS)
    inv = InvalidExample(Example(SIZES, 0, "uniform", layout), breakage, BREAKAGES[breakage], 1,
                         breakage_tensor(breakage))
    validate_problem(broken_problem(inv, CONSTRAINTS, "cpu"), CONSTRAINTS)


def test_a_k_granularity_of_16_has_no_off_grid_k():
    assert "k_not_multiple" not in applicable_breakages(KernelConstraints(k_granularity=16))
    assert set(applicable_breakages(KernelConstraints(k_granularity=32, reads_plain_scales=True))) == set(BREAKAGES)
    assert set(BREAKAGES) - set(applicable_breakages(KernelConstraints(k_granularity=32))) == set(NOT_HELD)
    assert set(PROBLEM_BREAKAGES) <= set(BREAKAGES)


def test_the_invalid_input_property_catches_an_overlap_test_one_element_short(monkeypatch):
    """The catalog's harness_validation_overlap_one_element_short (byte ranges that end at the
    last element's first byte), swapped into kernel.validation: the fixed partial overlaps are
    accepted, and the invalid-input property's draws on the CPU model reach one the model runs
    instead of refusing."""
    from pathlib import Path

    from hypothesis import HealthCheck, find, settings

    from ci.mutants import BY_NAME
    from properties.strategies import invalid_examples
    from properties.subjects import resolve_subject

    mutated = BY_NAME["harness_validation_overlap_one_element_short"].load(Path(__file__).resolve().parents[1])
    monkeypatch.setattr(validation, "_byte_range", mutated._byte_range)
    accepted = []
    for breakage in ("aliasing_start:a", "aliasing_start:c", "aliasing_end:c", "aliasing_end_other:sfb"):
        inv = InvalidExample(Example(SIZES, 0, "uniform", "separate"), breakage, "aliasing", 1, "c")
        try:
            validate_problem(broken_problem(inv, CONSTRAINTS, "cpu"), CONSTRAINTS)
            accepted.append(breakage)
        except InvalidProblemError:
            pass
    assert accepted == ["aliasing_start:a", "aliasing_start:c", "aliasing_end:c", "aliasing_end_other:sfb"]
    # the full overlaps from byte 0 that were the only aliasing breakages still fail as they should
    inv = InvalidExample(Example(SIZES, 0, "uniform", "separate"), "aliasing:a", "aliasing", 1, "c")
    with pytest.raises(InvalidProblemError):
        validate_problem(broken_problem(inv, CONSTRAINTS, "cpu"), CONSTRAINTS)

    variant = resolve_subject("model")[0]

    def runs(inv) -> bool:
        try:
            variant.run(broken_problem(inv, variant.constraints, "cpu"))
        except InvalidProblemError:
            return False
        return True

    found = find(invalid_examples(variant), runs,
                 settings=settings(max_examples=50, derandomize=True, database=None, deadline=None,
                                   suppress_health_check=list(HealthCheck)))
    assert found.breakage in PARTIAL_OVERLAPS, found
