"""What one first call's table upload costs on this host (GPU needed), stage by stage: a pinned
host buffer from torch's caching host allocator, the non-blocking host->device copy of it, and
both, at the table block size of a problem with ``--groups`` groups (the upload of the seen-shape
first call's Python path, and of its native pass with ``NVFP4_DRIVER_COPY=0``); next to them the
upload the native pass makes by default: a device
block from torch's caching allocator and the CUDA driver's ``cuMemcpyHtoDAsync_v2`` from a reused
pageable buffer on the current stream (``driver_*``; called here through ctypes, which adds the
``ctypes_call_us`` of a trivial driver call, ``cuCtxGetCurrent``, that the C++ pass does not pay).
The ``*_after_sync_us`` figures include a ``torch.cuda.synchronize()`` before every call (the state
every first call is measured in); ``synchronize_us`` is that alone, to subtract. The
``*_busy_stream_us`` figures are taken behind a ~25 ms kernel: far below that, the copy did not
wait for the stream.

    python -m profiling.staging_cost [--groups 8] [--calls 2000]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import time


def _per_call_us(fn, calls: int) -> float:
    fn()
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t) / calls * 1e6


def driver_costs(torch, dev, nbytes: int, calls: int) -> dict:
    """The driver copy's figures (``driver_*``), or ``driver_error`` where libcuda or its symbols
    are missing."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        copy = cuda.cuMemcpyHtoDAsync_v2
        current = cuda.cuCtxGetCurrent
    except (OSError, AttributeError) as err:
        return {"driver_error": f"{type(err).__name__}: {err}"}
    copy.argtypes = [ctypes.c_ulonglong, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    copy.restype = ctypes.c_int
    current.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    current.restype = ctypes.c_int
    source = ctypes.create_string_buffer(nbytes)  # pageable, reused (what the native pass does)
    src = ctypes.addressof(source)
    target = torch.empty(nbytes, dtype=torch.uint8, device=dev)
    dst = target.data_ptr()
    context = ctypes.c_void_p()
    raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    index = dev.index if dev.index is not None else torch.cuda.current_device()
    stream = lambda: raw_stream(index) if raw_stream is not None else torch.cuda.current_stream(dev).cuda_stream  # noqa: E731

    def driver_copy(to: int) -> None:
        rc = copy(to, src, nbytes, stream())
        if rc != 0:
            raise RuntimeError(f"cuMemcpyHtoDAsync_v2 returned CUresult {rc}")

    def alloc_and_copy() -> None:
        block = torch.empty(nbytes, dtype=torch.uint8, device=dev)
        driver_copy(block.data_ptr())

    torch.cuda.synchronize()
    out = {"ctypes_call_us": _per_call_us(lambda: current(ctypes.byref(context)), calls)}
    out["driver_copy_pageable_us"] = _per_call_us(lambda: driver_copy(dst), calls)
    out["driver_alloc_and_copy_us"] = _per_call_us(alloc_and_copy, calls)
    torch.cuda.synchronize()
    out["driver_alloc_and_copy_after_sync_us"] = _per_call_us(
        lambda: (torch.cuda.synchronize(), alloc_and_copy()), calls // 4)
    # behind a busy stream (a ~25 ms kernel queued first): a call that took about that long would
    # say the driver waits for the stream to stage pageable memory ("may synchronize with the
    # stream"), which the pinned torch copy never does; then the first calls of a pipelined caller
    # would stall on the GPU
    for name, fn in (("driver_alloc_and_copy_busy_stream_us", alloc_and_copy),
                     ("alloc_and_copy_busy_stream_us",
                      lambda: torch.empty(nbytes, dtype=torch.uint8, pin_memory=True).to(dev, non_blocking=True))):
        torch.cuda.synchronize()
        torch.cuda._sleep(50_000_000)
        out[name] = _per_call_us(fn, 20)
        torch.cuda.synchronize()
    torch.cuda.synchronize()
    # the bytes arrive: a pattern through the same call, read back
    source.raw = bytes(range(256)) * (nbytes // 256) + bytes(nbytes % 256)
    driver_copy(dst)
    torch.cuda.synchronize()
    if bytes(target.cpu().numpy()) != source.raw:
        raise AssertionError("the driver copy did not deliver the source bytes")
    return out


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
    out.update(driver_costs(torch, dev, nbytes, args.calls))
    print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in out.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
