"""Perturbed subjects on a CPU: the name carries the perturbation to the isolation worker and the
repro line, the drawn perturbations come from the palette, the stress shapes stress."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel.perturbation import Perturbation, palette
from kernel.validation import KernelConstraints
from properties import isolation
from properties.failures import SubjectCheckFailed
from properties.perturbed import perturbed, resolve_perturbed, split_name
from properties.strategies import STRESS_CTAS, Example, perturbed_examples, stress_sizes
from properties.subjects import resolve_subject

P = Perturbation(5, 2000, 60, poison=True, jitter="cta")

SUBJECT = textwrap.dedent('''
    from kernel.perturbation import Perturbation
    from kernel.model import custom_kernel as model_kernel
    from kernel.validation import KernelConstraints
    CONSTRAINTS = KernelConstraints(device_type="cpu")
    SEEN = []

    def custom_kernel(data, perturbation=None):
        # the worker must hand over the very perturbation named by the subject
        assert perturbation == Perturbation.from_tag("{tag}"), perturbation
        return model_kernel(data)
''')


def test_name_round_trips_and_labels_carry_the_tag():
    base, p = split_name(f"hopper~{P.tag}")
    assert (base, p) == ("hopper", P)
    variants = resolve_subject(f"hopper~{P.tag}")
    plain = resolve_subject("hopper")
    assert [v.label for v in variants] == [f"{v.label}~{P.tag}" for v in plain]
    assert all(v.run.keywords["perturbation"] == P and v.repro_subject == f"hopper~{P.tag}" for v in variants)


def test_subjects_without_a_schedule_are_skipped_with_the_reason():
    (v, *_) = resolve_perturbed(f"model~{P.tag}")
    assert v.skip_reason and "no schedule" in v.skip_reason


def test_the_isolation_worker_rebuilds_the_perturbed_variant(tmp_path):
    path = tmp_path / "perturbable.py"
    path.write_text(SUBJECT.format(tag=P.tag))
    (base,) = resolve_subject(str(path))
    variant = perturbed(base, P)
    assert variant.repro_subject == f"{path}~{P.tag}"
    example = Example(((65, 130, 64, 1), (0, 8, 128, 1)), 3, "uniform", "separate")
    runner = isolation.IsolatingRunner(isolation.settings_from_env(mode="always"))
    try:
        runner.run(variant, example, rerun=True, stages={})  # passes: raises on a failure
        # a different perturbation reaches the worker as itself: the subject's assert fails there
        with pytest.raises(SubjectCheckFailed):
            runner.run(perturbed(base, Perturbation(6)), example, rerun=False, stages={})
    finally:
        runner.close()


@settings(max_examples=30, derandomize=True, database=None, deadline=None)
@given(st.data())
def test_perturbed_examples_use_the_palette_and_few_groups(data):
    (variant, *_) = resolve_subject("hopper")
    p, ex = data.draw(perturbed_examples(variant, palette_size=3, max_groups=3))
    assert p in palette(3)
    assert 1 <= len(ex.sizes) <= 3
    assert all(k % variant.constraints.k_granularity == 0 and k > 0 for _, _, k, _ in ex.sizes)


@settings(max_examples=40, derandomize=True, database=None, deadline=None)
@given(st.data())
def test_stress_shapes_wrap_the_ring_or_outnumber_the_ctas(data):
    c = KernelConstraints(k_granularity=256, device_type="cuda")
    sizes = data.draw(stress_sizes(c, 3))
    tiles = sum(-(-m // 128) * -(-n // 128) for m, n, _, _ in sizes)
    long_k = max(k for _, _, k, _ in sizes) // 256
    assert tiles > STRESS_CTAS or long_k >= 24, sizes


@pytest.mark.parametrize("mode, plain, perturbed", [("off", True, False), ("on", True, True), ("only", False, True)])
def test_perturb_option_selects_the_properties(mode, plain, perturbed):
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", f"--perturb={mode}",
         "--subject=model", "properties/test_subject_vs_oracle.py", "properties/test_perturbed_properties.py"],
        capture_output=True, text=True, check=True,
    ).stdout
    assert ("test_subject_matches_oracle[" in out) == plain, out
    assert ("test_perturbed_subject_matches_oracle[" in out) == perturbed, out
