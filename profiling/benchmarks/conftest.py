"""pytest-benchmark hooks for profiling/benchmarks.

* Machine information (GPU, compute capability, driver, torch, CUDA, nvidia-cutlass-dsl, the
  ceilings measured in the pytest session) goes into every saved run under ``machine_info["nvfp4"]``.
* ``--bench-variants=default|all|LABEL,...``: which entries bench_gpu.py times (see its
  docstring; default: the per-shape default and the production builds, with the peer). The
  option exists when pytest is given this folder or a file in it; NVFP4_BENCH_VARIANTS works
  from anywhere.
* Outside ``--benchmark-only`` (the plain ``pytest`` CI run) the benchmarks here are skipped
  with a reason, unless ``--benchmark-enable`` or ``--benchmark-disable`` (run once, untimed: a
  smoke test) is given explicitly.
"""

from __future__ import annotations

from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent


def pytest_addoption(parser):
    parser.getgroup("nvfp4 benchmarks").addoption(
        "--bench-variants", default=None,
        help="bench_gpu.py entries: default (custom_kernel(data) without a config, the production builds, the "
        "cuBLAS peer), all (every declared variant too), or LABEL,LABEL (per-shape: the per-shape default)",
    )


@pytest.fixture(scope="session")
def ceilings():
    """Bandwidth and tensor-rate ceilings: measured once per pytest run on a GPU (or the reference H200 ones)."""
    from profiling.benchmarks._support import run_ceilings

    return run_ceilings()


def pytest_benchmark_update_machine_info(config, machine_info):
    from profiling.benchmarks._support import machine_info as nvfp4_machine_info

    machine_info["nvfp4"] = nvfp4_machine_info()


def _explicitly_benchmarking(config) -> bool:
    opt = lambda name: bool(config.getoption(name, default=False))  # noqa: E731
    return opt("benchmark_only") or opt("benchmark_enable") or opt("benchmark_disable")


def pytest_collection_modifyitems(config, items):
    if _explicitly_benchmarking(config):
        return
    skip = pytest.mark.skip(
        reason="benchmark: runs under `pytest --benchmark-only` (or --benchmark-disable for one "
        "untimed smoke run); see docs/benchmarks.md"
    )
    for item in items:
        if _HERE in Path(str(item.fspath)).resolve().parents and "benchmark" in getattr(item, "fixturenames", ()):
            item.add_marker(skip)
