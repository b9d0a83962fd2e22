"""ci.declared_packages recognises a skip caused by a missing declared package, and only that."""

import pytest

from ci.declared_packages import declared_test_packages, missing_declared_package


def test_the_tests_extra_declares_what_the_profiling_tests_import():
    declared = declared_test_packages()
    assert {"pandas", "matplotlib", "pytest", "hypothesis"} <= declared


def test_an_importorskip_of_a_declared_package_is_flagged():
    missing = "pandas_surely_not_installed_module"  # a name no machine installs
    with pytest.raises(pytest.skip.Exception) as info:
        pytest.importorskip(missing)
    reason = str(info.value)
    declared = frozenset({"pandas-surely-not-installed-module"})
    assert missing_declared_package(reason, declared) == "pandas-surely-not-installed-module"
    assert missing_declared_package(reason, frozenset({"pandas"})) is None


def test_other_skips_are_not_flagged():
    assert missing_declared_package("needs two CUDA devices") is None
    assert missing_declared_package("could not import 'nsight': No module named 'nsight'",
                                    frozenset({"pandas"})) is None
    assert missing_declared_package("could not import 'nsight': x", frozenset({"nsight-python"})) == "nsight-python"


def test_a_run_with_such_a_skip_fails(tmp_path):
    """End to end through conftest.py's hooks: a skip for a missing declared package fails the run."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    (tmp_path / "test_needs_a_declared_package.py").write_text(
        "import sys\nimport pytest\n\n\ndef test_it():\n"
        "    sys.modules['ml_dtypes'] = None  # as if it were not installed\n"
        "    pytest.importorskip('ml_dtypes')\n\n\ndef test_other():\n    pytest.skip('an unrelated reason')\n"
    )
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-q",
                          str(tmp_path)], cwd=root, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stdout[-2000:]
    assert "for want of a declared package" in run.stdout and "ml-dtypes" in run.stdout, run.stdout[-2000:]
    (tmp_path / "test_needs_a_declared_package.py").unlink()
    (tmp_path / "test_plain.py").write_text("import pytest\n\n\ndef test_other():\n    pytest.skip('unrelated')\n")
    clean = subprocess.run([sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-q",
                            str(tmp_path)], cwd=root, capture_output=True, text=True, timeout=300)
    assert clean.returncode == 0, clean.stdout[-2000:]
