"""Metric sets per architecture, the ncu metric-name filter and the derived figures (CPU only)."""

import math

import pytest

from profiling import floors
from profiling import metrics as M


def test_every_set_starts_with_the_duration_and_has_unique_names_and_keys():
    for arch in M.METRIC_SETS:
        for level in ("full", "core"):
            ms = M.metric_set(arch, level)
            assert ms[0].name == M.DURATION
            assert len({m.name for m in ms}) == len(ms)
            assert len({m.key for m in ms}) == len(ms)


def test_hopper_and_blackwell_use_their_own_tensor_pipe_names():
    hopper = set(M.metric_names("sm_90a"))
    blackwell = set(M.metric_names("sm_100a"))
    # what exists on the H200's ncu 2025.3.1, and what does not (docs/profiling.md, "Metrics")
    assert "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active" in hopper
    assert "sm__inst_executed_pipe_tensor_op_gmma.sum" in hopper
    assert not any(n.startswith("sm__pipe_tensor_op_gmma_cycles_active") for n in hopper)
    assert "sm__pipe_tc_cycles_active.avg.pct_of_peak_sustained_active" in blackwell
    assert not hopper & {n for n in blackwell if "tc_" in n or "utcomma" in n or "mem_tensor" in n}
    for names in (hopper, blackwell):  # the metrics every sweep needs, on both
        for needed in ("dram__bytes_read.sum", "lts__t_sector_hit_rate.pct", "launch__registers_per_thread",
                       "sm__warps_active.avg.pct_of_peak_sustained_active",
                       "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                       M.stall_metric("long_scoreboard")):
            assert needed in names


def test_core_level_is_the_verified_subset_and_aliases_resolve():
    core = M.metric_names("hopper", "core")
    assert set(core) < set(M.metric_names("sm_90a"))
    assert all(not n.startswith("smsp__average_warps_issue_stalled") for n in core)
    with pytest.raises(ValueError):
        M.metric_set("sm_80")
    with pytest.raises(ValueError):
        M.metric_set("sm_90a", "most")


QUERY_CSV = '"Metric Name","Metric Type","Metric Unit","Metric Description"\n' + "".join(
    f'"{n}","Counter","","d"\n' for n in
    ["gpu__time_duration", "dram__bytes_read", "dram__throughput", "lts__t_sector_hit_rate",
     "sm__pipe_tensor_op_hmma_cycles_active"] + [f"smsp__filler_{i}" for i in range(60)])


def test_parse_query_metrics_reads_csv_and_text_tables():
    names = M.parse_query_metrics("==PROF== something\n" + QUERY_CSV)
    assert {"gpu__time_duration", "dram__bytes_read", "smsp__filler_59"} <= names
    assert "Metric Name" not in names
    text = "Device GH100\nMetric Name   Metric Description\ndram__bytes_read   # of bytes read\n"
    assert M.parse_query_metrics(text) == {"dram__bytes_read"}


def test_filter_drops_unknown_names_but_keeps_unlisted_families_and_the_duration():
    avail = M.parse_query_metrics(QUERY_CSV)
    wanted = ["gpu__time_duration.sum", "dram__bytes_read.sum", M.stall_metric("long_scoreboard"),
              "launch__registers_per_thread", "lts__t_sector_hit_rate.pct", "sm__nonexistent.sum"]
    kept, dropped = M.filter_available(wanted, avail)
    assert dropped == [M.stall_metric("long_scoreboard"), "sm__nonexistent.sum"]
    assert kept == ["gpu__time_duration.sum", "dram__bytes_read.sum", "launch__registers_per_thread",
                    "lts__t_sector_hit_rate.pct"]
    # a listing too short to trust filters nothing
    assert M.filter_available(wanted, {"dram__bytes_read"}) == (wanted, [])
    assert M.filter_available(wanted, None) == (wanted, [])


def test_derive_from_one_row():
    shape = floors.get_shape("bench3")
    flops = floors.shape_flops(shape)
    row = {"duration_ns": 61440.0, "dram_read_bytes": 14211072.0, "dram_write_bytes": 3145728.0,
           "smem_conflicts_ld": 12288.0, "smem_conflicts_st": 0.0, "smem_wavefronts": 491520.0,
           "occupancy_achieved_pct": 9.37, "occupancy_theoretical_pct": 9.375,
           "stall_long_scoreboard": 3.91, "stall_selected": 1.0, "stall_barrier": 0.82, "stall_wait": 1.12,
           "stall_mio_throttle": 0.5}
    d = M.derive(row, flops, floor_us=16.3)
    assert d["duration_us"] == pytest.approx(61.44)
    assert d["tflops"] == pytest.approx(flops / 61.44e-6 / 1e12)
    assert d["time_over_floor"] == pytest.approx(61.44 / 16.3)
    assert d["dram_gbps"] == pytest.approx((14211072 + 3145728) / 61.44e-6 / 1e9)
    assert d["smem_conflict_pct"] == pytest.approx(2.5)
    assert d["occupancy_ratio"] == pytest.approx(9.37 / 9.375)
    # 'selected' is the issuing warp, not a stall
    assert d["top_stalls"] == "long_scoreboard=3.91, wait=1.12, barrier=0.82"


def test_derive_with_missing_metrics_gives_nan_not_errors():
    d = M.derive({}, 1e9, 10.0)
    assert all(math.isnan(d[k]) for k in ("duration_us", "tflops", "time_over_floor", "dram_gbps",
                                          "smem_conflict_pct", "occupancy_ratio"))
    assert d["top_stalls"] == ""
    assert math.isnan(M.derive({"duration_ns": "n/a"}, 1e9, 10.0)["tflops"])


def test_geomean_ignores_nan_and_nonpositive():
    assert M.geomean([2.0, 8.0, math.nan, 0.0]) == pytest.approx(4.0)
    assert math.isnan(M.geomean([]))
