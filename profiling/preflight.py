"""What a GPU tool needs before it starts, each missing piece as one line with the fix.

``profiling.ncu_sweep`` and ``ci.sanitize`` ask here instead of failing later with a traceback
(``FileNotFoundError: 'ncu'``). Every function returns ``None`` when all is well, else the line.
"""

from __future__ import annotations

import glob
import importlib.metadata
import os
import shutil

NSIGHT_FIX = "pip install 'nsight-python==0.9.6' (ncu 2025.3.x) or nsight-python>=1 (ncu 2026.2.1 or newer)"


def find_ncu() -> str | None:
    candidates = sorted(glob.glob("/usr/local/cuda*/bin/ncu") + glob.glob("/opt/nvidia/nsight-compute/*/ncu"))
    return shutil.which("ncu") or next((p for p in candidates if os.access(p, os.X_OK)), None)


def find_compute_sanitizer() -> str | None:
    candidates = sorted(glob.glob("/usr/local/cuda*/bin/compute-sanitizer")
                        + glob.glob("/usr/local/cuda*/compute-sanitizer/compute-sanitizer"))
    return shutil.which("compute-sanitizer") or next((p for p in candidates if os.access(p, os.X_OK)), None)


def missing_ncu() -> str | None:
    if shutil.which("ncu"):
        return None
    hint = f" (found {find_ncu()}: add its folder to PATH)" if find_ncu() else ""
    return ("Nsight Compute's ncu is not on PATH" + hint + ": install Nsight Compute (it ships with the CUDA "
            "toolkit) and put its ncu on PATH, or use --dry-run / --compile-only, which need no ncu")


def under_xdist(tool: str) -> str | None:
    """Profiling inside a pytest-xdist worker (``pytest -n``, whose other workers launch kernels
    on the GPUs meanwhile) would measure them too: the line that refuses it."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return None
    return (f"{tool} profiles with Nsight Compute and needs the GPU to itself, but this process runs in "
            f"pytest-xdist worker {worker}: run it on its own, not from pytest -n")


def missing_compute_sanitizer() -> str | None:
    if find_compute_sanitizer():
        return None
    return ("compute-sanitizer is not on PATH or under /usr/local/cuda*: install the CUDA toolkit "
            "(it ships compute-sanitizer) or put its bin folder on PATH")


def missing_gpu(what: str) -> str | None:
    from kernel.device import cuda_capability

    if cuda_capability() is not None:
        return None
    return f"no CUDA GPU on this machine: {what} needs one (run it on the GPU machine)"


def missing_nsight_python() -> str | None:
    try:
        importlib.metadata.version("nsight-python")
    except importlib.metadata.PackageNotFoundError:
        return f"nsight-python is not installed ({NSIGHT_FIX}); using ncu directly"
    return None


def missing_hopper_gpu(prog: str) -> str | None:
    """The line a Hopper GPU tool (``profiling.ablation``, ``timeline``, ``k_slope``,
    ``clock_probe``) prints and exits with when this machine cannot run the sm_90a kernel (no CUDA
    device, a CPU build of torch, or a GPU that is not sm_90); None when it can."""
    from kernel.hopper.launch import unavailable_reason

    reason = unavailable_reason()
    if reason is None:
        return None
    return (f"python -m {prog}: {reason}. It times the Hopper kernel on an sm_90 GPU; on this machine "
            "`python -m profiling.static_report` compiles the variants and reports their SASS")
