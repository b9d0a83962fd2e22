"""Planted slow compile and launch hang (CPU), shaped like a kernel family's entry point:
``custom_kernel`` is ``functools.partial(launch, config=...)`` and the module defines
``compile_for(config, num_groups)``, so an isolation worker compiles it before it launches (the
compile phase, then the run phase: properties.isolation), as it does the CuTe DSL kernels.

* ``compile_for`` takes ``COMPILE_S`` seconds the first time a process compiles a group count (a
  JIT compile), and never returns for ``HANG_COMPILE_GROUPS`` groups;
* the launch never returns when some group has an odd N (a kernel that deadlocks on its first
  launch); otherwise it returns the CPU model's correct result.

Run it only isolated (``--isolate=always``, with time limits)."""

import functools
import threading
import time

from kernel import model
from kernel.validation import validate_problem
from properties.subjects import SizeLimits

CONSTRAINTS = model.constraints()
LIMITS = SizeLimits(max_groups=2, max_m=70, max_n=70, max_k_blocks=2)
COMPILE_S = 3.0
HANG_COMPILE_GROUPS = 3
_compiled: set[int] = set()


def hangs_on(sizes) -> bool:
    return any(n % 2 for _, n, _, _ in sizes)


def compile_for(config, num_groups: int):
    if num_groups == HANG_COMPILE_GROUPS:
        threading.Event().wait()  # nobody sets it
    if num_groups not in _compiled:
        time.sleep(COMPILE_S)
        _compiled.add(num_groups)
    return config


def launch(data, config):
    groups = validate_problem(data, CONSTRAINTS)
    compile_for(config, len(groups))  # the compile cache the launch reads (filled in advance when isolated)
    if hangs_on([g.size for g in groups]):
        threading.Event().wait()
    return model.custom_kernel(data)


custom_kernel = functools.partial(launch, config="slow-compile")
