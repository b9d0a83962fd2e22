"""docs/profiling.md says what the tools do: the NVTX filters the sweep prints, a legend entry for
every column of the static report. Fails when the code changes and the document does not."""

import importlib.util
import re
from pathlib import Path

from profiling import ncu_sweep, static_report

DOC = (Path(__file__).resolve().parents[2] / "docs" / "profiling.md").read_text()


def test_every_nvtx_filter_the_sweep_can_print_is_documented(monkeypatch):
    real = importlib.util.find_spec
    for has_nvtx in (True, False):
        monkeypatch.setattr(importlib.util, "find_spec",
                            lambda name, *a, _h=has_nvtx: (object() if _h else None) if name == "nvtx" else real(name, *a))
        assert f"`{ncu_sweep.nvtx_filter()}`" in DOC


def test_every_static_report_column_has_a_legend_entry():
    legend = DOC.split("## The static report's columns", 1)[1]
    documented = set()
    for row in re.findall(r"^\| (.+?) \|", legend, flags=re.M):
        documented |= {name.strip() for name in re.findall(r"`([^`]+)`", row)}
    missing = [header for header, _ in static_report.TABLE_COLUMNS if header not in documented]
    assert not missing, f"docs/profiling.md has no legend entry for {missing}"
