"""Harness-wide pytest configuration: subject selection, Hypothesis profiles, arch gating."""

from __future__ import annotations

import os

# torch's OpenMP threads sleep, not spin, while they wait for work (read when torch loads, so
# before any import of it; the processes the tests start inherit it): the suite runs compiles,
# mutant runs and workers beside this process, and on a 2-core machine that busy two spinning
# threads make the CPU model's small matmuls up to 40 times slower
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest  # noqa: E402
from hypothesis import HealthCheck, Phase, Verbosity, settings  # noqa: E402

pytest_plugins = [
    "properties.perturb_plugin",  # --perturb=off|on|only
    "properties.xdist_plugin",  # -n auto: one pytest-xdist worker per GPU, --workers-per-gpu
]

# Hypothesis profiles; choose one with --hypothesis-profile (the hypothesis pytest plugin).
settings.register_profile("dev", max_examples=20, deadline=None)
# a quick deterministic look (the harness's own tests of file subjects run pytest with it); a
# failure is shrunk but not explained (the explain phase reruns the failing example under a line
# tracer: 15 s of a 15.3 s failing run of the invalid-input property on Python 3.11)
settings.register_profile("smoke", max_examples=3, derandomize=True, database=None, deadline=None,
                          phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
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
        "--variants",
        action="append",
        default=[],
        help="variant labels to run (repeatable, any declared label, experimental ones included); "
        "'all' = the whole declared matrix; default: the family's production variants (the nightly "
        "profile: all)",
    )
    group.addoption(
        "--list-variants",
        action="store_true",
        help="print every subject's variants (label, production or experimental, what it is) and exit",
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
        help="seconds an isolated example may run after its launch before it counts as hung and "
        "its worker is killed (default 60, or NVFP4_EXAMPLE_TIMEOUT)",
    )
    group.addoption(
        "--compile-timeout",
        type=float,
        default=None,
        help="seconds an isolated example's compile phase (CUDA context, JIT compiles) may take "
        "(default 300, or NVFP4_COMPILE_TIMEOUT)",
    )


def pytest_configure(config):
    from properties.checks import install_runner
    from properties.isolation import IsolatingRunner, settings_from_env
    from properties.prewarm import Prewarmer
    from properties.progress_plugin import ProgressPlugin, variant_of
    from properties.usage import UsageMistake, check_selection

    runner = install_runner(IsolatingRunner(settings_from_env(
        mode=config.getoption("isolate"), timeout_s=config.getoption("example_timeout"),
        compile_timeout_s=config.getoption("compile_timeout"))))
    config.pluginmanager.register(ProgressPlugin(runner), "nvfp4-progress")
    config.pluginmanager.register(Prewarmer(runner, variant_of), "nvfp4-prewarm")
    if config.getoption("list_variants"):
        return
    # a usage mistake is one line with the fix, before any collection (no traceback)
    try:
        check_selection(config.getoption("subject"), config.getoption("variant"))
    except UsageMistake as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_cmdline_main(config):
    if config.getoption("list_variants"):
        from properties.usage import variant_lines

        print("subject  label  [scope]  what it is   (use a label with --variant=LABEL)")
        for line in variant_lines():
            print(line)
        return 0
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Every failure of a subject property ends with a runnable repro line: the property's own
    ``python -m properties.repro`` line when it printed one, else a pytest line that reruns the
    test on the same subject and variant (Hypothesis replays the failing example)."""
    outcome = yield
    report = outcome.get_result()
    variant = getattr(item, "funcargs", {}).get("subject_variant")
    if report.when != "call" or not report.failed or variant is None:
        return
    # which subject variants a property already failed on in this process (a later, slower
    # provocation of the same variant may skip: properties/test_tensor_map_rewrite.py)
    from properties.xdist_plugin import plain_nodeid

    nodeid = plain_nodeid(item)
    failed_on(item.config).append((variant.subject, variant.label, nodeid))
    if "python -m properties.repro" in report.longreprtext:
        return
    config = item.config
    line = f"python3 -m pytest '{nodeid}' --subject={variant.repro_subject} -p no:cacheprovider"
    profile = config.getoption("hypothesis_profile", default=None)
    if profile:
        line += f" --hypothesis-profile={profile}"
    seed = config.getoption("hypothesis_seed", default=None)
    if seed is not None:
        line += f" --hypothesis-seed={seed}"
    report.sections.append(("reproduce", f"reproduce: {line}"))


def failed_on(config) -> list[tuple[str, str, str]]:
    """(subject, variant label, test id) of every subject property that failed so far in this
    pytest process (filled by pytest_runtest_makereport)."""
    if not hasattr(config, "_nvfp4_failed_subjects"):
        config._nvfp4_failed_subjects = []
    return config._nvfp4_failed_subjects


_MISSING_DECLARED: list[str] = []


def _note_skip(report) -> None:
    if not report.skipped or not isinstance(report.longrepr, tuple):
        return
    from ci.declared_packages import missing_declared_package

    package = missing_declared_package(str(report.longrepr[2]))
    if package:
        _MISSING_DECLARED.append(f"{report.nodeid}: {package}")


def pytest_runtest_logreport(report):
    _note_skip(report)


def pytest_collectreport(report):
    _note_skip(report)


@pytest.fixture(scope="session")
def static_builds(tmp_path_factory):
    """The CuTe DSL static builds every test module of this process shares (ci.static_builds):
    each compiled once, on first use."""
    from ci.static_builds import StaticBuilds

    return StaticBuilds(tmp_path_factory.mktemp("static_builds"))


def pytest_collection_finish(session):
    """The CPU mutant run (ci/test_mutants.py) starts in the background as soon as collection
    selects it, with one job fewer than cores: it is independent of every other test, and the
    tests before it leave a core idle most of the time. Not under pytest-xdist (the worker that
    runs it is not known here) nor with --collect-only."""
    config = session.config
    if config.option.collectonly or os.environ.get("PYTEST_XDIST_WORKER") or getattr(config.option, "numprocesses", None):
        return
    for item in session.items:
        start = getattr(getattr(item, "module", None), "start_cpu_mutant_run", None)
        if item.name == "test_every_cpu_mutant_is_caught" and start is not None:
            config._nvfp4_background = start(jobs=max(1, (os.cpu_count() or 1) - 1))
            return


def pytest_unconfigure(config):
    """A background run still going (an interrupted run, or one stopped by -x) starts no further
    mutant runs."""
    run = getattr(config, "_nvfp4_background", None)
    if run is not None:
        run.close()


def pytest_sessionfinish(session, exitstatus):
    """A skip caused by a missing declared package fails the run (ci/declared_packages.py)."""
    if _MISSING_DECLARED and exitstatus in (0, 5):
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter):
    if _MISSING_DECLARED:
        terminalreporter.write_line(
            f"FAILED: {len(_MISSING_DECLARED)} skip(s) for want of a declared package "
            f"(run pip install -e '.[tests]'): " + "; ".join(_MISSING_DECLARED[:5]),
            red=True,
        )


def pytest_generate_tests(metafunc):
    """Tests that take ``subject_variant`` run once per declared variant of --subject."""
    if "subject_variant" not in metafunc.fixturenames:
        return
    from properties.subjects import resolve_subject

    scope, wanted = variant_scope(metafunc.config)
    params = []
    for variant in resolve_subject(metafunc.config.getoption("subject"), scope):
        if wanted and variant.label not in wanted:
            continue
        marks = []
        if variant.device == "cuda":
            marks.append(pytest.mark.gpu)
        if variant.skip_reason:
            marks.append(pytest.mark.skip(reason=variant.skip_reason))
        params.append(pytest.param(variant, id=variant.test_id, marks=marks))
    if not params:  # check_selection (pytest_configure) has already named unknown labels
        raise pytest.UsageError(f"no variant of subject {metafunc.config.getoption('subject')} matches {sorted(wanted)}")
    metafunc.parametrize("subject_variant", params)


def variant_scope(config) -> tuple[str, set[str]]:
    """(scope, labels): production by default; the whole declared matrix for --variant=all, for the
    nightly profile, and to look up explicit labels (then only those labels run)."""
    wanted = set(config.getoption("variant"))
    profile = config.getoption("hypothesis_profile", None) or os.environ.get("HYPOTHESIS_PROFILE", "dev")
    if "all" in wanted:
        return "all", wanted - {"all"}
    return ("all" if wanted or profile == "nightly" else "production"), wanted


def pytest_report_header(config):
    from kernel.device import cuda_capability
    from properties.subjects import auto_subject_name

    subject = config.getoption("subject")
    resolved = auto_subject_name() if subject == "auto" else subject
    return f"nvfp4 harness: subject={subject} (-> {resolved}), cuda capability={cuda_capability()}"
