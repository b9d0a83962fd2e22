"""GPU benchmarks: on every shape of the suite (profiling/shape_suite.py), what users run by
default, the production builds beside it, and the cuBLAS bf16 peer.

Entries per (kernel family, shape), shape-major; ``--bench-variants`` (or NVFP4_BENCH_VARIANTS)
picks them:

* ``default``: ``test_kernel[FAMILY:per-shape-SHAPE]`` (``custom_kernel(data)`` without a config:
  the family's per-shape choice) and ``test_kernel[FAMILY:LABEL-SHAPE]`` for each production
  build, plus ``test_peer_cublas_bf16[SHAPE]``;
* ``all``: the per-shape entry and every declared variant (the whole matrix);
* ``LABEL,LABEL``: those labels only (``per-shape`` names the per-shape entry).

The timed callable is one synchronized CUDA-graph replay of ``launches_per_replay`` launches
over rotated input copies (profiling.timing.Replayer.replay), so pytest-benchmark's statistics,
and ``--benchmark-compare-fail``, follow device time; pytest-benchmark's columns are the time
of ONE REPLAY. The per-launch device distribution (CUDA events around the same replays), the
floor, TFLOP/s, GB/s and the ratios to floor and peer are in ``extra_info``, with the host time
of one eager call; the per-shape entry adds the leaderboard's own timing of the same calls
(``leaderboard_mean_us``: properties.leaderboard.time_calls, 15 eager calls between CUDA events
after clearing the L2, the mean over repeats).

Skipped at collection, with the reason, where there is no CUDA device, where a family does not
import or its ``unavailable_reason()`` says no, and where a variant's constraints reject a shape.
"""

from __future__ import annotations

import pytest

from profiling import floors, timing
from profiling.benchmarks import _support as S

ROUNDS = 20  # replays pytest-benchmark times (each also one event sample)
WARMUP_REPLAYS = 2
# the leaderboard's timing of the per-shape entry: its 15 calls per repeat, its stopping rule,
# at most this many repeats (the evaluator allows 100; each repeat first fills most of the free
# GPU memory to clear the L2, some 30 ms on an 80 GB card)
LEADERBOARD_CALLS = 15
LEADERBOARD_MAX_REPEATS = 20
LEADERBOARD_MAX_TIME_NS = 10e9
# the peer's H200 medians, 2026-11-29 (docs/results.md row 1)
FACTS_CUBLAS_US = {"bench1": 188.7, "bench2": 97.7, "bench3": 35.7, "bench4": 19.2}


def _marks(reason):
    return [pytest.mark.gpu] + ([pytest.mark.skip(reason=reason)] if reason else [])


def _shape_params():
    reason = S.cuda_reason()
    return [pytest.param(s, id=s.name, marks=_marks(reason)) for s in S.selected_shapes()]


def _kernel_params(policy):
    gpu_reason = S.cuda_reason()
    params = []
    for v, shape in S.bench_entries(policy):
        reason = v.skip_reason or gpu_reason
        if reason is None:
            reason = S.shape_reason(v.module, v.config if v.config is not None else S.default_config(v.module), shape)
        params.append(pytest.param(v, shape, id=f"{v.id}-{shape.name}", marks=_marks(reason)))
    return params


def pytest_generate_tests(metafunc):
    if metafunc.function.__name__ == "test_peer_cublas_bf16":
        metafunc.parametrize("shape", _shape_params())
    elif metafunc.function.__name__ == "test_kernel":
        option = metafunc.config.getoption("bench_variants", default=None)
        metafunc.parametrize("variant,shape", _kernel_params(S.selected_variant_labels(option)))


def _host_us_per_call(fn, calls: int = 200) -> float:
    """Median host time of one call in an eager loop without synchronization (python -m
    profiling.host_overhead breaks it down further)."""
    import statistics
    import time

    import torch

    fn()
    torch.cuda.synchronize()
    runs = []
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        runs.append((time.perf_counter() - t0) / calls * 1e6)
        torch.cuda.synchronize()
    return statistics.median(runs)


def _time(benchmark, launches, lpr):
    r = timing.Replayer(launches, launches_per_replay=lpr).prepare()
    r.warmup(WARMUP_REPLAYS)
    if benchmark.disabled:  # --benchmark-disable: one untimed call; still keep a few samples
        for _ in range(3):
            r.replay()
    benchmark.pedantic(r.replay, rounds=ROUNDS, warmup_rounds=0, iterations=1)
    return r


# Peers first: the kernel benchmarks reuse the peer timing of the same pytest session.
def test_peer_cublas_bf16(benchmark, shape, ceilings):
    from profiling import peers

    benchmark.group = shape.name
    launches, lpr = S.peer_setup(shape)
    r = _time(benchmark, launches, lpr)
    t = r.timing()
    S._PEER_TIMINGS.setdefault(shape.name, t)
    record = timing.BenchRecord("peer", peers.PEER_NAME, shape, t, ceilings)
    info = record.extra_info()
    bf16_bytes = floors.peer_bytes(shape)
    info.update(
        peer_bytes=bf16_bytes,
        peer_gbps=bf16_bytes / t.median_us / 1e3,
        peer_floor_bytes_us=bf16_bytes / ceilings.bandwidth * 1e6,
        graph_capture_error=r.capture_error,
    )
    if shape.name in FACTS_CUBLAS_US:
        info["facts_h200_us"] = FACTS_CUBLAS_US[shape.name]
        info["time_over_facts"] = t.median_us / FACTS_CUBLAS_US[shape.name]
    benchmark.extra_info.update(info)


def _leaderboard_timing(module, datas) -> dict:
    """The leaderboard's timing of ``custom_kernel(data)`` (properties.leaderboard.time_calls): 15
    calls per repeat over the rotated copies (15 distinct ones where the shape is small; where
    there are fewer, they cycle, and together they exceed 3x the L2)."""
    import torch

    from properties.leaderboard import stats_of, time_calls

    inputs = [datas[i % len(datas)] for i in range(LEADERBOARD_CALLS)]
    durations = time_calls(module.custom_kernel, inputs, device="cuda", max_repeats=LEADERBOARD_MAX_REPEATS,
                           max_time_ns=LEADERBOARD_MAX_TIME_NS)
    stats = stats_of(durations)
    torch.cuda.empty_cache()  # the L2 clears leave most of the GPU's memory cached in the allocator
    return {"leaderboard_mean_us": stats.mean / 1e3, "leaderboard_err_us": stats.err / 1e3,
            "leaderboard_repeats": stats.runs}


def test_kernel(benchmark, variant, shape, ceilings):
    import torch

    benchmark.group = shape.name
    config, repeat, slowed = variant.config, 1, None
    if variant.is_default:
        slow = S.resolve_slowdown(variant.config, validate=getattr(variant.module, "check_config", None))
        if slow is not None:
            config, repeat, slowed = slow.config, slow.repeat, slow.description
            reason = S.shape_reason(variant.module, config, shape)
            if reason:
                pytest.skip(f"slowed config: {reason}")
    per_copy = floors.shape_bytes(shape, padded_scales=True)
    copies = timing.copies_for(per_copy, l2_bytes=S.l2_bytes())
    datas = S.device_copies(shape, copies)
    lpr = timing.launches_for(floors.floor_us(shape), copies)
    r = _time(benchmark, S.kernel_launches(variant.module, config, datas, repeat), lpr)
    t = r.timing()

    # the benchmark is meaningless if the kernel leaves outputs unwritten (c starts as NaN and
    # the seeded uniform inputs have no NaN scale, so a written output has no NaN)
    call = S.kernel_call(variant.module, config)
    outs = call(datas[0])
    nan_groups = [g for g, c in enumerate(outs) if c.numel() and bool(torch.isnan(c).any())]
    assert not nan_groups, f"{variant.id} left NaN (unwritten) outputs in groups {nan_groups} of {shape.name}"

    notes = {
        "config_run": getattr(config, "label", str(config)),
        "slowed": slowed,
        "graph_capture_error": r.capture_error,
        "seed": S.SEED,
        "distribution": S.DISTRIBUTION,
        # host time of one repeated eager call (the fast path: identity check + launch)
        "host_us_per_call": _host_us_per_call(lambda: call(datas[0])),
    }
    if variant.per_shape:
        notes["config_run"] = S.per_shape_config(variant.module, datas[0]).label
        notes.update(_leaderboard_timing(variant.module, datas))
    record = timing.BenchRecord(variant.family, variant.label, shape, t, ceilings, peer=S.peer_timing(shape),
                                notes=notes)
    benchmark.extra_info.update(record.extra_info())
    benchmark.extra_info["shape_family"] = shape.family
