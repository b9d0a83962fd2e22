"""The device tables in shared memory (``HopperConfig.smem_tables``, label ``_st``, session 13).

A ``_st`` build copies the sizes, tile-prefix and pointer tables into shared memory at its start
(``kernel.hopper.kernel.tables_to_smem``: one element per thread and table, every load before
any store, one round trip, then one CTA barrier) and reads them from there ever after, with guard rows around each table that
hold ``kernel.tables``' guard fills. On the CPU: the budget, the SASS (no table read from global
memory after the copy, the copy's barrier before the first shared read) and the copy's compiled
code; on an sm_90 GPU the copy itself, guard rows included, against the table it copies.
"""

# no `from __future__ import annotations`: cute.struct reads real annotation objects

import dataclasses

import pytest

from kernel.hopper.config import (DECLARED_VARIANTS, FASTEST_STAGED_PDL_CONFIG, FASTEST_STAGED_PDL_ST_CONFIG,
                                  PREPASS_BATCH, SMEM_TABLE_GUARD_ROWS, SMEM_TABLE_MAX_GROUPS, SPLIT_WARP_CONFIG,
                                  SPLIT_WARP_ST_CONFIG, config_problems, epilogue_stage_rows, smem_bytes,
                                  smem_table_bytes, smem_table_words)
from kernel.tables import GUARD_POINTER, GUARD_PREFIX, GUARD_SIZE

ST_CONFIGS = [c for c in DECLARED_VARIANTS if c.smem_tables]
TWINS = [(SPLIT_WARP_ST_CONFIG, SPLIT_WARP_CONFIG), (FASTEST_STAGED_PDL_ST_CONFIG, FASTEST_STAGED_PDL_CONFIG)]


# ---------------------------------------------------------------- config and budget (no compile)
def test_label_and_rule():
    assert SPLIT_WARP_ST_CONFIG.label == SPLIT_WARP_CONFIG.label + "_st"
    assert FASTEST_STAGED_PDL_ST_CONFIG.label.endswith("_pdl_st")
    bad = dataclasses.replace(SPLIT_WARP_CONFIG, smem_tables=1)
    assert any("smem_tables must be a bool" in p for p in config_problems(bad))


def test_table_bytes_are_the_largest_build_and_counted_in_the_budget():
    w = smem_table_words(SMEM_TABLE_MAX_GROUPS)
    g = SMEM_TABLE_GUARD_ROWS
    assert w == {"pointers": 5 * (64 + 2 * g), "sizes": 4 * (64 + 2 * g), "prefix": 65 + 2 * g}
    assert smem_table_bytes(SPLIT_WARP_CONFIG) == 0
    need = 8 * w["pointers"] + 4 * (w["sizes"] + w["prefix"])
    assert need <= smem_table_bytes(SPLIT_WARP_ST_CONFIG) < need + 8
    for st, plain in TWINS:
        assert not config_problems(st), config_problems(st)
        a, b = smem_bytes(st), smem_bytes(plain)
        assert a["barriers"] - b["barriers"] == smem_table_bytes(st)
        assert a["total"] - b["total"] == smem_table_bytes(st)
        # the tables do not cost the staged epilogue rows
        assert epilogue_stage_rows(st) == epilogue_stage_rows(plain)


def test_declared_st_builds_are_twins_of_declared_builds():
    labels = {c.label for c in DECLARED_VARIANTS}
    assert ST_CONFIGS, "no declared build reads its tables from shared memory"
    for c in ST_CONFIGS:
        assert dataclasses.replace(c, smem_tables=False).label in labels, c.label


# ------------------------------------------------------------------------- SASS (CPU compile)
def _ops(config, tmp_path):
    from kernel.hopper import static_build
    from profiling import sass

    build = static_build(config, tmp_path, num_groups=8)
    return [i.opcode for i in sass.kernel_code(build["cubin"])]


def _table_reads(ops):
    """(the copy's global loads, index of the first shared load, global loads after it)."""
    first_lds = next(n for n, o in enumerate(ops) if o.startswith("LDS"))
    ldg = [n for n, o in enumerate(ops) if o.startswith("LDG")]
    return [n for n in ldg if n < first_lds], first_lds, [ops[n] for n in ldg if n > first_lds]


@pytest.mark.compile
@pytest.mark.parametrize("config", ST_CONFIGS, ids=[c.label for c in ST_CONFIGS])
def test_st_sass_reads_no_table_from_global_after_the_copy(config, tmp_path):
    ops = _ops(config, tmp_path)
    copy, first_lds, later = _table_reads(ops)
    # one load per table and thread (8 groups: every table has at most as many elements as the CTA
    # has threads), then the copy's CTA barrier, then the first shared load
    assert len(copy) == 3, [ops[n] for n in copy]
    # all three issued before any store (one round trip; a store between two loads waits for the
    # first: three round trips, 0.4 us more per launch on the H200, session 13)
    assert not [o for o in ops[copy[0]:copy[-1]] if o.startswith(("STS", "BRA"))], ops[copy[0]:copy[-1] + 1]
    assert any(o.startswith("BAR.SYNC") for o in ops[copy[-1]:first_lds]), "no CTA barrier between the copy and a read"
    if config.y_source == "prepass":
        # what is left is phase 1's own: its items' raw runs and scale words, and thread 0's spin
        assert sorted(later) == sorted(["LDG.E.128"] * 2 * PREPASS_BATCH + ["LDG.E"] * PREPASS_BATCH
                                       + ["LDG.E.STRONG.GPU"]), later
    else:
        assert later == [], later  # every operand load is a TMA or bulk copy
    # the twin without shared tables reads its pointer table from global memory in the tile loop
    twin = _ops(dataclasses.replace(config, smem_tables=False), tmp_path / "twin")
    _c, _f, twin_later = _table_reads(twin)
    assert "LDG.E.64" in twin_later


# ------------------------------------------------------------------ the copy on its own
def _dump_kernel(rows: int, width: int, dtype_name: str, fill: int, threads: int):
    """A one-CTA kernel: ``copy_tables_to_smem`` of ``rows`` x ``width`` elements, then every
    shared element (guard rows included) stored to ``out``."""
    import cuda.bindings.driver as cuda
    import cutlass
    import cutlass.cute as cute

    from kernel.hopper.kernel import copy_tables_to_smem

    dtype = getattr(cutlass, dtype_name)
    lead = SMEM_TABLE_GUARD_ROWS * width
    real = rows * width
    count = real + 2 * lead

    class Dump:
        def __init__(self):
            @cute.struct
            class Storage:
                t: cute.struct.MemRange[dtype, count]

            self.storage = Storage

        @cute.jit
        def __call__(self, src: cute.Pointer, out: cute.Pointer, stream: cuda.CUstream):
            self.kernel(src, out).launch(grid=(1, 1, 1), block=(threads, 1, 1), stream=stream)

        @cute.kernel
        def kernel(self, src: cute.Pointer, out: cute.Pointer):
            tidx, _, _ = cute.arch.thread_idx()
            tidx = cutlass.Int32(tidx)
            storage = cutlass.utils.SmemAllocator().allocate(self.storage)
            copy_tables_to_smem(tidx, threads, (src,), (storage.t.data_ptr(),), (real,), (lead,), (fill,))
            cute.arch.barrier()
            s = cute.make_tensor(storage.t.data_ptr(), cute.make_layout(count))
            o = cute.make_tensor(out, cute.make_layout(count))
            for j in cutlass.range_constexpr((count + threads - 1) // threads):
                i = tidx + j * threads
                if i < count:
                    o[i] = s[i]

    return Dump(), dtype, count, lead


# (rows, width, element type, the guard fill kernel.tables uses for that table); rows for 1, 3
# and the most groups; 96 threads: one pass for small tables, several for the pointers
CASES = [(g + extra, w, t, f) for g in (1, 3, SMEM_TABLE_MAX_GROUPS)
         for (extra, w, t, f) in ((0, 4, "Int32", GUARD_SIZE), (1, 1, "Int32", GUARD_PREFIX),
                                  (0, 5, "Int64", GUARD_POINTER))]
THREADS = 96


def _compile(case, tmp_path):
    import cutlass
    import cutlass.cute as cute
    import cuda.bindings.driver as cuda
    from cutlass.cute.runtime import make_ptr

    from kernel.hopper.launch import _import_cutlass, compile_options

    _import_cutlass()
    rows, width, tname, fill = case
    dump, dtype, count, lead = _dump_kernel(rows, width, tname, fill, THREADS)
    fake = make_ptr(dtype, 16, cute.AddressSpace.gmem, assumed_align=16)
    compiled = cute.compile(dump, fake, fake, cuda.CUstream(0), options=compile_options(tmp_path))
    return compiled, dtype, count, lead


@pytest.mark.compile
def test_copy_compiles_for_sm90_with_every_barrier_reached_by_the_whole_cta(tmp_path):
    import glob
    import os

    from ci.ptx_convergence import check_ptx

    _compile(CASES[-1], tmp_path)
    (ptx,) = glob.glob(os.path.join(tmp_path, "**", "*.ptx"), recursive=True)
    with open(ptx) as f:
        assert not check_ptx(f.read())


def _skip_reason():
    from properties.subjects import gpu_skip_reason

    return gpu_skip_reason("hopper")


@pytest.mark.gpu
@pytest.mark.sm90
@pytest.mark.parametrize("case", CASES, ids=[f"{r}x{w}_{t}" for r, w, t, _f in CASES])
def test_copy_holds_the_table_between_its_guard_rows(case, tmp_path):
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    import torch
    from cutlass.cute.runtime import make_ptr
    import cutlass.cute as cute
    import cuda.bindings.driver as cuda

    compiled, dtype, count, lead = _compile(case, tmp_path)
    rows, width, tname, fill = case
    tdtype = torch.int32 if tname == "Int32" else torch.int64
    gen = torch.Generator().manual_seed(rows * 10 + width)
    lo, hi = (-2 ** 31, 2 ** 31 - 1) if tname == "Int32" else (-2 ** 62, 2 ** 62)
    src = torch.randint(lo, hi, (rows * width,), generator=gen, dtype=tdtype)
    src[src == fill] = 7  # no element equal to the guard fill
    out = torch.full((count,), 12345, dtype=tdtype, device="cuda")
    dev = src.cuda()

    def ptr(t):
        return make_ptr(dtype, t.data_ptr(), cute.AddressSpace.gmem, assumed_align=16)

    compiled(ptr(dev), ptr(out), cuda.CUstream(torch.cuda.current_stream().cuda_stream))
    torch.cuda.synchronize()
    want = torch.cat([torch.full((lead,), fill, dtype=tdtype), src, torch.full((lead,), fill, dtype=tdtype)])
    assert torch.equal(out.cpu(), want)
