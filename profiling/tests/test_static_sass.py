"""profiling.sass and the static report's plumbing, on recorded text and one tiny compile."""

import json
import subprocess
import sys

import pytest

from profiling import sass, static_report

SASS_TEXT = """
\tcode for sm_100a
\t\tFunction : kernel_x
\t.headerflags\t@"EF_CUDA_ACCELERATORS EF_CUDA_SM100 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM100)"
        /*0000*/                   LDC R1, c[0x0][0x37c] ;                          /* 0x0000df00ff017b82 */
                                                                                    /* 0x000e700000000800 */
        /*0010*/               @P1 STL [R1+0x20], R138 ;                            /* 0x0000208a01001387 */
        /*0020*/              @!P2 STL.S16 [R1+0x1e], R50 ;                         /* 0x00001e320100a387 */
        /*0030*/                   UTMALDG.3D [UR48], [UR22], desc[URZ] ;           /* 0x0000ff30160075b4 */
        /*0040*/                   UTCOMMA.4X gdesc[UR58], gdesc[UR60], tmem[UR19], tmem[UR44], idesc[UR45], tmem[UR6], UP1 ;
        /*0050*/                   LDTM.x128 R4, tmem[UR6] ;                        /* 0x00000006000479ee */
        /*0060*/              @!UP0 SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4], R3 ;
        /*0070*/                   HGMMA.64x128x16.F32 R24, gdesc[UR4], R24 ;
        /*0080*/                   STG.E.128 desc[UR4][R2.64], R8 ;
        /*0090*/                   LDL.LU R3, [R1+0x4] ;
"""

RESOURCE_TEXT = """
Resource usage:
 Common:
  GLOBAL:0
 Function kernel_x:
  REG:255 STACK:208 SHARED:1024 LOCAL:0 CONSTANT[0]:1728 TEXTURE:0 SURFACE:0 SAMPLER:0
"""


def test_parse_sass_reads_predicates_and_modifiers():
    ins = sass.parse_sass(SASS_TEXT)
    assert [i.offset for i in ins] == list(range(0, 0xA0, 0x10))
    assert ins[1].predicate == "@P1" and ins[1].opcode == "STL"
    assert ins[2].predicate == "@!P2" and ins[2].opcode == "STL.S16"
    assert ins[6].predicate == "@!UP0" and ins[6].mnemonic == "SYNCS"
    assert {i.function for i in ins} == {"kernel_x"}


def test_family_counts():
    counts = sass.family_counts(sass.parse_sass(SASS_TEXT))
    expect = {"local_store": 2, "local_load": 1, "tma_load": 1, "mma_tcgen05": 1, "tmem_load": 1,
              "mbarrier_wait": 1, "mma_hgmma": 1, "global_store": 1, "global_store_128": 1}
    assert {k: v for k, v in counts.items() if v} == expect


def test_spans():
    ins = sass.parse_sass(SASS_TEXT)
    spans = sass.role_spans(ins, ["tma_load", "local_store", "tmem_store"])
    assert spans == {"tma_load": (0x30, 0x30), "local_store": (0x10, 0x20), "tmem_store": None}
    assert sass.spans_disjoint(spans["tma_load"], spans["local_store"])
    assert not sass.spans_disjoint((0, 10), (5, 20))


def test_parse_resource_usage():
    (u,) = sass.parse_resource_usage(RESOURCE_TEXT)
    assert (u.function, u.registers, u.stack_bytes, u.shared_bytes, u.constant0_bytes) == ("kernel_x", 255, 208, 1024, 1728)


def test_tools_are_found():
    assert sass.find_tool("cuobjdump") and sass.find_tool("nvdisasm")


def test_markdown_table_has_every_column():
    table = static_report.markdown_table([{"label": "x", "registers": 52}])
    head, rule, row = table.splitlines()
    assert head.count("|") == rule.count("|") == row.count("|") == len(static_report.TABLE_COLUMNS) + 1
    assert "| x |" in row and "| 52 |" in row


def test_missing_family_is_reported_not_raised(monkeypatch, tmp_path):
    monkeypatch.setitem(static_report.FAMILIES, "nonesuch", "kernel.nonesuch_family")
    rows, status = static_report.build_family("nonesuch", tmp_path)
    assert rows == [] and status.startswith("missing")


@pytest.mark.compile
def test_cli_one_variant_in_a_subprocess(tmp_path):
    out = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "profiling.static_report", "--family", "blackwell", "--isolate",
         "--match", "mono-t128x128x256-ab1-", "--json", str(out)],
        capture_output=True, text=True, check=True,
    )
    report = json.loads(out.read_text())
    (row,) = report["variants"]
    assert row["label"] == "bw-mono-t128x128x256-ab1-acc1" and row["spill_stores"] == 0
    assert "| bw-mono-t128x128x256-ab1-acc1 |" in proc.stdout
    assert "[blackwell 1/1]" in proc.stderr


def test_runs_group_an_opcode_until_a_breaking_instruction():
    ops = ["STSM", "IMAD", "STSM", "BAR.SYNC", "LDS.128", "STSM", "STSM", "HGMMA.64x128x16.F32", "MOV", "STSM"]
    code = [sass.Instruction("k", 16 * n, "", op, "") for n, op in enumerate(ops)]
    assert sass.runs(code, "STSM", ("BAR.SYNC", "LDS", "HGMMA")) == [(0, 2), (5, 6), (9, 9)]
    assert sass.runs(code, "STSM", ("BAR.SYNC",)) == [(0, 2), (5, 9)]  # LDS and HGMMA do not break it here
    assert sass.runs(code, "UTMALDG", ("BAR",)) == []
