"""ci.ptx_convergence: the rules on hand-written PTX, then on kernels CuTe DSL compiles (the
project's own builds are checked where they are compiled: kernel/tests/test_hopper_compile.py,
profiling/tests/test_static_blackwell.py)."""

import glob
import os

import pytest

from ci.ptx_convergence import check_ptx

HEAD = """
.version 8.7
.target sm_90a
.address_size 64
.visible .entry k(.param .u32 n)
{
\t.reg .pred %p<20>;
\t.reg .b32 %r<40>;
\tld.param.u32 %r30, [n];
\tmov.u32 %r1, %tid.x;
\tshr.u32 %r2, %r1, 5;
\tshfl.sync.idx.b32 %r3, %r2, 0, 31, -1;
\tand.b32 %r4, %r1, 31;
"""
TAIL = "\tret;\n}\n"


def violations(body: str) -> list[str]:
    return [f"{v.rule} [{v.level}] {v.text}" for _, v in check_ptx(HEAD + body + TAIL)]


def test_cta_barrier_after_a_warp_role_branch_is_fine():
    assert violations("""
\tsetp.ne.b32 %p1, %r3, 0;
\t@%p1 bra $L_other;
\tadd.s32 %r5, %r30, 1;
\tbra.uni $L_join;
$L_other:
\tadd.s32 %r5, %r30, 2;
$L_join:
\tbar.sync 0;
""") == []


def test_cta_barrier_at_two_warp_role_sites_is_reported():
    found = violations("""
\tsetp.ne.b32 %p1, %r3, 0;
\t@%p1 bra $L_other;
\tbar.sync 0;
\tbra.uni $L_join;
$L_other:
\tbar.sync 0;
$L_join:
""")
    assert len(found) == 2 and all("CTA-wide" in f and "[warp]" in f for f in found), found


def test_counted_barrier_is_fine_per_warp_and_reported_per_lane():
    assert violations("""
\tsetp.ne.b32 %p1, %r3, 0;
\t@%p1 bra $L_join;
\tbar.sync 1, 128;
$L_join:
""") == []
    found = violations("""
\tsetp.ne.b32 %p1, %r4, 0;
\t@%p1 bra $L_join;
\tbar.sync 1, 128;
$L_join:
""")
    assert len(found) == 1 and "whole warps" in found[0] and "[lane]" in found[0], found


def test_barrier_reduction_without_a_count_is_cta_wide():
    found = violations("""
\tsetp.ne.b32 %p1, %r3, 0;
\t@%p1 bra $L_join;
\tbar.red.popc.u32 %r13, 0, %p1;
\tbar.red.popc.u32 %r14, 1, 128, %p1;
$L_join:
""")
    assert len(found) == 1 and "CTA-wide" in found[0] and "%r13" in found[0], found


def test_warp_collective_under_elect_is_reported():
    found = violations("""
\telect.sync %r6|%p2, -1;
\t@!%p2 bra $L_join;
\twgmma.commit_group.sync.aligned;
$L_join:
""")
    assert len(found) == 1 and "wgmma.commit_group" in found[0], found


def test_guarded_barrier_is_reported():
    found = violations("""
\tsetp.eq.b32 %p3, %r30, 0;
\t@%p3 bar.sync 0;
""")
    assert len(found) == 1, found  # even on a uniform guard: one instruction, not reached by all


def test_barrier_in_a_loop_with_a_per_lane_trip_count_is_reported():
    found = violations("""
\tmov.b32 %r7, 0;
$L_loop:
\tbar.sync 0;
\tadd.s32 %r7, %r7, 1;
\tsetp.lt.s32 %p4, %r7, %r4;
\t@%p4 bra $L_loop;
""")
    assert len(found) == 1 and "[lane]" in found[0], found


def test_a_value_merged_from_a_divergent_branch_is_divergent():
    found = violations("""
\tsetp.eq.b32 %p5, %r4, 0;
\t@%p5 bra $L_a;
\tmov.b32 %r8, 1;
\tbra.uni $L_m;
$L_a:
\tmov.b32 %r8, 2;
$L_m:
\tsetp.eq.b32 %p6, %r8, 1;
\t@%p6 bra $L_j;
\tbar.sync 0;
$L_j:
""")
    assert len(found) == 1, found


def test_register_reused_after_a_divergent_phase_keeps_the_uniform_value_apart():
    # %r9 holds a uniform value first, then (inside a warp role) a per-lane one; the loop that
    # reads the first value is uniform
    assert violations("""
\tmov.u32 %r9, %nctaid.x;
\tmov.b32 %r10, 0;
$L_loop:
\tbar.sync 0;
\tadd.s32 %r10, %r10, 1;
\tsetp.lt.s32 %p7, %r10, %r9;
\t@%p7 bra $L_loop;
\tsetp.ne.b32 %p8, %r3, 0;
\t@%p8 bra $L_end;
\tmov.b32 %r9, %r4;
$L_end:
""") == []


def test_butterfly_reduction_is_warp_uniform():
    body = """
\tsetp.ne.b32 %p1, %r3, 0;
\t@%p1 bra $L_end;
\tmov.b32 %r11, %r4;
"""
    for k in (16, 8, 4, 2, 1):
        body += f"\tshfl.sync.bfly.b32 %r12, %r11, {k}, 31, -1;\n\tmin.s32 %r11, %r11, %r12;\n"
    partial = body.replace("\tshfl.sync.bfly.b32 %r12, %r11, 1, 31, -1;\n\tmin.s32 %r11, %r11, %r12;\n", "")
    use = """
\tsetp.lt.s32 %p9, %r11, 3;
\t@%p9 bra $L_end;
\tbar.sync 1, 32;
$L_end:
"""
    assert violations(body + use) == []
    assert len(violations(partial + use)) == 1  # four steps leave pairs of lanes apart


def test_inline_asm_scopes_reuse_label_names():
    """Two inline-asm blocks, each with its own DONE: the first block's per-lane branch skips only
    its own add. Resolved to the other block's DONE (the later one, past the barrier), it would
    skip the barrier in some lanes."""
    assert violations("""
\t{
\t.reg .pred P1;
\tsetp.eq.b32 P1, %r4, 0;
\t@P1 bra.uni DONE;
\tadd.s32 %r20, %r30, 1;
\tDONE:
\t}
\tbar.sync 0;
\t{
\t.reg .pred P1;
\tsetp.eq.b32 P1, %r30, 1;
\t@P1 bra.uni DONE;
\tadd.s32 %r21, %r30, 1;
\tDONE:
\t}
""") == []


# ---- kernels compiled by CuTe DSL (no GPU needed) ------------------------------------------------

def _compile_pattern(pattern: str, folder) -> str:
    os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")
    import cutlass
    import cutlass.cute as cute

    @cute.kernel
    def kernel(n: cutlass.Int32):
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        tidx, _, _ = cute.arch.thread_idx()
        if cutlass.const_expr(pattern == "two_sites"):
            if warp == 0:
                cute.arch.barrier()
            else:
                cute.arch.barrier()
        elif cutlass.const_expr(pattern == "after_join"):
            if warp == 0:
                n = n + 1
            cute.arch.barrier()
        elif cutlass.const_expr(pattern == "lane_named"):
            if tidx % 32 == 0:
                cute.arch.barrier(barrier_id=1, number_of_threads=64)

    @cute.jit
    def launch(n: cutlass.Int32):
        kernel(n).launch(grid=(1, 1, 1), block=(64, 1, 1))

    cute.compile(launch, cutlass.Int32(1), options=f"--gpu-arch sm_90a --keep-ptx --dump-dir {folder}")
    (ptx,) = glob.glob(os.path.join(folder, "*.ptx"))
    with open(ptx) as f:
        return f.read()


@pytest.mark.compile
@pytest.mark.parametrize("pattern, expected", [("two_sites", 2), ("after_join", 0), ("lane_named", 1)])
def test_compiled_patterns(pattern, expected, tmp_path):
    """The shape of a known bug (cute.arch.barrier() in both arms of a warp-index branch), its
    fix (one barrier after the join) and a named barrier under a lane test, as CuTe DSL emits
    them (the warp index broadcast by shfl.sync.idx)."""
    found = check_ptx(_compile_pattern(pattern, tmp_path))
    assert len(found) == expected, [str(v) for _, v in found]
