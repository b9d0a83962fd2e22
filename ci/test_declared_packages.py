"""ci.declared_packages recognises a skip caused by a missing declared package, and only that."""

import pytest

from ci.declared_packages import declared_test_packages, missing_declared_package


def test_the_tests_extra_declares_what_the_profiling_tests_import():
    declared = declared_test_packages()
    assert {"pandas", "matplotlib", "pytest", "hypothesis"} <= declared


def test_an_importorskip_of_a_declared_package_is_flagged():
    with pytest.raises(pytest.skip.Exception) as info:
        pytest.importorskip("pandas_surely_not_installed_module")
    reason = str(info.value)
    declared = frozenset({"pandas-surely-not-installed-module"})
    assert missing_declared_package(reason, declared) == "pandas-surely-not-installed-module"
    assert missing_declared_package(reason, frozenset({"pandas"})) is None


def test_other_skips_are_not_flagged():
    assert missing_declared_package("needs two CUDA devices") is None
    assert missing_declared_package("could not import 'nsight': No module named 'nsight'",
                                    frozenset({"pandas"})) is None
    assert missing_declared_package("could not import 'nsight': x", frozenset({"nsight-python"})) == "nsight-python"
