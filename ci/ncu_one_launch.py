"""One launch of a Hopper variant on a standard shape inside a CUDA profiler range, for ``ncu
--profile-from-start off`` (issue 14q: L2 / DRAM / tensor-pipe counters of the prepass variant):

    ncu --profile-from-start off --metrics M1,M2 --csv --page raw \\
        python3 -m ci.ncu_one_launch LABEL [SHAPE]

The variant is prepared on the shape's benchmark inputs (profiling.benchmarks) and launched twice
outside the range (compile, workspace, warm caches), then once inside it. ncu's kernel replay
restores device memory between passes, so the prepass counters start at zero in every pass.
"""

from __future__ import annotations

import sys


def main(argv=None) -> int:
    import torch

    from kernel import hopper
    from kernel.hopper.config import DECLARED_VARIANTS
    from profiling import floors
    from profiling.benchmarks import _support as S

    argv = sys.argv[1:] if argv is None else argv
    label, shape_name = argv[0], (argv[1] if len(argv) > 1 else "bench1")
    config = next(c for c in DECLARED_VARIANTS if c.label == label)
    data = S.device_copies(floors.get_shape(shape_name), 1)[0]
    prepared = hopper.prepare(data, config)
    for _ in range(2):
        hopper.launch(prepared)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    hopper.launch(prepared)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    print(f"ncu_one_launch: {label} on {shape_name} launched", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
