"""Compile the Hopper variants for sm_90a on the CPU; inspect the cubin's SASS.

The compile names its target (``--gpu-arch sm_90a``), whatever CUTE_DSL_ARCH says; needs
``cuobjdump`` from the nvidia-cuda-cuobjdump wheel (or on PATH).
"""

import glob
import os
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.compile

from kernel.hopper import DEFAULT_CONFIG, STATIC_MATRIX, compile_cache, compile_for, static_build


def _cuobjdump() -> str | None:
    found = shutil.which("cuobjdump")
    if found:
        return found
    for pattern in ("nvidia/cu13/bin/cuobjdump", "nvidia/cuda_cuobjdump/bin/cuobjdump"):
        for site in sys.path:
            hits = glob.glob(os.path.join(site, pattern))
            if hits:
                return hits[0]
    return None


def _compile_to_cubin(config, num_groups, tmp_path):
    """A fresh compile (the cache would skip it) through the static report's hook."""
    return static_build(config, tmp_path, num_groups=num_groups)["cubin"]


@pytest.mark.parametrize("config", STATIC_MATRIX, ids=lambda c: c.label)
def test_sass_has_hgmma_and_no_local_memory(config, tmp_path):
    tool = _cuobjdump()
    if tool is None:
        pytest.skip("cuobjdump not found (pip install nvidia-cuda-cuobjdump)")
    cubin = _compile_to_cubin(config, 8, tmp_path)
    sass = subprocess.run([tool, "--dump-sass", cubin], capture_output=True, text=True, check=True).stdout
    assert "HGMMA" in sass, "no wgmma in the SASS"
    local = [line for line in sass.splitlines() if "STL" in line or "LDL" in line]
    assert not local, f"{len(local)} local-memory instructions, e.g. {local[0].strip()}"
    usage = subprocess.run([tool, "--dump-resource-usage", cubin], capture_output=True, text=True, check=True).stdout
    assert "STACK:0" in usage, usage


def test_compile_cache_compiles_once_per_config_and_group_count():
    before = compile_cache.stats.compiles
    compile_for(DEFAULT_CONFIG, 3)
    compile_for(DEFAULT_CONFIG, 3)
    assert compile_cache.stats.compiles - before <= 1
    assert (DEFAULT_CONFIG, 3) in compile_cache.keys()


def test_shape_sweep_compiles_once():
    """20 shape sets through the host path of one variant: one compile (shapes are run-time values).

    ``launch`` compiles ``compile_for(prep.config, prep.plan.num_groups)``; a dry-run prepare
    gives the same key without a GPU."""
    import random

    import oracle
    from kernel.hopper import prepare

    rng = random.Random(20261129)
    compile_cache.clear()
    for i in range(20):
        sizes = [(rng.randint(0, 400), rng.randint(1, 900), 256 * rng.randint(1, 4), 1) for _ in range(3)]
        prep = prepare(oracle.make_inputs(sizes, i, device="cpu"), DEFAULT_CONFIG, dry_run=True)
        compile_for(prep.config, prep.plan.num_groups)
    assert compile_cache.stats.compiles == 1, compile_cache.stats
    assert compile_cache.stats.hits == 19
