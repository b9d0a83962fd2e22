"""pytest option ``--perturb=off|on|only``: which kernel properties run on perturbed builds.

* ``off`` (default): only the plain properties (``properties/test_perturbed_properties.py``
  deselected), so a selection such as ``-k test_subject_matches_oracle`` (which matches both)
  and the ci budget cover the plain properties only;
* ``on``: both; the perturbed property draws run-time perturbations (any seed, or seeds
  1..``--perturb-palette``) of three kinds (delays, quiet, window: kernel.perturbation.KINDS);
  one build per kind and group count serves all its seeds (the seed's delay table is data) and
  always 3 groups, so it compiles three times per run; ``--hypothesis-profile=nightly`` draws more examples from it;
* ``only``: only the perturbed properties (what ``ci.mutation_runner`` uses for its perturbed
  verdict), the plain kernel properties deselected.

Registered by the root conftest (``pytest_plugins``).
"""

from __future__ import annotations

PERTURBED_FILE = "test_perturbed_properties.py"
PLAIN_FILE = "test_subject_vs_oracle.py"


def pytest_addoption(parser):
    group = parser.getgroup("nvfp4 harness")
    group.addoption("--perturb", choices=("off", "on", "only"), default="off",
                    help="kernel properties on perturbed builds (kernel.perturbation): off (default), on, only")
    group.addoption("--perturb-palette", type=int, default=0,
                    help="seeds the perturbed property draws from: 0 (default) any, N: seeds 1..N "
                         "(run-time perturbations: one build serves every seed)")


def pytest_collection_modifyitems(config, items):
    mode = config.getoption("perturb")
    if mode == "on":
        return
    drop = PERTURBED_FILE if mode == "off" else PLAIN_FILE
    kept, deselected = [], []
    for item in items:
        (deselected if item.nodeid.split("::")[0].endswith(drop) else kept).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept
