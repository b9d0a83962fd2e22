"""Sub-stage host times of the seen-shape path on a GPU (what ``profiling.host_overhead``'s
``first_*`` columns are made of), and the tensor-map address word as the driver encodes it.

    python -m profiling.seen_path_detail [--shape bench1] [--variant LABEL]
"""

from __future__ import annotations

import argparse
import functools
import operator
import statistics
import sys
import time
from itertools import chain


def main(argv=None) -> int:
    import numpy as np
    import torch

    import oracle
    from kernel import seen_shapes as ss
    from kernel.family import get_family
    from kernel.fast_path import flatten
    from kernel.host_pipeline import LaunchArgs
    from kernel.tensor_maps import RowsMap, _PROBES, encode
    from profiling import floors

    p = argparse.ArgumentParser()
    p.add_argument("--shape", default="bench1")
    p.add_argument("--variant")
    args = p.parse_args(argv)
    fam = get_family("hopper")
    config = fam.find(args.variant) if args.variant else fam.production_variants[1]
    data = oracle.make_inputs(floors.get_shape(args.shape).problem_sizes(), 1, device="cuda")
    fam.custom_kernel(data, config)
    torch.cuda.synchronize()
    pipe = fam.pipeline
    tpl = pipe.templates.find(config, data[3])
    print("template aux:", type(tpl.aux).__name__, "word:", getattr(tpl.aux, "word", None))
    rm = RowsMap(data[0][0][0].data_ptr(), 128, 3584, 128)
    words = [np.frombuffer(encode(RowsMap(rm.address ^ q, 128, 3584, 128)), dtype=np.uint64) for q in (0, *_PROBES)]
    for i in range(16):
        vals = [int(w[i]) for w in words]
        if len(set(vals)) > 1:
            print(f"word {i}: " + " ".join(hex(v) for v in vals), "addresses:", [hex(rm.address ^ q) for q in (0, *_PROBES)])
    clones = [oracle.clone_data(data) for _ in range(30)]
    ts = [flatten(c) for c in clones]
    res: dict[str, list] = {}

    def t(name, fn, reps=30):
        out = None
        for i in range(reps):
            t0 = time.perf_counter()
            out = fn(i)
            res.setdefault(name, []).append((time.perf_counter() - t0) * 1e6)
        return out

    T = torch.Tensor
    t("lens", lambda i: list(map(len, chain(clones[i][0], clones[i][1], clones[i][2]))))
    t("dtype", lambda i: list(map(ss._DTYPE, ts[i])))
    t("size", lambda i: list(map(T.size, ts[i])))
    t("stride", lambda i: list(map(T.stride, ts[i])))
    t("device", lambda i: list(map(ss._DEVICE, ts[i])))
    t("get_device", lambda i: list(map(T.get_device, ts[i])))
    t("data_ptr", lambda i: list(map(T.data_ptr, ts[i])))
    t("version", lambda i: list(map(operator.attrgetter("_version"), ts[i])))
    t("ids", lambda i: tuple(map(id, ts[i])))
    ptrs = [list(map(T.data_ptr, x)) for x in ts]
    starts = [list(map(p.__getitem__, tpl.nonempty)) for p in ptrs]
    t("align", lambda i: functools.reduce(operator.or_, starts[i]) & 15)
    t("alias", lambda i: ss._outputs_disjoint(starts[i], tpl.spans))
    t("accept", lambda i: tpl.accept(clones[i], ts[i]))
    print("tensor guard:", tpl.guard is not None)
    if tpl.guard is not None:
        t("guard_check", lambda i: tpl.guard.check(*ts[i]))
    t("signature_compare", lambda i: tpl.signature_matches(ts[i]))
    t("ptr_fromiter", lambda i: np.fromiter(map(T.data_ptr, ts[i]), dtype=np.int64, count=len(ts[i])))
    arrs = [np.array(p, dtype=np.int64) for p in ptrs]
    t("overlap_np", lambda i: tpl.overlap.ok(arrs[i]))
    t("np_gather", lambda i: np.array(ptrs[i], dtype=np.int64)[tpl.pointer_index])
    t("pinned_alloc", lambda i: torch.empty(4096, dtype=torch.uint8, pin_memory=True))
    t("pageable_alloc", lambda i: torch.empty(4096, dtype=torch.uint8))
    hosts = [torch.empty(4096, dtype=torch.uint8, pin_memory=True) for _ in range(30)]
    if tpl.aux is not None:
        flats = [np.array(p, dtype=np.int64) for p in ptrs]
        t("aux_fill", lambda i: tpl.aux.fill(hosts[i].numpy()[: tpl.aux.nbytes], flats[i]))
    t("h2d_pinned", lambda i: hosts[i].to("cuda", non_blocking=True))
    pageable = [torch.empty(4096, dtype=torch.uint8) for _ in range(30)]
    t("h2d_pageable_nb", lambda i: pageable[i].to("cuda", non_blocking=True))
    t("h2d_pageable_sync", lambda i: pageable[i].to("cuda"))
    t("dev_alloc", lambda i: torch.empty(4096, dtype=torch.uint8, device="cuda"))
    torch.cuda.synchronize()
    dev = tpl.sizes_table.device
    tabs = [pipe.seen_tables(tpl, ptrs[i], dev) for i in range(30)]
    torch.cuda.synchronize()
    t("seen_tables", lambda i: pipe.seen_tables(tpl, ptrs[i], dev))
    torch.cuda.synchronize()
    handle = pipe.stream_handle(None, dev)
    t("stream_handle", lambda i: pipe.stream_handle(None, dev))
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_ptr

    t("make_ptr", lambda i: make_ptr(cutlass.Int64, 4096 * (i + 1), cute.AddressSpace.gmem, assumed_align=16))
    t("Int32", lambda i: cutlass.Int32(132))
    la = t("LaunchArgs", lambda i: LaunchArgs(tpl.compiled, tabs[i][0], tabs[i][1], tpl.plan.num_ctas, handle))
    a0 = la.args
    t("gen_exec_args", lambda i: tpl.compiled.generate_execution_args(*a0))
    ea, _ = tpl.compiled.generate_execution_args(*a0)
    import ctypes
    print("exe_args:", [type(x).__name__ for x in ea])
    print("pointer values at exe_args:", [hex(ctypes.c_uint64.from_address(x if isinstance(x, int) else x.value).value) for x in ea[:4]],
          "tables:", hex(tabs[-1][0].sizes.data_ptr()), hex(tabs[-1][0].tile_prefix.data_ptr()), hex(tabs[-1][0].pointers.data_ptr()),
          hex(tabs[-1][1].tensor.data_ptr()) if tabs[-1][1] is not None else None)
    torch.cuda.synchronize()
    # as profiling.host_overhead measures a first call: new tensors cloned, then synchronized
    cold: dict[str, list] = {}
    for i in range(20):
        c = oracle.clone_data(data)
        torch.cuda.synchronize()
        p_ = list(map(T.data_ptr, flatten(c)))
        marks = [time.perf_counter()]
        flat = np.array(p_, dtype=np.int64)
        sp = flat[tpl.pointer_index]
        marks.append(time.perf_counter())
        host = pipe.host_buffer(4096, dev)
        marks.append(time.perf_counter())
        view = host.numpy()
        view[: sp.nbytes] = sp.reshape(-1).view(np.uint8)
        if tpl.aux is not None:
            tpl.aux.fill(view[512: 512 + tpl.aux.nbytes], flat)
        marks.append(time.perf_counter())
        stored, _ = pipe.upload(host, dev)
        marks.append(time.perf_counter())
        stored[: sp.nbytes].view(torch.int64).reshape(sp.shape)
        stored[512: 512 + (tpl.aux.nbytes if tpl.aux else 0)]
        marks.append(time.perf_counter())
        for name, a, b in zip(("gather", "pinned", "fill", "upload", "views"), marks, marks[1:]):
            cold.setdefault("cold_" + name, []).append((b - a) * 1e6)
    res.update(cold)
    for k, v in res.items():
        print(f"{k:20s} median {statistics.median(v):8.2f} us   min {min(v):8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
