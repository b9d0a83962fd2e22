"""Inline PTX the Hopper kernel needs and CuTe DSL 4.8.1 has no op for.

* ``bulk_copy_g2s``: ``cp.async.bulk`` (the copy engine, no tensor map) of one contiguous run
  of bytes into shared memory, completing on an mbarrier's transaction count. Rows of packed
  FP4 and 128-row scale blocks are contiguous runs, so no per-group descriptor is needed.
* ``dequant_unit``: 16 bytes of packed FP4 (32 K elements of one row) and their two E4M3 scales
  -> 32 fp16 values written as four 16-byte vectors into a swizzled wgmma operand buffer.
* ``store_f16``: one fp16 store of a scaled fp32 accumulator element.

Decoding (exact, no table): an E2M1 code ``s e1 e0 m`` placed as fp16 bits ``s<<15 | em<<9`` is
``value * 2^-14`` (the e == 0 case lands on fp16 subnormals, which fp16 arithmetic keeps). Each
32-bit word of 8 nibbles n0..n7 becomes four fp16x2 registers holding (n_j, n_{j+4}); that
permutes K inside every 8-element group, identically for both operands, so the dot products are
unchanged. The E4M3 scale goes to fp16 with ``cvt.rn.f16x2.e4m3x2`` (sm_89+); one ``mul.f16x2``
then gives ``code * scale * 2^-14`` exactly (an integer times 2^-24, at most 6 significant bits),
or with ``exp_shift == 0`` a first multiply by 2^14 gives the exact value itself.
"""

from __future__ import annotations

from cutlass._mlir.dialects import llvm
from cutlass.cutlass_dsl import T, dsl_user_op
from cutlass.cute.typing import Float32, Int32, Int64

_SHIFTS = ((9, 12), (5, 8), (1, 4), (-3, 0))  # (magnitude, sign) left shifts for j = 0..3


def _shl(dst: str, src: str, amount: int) -> str:
    if amount > 0:
        return f"shl.b32 {dst}, {src}, {amount};"
    if amount < 0:
        return f"shr.b32 {dst}, {src}, {-amount};"
    return f"mov.b32 {dst}, {src};"


def _dequant_asm(exp_shift: int) -> str:
    lines = [
        "{",
        ".reg .b32 w<4>, p, sc<2>, t, u, q<4>;",
        ".reg .b16 hs, h<2>;",
        ".reg .b32 two14;",
        "mov.b32 two14, 0x74007400;",
        "ld.shared.v4.b32 {w0, w1, w2, w3}, [$0];",
        "ld.shared.b16 hs, [$1];",
        "cvt.u32.u16 p, hs;",
        "prmt.b32 p, p, 0, 0x1100;",
        "mov.b32 {h0, h1}, p;",
        "cvt.rn.f16x2.e4m3x2 sc0, h0;",
        "cvt.rn.f16x2.e4m3x2 sc1, h1;",
    ]
    for word in range(4):
        for j, (mag, sgn) in enumerate(_SHIFTS):
            lines.append(_shl("t", f"w{word}", mag))
            lines.append("and.b32 t, t, 0x0E000E00;")
            lines.append(_shl("u", f"w{word}", sgn))
            lines.append("and.b32 u, u, 0x80008000;")
            lines.append(f"or.b32 q{j}, t, u;")
            if exp_shift == 0:
                lines.append(f"mul.rn.f16x2 q{j}, q{j}, two14;")  # x 2^14: the code's value
            lines.append(f"mul.rn.f16x2 q{j}, q{j}, sc{word // 2};")
        lines.append(f"st.shared.v4.b32 [${2 + word}], {{q0, q1, q2, q3}};")
    lines.append("}")
    return "\n".join(lines)


@dsl_user_op
def dequant_unit(
    raw_addr: Int32,
    sf_addr: Int32,
    dst0: Int32,
    dst1: Int32,
    dst2: Int32,
    dst3: Int32,
    exp_shift: int,
    *,
    loc=None,
    ip=None,
) -> None:
    """Dequantize 32 K elements: 16 raw bytes at ``raw_addr`` (shared), 2 scale bytes at
    ``sf_addr`` (words 0-1 use the first, 2-3 the second), fp16 chunks to ``dst0..dst3``."""
    operands = [Int32(x).ir_value(loc=loc, ip=ip) for x in (raw_addr, sf_addr, dst0, dst1, dst2, dst3)]
    llvm.inline_asm(
        None,
        operands,
        _dequant_asm(exp_shift),
        "r,r,r,r,r,r,~{memory}",
        has_side_effects=True,
        is_align_stack=False,
        asm_dialect=llvm.AsmDialect.AD_ATT,
        loc=loc,
        ip=ip,
    )


@dsl_user_op
def bulk_copy_g2s(dst_smem: Int32, src_gmem: Int64, num_bytes: Int32, mbar_smem: Int32, *, loc=None, ip=None) -> None:
    llvm.inline_asm(
        None,
        [
            Int32(dst_smem).ir_value(loc=loc, ip=ip),
            Int64(src_gmem).ir_value(loc=loc, ip=ip),
            Int32(num_bytes).ir_value(loc=loc, ip=ip),
            Int32(mbar_smem).ir_value(loc=loc, ip=ip),
        ],
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1], $2, [$3];",
        "r,l,r,r,~{memory}",
        has_side_effects=True,
        is_align_stack=False,
        asm_dialect=llvm.AsmDialect.AD_ATT,
        loc=loc,
        ip=ip,
    )


@dsl_user_op
def store_f16(addr: Int64, value: Float32, multiplier: Float32, *, loc=None, ip=None) -> None:
    """``*addr = fp16(value * multiplier)`` (round to nearest even; multiplier a power of two)."""
    llvm.inline_asm(
        None,
        [
            Int64(addr).ir_value(loc=loc, ip=ip),
            Float32(value).ir_value(loc=loc, ip=ip),
            Float32(multiplier).ir_value(loc=loc, ip=ip),
        ],
        "{\n.reg .f32 f;\n.reg .b16 h;\nmul.rn.f32 f, $1, $2;\ncvt.rn.f16.f32 h, f;\nst.global.b16 [$0], h;\n}",
        "l,f,f,~{memory}",
        has_side_effects=True,
        is_align_stack=False,
        asm_dialect=llvm.AsmDialect.AD_ATT,
        loc=loc,
        ip=ip,
    )


@dsl_user_op
def cp_async_16(dst_smem: Int32, src_gmem: Int64, *, loc=None, ip=None) -> None:
    """16-byte ``cp.async.cg`` (L2 only); completion is tracked by the pipeline's mbarrier."""
    llvm.inline_asm(
        None,
        [Int32(dst_smem).ir_value(loc=loc, ip=ip), Int64(src_gmem).ir_value(loc=loc, ip=ip)],
        "cp.async.cg.shared.global [$0], [$1], 16;",
        "r,l,~{memory}",
        has_side_effects=True,
        is_align_stack=False,
        asm_dialect=llvm.AsmDialect.AD_ATT,
        loc=loc,
        ip=ip,
    )
