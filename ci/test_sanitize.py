"""ci.sanitize on a CPU machine: the output parser, the table and the clean skip."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ci import sanitize

ROOT = Path(__file__).resolve().parent.parent

MEMCHECK_OUTPUT = """\
========= COMPUTE-SANITIZER
@@sanitize-case edges begin
@@sanitize-case edges end PASS
@@sanitize-case ragged begin
========= Invalid __global__ write of size 2 bytes
=========     at store_far_0+0x70
=========     by thread (0,0,0) in block (0,0,0)
=========     Address 0x7f0000000000 is out of bounds
=========
========= Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure" on CUDA API call to cuStreamSynchronize.
=========
@@sanitize-case ragged end ERROR AcceleratorError: CUDA error: unspecified launch failure
========= Warning: something benign
========= ERROR SUMMARY: 2 errors
"""

CLEAN_RACECHECK = """\
========= COMPUTE-SANITIZER
@@sanitize-case edges begin
@@sanitize-case edges end PASS
========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)
========= ERROR SUMMARY: 0 errors
"""


def test_records_are_attributed_to_their_case():
    results, outside, summary = sanitize.parse_output(MEMCHECK_OUTPUT, ["edges", "ragged", "shared_n"])
    assert summary == 2 and outside == []
    assert results["edges"].verdict == "PASS" and results["edges"].records == []
    assert results["ragged"].verdict.startswith("ERROR AcceleratorError")
    assert [r.split()[0] for r in results["ragged"].records] == ["Invalid", "Program"]
    assert results["shared_n"].verdict == "NOT RUN"


def test_a_clean_run_is_ok_and_a_dirty_one_is_not():
    results, outside, summary = sanitize.parse_output(CLEAN_RACECHECK, ["edges"])
    clean = sanitize.RunResult("racecheck", "v1", [results["edges"]], summary, 0, 1.0, outside)
    assert clean.ok
    results, outside, summary = sanitize.parse_output(MEMCHECK_OUTPUT, ["edges", "ragged"])
    dirty = sanitize.RunResult("memcheck", "v1", [results["edges"], results["ragged"]], summary, 1, 2.0, outside)
    assert not dirty.ok
    table = sanitize.format_table([clean, dirty])
    assert "ERROR SUMMARY 2" in table and "ERROR SUMMARY 0" in table
    truncated = sanitize.RunResult("memcheck", "v1", [results["edges"]], None, -9, 3.0)
    assert not truncated.ok  # no summary: the sanitizer did not finish


def test_skips_cleanly_without_a_gpu_or_sanitizer():
    from kernel.device import cuda_capability

    if cuda_capability() is not None and sanitize.find_sanitizer():
        return  # on a GPU machine with the sanitizer there is nothing to skip
    done = subprocess.run([sys.executable, "-m", "ci.sanitize"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("SKIP ci.sanitize: ") and done.stdout.count("\n") == 1, done.stdout
    assert "compute-sanitizer is not on PATH" in done.stdout or "no CUDA GPU" in done.stdout
    required = subprocess.run([sys.executable, "-m", "ci.sanitize", "--require"], cwd=ROOT, capture_output=True,
                              text=True, timeout=120)
    assert required.returncode == 2


def test_racecheck_summary_is_the_verdict():
    """racecheck prints no ERROR SUMMARY line; its hazard summary carries the error count."""
    _, _, clean = sanitize.parse_output("========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n", [])
    _, _, dirty = sanitize.parse_output("========= RACECHECK SUMMARY: 3 hazards displayed (2 errors, 1 warnings)\n", [])
    assert (clean, dirty) == (0, 2)


def test_a_named_experimental_variant_is_found():
    """A mutant's variant may be experimental (the catalog's ``_rs`` left production when its
    staged-epilogue twin took its place): a named label is looked up in the whole declared matrix;
    without labels the first production variants are taken."""
    from ci.sanitize import choose_variants
    from kernel.hopper.variants import FASTEST_CONFIG, PRODUCTION_VARIANTS

    assert FASTEST_CONFIG not in PRODUCTION_VARIANTS
    _, chosen, missing = choose_variants("hopper", [FASTEST_CONFIG.label], 2)
    assert [v.label for v in chosen] == [FASTEST_CONFIG.label] and not missing
    _, chosen, missing = choose_variants("hopper", ["no_such_label"], 2)
    assert not chosen and missing == {"no_such_label"}
    _, chosen, _ = choose_variants("hopper", [], 2)
    assert [v.label for v in chosen] == [c.label for c in PRODUCTION_VARIANTS[:2]]
