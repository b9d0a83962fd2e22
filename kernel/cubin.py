"""Compile one variant into its own dump folder and return the cubin CuTe DSL kept there.

Shared by the kernel families' ``static_build`` hooks (profiling.static_report): CuTe DSL names
cubins by kernel signature, so each variant gets a folder of its own and exactly one new cubin.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable


def compile_keeping_cubin(label: str, dump_dir: str | os.PathLike, compile_into: Callable[[Path], object]) -> tuple[str, float]:
    """Run ``compile_into(folder)``; return (cubin path, compile seconds)."""
    dump = Path(dump_dir) / label
    dump.mkdir(parents=True, exist_ok=True)
    for old in dump.glob("*.cubin"):
        old.unlink()
    start = time.perf_counter()
    compile_into(dump)
    seconds = time.perf_counter() - start
    cubins = sorted(dump.glob("*.cubin"))
    if len(cubins) != 1:
        raise RuntimeError(f"expected one new cubin in {dump}, found {[c.name for c in cubins]}")
    return str(cubins[0]), seconds
