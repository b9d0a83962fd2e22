"""Host-path stage times on CPU tensors (no GPU): the fast path's probe, the seen-shape path's
stages, the full path; for before/after ratios of host-path changes (absolute times differ from
a GPU host's: there the upload is a pinned non-blocking copy, here a CPU copy).

    python -m profiling.host_cpu [--shapes bench1,bench4] [--reps 400] [--probe native|python] [--json PATH]

``probe_us``/``repeat_us`` use the native fast-path probe (kernel.native_probe; built or loaded
first), ``probe_py_us``/``repeat_py_us`` the Python one; ``probe`` says which is in use.
``refill_us``/``refill_py_us``: the repeated call after every group's A was refilled in place
(the refill untimed): a model's calling pattern, new values in the same tensors.
``first_call_us`` is a first call on new tensors of seen shapes with the native helpers
(``native_pass_us``: the seen-shape pass alone, ``prepare_seen_us``: the whole preparation,
``launch_us``: the launch, i.e. the launch arguments rebased from a fake prototype and replayed
through a no-op C function, ``store_us``: the fast-path store, each as ``prepare`` + ``launch``
+ ``store`` do them; ``lane_us``: ``run``'s lane, ``HostPipeline._run_seen``, which a first call
takes instead of those three: the native pass, the rebased arguments, the launch and the store,
without a ``Prepared``), ``first_call_py_us`` the same with the Python code alone
(``accept_us`` + ``seen_tables_us`` are what the native pass replaces, ``prepare_seen_py_us``,
``store_py_us``). A column is empty where the native module cannot be built.

The pipeline is the real :class:`kernel.host_pipeline.HostPipeline` with a CPU family double
whose fourth table is a tensor-map table from a fake encoder (so the seen path patches maps as
the Hopper TMA variants do) and whose launch is the real marshalling and replay in Python with a
no-op C entry point instead of the driver (:func:`fake_prototype`). Problems have the benchmarks' shapes,
allocated empty (values are never read): 56 tensors for bench1's 8 groups, 14 for bench4's 2.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from typing import Sequence

import numpy as np
import torch

from kernel import native_probe
from kernel.fast_path import FastPath, flatten
from kernel.host_pipeline import AuxTable, HostPipeline
from kernel.model import ModelConfig
from kernel.validation import KernelConstraints, blocked_shape, validate_problem

CONSTRAINTS = KernelConstraints(k_granularity=256, device_type="cpu")
CONFIG = ModelConfig(tile_m=128, tile_n=128, tile_k=256, max_ctas=132)


def fake_encoder(rm) -> bytes:
    """A 128-byte 'descriptor' with the address at word 1 (like the driver's) and shape bytes elsewhere."""
    words = np.arange(16, dtype=np.uint64) * np.uint64(rm.rows * 7 + rm.row_bytes * 3 + rm.box_rows)
    words[1] = np.uint64(rm.address)
    return words.tobytes()


class CpuMapHooks:
    """A family whose 'GPU' is the CPU, with a tensor-map fourth table (fake encoder)."""

    name = "cpu-bench"
    arch = "none"

    def __init__(self, encoder=fake_encoder):
        self.encoder = encoder

    def resolve(self, config):
        return config

    def constraints(self, config):
        return CONSTRAINTS

    def unavailable_reason(self):
        return None

    def max_ctas(self, config, *, dry_run):
        return config.max_ctas

    def aux_table(self, config, plan, groups, device, strict=False):
        from kernel.tensor_maps import encode_slots, slot_maps

        maps = slot_maps(plan, groups, config.tile_m, config.tile_n)
        return AuxTable(torch.from_numpy(encode_slots(maps, self.encoder)).to(device, copy=True), "uint8", 64)

    def aux_template(self, config, plan, groups):
        from kernel.tensor_maps import map_template

        return map_template(plan, groups, config.tile_m, config.tile_n, self.encoder)

    def build(self, config, num_groups, dump_dir=None, perturbation=None, ablation=None):
        return ("compiled", config, num_groups)


class _NoLaunch:
    def __init__(self, stream):
        self.stream = stream

    def launch(self):
        pass


_NOOP_C = None


def fake_prototype(prepared, handle: int, extra: int = 12):
    """Launch arguments as :class:`kernel.host_pipeline.LaunchArgs` marshals them (a packed ctypes
    array whose first four entries point at 64-bit cells holding the tables' addresses, then
    ``extra`` other entries), whose C entry point is a libc no-op (``labs``): a seen-shape
    problem's marshalling (``LaunchArgs.rebased``) and replay cost what they cost in Python, the
    driver's launch is left out."""
    import ctypes

    from kernel.host_pipeline import LaunchArgs

    global _NOOP_C
    if _NOOP_C is None:
        _NOOP_C = ctypes.CDLL(None).labs
    tables, aux = prepared.tables, prepared.aux
    addresses = [tables.sizes.data_ptr(), tables.tile_prefix.data_ptr(), tables.pointers.data_ptr(),
                 tables.pointers.data_ptr() // 64 * 64 if aux is None else aux.tensor.data_ptr()]
    cells = (ctypes.c_uint64 * 4)(*addresses)
    proto = object.__new__(LaunchArgs)
    proto._packed = (ctypes.c_void_p * (4 + extra))(*[ctypes.addressof(cells) + 8 * i for i in range(4)],
                                                  *range(1, extra + 1))
    proto._cells = cells
    proto._capi, proto._result, proto.stream, proto.workspace = _NOOP_C, None, handle, None
    proto.args = proto.exe_args = proto.adapted = proto._run = proto._keep = proto._image = None
    proto.rebasable = True
    return proto


class CpuPipeline(HostPipeline):
    """The real pipeline on the CPU: its stream is 7, a production preparation's launch
    arguments are rebased from a fake prototype (:func:`fake_prototype`: the marshalling and the
    replay in Python, no driver), any other preparation launches nothing."""

    def __init__(self, hooks=None):
        super().__init__(hooks or CpuMapHooks(), fast_path=FastPath(64, stream_id=lambda device_index: 7))

    def stream_handle(self, stream, device):
        return 7

    def marshal(self, prepared, handle):
        template = prepared.template
        if template is None:
            return _NoLaunch(handle)
        if handle not in template.launch_protos:
            template.launch_protos[handle] = fake_prototype(prepared, handle)
        return super().marshal(prepared, handle)


def cpu_problem(sizes: Sequence[Sequence[int]]):
    """Empty CPU tensors of the leaderboard layout for ``sizes`` (validated)."""
    fp4, fp8 = torch.float4_e2m1fn_x2, torch.float8_e4m3fn

    def blocked(mn, k):
        _, _, rm, _, rk, _ = blocked_shape(mn, k)
        return torch.empty((1, rm, rk, 32, 4, 4), dtype=torch.uint8).view(fp8).permute(3, 4, 1, 5, 2, 0)

    abc, sfs, blk = [], [], []
    for m, n, k, _ in sizes:
        abc.append((torch.empty((1, m, k // 2), dtype=torch.uint8).view(fp4).permute(1, 2, 0),
                    torch.empty((1, n, k // 2), dtype=torch.uint8).view(fp4).permute(1, 2, 0),
                    torch.empty((1, m, n), dtype=torch.float16).permute(1, 2, 0)))
        sfs.append((torch.empty((1, m, k // 16), dtype=fp8).permute(1, 2, 0),
                    torch.empty((1, n, k // 16), dtype=fp8).permute(1, 2, 0)))
        blk.append((blocked(m, k), blocked(n, k)))
    data = (abc, sfs, blk, [tuple(s) for s in sizes])
    validate_problem(data, CONSTRAINTS)
    return data


def realias(data):
    """New tensor objects (own version counters) on the same storage: a 'new problem' for every
    cache keyed by identity, without allocating the operands again."""
    def new(t):
        return torch.empty(0, dtype=t.dtype).set_(t.untyped_storage(), t.storage_offset(), t.shape, t.stride())

    abc, sfs, blk, sizes = data
    return ([tuple(map(new, e)) for e in abc], [tuple(map(new, e)) for e in sfs],
            [tuple(map(new, e)) for e in blk], list(sizes))


class _helpers:
    """With ``native`` False: the Python code alone (the fast path's probe and store, the
    template key, the seen-shape path), restored on exit."""

    def __init__(self, pipe, native: bool):
        self.pipe, self.native = pipe, native

    def __enter__(self):
        self.saved = (self.pipe.native_seen, self.pipe.fast_path.native, native_probe.SIZES_KEY)
        if not self.native:
            self.pipe.native_seen = self.pipe.fast_path.native = False
            native_probe.SIZES_KEY = None

    def __exit__(self, *exc):
        self.pipe.native_seen, self.pipe.fast_path.native, native_probe.SIZES_KEY = self.saved


def _median_us(fn, reps: int, setup=None) -> float:
    times = []
    for i in range(reps):
        arg = setup(i) if setup is not None else None
        t0 = time.perf_counter()
        fn(arg)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def measure(name: str, reps: int) -> dict:
    from profiling import floors

    sizes = floors.get_shape(name).problem_sizes()
    base = cpu_problem(sizes)
    pipe = CpuPipeline()
    pipe.run(base, CONFIG)  # learns the template
    data = realias(base)
    pipe.run(data, CONFIG)  # stores the fast-path entry
    row = {"shape": name, "groups": len(sizes), "tensors": len(flatten(data))}

    # the repeated call and the probe alone (a hit) with each probe: the native one
    # (kernel.native_probe) where it is loaded, the Python one always
    fp = pipe.fast_path
    # a model's calling pattern: the same tensors, every group's A refilled in place before each
    # call (untimed; values only, no metadata changes)
    sources = [torch.randint(0, 256, a.shape, dtype=torch.uint8) for a, _, _ in data[0]]

    def refill(i):
        for (a, _, _), src in zip(data[0], sources):
            a.view(torch.uint8).copy_(src)

    for suffix, native in (("", True), ("_py", False)):
        fp.native = native
        assert fp.probe(data, CONFIG)[0] is not None
        if native and native_probe.PROBE is None:
            row["repeat_us"] = row["probe_us"] = row["refill_us"] = None
            continue
        row[f"repeat{suffix}_us"] = _median_us(lambda _: pipe.run(data, CONFIG), reps)
        row[f"probe{suffix}_us"] = _median_us(lambda _: fp.probe(data, CONFIG), reps)
        row[f"refill{suffix}_us"] = _median_us(lambda _: pipe.run(data, CONFIG), reps, refill)
    fp.native = True
    row["probe"] = native_probe.describe()

    # a first call on new tensors of seen shapes, and its stages, with the native helpers
    # (kernel.native_probe: the seen-shape pass, the template key, the fast-path weak references)
    # and with the Python code alone (suffix _py)
    template = pipe.templates.find(CONFIG, data[3])
    dev = torch.device("cpu")
    for suffix, native in (("_py", False), ("", True)):
        if native and native_probe.SEEN_TABLES is None:
            for k in ("native_pass_us", "prepare_seen_us", "launch_us", "store_us", "lane_us", "first_call_us"):
                row[k] = None
            continue
        fresh = flats = prepared = keys = None
        gc.collect()
        with _helpers(pipe, native):
            fresh = [realias(base) for _ in range(reps)]
            flats = [flatten(d) for d in fresh]
            if native:
                from kernel.host_pipeline import _native_state

                state = _native_state(template)
                row["native_pass_us"] = _median_us(lambda i: native_probe.SEEN_TABLES(state, fresh[i], flats[i]),
                                                   reps, lambda i: i)
            else:
                row["accept_us"] = _median_us(lambda i: template.accept(fresh[i], flats[i]), reps, lambda i: i)
                pointers = [template.accept(fresh[i], flats[i]) for i in range(reps)]
                row["seen_tables_us"] = _median_us(lambda i: pipe.seen_tables(template, pointers[i], dev), reps,
                                                   lambda i: i)
            prepared = [None] * reps

            def prepare(i):
                prepared[i] = pipe.prepare(fresh[i], CONFIG, tensors=flats[i])

            row[f"prepare_seen{suffix}_us"] = _median_us(prepare, reps, lambda i: i)
            # the launch of a seen-shape preparation: its arguments rebased from the stream's
            # prototype (fake_prototype) and replayed through a no-op C entry point
            row[f"launch{suffix}_us"] = _median_us(lambda i: pipe.launch(prepared[i]), reps, lambda i: i)
            keys = [fp.probe(fresh[i], CONFIG)[2] for i in range(reps)]
            row[f"store{suffix}_us"] = _median_us(
                lambda i: fp.store(fresh[i], CONFIG, None, prepared[i], tensors=flats[i], key=keys[i]), reps,
                lambda i: i)
            if native:  # run()'s lane alone (HostPipeline._run_seen: what a first call does after the probe)
                fresh = [realias(base) for _ in range(reps)]
                probed = [fp.probe(fresh[i], CONFIG) for i in range(reps)]
                lanes = pipe.lane_calls
                row["lane_us"] = _median_us(lambda i: pipe._run_seen(fresh[i], CONFIG, probed[i][1], probed[i][2]),
                                            reps, lambda i: i)
                assert pipe.lane_calls == lanes + reps, "a first call missed run()'s lane"
                probed = None
            fresh = [realias(base) for _ in range(reps)]
            accepted = template.stats["accepted"]
            row[f"first_call{suffix}_us"] = _median_us(lambda i: pipe.run(fresh[i], CONFIG), reps, lambda i: i)
            assert template.stats["accepted"] == accepted + reps, "a first call missed the seen path"
    fresh = None
    enc = [0]

    def counting(rm):
        enc[0] += 1
        return fake_encoder(rm)

    def full(_):
        p = CpuPipeline(CpuMapHooks(counting))
        p.run(realias(base), CONFIG)

    row["full_first_call_us"] = _median_us(full, max(10, reps // 20))
    enc[0] = 0
    full(None)
    row["full_encodes"] = enc[0]
    row["slots"] = len(sizes)
    return row


COLUMNS = ("shape", "tensors", "probe", "repeat_us", "repeat_py_us", "refill_us", "refill_py_us", "probe_us",
           "probe_py_us",
           "first_call_us", "first_call_py_us", "native_pass_us", "accept_us", "seen_tables_us", "prepare_seen_us",
           "prepare_seen_py_us", "launch_us", "store_us", "store_py_us", "lane_us", "full_first_call_us", "full_encodes")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m profiling.host_cpu", description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", default="bench1,bench4")
    p.add_argument("--reps", type=int, default=400)
    p.add_argument("--json")
    p.add_argument("--probe", choices=("native", "python"), default="native",
                   help="native (default): build or load kernel.native_probe first (its columns stay empty "
                        "where it cannot be built); python: the Python probe only")
    args = p.parse_args(argv)
    if args.probe == "native":
        native_probe.build_native()
    rows = [measure(s.strip(), args.reps) for s in args.shapes.split(",")]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for r in rows:
        print("| " + " | ".join(f"{r.get(c):.2f}" if isinstance(r.get(c), float) else str(r.get(c)) for c in COLUMNS)
              + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
