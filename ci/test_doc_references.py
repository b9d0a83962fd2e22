"""Every dotted name of the project's own code that the docs, scripts and docstrings cite
(``kernel.plan.balanced_split``, ``python3 -m ci.prepass_smoke``) exists: a module or package of
the tree, then a function, class or name defined in it. A tool or option removed from the
code but still named in a guide, a script's usage text or a docstring fails here. The results
table (docs/results.md) is history and keeps the names of what it measured; tests are left out
(they name things that do not exist on purpose)."""

from __future__ import annotations

import ast
import functools
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("kernel", "oracle", "properties", "profiling", "ci")
HISTORY = ("docs/results.md",)
REFERENCE = re.compile(r"(?<![\w./-])((?:%s)(?:\.[A-Za-z_]\w*)+)" % "|".join(PACKAGES))
FILE_NAME = re.compile(r"\.(py|md|sh|json|csv|toml|txt|png|cubin)$")


def _cited_files() -> list[str]:
    """The tree's files (git's list; a copy without git: every file outside hidden folders)."""
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    tracked = listed.stdout.split() if listed.returncode == 0 else [
        p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(ROOT).parts)]
    return [f for f in tracked if f.endswith((".py", ".sh", ".md")) and f not in HISTORY
            and "/tests/" not in f and not Path(f).name.startswith(("test_", "conftest"))]


@functools.lru_cache(maxsize=None)
def _defined_names(path: Path) -> frozenset[str]:
    """Names a module defines or imports anywhere in it (functions, classes, assignments, imports)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return frozenset(names)


def resolves(reference: str, root: Path = ROOT) -> bool:
    """The longest prefix of ``reference`` that is a module or package of the tree, then (if
    anything is left) its next part defined in that module."""
    parts = reference.split(".")
    for i in range(len(parts), 0, -1):
        base = root.joinpath(*parts[:i])
        module = base.with_suffix(".py") if base.with_suffix(".py").is_file() else base / "__init__.py"
        if module.is_file():
            return i == len(parts) or parts[i] in _defined_names(module)
    return False


def test_the_resolver_tells_a_stale_name_from_a_live_one():
    assert resolves("kernel.plan.balanced_split")
    assert resolves("profiling.dispatch_sweep")
    assert resolves("kernel.hopper.variants.resolve_config")
    assert not resolves("ci.cluster_y_smoke")  # a smoke module that no longer exists
    assert not resolves("kernel.plan.stream_k_split")
    assert not resolves("profiling.no_such_tool.main")


@pytest.mark.parametrize("path", _cited_files())
def test_every_cited_name_of_the_project_exists(path):
    stale = []
    for number, line in enumerate((ROOT / path).read_text().splitlines(), 1):
        for match in REFERENCE.finditer(line):
            reference = match.group(1)
            if not FILE_NAME.search(reference) and not resolves(reference):
                stale.append(f"{path}:{number}: {reference}")
    assert not stale, "names of code that is not in the tree:\n" + "\n".join(stale)
