"""Host time of one ``custom_kernel(data)`` call, and what the fast path saves (GPU needed).

    python -m profiling.host_overhead [--family hopper] [--variant LABEL] [--shapes bench1,bench4]
                                      [--calls 300] [--probe native|python] [--json PATH]

Per shape set, on the family's second production variant by default (its only one where it has one):

* ``repeat_us``: host time per repeated call with the same tensors (eager loops without
  synchronization inside, ``time.perf_counter`` around them; the lower of a ``--calls`` loop and
  short loops that never fill the launch queue): the fast path;
* ``refill_us``: host time per call when every group's A is refilled in place (a device copy,
  untimed) before each call, a model's calling pattern: the fast path after one metadata
  comparison (``FastPathStats.rechecked``); ``refill_hits``: how many of its 100 timed calls hit
  the fast path; ``refill_py_us``: the same with the Python probe;
* ``full_us``: the same loop with the fast path and the shape templates cleared before every
  call (full validation, plan, table lookup, marshalling): what every call cost without them;
  ``seen_us``: the fast path cleared, the templates kept (the seen-shape path, same tensors);
* ``probe``: which fast-path probe the rows used (``native``: kernel.native_probe, built or loaded
  before measuring; else ``python (why)``); ``repeat_py_us``: ``repeat_us`` again with the Python
  probe; ``probe_us`` and ``probe_py_us``: the probe alone (``FastPath.probe``, a hit), each way;
* ``first_call_us``: the first call with new tensors of already seen shapes (compile excluded:
  the variant is compiled and warm), the median over fresh copies, with the native helpers of
  kernel.native_probe where loaded (the seen-shape pass: address checks, pointer table and patched
  tensor maps in one C++ call, one copy: see ``upload``); ``first_call_py_us``: the
  same with the Python code alone. ``first_*_us``: its stages on the seen-shape path
  (kernel.seen_shapes): ``first_native_pass_us`` the native pass alone, ``first_address_checks_py_us``
  and ``first_tables_py_us`` the two Python stages it replaces, ``first_prepare_seen[_py]_us``
  the whole preparation, ``first_marshal_us``, ``first_launch_us``, ``first_relaunch_us`` (the
  same arguments launched again right after: what the first launch pays beyond a replay),
  ``first_store[_py]_us`` (the fast-path entry), ``first_lane_us`` (``run``'s lane for these
  calls as a whole: ``HostPipeline._run_seen``, i.e. the native pass, the rebased arguments, the
  launch and the store, without a ``Prepared``), and what full validation would have cost;
  ``first_call_lane``: how many of the first calls (warm-up included) took that lane;
  ``upload``: the native pass's table upload (``kernel.native_probe.driver_copy()``: the CUDA
  driver's copy from a reused pageable buffer, or torch's copy from a fresh pinned one, with
  counts); ``first_call_torch_copy_us`` and ``first_native_pass_torch_copy_us``: the first call
  and the native pass again with the driver copy turned off (same process), where it was on;
* ``call_compiled_us``: calling the compiled CuTe DSL function the ordinary way,
  ``compiled(*args)``, against ``replay_us``, replaying the marshalled arguments
  (``run_compiled_program``): the cost the fast path removes from the launch itself;
* ``eager_us`` and ``graph_us``: device-inclusive time per call of an eager loop (CUDA events
  around ``--calls`` calls) and of a CUDA-graph replay of the same calls; ``eager/graph`` says how
  much of an eager call is host overhead the GPU waits for.

Prints a markdown table last; ``--json`` keeps the rows.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Sequence


# first calls on new tensors of seen shapes: FIRST_WARMUP untimed, then FIRST_SAMPLES timed, each
# after a synchronize (how a caller that times each call meets it); the median and the 90th
# percentile are reported
FIRST_WARMUP = 4
FIRST_SAMPLES = 24


def _per_call_us(fn, calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls * 1e6


def measure(family_name: str, label: str | None, shape_name: str, calls: int, native: bool = True) -> dict:
    import torch

    import oracle
    from kernel import native_probe
    from kernel.family import get_family
    from profiling import floors

    family = get_family(family_name)
    config = family.find(label) if label else family.production_variants[min(1, len(family.production_variants) - 1)]
    pipeline = family.pipeline
    pipeline.fast_path.native = native
    shape = floors.get_shape(shape_name)
    data = oracle.make_inputs(shape.problem_sizes(), 1111, distribution="uniform", device="cuda")
    fresh = [oracle.clone_data(data) for _ in range(FIRST_WARMUP + FIRST_SAMPLES)]
    run = lambda d=data: family.custom_kernel(d, config)  # noqa: E731
    run()  # compile + first fast-path store
    torch.cuda.synchronize()

    # correctness of what the fast path launches: poison, replay, compare with the oracle. The
    # poison goes through a second tensor on c's storage, so c's version counter stays and the
    # call hits on the counters alone (as it does on builds whose fast path missed after any
    # in-place write: the tool measures those too); refill_us below writes in place
    for _, _, c in data[0]:
        alias = torch.empty(0, dtype=c.dtype, device=c.device).set_(c.untyped_storage(), c.storage_offset(),
                                                                     c.shape, c.stride())
        alias.fill_(float("nan"))
    hits_before = pipeline.fast_path.stats.hits
    outs = run()
    torch.cuda.synchronize()
    assert pipeline.fast_path.stats.hits == hits_before + 1, "the repeated call did not hit the fast path"
    expected = oracle.expected_outputs(data)
    report = oracle.compare(outs, [e.reference for e in expected], [e.bound for e in expected])
    if not report.ok:
        raise AssertionError(f"fast-path launch is wrong on {shape_name}: {report}")

    for _ in range(20):
        run()
    torch.cuda.synchronize()
    repeat_us = statistics.median(_per_call_us(run, calls) for _ in range(5))
    torch.cuda.synchronize()

    def full():
        pipeline.fast_path.clear()
        pipeline.templates.clear()
        run()

    def seen():
        pipeline.fast_path.clear()
        run()

    full_us = statistics.median(_per_call_us(full, max(20, calls // 10)) for _ in range(3))
    torch.cuda.synchronize()
    seen_us = statistics.median(_per_call_us(seen, max(20, calls // 10)) for _ in range(3))
    torch.cuda.synchronize()

    # first calls on new tensors of seen shapes: with the native helpers (kernel.native_probe:
    # the seen-shape pass, template key, weak references) where loaded, then the Python code alone
    fresh_py = [oracle.clone_data(data) for _ in range(FIRST_WARMUP + FIRST_SAMPLES)]
    # the native pass once more with torch's pinned copy instead of the driver copy
    # (NVFP4_DRIVER_COPY=0 in one process), where the module has the driver copy and it is on
    upload = native_probe.driver_copy() if native else None
    both_uploads = upload is not None and upload["enabled"]
    fresh_tc = [oracle.clone_data(data) for _ in range(FIRST_WARMUP + FIRST_SAMPLES)] if both_uploads else []
    firsts = {}
    for suffix, batch, use_native in (("", fresh, native), ("_torch_copy", fresh_tc, native), ("_py", fresh_py, False)):
        if not batch:
            firsts[suffix], firsts[f"lane{suffix}"] = None, None
            continue
        for d in batch:  # poison: the check below sees whether the seen-shape launch wrote every C
            for _, _, c in d[0]:
                c.fill_(float("nan"))
        accepted_before = sum(t.stats["accepted"] for t in pipeline.templates._entries.values())
        lane_before = pipeline.lane_calls
        times = []
        with python_only(pipeline, not use_native):
            if suffix == "_torch_copy":
                native_probe.driver_copy(False)
            try:
                for d in batch:
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    family.custom_kernel(d, config)
                    times.append((time.perf_counter() - t0) * 1e6)
            finally:
                if suffix == "_torch_copy":
                    native_probe.driver_copy(True)
        torch.cuda.synchronize()
        timed = sorted(times[FIRST_WARMUP:])  # the first few warm the path's own caches (code, allocator blocks)
        firsts[suffix] = statistics.median(timed)
        firsts[f"p90{suffix}"] = timed[int(0.9 * (len(timed) - 1))]
        firsts[f"lane{suffix}"] = pipeline.lane_calls - lane_before
        accepted = sum(t.stats["accepted"] for t in pipeline.templates._entries.values()) - accepted_before
        if accepted != len(batch):
            raise AssertionError(f"{accepted} of {len(batch)} first calls took the seen-shape path on {shape_name}")
        expected = oracle.expected_outputs(batch[-1])
        report = oracle.compare([abc[2] for abc in batch[-1][0]], [e.reference for e in expected],
                                [e.bound for e in expected])
        if not report.ok:
            raise AssertionError(f"seen-shape launch{' (Python path)' if suffix else ''} is wrong on {shape_name}: "
                                 f"{report}")

    stages = first_call_stages(family, config, fresh[:8], native)
    stages.update({f"{k}_py": v for k, v in first_call_stages(family, config, fresh_py[:8], False).items()
                   if k != "full_validation"})

    from kernel.host_pipeline import LaunchArgs

    prepared = family.prepare(data, config)
    family.launch(prepared)
    # marshalled the ordinary way (a seen-shape preparation gets arguments rebased from a
    # prototype, which keep no Python arguments to call ``compiled(*args)`` with)
    handle = pipeline.stream_handle(None, prepared.tables.sizes.device)
    make_workspace = getattr(pipeline.hooks, "workspace", None)  # y_source="prepass" variants: one more argument
    workspace = (make_workspace(prepared.config, prepared.plan, handle, prepared.tables.sizes.device)
                 if make_workspace is not None else None)
    args = LaunchArgs(prepared.compiled, prepared.tables, prepared.aux, prepared.plan.num_ctas, handle,
                      None, workspace)
    def host_only(fn):
        # few enough calls that the launch queue never fills: the host time, not the GPU's
        out = []
        for _ in range(5):
            torch.cuda.synchronize()
            out.append(_per_call_us(fn, 20))
        return statistics.median(out)

    # a model's calling pattern: every group's A refilled in place (a device copy, untimed) before
    # each call; the calls hit after one metadata comparison each (FastPathStats.rechecked)
    sources = [torch.randint(0, 256, a.shape, dtype=torch.uint8, device=a.device) for a, _, _ in data[0]]

    def refilled(batch: int = 20) -> float:
        out = []
        for _ in range(5):
            torch.cuda.synchronize()
            total = 0.0
            for _ in range(batch):
                for (a, _, _), src in zip(data[0], sources):
                    a.view(torch.uint8).copy_(src)
                t0 = time.perf_counter()
                run()
                total += time.perf_counter() - t0
            out.append(total / batch * 1e6)
        return statistics.median(out)

    hits_before = pipeline.fast_path.stats.hits
    refill_us = refilled()
    refill_hits = pipeline.fast_path.stats.hits - hits_before  # of 100 calls
    compiled_call_us = host_only(lambda: prepared.compiled(*args.args))
    replay_us = host_only(args.launch)
    repeat_us = min(repeat_us, host_only(run))
    torch.cuda.synchronize()

    # the same repeated call and the probe alone with each probe (kernel.native_probe): the native
    # one where it is loaded, the Python one always (same decisions, other cost)
    fast_path = pipeline.fast_path
    probe = lambda: fast_path.probe(data, config)  # noqa: E731
    native_in_use = native and native_probe.PROBE is not None
    probe_us = statistics.median(_per_call_us(probe, calls) for _ in range(5))
    fast_path.native = False
    try:
        torch.cuda.synchronize()
        repeat_py_us = min(statistics.median(_per_call_us(run, calls) for _ in range(5)), host_only(run))
        torch.cuda.synchronize()
        refill_py_us = refilled()
        torch.cuda.synchronize()
        probe_py_us = statistics.median(_per_call_us(probe, calls) for _ in range(5))
    finally:
        fast_path.native = native
    assert fast_path.probe(data, config)[0] is not None, "the probe no longer hits"

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    eagers = []
    for _ in range(3):
        torch.cuda.synchronize()
        start.record()
        for _ in range(calls):
            run()
        end.record()
        end.synchronize()
        eagers.append(start.elapsed_time(end) * 1e3 / calls)
    eager_us = statistics.median(eagers)

    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        run()  # store the side stream's entry before capture
        with torch.cuda.graph(graph, stream=stream):
            for _ in range(20):
                run()
    torch.cuda.synchronize()
    graph.replay()
    torch.cuda.synchronize()
    start.record()
    reps = max(1, calls // 20)
    for _ in range(reps):
        graph.replay()
    end.record()
    end.synchronize()
    graph_us = start.elapsed_time(end) * 1e3 / (reps * 20)
    return {
        "family": family_name, "variant": config.label, "shape": shape_name, "groups": shape.num_groups,
        "probe": "native" if native_in_use else ("python (--probe python)" if not native else native_probe.describe()),
        "repeat_us": repeat_us, "repeat_py_us": repeat_py_us, "refill_us": refill_us, "refill_hits": refill_hits,
        "refill_py_us": refill_py_us,
        "probe_us": probe_us, "probe_py_us": probe_py_us,
        "full_us": full_us, "seen_us": seen_us, "first_call_us": firsts[""], "first_call_p90_us": firsts["p90"], "first_call_py_us": firsts["_py"],
        # how many of the first calls took run()'s lane (HostPipeline._run_seen), of FIRST_WARMUP + FIRST_SAMPLES each way
        "first_call_lane": firsts["lane"], "first_call_py_lane": firsts["lane_py"],
        # the native pass's upload (kernel.native_probe.driver_copy: driver copy or torch's pinned
        # copy, counts); first_call_torch_copy_us: first calls with the driver copy turned off
        "upload": native_probe.driver_copy() if native else None,
        "first_call_torch_copy_us": firsts["_torch_copy"], "first_call_torch_copy_lane": firsts["lane_torch_copy"],
        "native_seen": native and native_probe.SEEN_TABLES is not None,
        "call_compiled_us": compiled_call_us, "replay_us": replay_us,
        "eager_us": eager_us, "graph_us": graph_us, "eager_over_graph": eager_us / graph_us,
        "fast_path": vars(pipeline.fast_path.stats).copy(),
        "tensor_guards": __import__("kernel.seen_shapes").seen_shapes.tensor_guards() is not None,
        **{f"first_{k}_us": v for k, v in stages.items()},
    }


class python_only:
    """With ``on`` True: the pipeline's Python code alone (the fast path's probe and store, the
    shape-template key, the seen-shape path), restored on exit."""

    def __init__(self, pipeline, on: bool):
        self.pipeline, self.on = pipeline, on

    def __enter__(self):
        from kernel import native_probe

        self.saved = (self.pipeline.native_seen, self.pipeline.fast_path.native, native_probe.SIZES_KEY)
        if self.on:
            self.pipeline.native_seen = self.pipeline.fast_path.native = False
            native_probe.SIZES_KEY = None
        return self

    def __exit__(self, *exc):
        from kernel import native_probe

        self.pipeline.native_seen, self.pipeline.fast_path.native, native_probe.SIZES_KEY = self.saved


def first_call_stages(family, config, fresh: list, native: bool = True) -> dict:
    """Where a first call's host time goes, stage by stage, on tensors no cache has seen (the
    shapes were seen: the seen-shape path, kernel.seen_shapes), plus full validation for scale.
    ``native``: with the native helpers where loaded (``native_pass``: the seen-shape pass alone,
    the address checks and the table block in one C++ call); else the Python code alone
    (``address_checks``: ShapeTemplate.accept, ``tables``: HostPipeline.seen_tables)."""
    import torch

    from kernel import native_probe
    from kernel.fast_path import flatten
    from kernel.host_pipeline import _native_state
    from kernel.validation import validate_problem

    pipeline, hooks = family.pipeline, family.pipeline.hooks
    resolved = hooks.resolve(config)
    constraints = hooks.constraints(resolved)
    totals: dict[str, list[float]] = {}
    fast_path = pipeline.fast_path

    def timed(name, fn):
        t0 = time.perf_counter()
        out = fn()
        totals.setdefault(name, []).append((time.perf_counter() - t0) * 1e6)
        return out

    with python_only(pipeline, not native):
        use_native = native and native_probe.SEEN_TABLES is not None and pipeline.native_seen
        for data in fresh:
            clones = __import__("oracle").clone_data(data)  # new tensors again: no cache has them
            torch.cuda.synchronize()
            template = timed("template", lambda: pipeline.templates.find(config, clones[3]))
            if template is None:
                raise AssertionError("no shape template after a call of these shapes")
            tensors = timed("flatten", lambda: flatten(clones))
            key = fast_path.probe(clones, config)[2]
            if use_native:
                state = _native_state(template)
                if timed("native_pass", lambda: native_probe.SEEN_TABLES(state, clones, tensors)) is None:
                    raise AssertionError("the native seen-shape pass refused a valid problem of seen shapes")
                upload = native_probe.driver_copy()
                if upload is not None and upload["enabled"]:  # the same with torch's pinned copy
                    native_probe.driver_copy(False)
                    try:
                        torch.cuda.synchronize()
                        timed("native_pass_torch_copy", lambda: native_probe.SEEN_TABLES(state, clones, tensors))
                    finally:
                        native_probe.driver_copy(True)
                    torch.cuda.synchronize()
            else:
                pointers = timed("address_checks", lambda: template.accept(clones, tensors))
                if pointers is None:
                    raise AssertionError("the seen-shape path refused a valid problem of seen shapes")
                device = tensors[2].device
                timed("tables", lambda: pipeline.seen_tables(template, pointers, device))
            prepared = timed("prepare_seen", lambda: pipeline.prepare(clones, config, tensors=tensors))
            handle = pipeline.stream_handle(None, prepared.tables.sizes.device)
            args = timed("marshal", lambda: pipeline.marshal(prepared, handle))
            timed("launch", args.launch)
            # the same arguments launched again at once: a first launch that costs more than this
            # pays for something a replay does not (the driver after the table copy, cold caches)
            timed("relaunch", args.launch)
            timed("store", lambda: fast_path.store(clones, config, None, args, keep=(prepared.tables, prepared.aux),
                                                   tensors=tensors, key=key))
            timed("full_validation", lambda: validate_problem(clones, constraints))
        if use_native:
            # run()'s lane as a whole (HostPipeline._run_seen: native pass, rebased arguments,
            # launch, fast-path store: what a first call does after the probe), on new clones
            for data in fresh:
                clones = __import__("oracle").clone_data(data)
                _, tensors, key = fast_path.probe(clones, config)
                torch.cuda.synchronize()
                if timed("lane", lambda: pipeline._run_seen(clones, config, tensors, key)) is None:
                    del totals["lane"]  # not taken (no rebasable prototype): nothing was launched
                    break
    torch.cuda.synchronize()
    return {k: statistics.median(v) for k, v in totals.items()}


COLUMNS = ("shape", "groups", "probe", "repeat_us", "repeat_py_us", "refill_us", "refill_py_us", "refill_hits",
           "probe_us", "probe_py_us", "full_us", "seen_us",
           "first_call_us", "first_call_p90_us", "first_call_torch_copy_us", "first_call_py_us", "first_template_us",
           "first_flatten_us", "first_native_pass_us", "first_native_pass_torch_copy_us",
           "first_address_checks_py_us", "first_tables_py_us", "first_prepare_seen_us", "first_prepare_seen_py_us",
           "first_marshal_us", "first_launch_us", "first_relaunch_us", "first_store_us", "first_store_py_us",
           "first_lane_us", "first_call_lane", "first_full_validation_us",
           "call_compiled_us", "replay_us", "eager_us", "graph_us", "eager_over_graph")


def table(rows: Sequence[dict]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        cells = [f"{r.get(c):.1f}" if isinstance(r.get(c), float) else str(r.get(c)) for c in COLUMNS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m profiling.host_overhead", description=__doc__.split("\n\n")[0])
    p.add_argument("--family", default="hopper")
    p.add_argument("--variant", help="a declared label (default: the family's second production variant)")
    p.add_argument("--shapes", default="bench1,bench2,bench3,bench4")
    p.add_argument("--calls", type=int, default=300)
    p.add_argument("--probe", choices=("native", "python"), default="native",
                   help="native (default): build or load kernel.native_probe first; python: the Python probe")
    p.add_argument("--json")
    args = p.parse_args(argv)
    from kernel.family import get_family

    reason = get_family(args.family).unavailable_reason()
    if reason:
        print(f"python -m profiling.host_overhead: {reason}", file=sys.stderr)
        return 2
    from kernel import fast_path

    native = args.probe == "native"
    if native:  # build (unless cached) and load it now: the rows then measure it
        fast_path.build_native()
    print(f"[host_overhead] fast-path probe: {fast_path.probe_in_use() if native else 'python (--probe python)'}",
          file=sys.stderr, flush=True)
    rows = []
    for shape in args.shapes.split(","):
        rows.append(measure(args.family, args.variant, shape.strip(), args.calls, native))
        print(f"[host_overhead] {json.dumps(rows[-1])}", file=sys.stderr, flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    print(f"{rows[0]['family']} {rows[0]['variant']}; fast-path probe: {rows[0]['probe']}")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
