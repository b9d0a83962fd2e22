"""Each check of properties.checks catches the bug it exists for, on one fixed example.

properties/test_wrong_subjects.py searches for a failing example with Hypothesis; here each
mechanism (determinism rerun, canaries, exact-sum elements) must fire by itself, named in the
failure message, so a check that is switched off or compares the wrong buffers fails at once.
"""

from __future__ import annotations

import itertools

import pytest
import torch

from kernel import model
from properties import wrong_subjects
from properties.checks import SubjectCheckFailed, check_example
from properties.strategies import Example
from properties.subjects import CPU_LIMITS, SubjectVariant
from properties.wrong_subjects import wrong_variant

EXAMPLE = Example(((5, 7, 64, 1), (0, 9, 64, 1), (3, 9, 128, 1)), 0, "uniform", "separate")
EXACT = Example(((6, 8, 128, 1),), 0, "exact_sum", "separate")


def test_the_rerun_catches_a_subject_that_differs_between_runs(monkeypatch):
    monkeypatch.setattr(wrong_subjects, "_calls", itertools.count())  # the second run flips a bit
    with pytest.raises(SubjectCheckFailed, match="not deterministic"):
        check_example(wrong_variant("nondeterministic"), EXAMPLE)


def test_the_canaries_catch_a_write_past_c():
    with pytest.raises(SubjectCheckFailed, match="wrote outside C"):
        check_example(wrong_variant("writes_past_c"), EXAMPLE, rerun=False)


def _one_ulp_off(data):
    out = model.custom_kernel(data)
    out[0].view(torch.int16)[0, 0, 0] ^= 1
    return out


def test_an_exact_sum_element_one_ulp_off_is_reported_as_such():
    variant = SubjectVariant("wrong-one-ulp", "one_ulp", _one_ulp_off, model.constraints(), CPU_LIMITS)
    with pytest.raises(SubjectCheckFailed, match="exact fp32 sum: must be bitwise equal"):
        check_example(variant, EXACT, rerun=False)


def test_the_unbroken_model_passes_the_same_examples():
    variant = SubjectVariant("model", "default", model.custom_kernel, model.constraints(), CPU_LIMITS)
    check_example(variant, EXAMPLE)
    check_example(variant, EXACT)
