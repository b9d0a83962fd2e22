"""The property suite catches deliberately wrong subjects (one promise broken each)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, find, settings

from properties.checks import SubjectCheckFailed, check_example
from properties.strategies import examples
from properties.wrong_subjects import WRONG_SUBJECTS, wrong_variant

pytestmark = pytest.mark.properties


@pytest.mark.parametrize("name", sorted(WRONG_SUBJECTS))
def test_wrong_subject_is_caught(name):
    variant = wrong_variant(name)

    def fails(example) -> bool:
        try:
            check_example(variant, example)
        except SubjectCheckFailed:
            return True
        return False

    found = find(
        examples(variant),
        fails,
        settings=settings(max_examples=200, derandomize=True, database=None, deadline=None,
                          suppress_health_check=list(HealthCheck)),
    )
    # the failing example reproduces, and the report carries the one-line reproduction
    with pytest.raises(SubjectCheckFailed, match="reproduce: python -m properties.repro"):
        check_example(variant, found)
