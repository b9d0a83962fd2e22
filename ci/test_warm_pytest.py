"""ci.warm_pytest: a forked run behaves as a fresh ``python -m pytest`` in its folder would.

The mutant runs depend on it: the copy's modules (mutated) are the ones imported, never the
working tree's; the run's environment is the one given; pytest's exit status comes back; a run
past its limit is killed.
"""

from __future__ import annotations

import os
import sys

import pytest

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="ci.warm_pytest forks")

TEST = '''
import os, sys
import ci

def test_the_copy_s_package_and_environment():
    assert ci.WHERE == "copy", ci.__file__
    assert os.environ["WARM_MARK"] == "given" and "NOT_GIVEN" not in os.environ
    assert os.getcwd() == os.environ["WARM_CWD"]

def test_outcome():
    assert os.environ.get("WARM_FAIL") != "1"

def test_slow():
    if os.environ.get("WARM_SLEEP"):
        import time
        time.sleep(float(os.environ["WARM_SLEEP"]))
'''


@pytest.fixture(scope="module")
def warm():
    from ci.warm_pytest import WarmPytest

    server = WarmPytest(dict(os.environ, NOT_GIVEN="1"))
    yield server
    server.close()


def _copy(tmp_path):
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "__init__.py").write_text('WHERE = "copy"\n')
    # a plugin loaded before collection (as the runs' ``-p ci.mutant_plugin``): found only when
    # the copy comes first on sys.path from the start, not through the test files' folders
    (tmp_path / "ci" / "copy_plugin.py").write_text("import ci\nassert ci.WHERE == 'copy'\n")
    (tmp_path / "test_copy.py").write_text(TEST)
    env = {k: v for k, v in os.environ.items() if k != "NOT_GIVEN"}
    return dict(env, WARM_MARK="given", WARM_CWD=str(tmp_path), PYTHONPATH=str(tmp_path))


def test_a_run_imports_the_copy_and_takes_its_environment(warm, tmp_path):
    import ci

    assert getattr(ci, "WHERE", None) is None  # this process has the working tree's package
    env = _copy(tmp_path)
    code, out, err = warm.run(["-q", "-p", "no:cacheprovider", "-p", "ci.copy_plugin", "test_copy.py"], tmp_path, env, 120)
    assert code == 0 and "3 passed" in out, out + err


def test_the_exit_status_and_the_output_come_back(warm, tmp_path):
    env = _copy(tmp_path)
    code, out, err = warm.run(["-q", "-p", "no:cacheprovider", "-p", "ci.copy_plugin", "test_copy.py"], tmp_path, dict(env, WARM_FAIL="1"), 120)
    assert code == 1 and "FAILED test_copy.py::test_outcome" in out, out + err
    code, out, err = warm.run(["-q", "--no-such-option"], tmp_path, env, 120)
    assert code == 4 and "no-such-option" in err, out + err


def test_a_run_past_its_limit_is_killed(warm, tmp_path):
    env = _copy(tmp_path)
    code, _out, _err = warm.run(["-q", "-p", "no:cacheprovider", "test_copy.py::test_slow"], tmp_path,
                                dict(env, WARM_SLEEP="60"), 3)
    assert code is None
    # the server goes on serving
    code, out, err = warm.run(["-q", "-p", "no:cacheprovider", "-p", "ci.copy_plugin", "test_copy.py"], tmp_path, env, 120)
    assert code == 0, out + err


def test_the_server_imports_nothing_of_the_project():
    from ci import warm_pytest

    assert not [m for m in warm_pytest.PRELOAD if m.split(".")[0] in ("kernel", "oracle", "properties", "ci",
                                                                        "profiling", "conftest")]
    assert sys.executable
