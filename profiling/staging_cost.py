"""What one first call's table upload costs on this host (GPU needed), stage by stage: a pinned
host buffer from torch's caching host allocator, the non-blocking host->device copy of it, and
both, at the table block size of a problem with ``--groups`` groups (issue 13: the seen-shape
first call's native pass does exactly these two after its checks).

    python -m profiling.staging_cost [--groups 8] [--calls 2000]
"""

from __future__ import annotations

import argparse
import json
import time


def _per_call_us(fn, calls: int) -> float:
    fn()
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t) / calls * 1e6


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--groups", type=int, default=8)
    ap.add_argument("--calls", type=int, default=2000)
    args = ap.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("staging_cost: needs a CUDA device")
    # pointer table (5 pointers per group) + 4 tensor maps of 128 bytes per group, rounded up
    nbytes = args.groups * (5 * 8 + 4 * 128) + 256
    dev = torch.device("cuda")
    pinned = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    plain = torch.empty(nbytes, dtype=torch.uint8)
    out = {"groups": args.groups, "bytes": nbytes}
    out["pinned_alloc_us"] = _per_call_us(lambda: torch.empty(nbytes, dtype=torch.uint8, pin_memory=True), args.calls)
    out["device_alloc_us"] = _per_call_us(lambda: torch.empty(nbytes, dtype=torch.uint8, device=dev), args.calls)
    out["copy_pinned_us"] = _per_call_us(lambda: pinned.to(dev, non_blocking=True), args.calls)
    out["copy_pageable_us"] = _per_call_us(lambda: plain.to(dev, non_blocking=True), args.calls)
    out["alloc_and_copy_us"] = _per_call_us(
        lambda: torch.empty(nbytes, dtype=torch.uint8, pin_memory=True).to(dev, non_blocking=True), args.calls)
    torch.cuda.synchronize()
    out["alloc_and_copy_after_sync_us"] = _per_call_us(
        lambda: (torch.cuda.synchronize(), torch.empty(nbytes, dtype=torch.uint8, pin_memory=True).to(dev, non_blocking=True)),
        args.calls // 4)
    out["synchronize_us"] = _per_call_us(torch.cuda.synchronize, args.calls // 4)
    print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in out.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
