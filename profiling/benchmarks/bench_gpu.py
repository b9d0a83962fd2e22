"""GPU benchmarks: every (kernel family, declared variant, shape set) and the cuBLAS bf16 peer.

The timed callable is one synchronized CUDA-graph replay of ``launches_per_replay`` launches
over rotated input copies (profiling.timing.Replayer.replay), so pytest-benchmark's statistics,
and ``--benchmark-compare-fail``, follow device time; pytest-benchmark's columns are the time
of ONE REPLAY. The per-launch device distribution (CUDA events around the same replays), the
floor, TFLOP/s, GB/s and the ratios to floor and peer are in ``extra_info``.

Skipped at collection, with the reason, where there is no CUDA device, where a family does not
import or its ``unavailable_reason()`` says no, and where a variant's constraints reject a shape.
"""

from __future__ import annotations

import pytest

from profiling import floors, timing
from profiling.benchmarks import _support as S

ROUNDS = 20  # replays pytest-benchmark times (each also one event sample)
WARMUP_REPLAYS = 2
# the peer's H200 medians, 2026-11-29 (docs/results.md row 1)
FACTS_CUBLAS_US = {"bench1": 188.7, "bench2": 97.7, "bench3": 35.7, "bench4": 19.2}


def _shape_params():
    reason = S.cuda_reason()
    marks = [pytest.mark.gpu] + ([pytest.mark.skip(reason=reason)] if reason else [])
    return [pytest.param(s, id=s.name, marks=marks) for s in S.selected_shapes()]


def _kernel_params():
    """Shape-major (inputs are made once per shape); every declared variant on the standard
    shapes, the default variant only on the leaderboard test shapes (NVFP4_BENCH_VARIANTS=all
    for every variant everywhere, or a comma list of labels)."""
    gpu_reason = S.cuda_reason()
    wanted = S.selected_variant_labels()
    variants = [v for family in S.selected_families() for v in S.family_variants(family)]
    params = []
    for shape in S.selected_shapes():
        for v in variants:
            if v.module is not None:
                if wanted is None and shape.kind == "test" and not v.is_default:
                    continue
                if wanted not in (None, "all") and v.label not in wanted:
                    continue
            reason = v.skip_reason or gpu_reason
            if reason is None:
                reason = S.shape_reason(v.module, v.config, shape)
            marks = [pytest.mark.gpu] + ([pytest.mark.skip(reason=reason)] if reason else [])
            params.append(pytest.param(v, shape, id=f"{v.id}-{shape.name}", marks=marks))
    return params


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
@pytest.mark.parametrize("shape", _shape_params())
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


@pytest.mark.parametrize("variant,shape", _kernel_params())
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
    outs = variant.module.custom_kernel(datas[0], config=config)
    nan_groups = [g for g, c in enumerate(outs) if c.numel() and bool(torch.isnan(c).any())]
    assert not nan_groups, f"{variant.id} left NaN (unwritten) outputs in groups {nan_groups} of {shape.name}"

    host_us = _host_us_per_call(lambda: variant.module.custom_kernel(datas[0], config=config))

    record = timing.BenchRecord(
        variant.family, variant.label, shape, t, ceilings, peer=S.peer_timing(shape),
        notes={
            "config_run": getattr(config, "label", str(config)),
            "slowed": slowed,
            "graph_capture_error": r.capture_error,
            "seed": S.SEED,
            "distribution": S.DISTRIBUTION,
            # host time of one repeated eager call (the fast path: identity check + launch)
            "host_us_per_call": host_us,
        },
    )
    benchmark.extra_info.update(record.extra_info())
