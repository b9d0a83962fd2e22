"""profiling.ncu_bound reads a recorded ncu raw export (no ncu, no GPU)."""

from pathlib import Path

from profiling import ncu_bound
from profiling.ncu_report import parse_raw_csv

DATA = Path(__file__).parent / "data" / "ncu_raw_small.csv"
# one kernel of a real H200 export (ci/gpu_profile.sh bound, the mixed-tail prepass variant on bench1),
# trimmed to the columns the summary reads
H200 = Path(__file__).parent / "data" / "ncu_bound_h200.csv"


def test_stall_reasons_are_read_and_ranked_largest_first():
    rec = parse_raw_csv(DATA.read_text())[0]
    reasons = ncu_bound.stall_reasons(rec["metrics"])
    assert [r for r, _ in reasons] == ["long_scoreboard", "wait", "barrier"]
    assert reasons[0][1] > reasons[1][1] > reasons[2][1]


def test_summary_names_time_units_and_tensor_pipe():
    rec = parse_raw_csv(DATA.read_text())[0]
    text = ncu_bound.summarize(rec, "bench1")
    assert text.startswith("kernel 0 (bench1): 61.4 us")
    assert "DRAM 21.9 %" in text and "tensor pipe active 18.4 %" in text
    assert "long_scoreboard 3.9 (67 %)" in text


def test_units_are_ordered_by_throughput():
    rec = {"id": 3, "metrics": {ncu_bound.THROUGHPUTS["L2"][0]: 80.0, ncu_bound.THROUGHPUTS["DRAM"][-1]: 20.0,
                                ncu_bound.THROUGHPUTS["L1 / shared"][0]: 50.0, ncu_bound.TIME: 1000.0}}
    line = ncu_bound.summarize(rec).splitlines()[1]
    assert line.index("L2 80.0") < line.index("L1 / shared 50.0") < line.index("DRAM 20.0")


def test_cli_fails_on_an_empty_export(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("==PROF== nothing\n")
    assert ncu_bound.main([str(empty)]) == 1
    assert ncu_bound.main([str(DATA), "--shapes", "bench1,bench2"]) == 0


def test_every_figure_of_the_summary_is_found_in_a_real_h200_export():
    """The metric names are the ones ncu exports for these sections (a wrong name prints n/a)."""
    rec = parse_raw_csv(H200.read_text())[0]
    text = ncu_bound.summarize(rec, "bench1")
    assert "n/a" not in text
    assert all(0 < ncu_bound.unit_throughput(rec["metrics"], u) < 100 for u in ncu_bound.THROUGHPUTS)
    assert text.startswith("kernel 0 (bench1): 142.4 us") and "tensor pipe active 61.7 %" in text
    assert len(ncu_bound.stall_reasons(rec["metrics"])) >= 10
