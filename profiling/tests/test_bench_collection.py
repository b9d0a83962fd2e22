"""What ``pytest profiling/benchmarks/bench_gpu.py --benchmark-only`` times, read from a real
``--collect-only`` run (CPU: the entries are collected, skipped for want of a GPU)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernel.family import families
from profiling.shape_suite import SUITE

ROOT = Path(__file__).resolve().parents[2]


def _collected(*args: str, **env: str) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("NVFP4_BENCH_")}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "profiling/benchmarks/bench_gpu.py", "--collect-only", "-q",
         "-p", "no:cacheprovider", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=600, env={**clean, **env},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return [line.split("::", 1)[1] for line in result.stdout.splitlines() if "::" in line]


@pytest.fixture(scope="module")
def default_ids():
    return _collected()


def test_the_default_run_is_the_per_shape_default_the_production_builds_and_the_peer(default_ids):
    """Per suite shape: the cuBLAS peer, and per kernel family custom_kernel(data) without a
    config (``per-shape``) and each production build; nothing else."""
    expected = [f"test_peer_cublas_bf16[{s.name}]" for s in SUITE]
    for s in SUITE:
        for fam in families():
            labels = ["per-shape"] + [c.label for c in fam.production_variants]
            expected += [f"test_kernel[{fam.name}:{label}-{s.name}]" for label in labels]
    assert default_ids == expected


def test_the_whole_matrix_on_request_and_chosen_labels():
    everything = _collected("--bench-variants=all")
    kernels = [i for i in everything if i.startswith("test_kernel[")]
    assert len(kernels) == len(SUITE) * sum(1 + len(f.declared_variants) for f in families())
    hopper = next(f for f in families() if f.name == "hopper")
    experimental = hopper.experimental_variants[0].label
    assert f"test_kernel[hopper:{experimental}-bench1]" in kernels
    chosen = _collected(f"--bench-variants=per-shape,{experimental}", NVFP4_BENCH_SHAPES="bench4,dense",
                        NVFP4_BENCH_FAMILIES="hopper")
    names = ["bench4"] + [s.name for s in SUITE if s.family == "dense"]  # the shape, then the family, in suite order
    assert len(names) >= 3
    assert chosen == [f"test_peer_cublas_bf16[{n}]" for n in names] + [
        entry for n in names for entry in (f"test_kernel[hopper:per-shape-{n}]", f"test_kernel[hopper:{experimental}-{n}]")]
    # the environment variable works where the option is not given
    assert _collected(NVFP4_BENCH_VARIANTS="all", NVFP4_BENCH_SHAPES="bench1") == \
        [i for i in everything if i.endswith("-bench1]") or i == "test_peer_cublas_bf16[bench1]"]
