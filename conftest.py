"""Harness-wide pytest configuration: subject selection, Hypothesis profiles, arch gating."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, Phase, Verbosity, settings

pytest_plugins = ["properties.perturb_plugin"]  # --perturb=off|on|only

# Hypothesis profiles; choose one with --hypothesis-profile (the hypothesis pytest plugin).
settings.register_profile("dev", max_examples=20, deadline=None)
settings.register_profile(
    "ci",
    max_examples=50,
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "nightly",
    max_examples=1000,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "gpu-long",
    max_examples=500,
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    verbosity=Verbosity.normal,
    phases=[Phase.explicit, Phase.generate, Phase.shrink],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def pytest_addoption(parser):
    group = parser.getgroup("nvfp4 harness")
    group.addoption(
        "--subject",
        default="auto",
        help="what the kernel properties run against: model, hopper, blackwell, auto (by device) "
        "or a path to a .py file defining custom_kernel(data)",
    )
    group.addoption(
        "--variant",
        action="append",
        default=[],
        help="restrict to these variant labels (repeatable); default: every declared variant",
    )
    group.addoption(
        "--isolate",
        choices=("auto", "always", "never"),
        default=None,
        help="run each example of a subject in a worker process, so a fault or a hang fails that "
        "example only (properties.isolation): auto = GPU subjects (default), always, never",
    )
    group.addoption(
        "--example-timeout",
        type=float,
        default=None,
        help="seconds an isolated example may take before its worker is killed (default 120; the "
        "first example of each GPU worker gets NVFP4_FIRST_EXAMPLE_EXTRA=300 more for JIT compiles)",
    )


def pytest_configure(config):
    from properties import isolation

    isolation.configure(mode=config.getoption("isolate"), timeout_s=config.getoption("example_timeout"))


def pytest_generate_tests(metafunc):
    """Tests that take ``subject_variant`` run once per declared variant of --subject."""
    if "subject_variant" not in metafunc.fixturenames:
        return
    from properties.subjects import resolve_subject

    wanted = set(metafunc.config.getoption("variant"))
    params = []
    for variant in resolve_subject(metafunc.config.getoption("subject")):
        if wanted and variant.label not in wanted:
            continue
        marks = []
        if variant.device == "cuda":
            marks.append(pytest.mark.gpu)
        if variant.skip_reason:
            marks.append(pytest.mark.skip(reason=variant.skip_reason))
        params.append(pytest.param(variant, id=variant.test_id, marks=marks))
    if not params:
        raise pytest.UsageError(f"no variant of subject {metafunc.config.getoption('subject')} matches {sorted(wanted)}")
    metafunc.parametrize("subject_variant", params)


def pytest_report_header(config):
    from kernel.device import cuda_capability
    from properties.subjects import auto_subject_name

    subject = config.getoption("subject")
    resolved = auto_subject_name() if subject == "auto" else subject
    return f"nvfp4 harness: subject={subject} (-> {resolved}), cuda capability={cuda_capability()}"
