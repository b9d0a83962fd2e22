"""Time the exact reference (and the bound) on the four benchmark shapes (docs/benchmarks.md).

    python -m oracle.speed [--device cuda] [--distribution uniform] [--bound]

Prints one row per shape: seconds for reference(data), and with --bound for expected_outputs
(which also computes the bound). Inputs are built before the clock starts.
"""

import argparse
import time

import torch

from .bounds import expected_outputs
from .inputs import make_inputs
from .leaderboard import BENCHMARK_CASES
from .reference import reference

# name: (M per group, N, K), the leaderboard's four benchmarks (each has one N and one K)
BENCHMARK_SHAPES = {f"bench{i}": (case.m, case.n[0], case.k[0]) for i, case in enumerate(BENCHMARK_CASES, 1)}


def benchmark_problem_sizes(name: str) -> list[tuple[int, int, int, int]]:
    ms, n, k = BENCHMARK_SHAPES[name]
    return [(m, n, k, 1) for m in ms]


def _timed(fn, data, device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    fn(data)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--distribution", default="uniform")
    parser.add_argument("--bound", action="store_true", help="also time expected_outputs")
    args = parser.parse_args()
    device = torch.device(args.device)
    print(f"device {device} ({torch.cuda.get_device_name(device) if device.type == 'cuda' else 'cpu'}"
          f", {torch.get_num_threads()} threads), distribution {args.distribution}")
    print(f"{'shape':8} {'reference s':>12}" + (f" {'ref+bound s':>12}" if args.bound else ""))
    total = 0.0
    for name in BENCHMARK_SHAPES:
        data = make_inputs(benchmark_problem_sizes(name), seed=0,
                           distribution=args.distribution, device=device)
        if device.type == "cuda":
            reference(data)                    # warm up kernels / allocator once
        seconds = _timed(reference, data, device)
        total += seconds
        row = f"{name:8} {seconds:12.3f}"
        if args.bound:
            row += f" {_timed(expected_outputs, data, device):12.3f}"
        print(row)
    print(f"{'total':8} {total:12.3f}")


if __name__ == "__main__":
    main()
