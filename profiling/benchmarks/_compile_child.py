"""Compile one declared variant of a kernel family in a fresh process, print timings as JSON.

    CUTE_DSL_ARCH=sm_90a python -m profiling.benchmarks._compile_child hopper LABEL NUM_GROUPS

CUTE_DSL_ARCH must be set before ``import cutlass``, hence a process per architecture.
"""

import json
import sys
import time


def main(argv=None) -> int:
    family, label, num_groups = (argv or sys.argv[1:])[:3]
    t0 = time.perf_counter()
    from profiling.benchmarks._support import load_family

    module, reason = load_family(family)
    if module is None:
        print(json.dumps({"error": reason}))
        return 2
    t1 = time.perf_counter()
    configs = [c for c in module.DECLARED_VARIANTS if c.label == label]
    if not configs:
        print(json.dumps({"error": f"no variant {label!r} in {family}"}))
        return 2
    module.compile_for(configs[0], int(num_groups))
    t2 = time.perf_counter()
    print(json.dumps({"import_s": t1 - t0, "compile_s": t2 - t1, "label": label}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
