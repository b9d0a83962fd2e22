"""profiling.ncu_hotspots reads ncu's source page (a trimmed H200 export: the kernel-name line,
the header, 12 SASS rows of the mixed-tail prepass variant on bench4)."""

from pathlib import Path

from profiling import ncu_hotspots as H

DATA = Path(__file__).parent / "data" / "ncu_source_small.csv"


def test_header_after_the_kernel_name_line_and_sample_columns_found():
    header, rows = H.read_rows(DATA.read_text())
    assert header[0] == "Address" and len(rows) == 12
    col = H.columns(header)
    assert col["total"] == "Warp Stall Sampling (All Samples)"
    assert "stall_barrier" in col["reasons"] and not any("Not Issued" in c for c in col["reasons"])


def test_ranking_shares_and_reasons():
    text = H.hotspots(DATA.read_text(), top=3)
    lines = text.splitlines()
    assert lines[0] == "12 instructions, 597 samples"
    # the consumers' wait at phase 1's completion barrier is charged to the load after BAR.SYNC
    assert "LDS.64 R20, [UR17+0xc8]" in lines[1] and "43.9 %" in lines[1] and "barrier 262" in lines[1]
    counts = [float(l.split()[1]) for l in lines[1:4]]
    assert counts == sorted(counts, reverse=True)
    per_op = lines[-1]
    assert per_op.startswith("per opcode: LDS 43.9 %") and "BRA" in per_op and " %, " in per_op


def test_no_rows_or_no_samples_are_reported_not_raised():
    assert H.hotspots("") == "no instruction rows"
    assert H.hotspots('"Address","Source"\n"0x0","NOP"\n').startswith("no sample column")
