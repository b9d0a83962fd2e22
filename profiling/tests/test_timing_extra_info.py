"""extra_info assembly, the slowed-variant resolution and the benchmark plumbing, on a CPU."""

import dataclasses
import math

import pytest

from profiling import floors
from profiling.benchmarks import _support as S
from profiling.shape_suite import SUITE
from profiling.timing import BenchRecord, DeviceTiming


def _timing(median, n=5):
    return DeviceTiming(samples_us=tuple([median] * n), launches_per_replay=8, copies=2, method="graph", warmup=2)


def test_extra_info_ratios_and_rates():
    shape = floors.get_shape("bench1")
    c = floors.DEFAULT_CEILINGS
    info = BenchRecord("hopper", "v0", shape, _timing(152.2), c, peer=_timing(190.0),
                       notes={"slowed": None}).extra_info()
    f = floors.floor(shape)
    assert info["shape"] == "bench1" and info["variant"] == "v0" and info["subject"] == "hopper"
    assert info["device_median_us"] == 152.2 and info["device_iqr_us"] == 0.0
    assert math.isclose(info["floor_us"], f.floor_us) and math.isclose(info["floor_bytes_us"], 33.64, abs_tol=0.01)
    assert math.isclose(info["time_over_floor"], 152.2 / f.floor_us)
    assert math.isclose(info["time_over_peer"], 152.2 / 190.0)
    assert math.isclose(info["tflops"], f.flops / 152.2 / 1e6)
    assert math.isclose(info["gbps"], f.bytes / 152.2 / 1e3)
    assert info["peer_median_us"] == 190.0 and info["peer"] == "cublas_bf16_predequantized"
    assert "H200" in info["ceiling_source"] and "2026-11-29" in info["ceiling_source"] and "slowed" in info
    assert info["problem_sizes"][0] == [80, 4096, 7168, 1]


def test_extra_info_without_peer_and_measured_ceilings():
    shape = floors.get_shape("bench4")
    c = floors.Ceilings(4.0e12, 700e12, "measured")
    info = BenchRecord("peer", "cublas", shape, _timing(20.0), c).extra_info()
    assert "time_over_peer" not in info and info["ceiling_source"] == "measured"
    assert math.isclose(info["floor_flops_us"], floors.shape_flops(shape) / 700e12 * 1e6)


@dataclasses.dataclass(frozen=True)
class Cfg:
    tile_k: int = 256
    num_ab_stages: int = 3
    acc_stages: int = 2
    flag: bool = True

    @property
    def label(self):
        return f"k{self.tile_k}s{self.num_ab_stages}"


def _min_two(cfg):
    if cfg.num_ab_stages < 2:
        raise ValueError("needs 2 stages")


def test_resolve_slowdown():
    assert S.resolve_slowdown(Cfg(), "") is None
    s = S.resolve_slowdown(Cfg(), "auto")
    assert s.config.num_ab_stages == 1 and s.config.acc_stages == 1 and s.repeat == 1
    s = S.resolve_slowdown(Cfg(), "auto", validate=_min_two)
    assert s.config.num_ab_stages == 2 and s.config.acc_stages == 2 and s.repeat == 1
    s = S.resolve_slowdown(Cfg(num_ab_stages=2, acc_stages=1), "auto", validate=_min_two)
    assert s.config == Cfg(num_ab_stages=2, acc_stages=1) and s.repeat == 2
    s = S.resolve_slowdown(Cfg(), 'config:{"tile_k": 128}')
    assert s.config.tile_k == 128 and "tile_k" in s.description
    with pytest.raises(ValueError):
        S.resolve_slowdown(Cfg(), 'config:{"num_ab_stages": 1}', validate=_min_two)
    assert S.resolve_slowdown(Cfg(), "repeat:3").repeat == 3
    with pytest.raises(ValueError):
        S.resolve_slowdown(Cfg(), "slower please")


def test_env_selection(monkeypatch):
    monkeypatch.setenv("NVFP4_BENCH_SHAPES", "bench3, lbtest9")
    assert [s.name for s in S.selected_shapes()] == ["bench3", "lbtest9"]
    monkeypatch.setenv("NVFP4_BENCH_FAMILIES", "hopper")
    assert S.selected_families() == ["hopper"]
    monkeypatch.setenv("NVFP4_BENCH_FAMILIES", "ampere")
    with pytest.raises(ValueError):
        S.selected_families()
    monkeypatch.setenv("NVFP4_BENCH_VARIANTS", "a,b")
    assert S.selected_variant_labels() == {"a", "b"}
    monkeypatch.delenv("NVFP4_BENCH_SHAPES")
    assert S.selected_shapes() == list(SUITE)


def test_shape_reason_uses_constraints():
    from kernel import model

    cfg = model.DEFAULT_CONFIG
    assert S.shape_reason(model, cfg, floors.get_shape("bench3")) is None

    class Strict:
        @staticmethod
        def constraints(config):
            from kernel.validation import KernelConstraints

            return KernelConstraints(k_granularity=512, max_groups=3)

    assert "k_granularity" in S.shape_reason(Strict, cfg, floors.get_shape("lbtest2"))
    assert "max_groups" in S.shape_reason(Strict, cfg, floors.get_shape("bench1"))
    assert S.shape_reason(Strict, cfg, floors.get_shape("bench3")) is None


def test_machine_info_on_cpu():
    info = S.machine_info()
    assert info["torch"] and "nvidia_cutlass_dsl" in info and "driver" in info and "gpu_name" in info
