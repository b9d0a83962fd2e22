"""Reading recorded ncu / nsight-python results, joining the static report, writing the outputs."""

import csv
import json
import math
from pathlib import Path

import pytest

from profiling import floors
from profiling import ncu_report as R

DATA = Path(__file__).parent / "data"
A = "h90_m128n128k256_s3_wg1_fp16"
B = "h90_m64n128k256_s4_wg1_swap_fp16"
CASES = [(A, "bench3"), (A, "bench4"), (B, "bench3"), (B, "bench4")]


def case_records(status=None):
    out = []
    for v, s in CASES:
        shape = floors.get_shape(s)
        out.append({"variant": v, "shape": s, "flops": floors.shape_flops(shape),
                    "floor_us": floors.floor_us(shape), "floor_source": "H200",
                    "axes": {"tile_m": 128 if v == A else 64, "num_ab_stages": 3 if v == A else 4},
                    "status": (status or {}).get((v, s), "ok")})
    return out


def raw_rows():
    actions = R.parse_raw_csv((DATA / "ncu_raw_small.csv").read_text())
    return R.rows_from_actions(actions, CASES, "sm_90a")


def test_parse_raw_csv_skips_units_and_prof_lines_and_reads_range_names():
    actions = R.parse_raw_csv((DATA / "ncu_raw_small.csv").read_text())
    assert [a["id"] for a in actions] == [0, 1, 2, 3, 4]
    assert [a["range"] for a in actions] == ["cfg0r0", "cfg1r0", "cfg1r0", "cfg2r0", "cfg3r0"]
    assert actions[2]["metrics"]["gpu__time_duration.sum"] == 35104.0  # "35,104"
    assert actions[2]["metrics"]["dram__bytes_read.sum"] == 7340032.0
    assert actions[0]["gpu"] == "NVIDIA H200"
    assert R.parse_raw_csv("==PROF== nothing profiled\n") == []


def test_rows_from_actions_keeps_the_longest_kernel_of_a_range():
    rows = raw_rows()
    assert [(r["variant"], r["shape"]) for r in rows] == CASES
    assert rows[1]["duration_ns"] == 35104.0  # not the 1856 ns helper kernel in the same range
    assert rows[1]["regs_per_thread"] == 168.0
    assert rows[2]["stall_barrier"] == 1.40


def test_rows_from_actions_averages_runs_and_leaves_unmeasured_cases_empty():
    acts = [{"range": "cfg0r0", "kernel": "k", "metrics": {"gpu__time_duration.sum": 10.0}},
            {"range": "cfg0r1", "kernel": "k", "metrics": {"gpu__time_duration.sum": 14.0}},
            {"range": "elsewhere", "kernel": "k", "metrics": {"gpu__time_duration.sum": 99.0}}]
    rows = R.rows_from_actions(acts, [(A, "bench3"), (B, "bench3")], "sm_90a")
    assert rows[0]["duration_ns"] == 12.0 and rows[0]["runs"] == 2
    assert rows[1] == {"variant": B, "shape": "bench3", "runs": 0}


def test_assign_ranges_by_order_only_when_unambiguous():
    acts = [{"id": 1, "range": None, "metrics": {}}, {"id": 0, "range": None, "metrics": {}}]
    named = R.assign_ranges_by_order(acts, ["cfg0r0", "cfg1r0"])
    assert {a["id"]: a["range"] for a in named} == {0: "cfg0r0", 1: "cfg1r0"}
    with pytest.raises(ValueError, match="cannot tell"):
        R.assign_ranges_by_order(acts, ["cfg0r0"])


def test_nsight_and_direct_ncu_recordings_give_the_same_rows():
    pd = pytest.importorskip("pandas")
    df = pd.read_csv(DATA / "nsight_processed_small.csv")
    ns = {(r["variant"], r["shape"]): r for r in R.rows_from_nsight(df, "sm_90a")}
    assert len(ns) == 4
    for row in raw_rows():
        other = ns[(row["variant"], row["shape"])]
        for key in ("duration_ns", "tensor_active_pct", "dram_read_bytes", "regs_per_thread",
                    "stall_long_scoreboard", "stall_barrier"):
            assert other[key] == pytest.approx(row[key]), key
        assert other["gpu"] == "NVIDIA H200" and other["runs"] == 1


def test_load_static_reads_the_static_report_schema():
    st = R.load_static(DATA / "static_small.json")
    assert set(st) == {A, B}
    assert st[B]["registers"] == 154 and st[B]["facts.stage_bytes"] == 51200
    assert not any(k.startswith(("opcodes", "spans", "cubin")) for k in st[A])
    s = R.static_summary(st[B])
    assert (s["st_regs"], s["st_stack"], s["st_spills"], s["st_smem"]) == (154, 16, 5, 203776)
    assert s["st_sass"].startswith("HGMMA=32 UTMALDG=6 SYNCS.PHASECHK=14")
    assert "UTCMMA" not in s["st_sass"] and s["st_sass"].endswith("all=3012")
    assert R.load_static(DATA / "missing.json") == {}
    assert R.load_static([{"label": "x", "registers": 1}]) == {"x": {"registers": 1}}
    assert R.load_static({"x": {"registers": 1}}) == {"x": {"registers": 1}}


def test_build_table_marks_the_fastest_variant_per_shape_and_joins_static():
    table = R.build_table(raw_rows(), case_records(), R.load_static(DATA / "static_small.json"))
    best = {(r["variant"], r["shape"]) for r in table if r["best"]}
    assert best == {(B, "bench3"), (B, "bench4")}
    row = next(r for r in table if (r["variant"], r["shape"]) == (A, "bench3"))
    assert row["duration_us"] == pytest.approx(61.44)
    assert row["tflops"] == pytest.approx(floors.shape_flops(floors.get_shape("bench3")) / 61.44e-6 / 1e12)
    assert row["time_over_floor"] == pytest.approx(61.44 / floors.floor_us(floors.get_shape("bench3")))
    assert row["cfg_tile_m"] == 128 and row["st_regs"] == 168 and row["static.registers"] == 168
    assert row["top_stalls"].startswith("long_scoreboard=3.91")
    geo = {g["variant"]: g for g in R.variant_geomeans(table)}
    assert geo[B]["best"] and geo[B]["wins"] == 2 and not geo[A]["best"]


def test_a_failed_case_keeps_its_status_and_loses_its_numbers():
    status = {(B, "bench3"): "failed: RuntimeError: boom"}
    table = R.build_table(raw_rows(), case_records(status))
    row = next(r for r in table if (r["variant"], r["shape"]) == (B, "bench3"))
    assert row["status"].startswith("failed") and math.isnan(row["duration_us"]) and not row["best"]
    # the other variant wins bench3 now
    assert next(r for r in table if (r["variant"], r["shape"]) == (A, "bench3"))["best"]
    # a case with no measured row at all
    table = R.build_table(raw_rows()[:3], case_records())
    assert table[3]["status"] == "not measured"


def test_write_outputs_respects_the_device_tool_limits(tmp_path):
    pytest.importorskip("matplotlib")  # the plot needs it (declared in the tests extra: a skip fails the run)
    table = R.build_table(raw_rows(), case_records(), R.load_static(DATA / "static_small.json"))
    meta = {"family": "hopper", "arch": "sm_90a", "gpu": "NVIDIA H200", "backend": "ncu", "runs": 1,
            "metrics_dropped": ["sm__maximum_warps_per_active_cycle_pct"], "notes": ["a note"], "wall_s": 12.0}
    out = tmp_path / "ncu"
    written = R.write_outputs(out, table, meta, {"ncu-log.txt": "==PROF== log\n"})
    assert written == [R.CSV_NAME, R.SUMMARY_NAME, R.PLOT_NAME, "ncu-log.txt", R.META_NAME]
    assert R.check_output_dir(out) == []
    assert (out / R.PLOT_NAME).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = list(csv.DictReader(open(out / R.CSV_NAME)))
    assert len(rows) == 4 and rows[0]["shape"] == "bench3" and "stall_wait" in rows[0]
    assert {r["variant"] for r in rows if r["best"] == "1"} == {B}
    md = (out / R.SUMMARY_NAME).read_text()
    assert md.count("**best**") == 3  # two shapes + the per-variant table
    assert "st regs" in md and "HGMMA=32" in md and "sm__maximum_warps_per_active_cycle_pct" in md
    meta_back = json.loads((out / R.META_NAME).read_text())
    assert meta_back["files"][-1] == R.META_NAME and meta_back["backend"] == "ncu"


def test_write_outputs_refuses_names_the_device_tool_drops(tmp_path):
    with pytest.raises(ValueError, match="characters"):
        R.write_outputs(tmp_path, [], {}, {"bad name.txt": "x"})
    with pytest.raises(ValueError, match="more than"):
        R.write_outputs(tmp_path / "b", [], {}, {f"f{i}.txt": "x" for i in range(8)})


def test_check_output_dir_finds_deep_and_oddly_named_files(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "c.txt").write_text("x")
    (tmp_path / "odd name.txt").write_text("x")
    problems = R.check_output_dir(tmp_path)
    assert any("deeper" in p for p in problems) and any("odd name" in p for p in problems)


def test_summary_shows_the_l1_data_pipe_column(tmp_path):
    """The LSU-wavefront % of peak (the L1 pipe the Hopper kernel's shared-memory traffic uses)
    reaches the table."""
    table = R.build_table(raw_rows(), case_records())
    for r in table:
        r["lsu_pipe_pct"] = 57.49 if r["variant"] == A else math.nan
    R.write_outputs(tmp_path, table, {"family": "hopper", "arch": "sm_90a", "backend": "ncu", "runs": 1}, {})
    md = (tmp_path / R.SUMMARY_NAME).read_text()
    header = next(line for line in md.splitlines() if line.startswith("| shape | variant"))
    assert "LSU pipe %" in header
    col = header.split("|").index(" LSU pipe % ")
    a_rows = [line.split("|") for line in md.splitlines() if f"`{A}`" in line and line.startswith("| bench")]
    assert a_rows and all(cells[col].strip().startswith("57.") for cells in a_rows)
    assert "lsu_pipe_pct" in next(csv.reader(open(tmp_path / R.CSV_NAME)))
