"""One launch of a Hopper variant per standard shape inside a CUDA profiler range, for ``ncu
--profile-from-start off`` (L2 / DRAM / tensor-pipe counters, stall reasons):

    ncu --profile-from-start off --metrics M1,M2 --csv --page raw \\
        python3 -m ci.ncu_one_launch LABEL[~ablate-PART] [SHAPE ...]

The variant is prepared on each shape's benchmark inputs (profiling.benchmarks) and launched
twice outside the range (compile, workspace, warm caches), then once inside it; the shapes are
profiled in the order given (default bench1), one kernel each (a prepass variant's phase 1 runs
inside the same kernel). ncu's kernel replay restores device memory between passes, so the
prepass counters start at zero in every pass. ``LABEL~ablate-PART`` profiles the variant's
ablated build (kernel.hopper.ablation; profiling only: its results are wrong by design). Refused
(exit 2) inside a pytest-xdist worker, whose neighbours may share the GPU being profiled.
"""

from __future__ import annotations

import sys


def main(argv=None) -> int:
    from profiling.preflight import under_xdist

    refused = under_xdist("ci.ncu_one_launch")
    if refused:
        print(f"error: {refused}", file=sys.stderr)
        return 2
    import torch

    from kernel import hopper
    from kernel.hopper.variants import DECLARED_VARIANTS
    from profiling import floors
    from profiling.benchmarks import _support as S

    argv = sys.argv[1:] if argv is None else argv
    label, shape_names = argv[0], (argv[1:] or ["bench1"])
    ablation = None
    if "~ablate-" in label:
        from kernel.hopper.ablation import Ablation

        label, part = label.split("~ablate-", 1)
        ablation = Ablation(part)
    config = next(c for c in DECLARED_VARIANTS if c.label == label)
    for shape_name in shape_names:
        data = S.device_copies(floors.get_shape(shape_name), 1)[0]
        prepared = hopper.prepare(data, config, ablation=ablation)
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
