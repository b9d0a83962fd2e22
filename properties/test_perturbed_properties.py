"""The main property on perturbed builds: seeded delays at every sync site, poison on release.

Every check of the plain property applies (poisoned and guarded outputs, the exact oracle and its
bound, bitwise equality on exact sums, a second launch compared bitwise), on a perturbed build
(kernel/perturbation.py) and on ordinary or stress shapes (long K, more tiles than CTAs).
Selected with ``--perturb`` (properties/perturb_plugin.py). Subjects without a schedule (the CPU
model) are skipped with the reason.
"""

from __future__ import annotations

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from properties.checks import check_example
from properties.perturbed import perturbed
from properties.strategies import perturbed_examples

pytestmark = pytest.mark.properties


@given(st.data())
def test_perturbed_subject_matches_oracle(subject_variant, request, data):
    palette_size = request.config.getoption("perturb_palette")
    perturbation, example = data.draw(perturbed_examples(subject_variant, palette_size), label="perturbed example")
    variant = perturbed(subject_variant, perturbation)
    if variant.skip_reason:
        pytest.skip(variant.skip_reason)
    note(example.repro(variant.repro_subject, variant.label))
    try:
        check_example(variant, example)
    finally:
        last_report = getattr(variant.run, "last_report", None)  # a stressed launch in this process
        report = last_report() if last_report is not None else None
        if report is not None:
            note(report.line())
