"""Inline PTX the Hopper kernel needs and CuTe DSL 4.8.1 has no op for.

* ``bulk_copy_g2s``: ``cp.async.bulk`` (the copy engine, no tensor map) of one contiguous run
  of bytes into shared memory, completing on an mbarrier's transaction count. Rows of packed
  FP4 and 128-row scale blocks are contiguous runs, so no per-group descriptor is needed.
* ``dequant_unit``: 16 bytes of packed FP4 (32 K elements of one row) and their two E4M3 scales
  -> 32 fp16 values written as four 16-byte vectors into a swizzled wgmma operand buffer.
* ``store_f16``: one fp16 store of a scaled fp32 accumulator element.
* ``stmatrix_x4_trans_f16``, ``ld_shared_v4_b32``, ``st_global_v4_b32``, ``st_global_f16x8_tail``:
  the staged epilogue (``epilogue="smem"``, kernel/hopper/staging.py): eight scaled accumulators
  rounded as ``store_f16`` rounds them, into shared memory by ``stmatrix.trans``; 16-byte chunks
  of C back out and to global memory (2-byte stores for a row that is not 16-byte aligned).
* ``sleep_ns`` / ``sleep_ns_jittered``, ``poison_shared``: the schedule perturbation of
  non-production builds (kernel/perturbation.py); a production build never calls them.

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
from cutlass.cutlass_dsl import dsl_user_op
from cutlass.cute.typing import Float32, Int32, Int64

_SHIFTS = ((9, 12), (5, 8), (1, 4), (-3, 0))  # (magnitude, sign) left shifts for j = 0..3


def _inline_asm(asm: str, constraints: str, operands: list, *, loc=None, ip=None) -> None:
    """One side-effecting inline-PTX statement (no results); ``operands`` are MLIR values."""
    llvm.inline_asm(
        None,
        operands,
        asm,
        constraints,
        has_side_effects=True,
        is_align_stack=False,
        asm_dialect=llvm.AsmDialect.AD_ATT,
        loc=loc,
        ip=ip,
    )


def _inline_asm_u32(n: int, asm: str, constraints: str, operands: list, *, loc=None, ip=None) -> list:
    """A side-effecting inline-PTX statement with ``n`` u32 results (``$0 .. $n-1``; the
    constraints list the ``=r`` outputs first): the results as a list of Int32."""
    from cutlass.cutlass_dsl import T

    result_type = T.i32() if n == 1 else llvm.StructType.get_literal([T.i32()] * n)
    res = llvm.inline_asm(result_type, operands, asm, constraints, has_side_effects=True, is_align_stack=False,
                          asm_dialect=llvm.AsmDialect.AD_ATT, loc=loc, ip=ip)
    if n == 1:
        return [Int32(res)]
    return [Int32(llvm.extractvalue(T.i32(), res, [k], loc=loc, ip=ip)) for k in range(n)]


def _ir(loc, ip, *typed) -> list:
    """``(DslType, value)`` pairs -> MLIR values, in order (the inline asm's ``$i``)."""
    return [t(v).ir_value(loc=loc, ip=ip) for t, v in typed]


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
    _inline_asm(_dequant_asm(exp_shift), "r,r,r,r,r,r,~{memory}", operands, loc=loc, ip=ip)


# ---- dequant="prmt": byte-permute decode, loads of a whole sub-block issued first ----------
# Per 32-bit word w of 8 nibbles n0..n7 (n_k at bits 4k..4k+3), with C = PRMT_EM_MASK:
#   y  = w & PRMT_SIGN_MASK          sign bits of all eight nibbles (bit 4k+3)
#   he = (w << 1) & C | (y << 4) & ~C  byte b = hb(n_{2b}):   em at bits 8b+1..8b+3, sign at 8b+7
#   ho = (w >> 3) & C | y & ~C         byte b = hb(n_{2b+1})
# where hb(n) = s<<7 | em<<1 is the high byte of the fp16 bits s<<15 | em<<9 (= code * 2^-14,
# as in the "shift" decode). ~C keeps exactly the four wanted sign bits: the other four land on
# C positions. Then four byte permutes with a zero register, each placing two hb bytes as the
# high bytes of an fp16x2 (low bytes zero): q0 = (n0, n2), q1 = (n4, n6), q2 = (n1, n3),
# q3 = (n5, n7). This permutes K inside every 8-element group, identically for both operands.
PRMT_SIGN_MASK = 0x88888888
PRMT_EM_MASK = 0x0E0E0E0E
PRMT_LUT_MUX = 0xE4  # lop3 truth table of (a & c) | (b & ~c)
PRMT_SELECTORS = (0x1404, 0x3424)  # zero, byte 0/2, zero, byte 1/3 (b operand = 0)
PRMT_K_ORDER = (0, 2, 4, 6, 1, 3, 5, 7)  # K element of each fp16 slot in a 16-byte chunk


def _prmt_unit_lines(u: int, exp_shift: int, dst_ops: tuple[str, str, str, str]) -> list[str]:
    """Decode, scale and store unit ``u`` whose words ``w{u}_0..3`` and scale half-word
    ``hs{u}`` are already loaded."""
    lines = [
        f"cvt.u32.u16 sp, hs{u};",
        "prmt.b32 sp, sp, 0, 0x1100;",  # bytes (s0, s0, s1, s1)
        "mov.b32 {sh0, sh1}, sp;",
        "cvt.rn.f16x2.e4m3x2 sc0, sh0;",  # (s0, s0) for words 0-1 (K 0..15)
        "cvt.rn.f16x2.e4m3x2 sc1, sh1;",  # (s1, s1) for words 2-3 (K 16..31)
    ]
    for word in range(4):
        lines += _decode_word_lines(f"w{u}_{word}", ("q0", "q1", "q2", "q3"))
        scale = "sc0" if word < 2 else "sc1"
        for j in range(4):
            if exp_shift == 0:
                lines.append(f"mul.rn.f16x2 q{j}, q{j}, two14;")
            lines.append(f"mul.rn.f16x2 q{j}, q{j}, {scale};")
        lines.append(f"st.shared.v4.b32 [{dst_ops[word]}], {{q0, q1, q2, q3}};")
    return lines


def prmt_dequant_asm(n_units: int, exp_shift: int) -> str:
    """Inline PTX for ``n_units`` units; operands per unit ``u``: ``$(6u)`` raw address,
    ``$(6u+1)`` scale address, ``$(6u+2..6u+5)`` the four 16-byte fp16 destinations. Every
    shared load of the batch is issued before the first decode, so their latencies overlap."""
    words = ", ".join(f"w{u}_{k}" for u in range(n_units) for k in range(4))
    halves = ", ".join(f"hs{u}" for u in range(n_units))
    lines = [
        "{",
        f".reg .b32 {words};",
        f".reg .b16 {halves}, sh0, sh1;",
        ".reg .b32 sp, sc0, sc1, y, y4, x, xo, he, ho, q0, q1, q2, q3, two14;",
        "mov.b32 two14, 0x74007400;",
    ]
    for u in range(n_units):
        lines.append(f"ld.shared.v4.b32 {{w{u}_0, w{u}_1, w{u}_2, w{u}_3}}, [${6 * u}];")
    for u in range(n_units):
        lines.append(f"ld.shared.b16 hs{u}, [${6 * u + 1}];")
    for u in range(n_units):
        lines += _prmt_unit_lines(u, exp_shift, tuple(f"${6 * u + 2 + i}" for i in range(4)))
    lines.append("}")
    return "\n".join(lines)


@dsl_user_op
def dequant_units_prmt(units: list, exp_shift: int, *, loc=None, ip=None) -> None:
    """``units``: a list of ``(raw_addr, sf_addr, dst0, dst1, dst2, dst3)`` (shared addresses),
    each as for :func:`dequant_unit`; one inline-asm block decodes them all."""
    operands = [Int32(x).ir_value(loc=loc, ip=ip) for unit in units for x in unit]
    constraints = ",".join(["r"] * len(operands) + ["~{memory}"])
    _inline_asm(prmt_dequant_asm(len(units), exp_shift), constraints, operands, loc=loc, ip=ip)


@dsl_user_op
def bulk_copy_g2s(dst_smem: Int32, src_gmem: Int64, num_bytes: Int32, mbar_smem: Int32, *, loc=None, ip=None) -> None:
    _inline_asm(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1], $2, [$3];",
        "r,l,r,r,~{memory}",
        _ir(loc, ip, (Int32, dst_smem), (Int64, src_gmem), (Int32, num_bytes), (Int32, mbar_smem)),
        loc=loc,
        ip=ip,
    )


@dsl_user_op
def store_f16(addr: Int64, value: Float32, multiplier: Float32, *, loc=None, ip=None) -> None:
    """``*addr = fp16(value * multiplier)`` (round to nearest even; multiplier a power of two)."""
    _inline_asm(
        "{\n.reg .f32 f;\n.reg .b16 h;\nmul.rn.f32 f, $1, $2;\ncvt.rn.f16.f32 h, f;\nst.global.b16 [$0], h;\n}",
        "l,f,f,~{memory}",
        _ir(loc, ip, (Int64, addr), (Float32, value), (Float32, multiplier)),
        loc=loc,
        ip=ip,
    )


def stmatrix_f16_asm() -> str:
    """``epilogue="smem"``: eight fp32 accumulators ($1..$8) times the multiplier ($9), rounded
    to fp16 exactly as :func:`store_f16` rounds one (``mul.rn.f32``, then round to nearest even;
    ``cvt.rn.f16x2.f32 d, a, b`` rounds a and b each on its own and packs a high, b low), four
    fp16x2 registers (register j: $(2j+1) low, $(2j+2) high), one
    ``stmatrix.sync.aligned.m8n8.x4.trans.shared.b16`` at this lane's row address $0."""
    lines = ["{", ".reg .f32 f<8>;", ".reg .b32 h<4>;"]
    lines += [f"mul.rn.f32 f{k}, ${k + 1}, $9;" for k in range(8)]
    lines += [f"cvt.rn.f16x2.f32 h{j}, f{2 * j + 1}, f{2 * j};" for j in range(4)]
    lines += ["stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [$0], {h0, h1, h2, h3};", "}"]
    return "\n".join(lines)


@dsl_user_op
def stmatrix_x4_trans_f16(addr: Int32, values: list, multiplier: Float32, *, loc=None, ip=None) -> None:
    """``epilogue="smem"``: :func:`stmatrix_f16_asm` of the eight fp32 ``values`` (warp-wide:
    every lane of the warp executes it, each with its own row address, kernel/hopper/staging.py)."""
    _inline_asm(
        stmatrix_f16_asm(),
        "r," + ",".join(["f"] * 9) + ",~{memory}",
        _ir(loc, ip, (Int32, addr), *((Float32, v) for v in values), (Float32, multiplier)),
        loc=loc,
        ip=ip,
    )


@dsl_user_op
def ld_shared_v4_b32(addr: Int32, *, loc=None, ip=None) -> list:
    """``epilogue="smem"``: 16 bytes of shared memory as four u32 (one staged chunk: 8 fp16)."""
    return _inline_asm_u32(4, "ld.shared.v4.b32 {$0, $1, $2, $3}, [$4];", "=r,=r,=r,=r,r,~{memory}",
                           _ir(loc, ip, (Int32, addr)), loc=loc, ip=ip)


@dsl_user_op
def st_global_v4_b32(addr: Int64, words: list, *, loc=None, ip=None) -> None:
    """``epilogue="smem"``: one 16-byte global store (8 fp16 of a row of C; ``addr`` 16-aligned)."""
    _inline_asm("st.global.v4.b32 [$0], {$1, $2, $3, $4};", "l,r,r,r,r,~{memory}",
                _ir(loc, ip, (Int64, addr), *((Int32, w) for w in words)), loc=loc, ip=ip)


def st_global_f16x8_tail_asm() -> str:
    """The fp16 ``e`` (0..7) of the four words $1..$4 (word e // 2, low half first) stored with
    2-byte stores at $0 + 2e while ``e < $5``: a chunk of C whose row is not 16-byte aligned
    (n not a multiple of 8) or that runs past column n."""
    lines = ["{", ".reg .pred p;", ".reg .b16 e<8>;"]
    lines += [f"mov.b32 {{e{2 * w}, e{2 * w + 1}}}, ${w + 1};" for w in range(4)]
    for e in range(8):
        lines += [f"setp.gt.s32 p, $5, {e};", f"@p st.global.b16 [$0+{2 * e}], e{e};"]
    lines.append("}")
    return "\n".join(lines)


@dsl_user_op
def st_global_f16x8_tail(addr: Int64, words: list, count: Int32, *, loc=None, ip=None) -> None:
    """``epilogue="smem"``: :func:`st_global_f16x8_tail_asm` (the first ``count`` of 8 fp16)."""
    _inline_asm(st_global_f16x8_tail_asm(), "l,r,r,r,r,r,~{memory}",
                _ir(loc, ip, (Int64, addr), *((Int32, w) for w in words), (Int32, count)), loc=loc, ip=ip)


@dsl_user_op
def cp_async_16(dst_smem: Int32, src_gmem: Int64, *, loc=None, ip=None) -> None:
    """16-byte ``cp.async.cg`` (L2 only); completion is tracked by the pipeline's mbarrier."""
    _inline_asm(
        "cp.async.cg.shared.global [$0], [$1], 16;",
        "r,l,~{memory}",
        _ir(loc, ip, (Int32, dst_smem), (Int64, src_gmem)),
        loc=loc,
        ip=ip,
    )


@dsl_user_op
def mbarrier_complete_tx(mbar_smem: Int32, num_bytes: int, *, loc=None, ip=None) -> None:
    """Profiling only (the ``no_y_load`` ablation): complete ``num_bytes`` of the barrier's
    expected transaction count without a copy, as a TMA of that many bytes would."""
    _inline_asm(f"mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [$0], {int(num_bytes)};", "r,~{memory}",
                _ir(loc, ip, (Int32, mbar_smem)), loc=loc, ip=ip)


@dsl_user_op
def tma_load_rows(dst_smem: Int32, tensor_map: Int64, byte_col: Int32, row: Int32, mbar_smem: Int32, *, loc=None, ip=None) -> None:
    """One 2-D TMA box (rows x 128 bytes, 128-byte swizzle) from the tensor map at global
    address ``tensor_map``, starting at (``row``, ``byte_col``); completes on ``mbar_smem``."""
    _inline_asm(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [$0], [$1, {$2, $3}], [$4];",
        "r,l,r,r,r,~{memory}",
        _ir(loc, ip, (Int32, dst_smem), (Int64, tensor_map), (Int32, byte_col), (Int32, row), (Int32, mbar_smem)),
        loc=loc,
        ip=ip,
    )


# the CTAs of a 2-CTA cluster (HopperConfig.cluster_x = 2): ranks 0 and 1
CLUSTER_PAIR_MASK = 0b11


@dsl_user_op
def tensormap_acquire(tensor_map: Int64, *, loc=None, ip=None) -> None:
    """Order the tensor map's bytes (written before the launch) before TMA reads it."""
    _inline_asm(
        "fence.proxy.tensormap::generic.acquire.gpu [$0], 128;",
        "l,~{memory}",
        _ir(loc, ip, (Int64, tensor_map)),
        loc=loc,
        ip=ip,
    )


# ---- x_operand="regs": the wgmma A operand straight from registers -------------------------
# K order inside a 64-K sub-block (both operands). Thread t (= lane % 4) of a wgmma A fragment
# holds, per row and k16 step s, the fp16 pairs at logical k 16s+2t+{0,1} (jp=0) and
# 16s+2t+8+{0,1} (jp=1). It decodes the 8 packed bytes 8t..8t+7 of the row (words W[2t],
# W[2t+1], one E4M3 scale: t) into the 8 slots z = 2s + jp: slot z <- pair z % 4 of word
# W[2t + z // 4], where a word's pairs are the prmt decode's (n0,n2), (n4,n6), (n1,n3), (n5,n7).
# The Y operand (in shared memory) is written in the same order: fp16 chunk c (8 logical k) of
# a row holds, as 32-bit word t, pair c % 4 of word W[2t + c // 4] times scale t.
RS_PAIR_NIBBLES = ((0, 2), (4, 6), (1, 3), (5, 7))  # nibbles of a word behind pair j


def rs_physical_k(logical_k: int) -> tuple[int, int]:
    """The physical K positions (inside a 64-K sub-block) behind the fp16 pair that holds
    logical k (even): the host-side statement of the order above, for tests."""
    s, q = divmod(logical_k, 16)
    jp, r = divmod(q, 8)
    t = r // 2
    z = 2 * s + jp
    word = 2 * t + z // 4
    lo, hi = RS_PAIR_NIBBLES[z % 4]
    return 8 * word + lo, 8 * word + hi


def _decode_word_lines(w: str, out: tuple[str, str, str, str]) -> list[str]:
    """The prmt decode of word ``w`` into four fp16x2 registers (pairs 0..3, unscaled)."""
    return [
        f"and.b32 y, {w}, {PRMT_SIGN_MASK:#010x};",
        "shl.b32 y4, y, 4;",
        f"shl.b32 x, {w}, 1;",
        f"shr.b32 xo, {w}, 3;",
        f"lop3.b32 he, x, y4, {PRMT_EM_MASK:#010x}, {PRMT_LUT_MUX:#04x};",
        f"lop3.b32 ho, xo, y, {PRMT_EM_MASK:#010x}, {PRMT_LUT_MUX:#04x};",
        f"prmt.b32 {out[0]}, he, 0, {PRMT_SELECTORS[0]:#06x};",
        f"prmt.b32 {out[1]}, he, 0, {PRMT_SELECTORS[1]:#06x};",
        f"prmt.b32 {out[2]}, ho, 0, {PRMT_SELECTORS[0]:#06x};",
        f"prmt.b32 {out[3]}, ho, 0, {PRMT_SELECTORS[1]:#06x};",
    ]


def _scale_lines(dst: str, bytes_reg: str, byte: int) -> list[str]:
    """``dst`` = (s, s) fp16x2 of E4M3 byte ``byte`` of ``bytes_reg``."""
    sel = 0x4400 | (byte << 4) | byte
    return [f"prmt.b32 sp, {bytes_reg}, 0, {sel:#06x};", "mov.b32 {sh0, sh1}, sp;", f"cvt.rn.f16x2.e4m3x2 {dst}, sh0;"]


def _scaled(reg: str, scale: str, exp_shift: int) -> list[str]:
    lines = [f"mul.rn.f16x2 {reg}, {reg}, two14;"] if exp_shift == 0 else []
    return lines + [f"mul.rn.f16x2 {reg}, {reg}, {scale};"]


_RS_DECLS = [
    ".reg .b32 y, y4, x, xo, he, ho, sp, two14;",
    ".reg .b16 sh0, sh1;",
    "mov.b32 two14, 0x74007400;",
]


def rs_y_units_asm(n_units: int, exp_shift: int) -> str:
    """Y operand, unit = (row, a): operands per unit ``u`` (7 each): ``$(7u)`` address of the
    row's first sub-block chunk plus 4a, ``$(7u+1)`` of its second chunk plus 4a (both already
    swizzled), ``$(7u+2)`` the row's 4 scale bytes, ``$(7u+3..6)`` the fp16 destinations of
    chunks 4a..4a+3. Words W[a], W[a+2], W[a+4], W[a+6] carry scales 0..3."""
    lines = ["{", *_RS_DECLS]
    regs = ", ".join([f"w{u}_{t}, c{u}_{t}" for u in range(n_units) for t in range(4)] + [f"s{u}" for u in range(n_units)])
    pairs = ", ".join(f"q{u}_{t}_{j}" for u in range(n_units) for t in range(4) for j in range(4))
    lines.insert(1, f".reg .b32 {regs}, {pairs};")
    for u in range(n_units):
        b = 7 * u
        lines += [
            f"ld.shared.b32 w{u}_0, [${b}];",
            f"ld.shared.b32 w{u}_1, [${b}+8];",
            f"ld.shared.b32 w{u}_2, [${b + 1}];",
            f"ld.shared.b32 w{u}_3, [${b + 1}+8];",
            f"ld.shared.b32 s{u}, [${b + 2}];",
        ]
    for u in range(n_units):
        b = 7 * u
        for t in range(4):
            lines += _scale_lines(f"c{u}_{t}", f"s{u}", t)
            lines += _decode_word_lines(f"w{u}_{t}", tuple(f"q{u}_{t}_{j}" for j in range(4)))
            for j in range(4):
                lines += _scaled(f"q{u}_{t}_{j}", f"c{u}_{t}", exp_shift)
        for j in range(4):
            lines.append(f"st.shared.v4.b32 [${b + 3 + j}], {{q{u}_0_{j}, q{u}_1_{j}, q{u}_2_{j}, q{u}_3_{j}}};")
    lines.append("}")
    return "\n".join(lines)


def rs_x_fragment_asm(exp_shift: int, prefetched: bool = False) -> str:
    """X fragment of one thread and sub-block: outputs ``$0..$15`` (u32 index rh + 2*jp + 4*s
    for row half rh and slot z = 2s + jp); inputs ``$16``/``$17`` the 8-byte raw runs of rows
    g and g+8, ``$18``/``$19`` their scale bytes (scale t). ``prefetched``: the inputs are
    those bytes already loaded (:func:`rs_x_raw_asm`), ``$16..$19`` the two runs as four words
    and ``$20``/``$21`` the scale bytes: the same decode, no memory access."""
    lines = ["{", ".reg .b32 w0, w1, w2, w3, r0, r1, sc0, sc1;", *_RS_DECLS]
    if prefetched:
        lines += [f"mov.b32 {r}, ${16 + i};" for i, r in enumerate(("w0", "w1", "w2", "w3", "r0", "r1"))]
    else:
        lines += ["ld.shared.v2.b32 {w0, w1}, [$16];", "ld.shared.v2.b32 {w2, w3}, [$17];"]
        lines += ["ld.shared.u8 r0, [$18];", "ld.shared.u8 r1, [$19];"]
    lines += _scale_lines("sc0", "r0", 0) + _scale_lines("sc1", "r1", 0)
    for rh in range(2):
        for wi in range(2):
            outs = []
            for j in range(4):
                z = 4 * wi + j
                s_, jp = divmod(z, 2)
                outs.append(f"${rh + 2 * jp + 4 * s_}")
            lines += _decode_word_lines(f"w{2 * rh + wi}", tuple(outs))
            for o in outs:
                lines += _scaled(o, f"sc{rh}", exp_shift)
    lines.append("}")
    return "\n".join(lines)


@dsl_user_op
def dequant_y_units_rs(units: list, exp_shift: int, *, loc=None, ip=None) -> None:
    """``units``: tuples of 7 shared addresses, see :func:`rs_y_units_asm`."""
    operands = [Int32(x).ir_value(loc=loc, ip=ip) for unit in units for x in unit]
    constraints = ",".join(["r"] * len(operands) + ["~{memory}"])
    _inline_asm(rs_y_units_asm(len(units), exp_shift), constraints, operands, loc=loc, ip=ip)


@dsl_user_op
def dequant_x_fragment_rs(raw0: Int32, raw1: Int32, sf0: Int32, sf1: Int32, exp_shift: int, *, loc=None, ip=None) -> list:
    """The 16 u32 registers of this thread's X fragment for one sub-block (see the asm)."""
    operands = [Int32(x).ir_value(loc=loc, ip=ip) for x in (raw0, raw1, sf0, sf1)]
    return _inline_asm_u32(16, rs_x_fragment_asm(exp_shift), ",".join(["=r"] * 16 + ["r"] * 4 + ["~{memory}"]),
                           operands, loc=loc, ip=ip)


# ---- schedule perturbation (non-production builds only: kernel/perturbation.py) ------------
_JITTER_HASH = 0x9E3779B1  # Fibonacci hashing multiplier


@dsl_user_op
def sleep_ns(ns: int, *, loc=None, ip=None) -> None:
    """``nanosleep`` for a compile-time number of nanoseconds (the hardware sleeps 0..2x)."""
    _inline_asm(f"nanosleep.u32 {int(ns)};", "~{memory}", [], loc=loc, ip=ip)


@dsl_user_op
def sleep_ns_jittered(ns: int, jitter_ns: int, seed: int, per_warp: bool, *, loc=None, ip=None) -> None:
    """``nanosleep`` for ``ns`` plus a run-time share of ``jitter_ns`` hashed from the CTA index
    (and the warp index when ``per_warp``) and ``seed``, so CTAs (warps) stall differently."""
    warp = "shr.u32 w, t, 5;\nmad.lo.u32 h, w, 40503, h;\n" if per_warp else ""
    asm = (
        "{\n.reg .u32 h, t, w;\n"
        "mov.u32 h, %ctaid.x;\n"
        "mov.u32 t, %tid.x;\n"
        f"add.u32 h, h, {int(seed) & 0xFFFF};\n"
        f"{warp}"
        f"mul.lo.u32 h, h, {_JITTER_HASH};\n"
        "shr.u32 h, h, 16;\n"
        f"rem.u32 h, h, {max(1, int(jitter_ns))};\n"
        f"add.u32 h, h, {int(ns)};\n"
        "nanosleep.u32 h;\n}"
    )
    _inline_asm(asm, "~{memory}", [], loc=loc, ip=ip)


@dsl_user_op
def delay_jitter_from_table(table: Int64, warp: Int32, jitter_ns_word: int, jitter_mode_word: int, seed_word: int,
                            *, loc=None, ip=None) -> Int32:
    """Run-time perturbed builds: this thread's share of the table's jitter bound (word
    ``jitter_ns_word`` of the int32 table at global address ``table``,
    kernel.perturbation.Perturbation.device_words), hashed from the CTA index, the table's seed
    and (jitter mode 2) the warp index ``warp``, as :func:`sleep_ns_jittered` does with constants.
    Computed once, at the kernel's start, and passed to every :func:`sleep_ns_from_table`: the
    share depends on no site, and a site that reads ``%tid`` itself makes ptxas serialize every
    wgmma in the variants with the tightest register budgets (docs/results.md).
    ``warp`` is the kernel's warp-uniform warp index."""

    asm = (
        "{\n.reg .u32 j, m, s, h, w, q;\n.reg .pred pw;\n"
        f"ld.global.nc.u32 j, [$1+{4 * int(jitter_ns_word)}];\n"
        f"ld.global.nc.u32 m, [$1+{4 * int(jitter_mode_word)}];\n"
        f"ld.global.nc.u32 s, [$1+{4 * int(seed_word)}];\n"
        "mov.u32 h, %ctaid.x;\n"
        "add.u32 h, h, s;\n"
        "setp.eq.u32 pw, m, 2;\n"
        "selp.u32 w, $2, 0, pw;\n"
        "mad.lo.u32 h, w, 40503, h;\n"
        f"mul.lo.u32 h, h, {_JITTER_HASH};\n"
        "shr.u32 h, h, 16;\n"
        "max.u32 q, j, 1;\n"
        "rem.u32 $0, h, q;\n}"
    )
    return _inline_asm_u32(1, asm, "=r,l,r", _ir(loc, ip, (Int64, table), (Int32, warp)), loc=loc, ip=ip)[0]


@dsl_user_op
def sleep_ns_from_table(table: Int64, slot: int, jitter: Int32, *, loc=None, ip=None) -> None:
    """Run-time perturbed builds: ``nanosleep`` for the delay in word ``slot`` of the int32 table
    at global address ``table`` plus ``jitter`` (:func:`delay_jitter_from_table`), or for 0 ns
    where the slot is 0. Branch-free (``selp``, the ``nanosleep`` always executed) and without a
    special-register read: a predicated ``@p nanosleep`` became a branch that made ptxas
    serialize every wgmma (one ``WARPGROUP.DEPBAR.LE gsb0, 0x0`` per HGMMA) in 5 declared
    variants and in the ``_rs`` variant with a lax wgmma wait, and so did computing the jitter
    here from ``%tid`` (docs/results.md;
    kernel/tests/test_hopper_perturbed_sass.py checks every declared variant)."""
    _inline_asm(_table_sleep_asm(slot, skewed=False), "l,r,~{memory}", _ir(loc, ip, (Int64, table), (Int32, jitter)),
                loc=loc, ip=ip)


def _table_sleep_asm(slot: int, skewed: bool) -> str:
    """The branch-free sleep of table word ``slot`` plus the jitter ($1) and, ``skewed``, the warp
    skew ($2): what :func:`sleep_ns_from_table` and :func:`sleep_ns_from_table_skewed` run."""
    return (
        "{\n.reg .u32 d, h;\n.reg .pred p;\n"
        f"ld.global.nc.u32 d, [$0+{4 * int(slot)}];\n"
        "setp.ne.u32 p, d, 0;\n"
        "add.u32 h, d, $1;\n"
        "selp.u32 h, h, 0, p;\n"
        + ("add.u32 h, h, $2;\n" if skewed else "")
        + "nanosleep.u32 h;\n}"
    )


@dsl_user_op
def warp_skew_from_table(table: Int64, warp: Int32, skew_ns_word: int, skew_warp_word: int,
                         *, loc=None, ip=None) -> Int32:
    """Run-time perturbed builds: this thread's warp skew (kernel.perturbation.Perturbation.skew),
    word ``skew_ns_word`` of the table where ``warp % 4`` equals word ``skew_warp_word``, else 0.
    Computed once, at the kernel's start (like :func:`delay_jitter_from_table`: no special
    register read and no branch inside a delay site); ``warp`` is the warp-uniform warp index."""
    asm = (
        "{\n.reg .u32 n, v, w;\n.reg .pred p;\n"
        f"ld.global.nc.u32 n, [$1+{4 * int(skew_ns_word)}];\n"
        f"ld.global.nc.u32 v, [$1+{4 * int(skew_warp_word)}];\n"
        "and.b32 w, $2, 3;\n"
        "setp.eq.u32 p, w, v;\n"
        "selp.u32 $0, n, 0, p;\n}"
    )
    return _inline_asm_u32(1, asm, "=r,l,r", _ir(loc, ip, (Int64, table), (Int32, warp)), loc=loc, ip=ip)[0]


@dsl_user_op
def sleep_ns_from_table_skewed(table: Int64, slot: int, jitter: Int32, skew: Int32, *, loc=None, ip=None) -> None:
    """:func:`sleep_ns_from_table` plus this thread's warp skew (:func:`warp_skew_from_table`),
    slept whether or not the slot's word is 0; branch-free, ``nanosleep`` always executed."""
    _inline_asm(_table_sleep_asm(slot, skewed=True), "l,r,r,~{memory}", _ir(loc, ip, (Int64, table), (Int32, jitter), (Int32, skew)), loc=loc, ip=ip)


@dsl_user_op
def poison_shared_16(addr: Int32, *, loc=None, ip=None) -> None:
    """Overwrite 16 bytes of shared memory with all-ones (E4M3 NaN scales, fp16 NaN)."""
    _inline_asm(
        "st.shared.v4.b32 [$0], {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF};",
        "r,~{memory}",
        _ir(loc, ip, (Int32, addr)),
        loc=loc,
        ip=ip,
    )


@dsl_user_op
def opaque_zeros_u32(n: int, *, loc=None, ip=None) -> list:
    """``n`` zeros ptxas can neither fold nor tell apart (word k: ``(%nsmid + k) >> 31``; the SM
    count is far below 2^31), so a register fragment built from them is computed once and kept:
    with a literal 0, or one value in every word, ptxas rematerializes or copies the words next
    to each wgmma that reads them, and those copies serialize the wgmmas (tests only: the
    filler wgmmas' zero A fragment)."""

    body = "".join(f"add.u32 t, s, {k};\nshr.u32 ${k}, t, 31;\n" for k in range(n))
    return _inline_asm_u32(n, "{\n.reg .u32 s, t;\nmov.u32 s, %nsmid;\n" + body + "}", ",".join(["=r"] * n), [],
                           loc=loc, ip=ip)


# ---- y_source="prepass": Y decoded once into a global fp16 workspace -----------
def _rs_y_global_decode_lines(words: list, s: str, dst: str, exp_shift: int, staged_key: str | None = None) -> list:
    """Decode and store one pre-pass item whose 8 raw words and scale word are in registers
    ``words`` / ``s`` (:func:`rs_y_global_asm`'s instructions after its loads). ``staged_key``
    (``prepass_store="staged"``): ``dst`` is the item's 128-byte shared slot and chunk c goes to
    chunk slot c ^ key (``staged_key`` holds key x 16; :func:`rs_y_staged_copy_asm` reads it back),
    instead of global ``dst + 16c``: the same values, only where they are written differs."""
    lines = []
    if staged_key is not None:
        lines.append(f"xor.b32 sk, {dst}, {staged_key};")
    for t in range(4):
        lines += _scale_lines(f"c{t}", s, t)
    for a in range(2):
        for t in range(4):
            lines += _decode_word_lines(words[a + 2 * t], tuple(f"q{a}_{t}_{j}" for j in range(4)))
            for j in range(4):
                lines += _scaled(f"q{a}_{t}_{j}", f"c{t}", exp_shift)
        for j in range(4):
            chunk = f"{{q{a}_0_{j}, q{a}_1_{j}, q{a}_2_{j}, q{a}_3_{j}}}"
            if staged_key is None:
                lines.append(f"st.global.v4.b32 [{dst}+{16 * (4 * a + j)}], {chunk};")
            else:
                lines += [f"xor.b32 sa, sk, {16 * (4 * a + j)};", f"st.shared.v4.b32 [sa], {chunk};"]
    return lines


def rs_y_global_asm(exp_shift: int) -> str:
    """One Y item of the pre-pass: 64 K of one row. ``$0`` the row's 32 packed bytes of the
    sub-block (global, 16-byte aligned: words W0..W7), ``$1`` its 4 scale bytes (global, the
    512-byte blocked layout: scale t covers K 16t..16t+15), ``$2`` the 128-byte fp16 run in the
    workspace (global). Chunk c = 4a + j (16 bytes at ``$2 + 16c``) holds, as 32-bit word t,
    pair j of word W[a + 2t] times scale t: what :func:`rs_y_units_asm` stores for the row's
    units a = 0 and a = 1 into chunks 4a..4a+3 (before the 128-byte swizzle), with the same
    instructions, so the values are bit-identical; a TMA box with the 128-byte swizzle then
    puts chunk c of box row r at chunk c ^ (r % 8), where the shared-memory decode stores it."""
    words = ", ".join(f"W{i}" for i in range(8))
    pairs = ", ".join(f"q{a}_{t}_{j}" for a in range(2) for t in range(4) for j in range(4))
    lines = ["{", f".reg .b32 {words}, s, c0, c1, c2, c3, {pairs};", *_RS_DECLS]
    lines += [
        "ld.global.v4.b32 {W0, W1, W2, W3}, [$0];",
        "ld.global.v4.b32 {W4, W5, W6, W7}, [$0+16];",
        "ld.global.b32 s, [$1];",
    ]
    lines += _rs_y_global_decode_lines([f"W{i}" for i in range(8)], "s", "$2", exp_shift)
    lines.append("}")
    return "\n".join(lines)


def rs_y_global_store_asm(exp_shift: int) -> str:
    """decode and store one pre-pass item loaded by :func:`rs_y_global_load_asm`:
    ``$0..$7`` the raw words, ``$8`` the scale word, ``$9`` the 128-byte workspace run. The same
    instructions as :func:`rs_y_global_asm` after its loads (bit-identical values)."""
    pairs = ", ".join(f"q{a}_{t}_{j}" for a in range(2) for t in range(4) for j in range(4))
    lines = ["{", f".reg .b32 c0, c1, c2, c3, {pairs};", *_RS_DECLS]
    lines += _rs_y_global_decode_lines([f"${i}" for i in range(8)], "$8", "$9", exp_shift)
    lines.append("}")
    return "\n".join(lines)


def rs_y_global_load_asm(n_items: int) -> str:
    """The prepass builds: the global loads of ``n_items`` pre-pass items, all
    issued before any is decoded. Outputs ``$(9i)..$(9i+7)`` the raw words W0..W7 of item i,
    ``$(9i+8)`` its scale word; inputs ``$(9n+3i)`` its raw address, ``$(9n+3i+1)`` its scale
    word's address, ``$(9n+3i+2)`` nonzero when the item exists (the loads are predicated on
    it; an absent item's outputs are undefined and never decoded)."""
    n = n_items
    lines = ["{", ".reg .pred " + ", ".join(f"p{i}" for i in range(n)) + ";"]
    for i in range(n):
        raw, sf, ok = f"${9 * n + 3 * i}", f"${9 * n + 3 * i + 1}", f"${9 * n + 3 * i + 2}"
        o = [f"${9 * i + k}" for k in range(9)]
        lines += [
            f"setp.ne.u32 p{i}, {ok}, 0;",
            f"@p{i} ld.global.v4.b32 {{{o[0]}, {o[1]}, {o[2]}, {o[3]}}}, [{raw}];",
            f"@p{i} ld.global.v4.b32 {{{o[4]}, {o[5]}, {o[6]}, {o[7]}}}, [{raw}+16];",
            f"@p{i} ld.global.b32 {o[8]}, [{sf}];",
        ]
    lines.append("}")
    return "\n".join(lines)


def rs_y_staged_item_asm(exp_shift: int) -> str:
    """``prepass_store="staged"``: decode one loaded item (``$0..$7`` raw words, ``$8`` scale
    word, as :func:`rs_y_global_store_asm`) into its 128-byte shared slot ``$9`` (128-byte
    aligned), chunk c at chunk slot c ^ (``$10`` / 16): the XOR keeps the 8 lanes of a quarter
    warp, whose slots are 128 bytes apart, on distinct banks."""
    pairs = ", ".join(f"q{a}_{t}_{j}" for a in range(2) for t in range(4) for j in range(4))
    lines = ["{", f".reg .b32 c0, c1, c2, c3, sk, sa, {pairs};", *_RS_DECLS]
    lines += _rs_y_global_decode_lines([f"${i}" for i in range(8)], "$8", "$9", exp_shift, staged_key="$10")
    lines.append("}")
    return "\n".join(lines)


def rs_y_staged_copy_asm() -> str:
    """``prepass_store="staged"``: the warp copies its 32 staged items (32 x 128 bytes at ``$0``,
    lane l's item in slot l, chunks XOR-swizzled by l % 8) to their workspace runs, 4 items per
    step: in step r lane l stores chunk c = l % 8 of the item of lane i = 4r + l / 8 (its run
    ``$2:$1`` and valid flag ``$3`` taken from lane i by shuffles), so each warp store writes
    four whole 128-byte runs. ``$4`` is the lane index. Warp-synchronous: every lane runs it,
    and it ends with a warp barrier (the slots may be written again after it)."""
    lines = ["{", ".reg .b32 i, c, c16, o, lo, hi, ok, w0, w1, w2, w3;", ".reg .b64 d, c64;", ".reg .pred p;",
             "bar.warp.sync 0xffffffff;", "and.b32 c, $4, 7;", "shl.b32 c16, c, 4;", "cvt.u64.u32 c64, c16;"]
    for r in range(8):
        lines += [
            "shr.u32 i, $4, 3;",
            f"add.u32 i, i, {4 * r};",
            "shfl.sync.idx.b32 lo, $1, i, 0x1f, 0xffffffff;",
            "shfl.sync.idx.b32 hi, $2, i, 0x1f, 0xffffffff;",
            "shfl.sync.idx.b32 ok, $3, i, 0x1f, 0xffffffff;",
            "and.b32 o, i, 7;",  # item i's chunk c sits at chunk slot c ^ (i % 8) of slot i
            "shl.b32 o, o, 4;",
            "xor.b32 o, o, c16;",
            "shl.b32 i, i, 7;",
            "add.u32 o, o, i;",
            "add.u32 o, o, $0;",
            "ld.shared.v4.b32 {w0, w1, w2, w3}, [o];",
            "mov.b64 d, {lo, hi};",
            "add.s64 d, d, c64;",
            "setp.ne.u32 p, ok, 0;",
            "@p st.global.v4.b32 [d], {w0, w1, w2, w3};",
        ]
    lines += ["bar.warp.sync 0xffffffff;", "}"]
    return "\n".join(lines)


@dsl_user_op
def store_y_staged_item(words: list, slot: Int32, key16: Int32, exp_shift: int, *, loc=None, ip=None) -> None:
    """``prepass_store="staged"``: decode one loaded item into its shared slot (:func:`rs_y_staged_item_asm`)."""
    operands = [Int32(w).ir_value(loc=loc, ip=ip) for w in words] + _ir(loc, ip, (Int32, slot), (Int32, key16))
    _inline_asm(rs_y_staged_item_asm(exp_shift), ",".join(["r"] * 11 + ["~{memory}"]), operands, loc=loc, ip=ip)


@dsl_user_op
def copy_y_staged_items(warp_base: Int32, dst: Int64, ok: Int32, lane: Int32, *, loc=None, ip=None) -> None:
    """``prepass_store="staged"``: the warp's cooperative copy of its staged items (:func:`rs_y_staged_copy_asm`)."""
    operands = _ir(loc, ip, (Int32, warp_base)) + _split_u64(dst, loc, ip) + _ir(loc, ip, (Int32, ok), (Int32, lane))
    _inline_asm(rs_y_staged_copy_asm(), ",".join(["r"] * 5 + ["~{memory}"]), operands, loc=loc, ip=ip)


def _split_u64(value, loc, ip) -> list:
    """A 64-bit value as its (low, high) 32-bit halves (MLIR values), for asm taking u32 operands."""
    return [Int32(x).ir_value(loc=loc, ip=ip) for x in _inline_asm_u32(2, "mov.b64 {$0, $1}, $2;", "=r,=r,l",
                                                                      _ir(loc, ip, (Int64, value)), loc=loc, ip=ip)]


@dsl_user_op
def load_y_global_items(items: list, *, loc=None, ip=None) -> list:
    """``items`` = [(raw Int64, sf Int64, valid Int32), ...]; returns per item the 9
    loaded u32 words (:func:`rs_y_global_load_asm`)."""

    n = len(items)
    operands = []
    for raw, sf, ok in items:
        operands += _ir(loc, ip, (Int64, raw), (Int64, sf), (Int32, ok))
    words = _inline_asm_u32(9 * n, rs_y_global_load_asm(n), ",".join(["=r"] * (9 * n) + ["l", "l", "r"] * n + ["~{memory}"]),
                            operands, loc=loc, ip=ip)
    return [words[9 * i : 9 * i + 9] for i in range(n)]


@dsl_user_op
def atom_add_relaxed_gpu(addr: Int64, value: Int32, *, loc=None, ip=None) -> Int32:
    """``atom.add.relaxed.gpu`` on a global u32; returns the old value (the chunk claim)."""

    return _inline_asm_u32(1, "atom.add.relaxed.gpu.global.u32 $0, [$1], $2;", "=r,l,r,~{memory}",
                           _ir(loc, ip, (Int64, addr), (Int32, value)), loc=loc, ip=ip)[0]


@dsl_user_op
def arrive_release_gpu(addr: Int64, value: Int32, *, loc=None, ip=None) -> None:
    """Publish this CTA's writes (ordered before by ``bar.sync``) and add ``value`` to a global
    u32: ``fence.acq_rel.gpu`` then ``red.release.gpu``."""
    _inline_asm("fence.acq_rel.gpu;\nred.release.gpu.global.add.u32 [$0], $1;", "l,r,~{memory}",
                _ir(loc, ip, (Int64, addr), (Int32, value)), loc=loc, ip=ip)


@dsl_user_op
def wait_geq_acquire_gpu(addr: Int64, target: Int32, *, loc=None, ip=None) -> None:
    """Spin (``ld.acquire.gpu``) until the global u32 at ``addr`` is >= ``target``."""
    asm = (
        "{\n.reg .u32 v;\n.reg .pred p;\n"
        "PREPASS_SPIN:\n"
        "ld.acquire.gpu.global.u32 v, [$0];\n"
        "setp.lt.u32 p, v, $1;\n"
        "@p bra PREPASS_SPIN;\n}"
    )
    _inline_asm(asm, "l,r,~{memory}", _ir(loc, ip, (Int64, addr), (Int32, target)), loc=loc, ip=ip)


@dsl_user_op
def store_relaxed_gpu(addr: Int64, value: Int32, *, loc=None, ip=None) -> None:
    _inline_asm("st.relaxed.gpu.global.u32 [$0], $1;", "l,r,~{memory}", _ir(loc, ip, (Int64, addr), (Int32, value)),
                loc=loc, ip=ip)


@dsl_user_op
def timeline_stamp(addr: Int64, first: bool, *, loc=None, ip=None) -> None:
    """The timeline build (kernel.perturbation TIMELINE_POINTS): this thread's %globaltimer (ns)
    into the u64 at ``addr``: a plain store (the last stamp stays), or with ``first`` a
    compare-and-swap from 0 (the first stamp stays; its old value is not waited for)."""
    if first:
        asm = "{\n.reg .u64 t, o;\nmov.u64 t, %globaltimer;\natom.global.cas.b64 o, [$0], 0, t;\n}"
    else:
        asm = "{\n.reg .u64 t;\nmov.u64 t, %globaltimer;\nst.global.u64 [$0], t;\n}"
    _inline_asm(asm, "l,~{memory}", _ir(loc, ip, (Int64, addr)), loc=loc, ip=ip)


@dsl_user_op
def fence_proxy_async_global(*, loc=None, ip=None) -> None:
    """Order this thread's generic-proxy global accesses with the async proxy (TMA)."""
    _inline_asm("fence.proxy.async.global;", "~{memory}", [], loc=loc, ip=ip)


@dsl_user_op
def st_shared_u32(addr: Int32, value: Int32, *, loc=None, ip=None) -> None:
    _inline_asm("st.shared.u32 [$0], $1;", "r,r,~{memory}", _ir(loc, ip, (Int32, addr), (Int32, value)), loc=loc, ip=ip)


@dsl_user_op
def ld_shared_u32(addr: Int32, *, loc=None, ip=None) -> Int32:

    return _inline_asm_u32(1, "ld.shared.u32 $0, [$1];", "=r,r,~{memory}", _ir(loc, ip, (Int32, addr)),
                           loc=loc, ip=ip)[0]


# ---- the happens-before checker of harness builds (kernel.perturbation Perturbation.checks) ----
# Each check is one inline-asm block with no branch: a predicate from the compared values, lane 0
# of the warp only, then predicated global atomics into the checker's record in the device table
# (CHECK_RULES_WORD: or of 1 << rule; CHECK_FIRST_WORD: the first site, compare-and-swap from 0;
# CHECK_COUNT_WORD0 + rule: a count). A production build never calls them.
def _hb_report_lines(rules_word: int, first_word: int, count_word0: int) -> list[str]:
    """Report body: predicate ``p``, registers ``rule``, ``warp``, ``other``, ``cta``; ``$0`` the table."""
    from kernel.perturbation import SITE_CTA_SHIFT, SITE_OTHER_SHIFT, SITE_WARP_SHIFT

    return [
        "setp.eq.and.u32 p, lane, 0, p;",
        "shl.b32 bit, 1, rule;",
        "add.u32 site, rule, 1;",
        f"shl.b32 t, warp, {SITE_WARP_SHIFT};", "or.b32 site, site, t;",
        f"shl.b32 t, other, {SITE_OTHER_SHIFT};", "or.b32 site, site, t;",
        f"shl.b32 t, cta, {SITE_CTA_SHIFT};", "or.b32 site, site, t;",
        f"@p red.relaxed.gpu.global.or.b32 [$0+{4 * rules_word}], bit;",
        f"@p atom.relaxed.gpu.global.cas.b32 old, [$0+{4 * first_word}], 0, site;",
        "mul.wide.u32 ca, rule, 4;",
        "add.s64 ca, ca, $0;",
        f"@p red.relaxed.gpu.global.add.u32 [ca+{4 * count_word0}], 1;",
    ]


_HB_REGS = ".reg .pred p, q;\n.reg .b32 lane, bit, site, t, old, rule, warp, other, cta, x;\n.reg .b64 ca;"


def _hb_words():
    from kernel.perturbation import CHECK_COUNT_WORD0, CHECK_FIRST_WORD, CHECK_RULES_WORD

    return CHECK_RULES_WORD, CHECK_FIRST_WORD, CHECK_COUNT_WORD0


@dsl_user_op
def hb_check(table: Int64, cond: str, a: Int32, b: Int32, rule: int, warp: Int32, other: Int32, cta: Int32,
             lane: Int32, *, loc=None, ip=None) -> None:
    """Record ``rule`` (compile-time index) when ``a cond b`` holds (``cond``: a PTX setp
    comparison, e.g. ``lt.s32``, ``ne.u32``), at (warp, other warp, CTA); only lane 0 reports
    (``lane``: the caller's lane index, read once per thread: an asm block that reads ``%laneid``
    or ``%tid`` between wgmmas can make ptxas serialize them)."""
    _inline_asm(
        "\n".join(["{", _HB_REGS, f"setp.{cond} p, $1, $2;", f"mov.u32 rule, {rule};", "mov.u32 warp, $3;",
                   "mov.u32 other, $4;", "mov.u32 cta, $5;", "mov.u32 lane, $6;", *_hb_report_lines(*_hb_words()),
                   "}"]),
        "l,r,r,r,r,r,r,~{memory}",
        _ir(loc, ip, (Int64, table), (Int32, a), (Int32, b), (Int32, warp), (Int32, other), (Int32, cta),
            (Int32, lane)),
        loc=loc, ip=ip,
    )


@dsl_user_op
def hb_check_reuse(table: Int64, retired: Int32, need: Int32, warp: Int32, other: Int32, cta: Int32,
                   own_rule: int, peer_rule: int, lane: Int32, *, loc=None, ip=None) -> None:
    """Record a buffer reuse before the wgmma group ``need`` retired in warp ``other``
    (``retired`` < ``need``): ``own_rule`` when ``other`` is this warp, else ``peer_rule``."""
    _inline_asm(
        "\n".join(["{", _HB_REGS, "setp.lt.s32 p, $1, $2;", "setp.eq.u32 q, $3, $4;",
                   f"selp.u32 rule, {own_rule}, {peer_rule}, q;", "mov.u32 warp, $3;", "mov.u32 other, $4;",
                   "mov.u32 cta, $5;", "mov.u32 lane, $6;", *_hb_report_lines(*_hb_words()), "}"]),
        "l,r,r,r,r,r,r,~{memory}",
        _ir(loc, ip, (Int64, table), (Int32, retired), (Int32, need), (Int32, warp), (Int32, other), (Int32, cta),
            (Int32, lane)),
        loc=loc, ip=ip,
    )


@dsl_user_op
def hb_check_map(table: Int64, tensor_map: Int64, e0: Int32, e1: Int32, e2: Int32, e3: Int32, rule: int,
                 warp: Int32, cta: Int32, lane: Int32, *, loc=None, ip=None) -> None:
    """Record ``rule`` when the low word of ``tensor_map`` is none of ``e0 .. e3`` (the maps this
    thread acquired, their low words)."""
    _inline_asm(
        "\n".join(["{", _HB_REGS, "cvt.u32.u64 x, $1;", "setp.ne.u32 p, x, $2;", "setp.ne.and.u32 p, x, $3, p;",
                   "setp.ne.and.u32 p, x, $4, p;", "setp.ne.and.u32 p, x, $5, p;", f"mov.u32 rule, {rule};",
                   "mov.u32 warp, $6;", "mov.u32 other, $6;", "mov.u32 cta, $7;", "mov.u32 lane, $8;",
                   *_hb_report_lines(*_hb_words()), "}"]),
        "l,l,r,r,r,r,r,r,r,~{memory}",
        _ir(loc, ip, (Int64, table), (Int64, tensor_map), (Int32, e0), (Int32, e1), (Int32, e2), (Int32, e3),
            (Int32, warp), (Int32, cta), (Int32, lane)),
        loc=loc, ip=ip,
    )


@dsl_user_op
def hb_mask_update(addr: Int32, bit_index: Int32, set_bit: bool, *, loc=None, ip=None) -> None:
    """Set (or clear) bit ``bit_index`` of the shared u32 at ``addr`` (the producer's stages in flight)."""
    op = "or.b32 v, v, b;" if set_bit else "not.b32 b, b;\nand.b32 v, v, b;"
    _inline_asm(
        "\n".join(["{", ".reg .b32 v, b;", "ld.shared.u32 v, [$0];", "shl.b32 b, 1, $1;", op,
                   "st.shared.u32 [$0], v;", "}"]),
        "r,r,~{memory}",
        _ir(loc, ip, (Int32, addr), (Int32, bit_index)),
        loc=loc, ip=ip,
    )


@dsl_user_op
def low_word(value: Int64, *, loc=None, ip=None) -> Int32:
    """The low 32 bits of a 64-bit value (a tensor map's address, for the checker's record)."""
    return _inline_asm_u32(1, "cvt.u32.u64 $0, $1;", "=r,l", _ir(loc, ip, (Int64, value)), loc=loc, ip=ip)[0]


# ---- the checker's phase-1 shadow (y_source="prepass" harness builds; kernel.perturbation) ------
@dsl_user_op
def hb_count_global(table: Int64, word: int, *, loc=None, ip=None) -> None:
    """Add 1 to word ``word`` of the device table (``red.relaxed.gpu``: a morally strong write, so a
    release after it in program order publishes it; the phase-1 publish count)."""
    _inline_asm(f"red.relaxed.gpu.global.add.u32 [$0+{4 * int(word)}], 1;", "l,~{memory}",
                _ir(loc, ip, (Int64, table)), loc=loc, ip=ip)


@dsl_user_op
def ld_relaxed_gpu(addr: Int64, *, loc=None, ip=None) -> Int32:
    """``ld.relaxed.gpu`` of a global u32 (a device-table word, a workspace counter)."""
    return _inline_asm_u32(1, "ld.relaxed.gpu.global.u32 $0, [$1];", "=r,l,~{memory}", _ir(loc, ip, (Int64, addr)),
                           loc=loc, ip=ip)[0]


@dsl_user_op
def hb_claim_mark(table: Int64, chunk: Int32, chunks: Int32, map_word0: int, map_chunks: int, rule: int, warp: Int32,
                  cta: Int32, lane: Int32, *, loc=None, ip=None) -> None:
    """A phase-1 claim of ``chunk`` (< ``chunks``, < ``map_chunks``): set its bit in the table's
    claim map (``atom.or`` from word ``map_word0``) and record ``rule`` when the bit was already
    set (a second claim of that chunk in this launch). Claims past the last chunk mark nothing."""
    _inline_asm(
        "\n".join(["{", _HB_REGS, "setp.lt.u32 p, $1, $2;", f"setp.lt.and.u32 p, $1, {int(map_chunks)}, p;",
                   "shr.u32 x, $1, 5;", "and.b32 t, $1, 31;", "shl.b32 bit, 1, t;", "mul.wide.u32 ca, x, 4;",
                   "add.s64 ca, ca, $0;", "mov.u32 old, 0;",
                   f"@p atom.relaxed.gpu.global.or.b32 old, [ca+{4 * int(map_word0)}], bit;",
                   "and.b32 t, old, bit;", "setp.ne.and.u32 p, t, 0, p;", f"mov.u32 rule, {rule};",
                   "mov.u32 warp, $3;", "mov.u32 other, $3;", "mov.u32 cta, $4;", "mov.u32 lane, $5;",
                   *_hb_report_lines(*_hb_words()), "}"]),
        "l,r,r,r,r,r,~{memory}",
        _ir(loc, ip, (Int64, table), (Int32, chunk), (Int32, chunks), (Int32, warp), (Int32, cta), (Int32, lane)),
        loc=loc, ip=ip,
    )


@dsl_user_op
def st_shared_u32_if_zero(addr: Int32, value: Int32, key: Int32, *, loc=None, ip=None) -> None:
    """``st.shared.u32`` of ``value`` by the threads whose ``key`` is 0 (``key``: the caller's
    thread index, a register: no special-register read, no branch)."""
    _inline_asm("{\n.reg .pred p;\nsetp.eq.u32 p, $2, 0;\n@p st.shared.u32 [$0], $1;\n}", "r,r,r,~{memory}",
                _ir(loc, ip, (Int32, addr), (Int32, value), (Int32, key)), loc=loc, ip=ip)


@dsl_user_op
def st_global_v4_f32(addr: Int64, values: list, *, loc=None, ip=None) -> None:
    """``schedule="split_last"``: four fp32 accumulators to global memory (16-byte aligned)."""
    _inline_asm("st.global.v4.f32 [$0], {$1, $2, $3, $4};", "l,f,f,f,f,~{memory}",
                _ir(loc, ip, (Int64, addr), *((Float32, v) for v in values)), loc=loc, ip=ip)


@dsl_user_op
def add_global_v4_f32(addr: Int64, values: list, *, loc=None, ip=None) -> list:
    """``schedule="split_last"``: ``values[i] + x[i]`` (fp32, round to nearest) for the four fp32
    ``x`` at ``addr``, loaded at L2 (``ld.global.cg``: another CTA wrote them in this launch, and
    this SM's L1 is not coherent with its writes)."""
    from cutlass.cutlass_dsl import T

    asm = ("{\n.reg .f32 p<4>;\nld.global.cg.v4.f32 {p0, p1, p2, p3}, [$4];\n"
           "add.rn.f32 $0, $5, p0;\nadd.rn.f32 $1, $6, p1;\nadd.rn.f32 $2, $7, p2;\nadd.rn.f32 $3, $8, p3;\n}")
    res = llvm.inline_asm(llvm.StructType.get_literal([T.f32()] * 4),
                          _ir(loc, ip, (Int64, addr), *((Float32, v) for v in values)), asm,
                          "=f,=f,=f,=f,l,f,f,f,f,~{memory}", has_side_effects=True, is_align_stack=False,
                          asm_dialect=llvm.AsmDialect.AD_ATT, loc=loc, ip=ip)
    return [Float32(llvm.extractvalue(T.f32(), res, [k], loc=loc, ip=ip)) for k in range(4)]
