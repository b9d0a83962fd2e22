"""Fail a test run in which a test skipped because a package the project declares is missing.

``pytest.importorskip("pandas")`` skips with "could not import 'pandas': ..."; when ``pandas`` is
declared in pyproject.toml's ``tests`` extra, that skip means the environment was installed wrong
(``pip install -e '.[tests]'`` would have provided it), so it must not pass silently.
conftest.py feeds every skip reason to :func:`missing_declared_package`.
"""

from __future__ import annotations

import re
import tomllib
from functools import lru_cache
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
_IMPORT_SKIP = re.compile(r"could not import '([A-Za-z0-9_.]+)'")
# import name -> distribution name where they differ
IMPORT_TO_DIST = {"nsight": "nsight-python", "xdist": "pytest-xdist"}


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(requirement: str) -> str:
    return _normalize(re.split(r"[\s<>=!~;\[]", requirement.strip(), maxsplit=1)[0])


@lru_cache(maxsize=None)
def declared_test_packages(pyproject: Path = PYPROJECT) -> frozenset[str]:
    """Normalized names of the project's dependencies and of its ``tests`` extra."""
    project = tomllib.loads(pyproject.read_text())["project"]
    requirements = list(project.get("dependencies", [])) + list(project.get("optional-dependencies", {}).get("tests", []))
    return frozenset(_requirement_name(r) for r in requirements)


def missing_declared_package(skip_reason: str, declared: frozenset[str] | None = None) -> str | None:
    """The declared distribution whose absence caused this skip, or None."""
    match = _IMPORT_SKIP.search(skip_reason)
    if not match:
        return None
    top = match.group(1).split(".")[0]
    dist = _normalize(IMPORT_TO_DIST.get(top, top))
    declared = declared_test_packages() if declared is None else declared
    return dist if dist in declared else None
