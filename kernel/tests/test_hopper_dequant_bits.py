"""Exhaustive CPU check of the Hopper dequantize arithmetic, by interpreting the emitted PTX.

The inline PTX that ``kernel/hopper/ptx.py`` generates (the ``shift`` decode of ``dequant_unit``
and the ``prmt`` decode of ``dequant_units_prmt``) is executed here by a small NumPy interpreter
of exactly the instructions it uses (PTX ISA semantics: ``prmt`` default mode, ``lop3`` truth
tables, ``mul.rn.f16x2`` with fp16 subnormals, ``cvt.rn.f16x2.e4m3x2``), so the constants,
shifts and selectors tested are the ones the kernel compiles. Every E2M1 code at every nibble
position, next to every neighbour pattern, times every finite E4M3 scale byte is compared with
``oracle.e2m1_decode`` * ``oracle.e4m3_decode`` (times 2^-14 for ``operand_exp_shift=-14``).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from kernel.hopper import ptx
from oracle.formats import e2m1_decode, e4m3_decode

U32 = np.uint32


def _e4m3_to_f16(byte: np.ndarray) -> np.ndarray:
    """cvt.rn.f16.e4m3 of finite bytes, from the bit fields (independent of the oracle)."""
    b = byte.astype(np.int64)
    sign = np.where(b & 0x80, -1.0, 1.0)
    exp = (b >> 3) & 0xF
    man = b & 0x7
    val = np.where(exp == 0, man / 8.0 * 2.0**-6, (1 + man / 8.0) * 2.0 ** (exp - 7.0))
    out = (sign * val).astype(np.float16)
    assert np.array_equal(out.astype(np.float64), sign * val), "an e4m3 value is not exact in fp16"
    return out


def _f16x2(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return lo.view(np.uint16).astype(U32) | (hi.view(np.uint16).astype(U32) << U32(16))


def _halves(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return (x & U32(0xFFFF)).astype(np.uint16).view(np.float16), (x >> U32(16)).astype(np.uint16).view(np.float16)


def _prmt(a: np.ndarray, b: np.ndarray, sel: int) -> np.ndarray:
    src = [(a >> U32(8 * i)) & U32(0xFF) for i in range(4)] + [(b >> U32(8 * i)) & U32(0xFF) for i in range(4)]
    out = np.zeros_like(a)
    for i in range(4):
        n = (sel >> (4 * i)) & 0xF
        byte = src[n & 7]
        if n & 8:
            byte = np.where(byte & U32(0x80), U32(0xFF), U32(0))
        out |= byte.astype(U32) << U32(8 * i)
    return out


def _lop3(a: np.ndarray, b: np.ndarray, c: np.ndarray, lut: int) -> np.ndarray:
    out = np.zeros_like(a)
    full = U32(0xFFFFFFFF)
    for idx in range(8):
        if (lut >> idx) & 1:
            ta = a if idx & 4 else ~a & full
            tb = b if idx & 2 else ~b & full
            tc = c if idx & 1 else ~c & full
            out |= ta & tb & tc
    return out


class _Interp:
    """Runs one inline-asm block over a batch of independent threads (NumPy arrays)."""

    def __init__(self, operands: list[np.ndarray], shared: dict[int, np.ndarray], batch: int):
        self.ops = operands  # $i -> per-thread byte address (python ints, same for all threads)
        self.shared = shared  # address -> uint8 array [batch] (byte-addressed)
        self.regs: dict[str, np.ndarray] = {}
        self.batch = batch

    def val(self, tok: str) -> np.ndarray:
        tok = tok.strip()
        if tok in self.regs:
            return self.regs[tok]
        return np.full(self.batch, int(tok, 0) & 0xFFFFFFFF, dtype=U32)

    def addr(self, tok: str) -> int:
        m = re.fullmatch(r"\[\$(\d+)(?:\+(\d+))?\]", tok.strip())
        assert m, tok
        return self.ops[int(m.group(1))] + int(m.group(2) or 0)

    def load_u32(self, addr: int) -> np.ndarray:
        return sum(self.shared[addr + i].astype(U32) << U32(8 * i) for i in range(4))

    def store_u32(self, addr: int, value: np.ndarray) -> None:
        for i in range(4):
            self.shared[addr + i] = ((value >> U32(8 * i)) & U32(0xFF)).astype(np.uint8)

    def run(self, asm: str) -> None:
        for raw in asm.splitlines():
            line = raw.strip()
            if line in ("{", "}") or line.startswith(".reg"):
                continue
            m = re.fullmatch(r"(\S+)\s+(.*);", line)
            assert m, f"unparsed PTX line: {line!r}"
            op, args = m.group(1), m.group(2)
            getattr(self, "_" + op.replace(".", "_"))(args)

    # ---- the instructions the generators emit --------------------------------------------
    def _split(self, args: str) -> list[str]:
        from ci.ptx_convergence import split_operands

        return split_operands(args)

    def _vec(self, tok: str) -> list[str]:
        return [t.strip() for t in tok.strip("{} ").split(",")]

    def _mov_b32(self, args: str) -> None:
        d, s = self._split(args)
        if d.startswith("{"):  # unpack b32 -> two b16
            lo, hi = self._vec(d)
            v = self.val(s)
            self.regs[lo], self.regs[hi] = v & U32(0xFFFF), v >> U32(16)
        elif s.startswith("{"):
            lo, hi = self._vec(s)
            self.regs[d] = (self.val(lo) & U32(0xFFFF)) | (self.val(hi) << U32(16))
        else:
            self.regs[d] = self.val(s)

    def _ld_shared_v4_b32(self, args: str) -> None:
        d, a = self._split(args)
        base = self.addr(a)
        assert base % 16 == 0
        for i, r in enumerate(self._vec(d)):
            self.regs[r] = self.load_u32(base + 4 * i)

    def _ld_shared_b32(self, args: str) -> None:
        d, a = self._split(args)
        base = self.addr(a)
        assert base % 4 == 0
        self.regs[d] = self.load_u32(base)

    def _ld_shared_v2_b32(self, args: str) -> None:
        d, a = self._split(args)
        base = self.addr(a)
        assert base % 8 == 0
        for i, r in enumerate(self._vec(d)):
            self.regs[r] = self.load_u32(base + 4 * i)

    def _ld_shared_u8(self, args: str) -> None:
        d, a = self._split(args)
        self.regs[d] = self.shared[self.addr(a)].astype(U32)

    def _ld_shared_b16(self, args: str) -> None:
        d, a = self._split(args)
        base = self.addr(a)
        self.regs[d] = self.shared[base].astype(U32) | (self.shared[base + 1].astype(U32) << U32(8))

    def _st_shared_v4_b32(self, args: str) -> None:
        a, s = self._split(args)
        base = self.addr(a)
        assert base % 16 == 0
        for i, r in enumerate(self._vec(s)):
            self.store_u32(base + 4 * i, self.val(r))

    def _cvt_u32_u16(self, args: str) -> None:
        d, s = self._split(args)
        self.regs[d] = self.val(s) & U32(0xFFFF)

    def _cvt_rn_f16x2_e4m3x2(self, args: str) -> None:
        # PTX: the two e4m3 bytes of the 16-bit source convert to the two fp16 halves, in order
        d, s = self._split(args)
        v = self.val(s)
        lo = _e4m3_to_f16((v & U32(0xFF)).astype(np.uint8))
        hi = _e4m3_to_f16(((v >> U32(8)) & U32(0xFF)).astype(np.uint8))
        self.regs[d] = _f16x2(lo, hi)

    def _prmt_b32(self, args: str) -> None:
        d, a, b, c = self._split(args)
        self.regs[d] = _prmt(self.val(a), self.val(b), int(c, 0))

    def _lop3_b32(self, args: str) -> None:
        d, a, b, c, lut = self._split(args)
        self.regs[d] = _lop3(self.val(a), self.val(b), self.val(c), int(lut, 0))

    def _and_b32(self, args: str) -> None:
        d, a, b = self._split(args)
        self.regs[d] = self.val(a) & self.val(b)

    def _or_b32(self, args: str) -> None:
        d, a, b = self._split(args)
        self.regs[d] = self.val(a) | self.val(b)

    def _shl_b32(self, args: str) -> None:
        d, a, n = self._split(args)
        self.regs[d] = (self.val(a).astype(np.uint64) << np.uint64(int(n))).astype(np.uint64) & np.uint64(0xFFFFFFFF)
        self.regs[d] = self.regs[d].astype(U32)

    def _shr_b32(self, args: str) -> None:
        d, a, n = self._split(args)
        self.regs[d] = self.val(a) >> U32(int(n))

    def _mul_rn_f16x2(self, args: str) -> None:
        d, a, b = self._split(args)
        alo, ahi = _halves(self.val(a))
        blo, bhi = _halves(self.val(b))
        with np.errstate(all="raise"):
            # fp16 x fp16 is exact in fp32 (22 bits), so one rounding to fp16 = mul.rn.f16
            lo = (alo.astype(np.float32) * blo.astype(np.float32)).astype(np.float16)
            hi = (ahi.astype(np.float32) * bhi.astype(np.float32)).astype(np.float16)
        self.regs[d] = _f16x2(lo, hi)


# ------------------------------------------------------------------------------ test data
RAW, SF, DST = 0x000, 0x100, 0x200  # shared-memory layout of one unit in the interpreter


def _units(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(codes [B, 32] uint8, scale bytes [B, 2] uint8): every finite scale byte in both scale
    slots, every code at every position next to varied neighbours, plus random units."""
    finite = np.array([b for b in range(256) if b not in (0x7F, 0xFF)], dtype=np.uint8)
    codes, scales = [], []
    k = np.arange(32)
    patterns = [((k * mult + r) % 16) for mult in (1, 3, 5, 7, 9, 11, 13, 15) for r in range(16)]
    for pat in patterns:  # 128 patterns: each code at each position, neighbours vary
        for s in finite:
            codes.append(pat)
            scales.append((s, finite[(int(s) * 37 + int(pat[0])) % len(finite)]))
    codes = np.array(codes, dtype=np.uint8)
    scales = np.array(scales, dtype=np.uint8)
    rnd_codes = rng.integers(0, 16, size=(20000, 32), dtype=np.uint8)
    rnd_scales = finite[rng.integers(0, len(finite), size=(20000, 2))]
    return np.concatenate([codes, rnd_codes]), np.concatenate([scales, rnd_scales])


def _shared(codes: np.ndarray, scales: np.ndarray) -> dict[int, np.ndarray]:
    mem: dict[int, np.ndarray] = {}
    packed = codes[:, 0::2] | (codes[:, 1::2] << 4)  # low nibble = first element
    for i in range(16):
        mem[RAW + i] = packed[:, i].copy()
    mem[SF], mem[SF + 1] = scales[:, 0].copy(), scales[:, 1].copy()
    for i in range(64):
        mem[DST + i] = np.zeros(len(codes), dtype=np.uint8)
    return mem


def _expected(codes: np.ndarray, scales: np.ndarray, exp_shift: int) -> np.ndarray:
    v = e2m1_decode(torch.from_numpy(codes)).double().numpy()
    s = e4m3_decode(torch.from_numpy(scales)).double().numpy()
    return v * np.repeat(s, 16, axis=1) * 2.0**exp_shift


def _check(asm: str, operands: list[int], k_order: tuple[int, ...], exp_shift: int) -> None:
    codes, scales = _units(np.random.default_rng(7))
    mem = _shared(codes, scales)
    interp = _Interp(operands, mem, len(codes))
    interp.run(asm)
    got = np.zeros(codes.shape, dtype=np.float64)
    for chunk in range(4):
        for slot in range(8):
            addr = DST + chunk * 16 + slot * 2
            bits = mem[addr].astype(np.uint16) | (mem[addr + 1].astype(np.uint16) << 8)
            got[:, chunk * 8 + k_order[slot]] = bits.view(np.float16).astype(np.float64)
    want = _expected(codes, scales, exp_shift)
    assert np.array_equal(want.astype(np.float16).astype(np.float64), want), "expected values not exact in fp16"
    bad = np.argwhere(got != want)
    assert bad.size == 0, (
        f"{len(bad)} wrong values, first: unit {bad[0][0]} k {bad[0][1]}: code {codes[tuple(bad[0])]} "
        f"scale 0x{scales[bad[0][0], bad[0][1] // 16]:02x} got {got[tuple(bad[0])]} want {want[tuple(bad[0])]}"
    )


def test_data_covers_every_code_position_and_scale():
    codes, scales = _units(np.random.default_rng(7))
    for pos in range(32):
        assert set(np.unique(codes[:, pos])) == set(range(16))
    for slot in range(2):
        assert len(np.unique(scales[:, slot])) == 254


@pytest.mark.parametrize("exp_shift", [-14, 0])
def test_prmt_decode_is_exact(exp_shift):
    asm = ptx.prmt_dequant_asm(1, exp_shift)
    _check(asm, [RAW, SF, DST, DST + 16, DST + 32, DST + 48], ptx.PRMT_K_ORDER, exp_shift)


@pytest.mark.parametrize("exp_shift", [-14, 0])
def test_shift_decode_is_exact(exp_shift):
    """The decode the H200 measured exact: validates the interpreter itself."""
    asm = ptx._dequant_asm(exp_shift)
    _check(asm, [RAW, SF, DST, DST + 16, DST + 32, DST + 48], (0, 4, 1, 5, 2, 6, 3, 7), exp_shift)


def test_prmt_batch_is_units_in_order():
    """A batch of n units is n copies of the one-unit code on its own operands (loads first)."""
    one = ptx.prmt_dequant_asm(1, -14)
    three = ptx.prmt_dequant_asm(3, -14)
    body = [l for l in one.splitlines() if not l.startswith((".reg", "{", "}", "mov.b32 two14", "ld.shared"))]
    for u in range(3):
        renamed = [
            re.sub(r"\$(\d+)", lambda m: f"${int(m.group(1)) + 6 * u}", l.replace("w0_", f"w{u}_").replace("hs0", f"hs{u}"))
            for l in body
        ]
        text = "\n".join(renamed)
        assert text in three
    loads = [i for i, l in enumerate(three.splitlines()) if l.startswith("ld.shared")]
    first_compute = min(i for i, l in enumerate(three.splitlines()) if l.startswith(("cvt", "and", "st.")))
    assert len(loads) == 6 and max(loads) < first_compute


def test_interpreter_catches_a_wrong_selector():
    asm = ptx.prmt_dequant_asm(1, -14).replace(f"{ptx.PRMT_SELECTORS[1]:#06x}", "0x2434", 1)
    with pytest.raises(AssertionError, match="wrong values"):
        _check(asm, [RAW, SF, DST, DST + 16, DST + 32, DST + 48], ptx.PRMT_K_ORDER, -14)


# ---------------------------------------------- x_operand="regs": fragment and Y row order
def _rows64(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(codes [B, 64], scales [B, 4]): every code at every position of a 64-K sub-block with
    varied neighbours, every finite scale byte in every scale slot, plus random rows."""
    finite = np.array([b for b in range(256) if b not in (0x7F, 0xFF)], dtype=np.uint8)
    k = np.arange(64)
    pats = [((k * mult + r) % 16) for mult in (1, 3, 5, 7) for r in range(16)]
    codes = np.array([pats[i % len(pats)] for i in range(len(finite) * 4)], dtype=np.uint8)
    scales = np.stack([np.roll(finite, 17 * j)[np.arange(len(codes)) % len(finite)] for j in range(4)], axis=1)
    rnd = rng.integers(0, 16, size=(4000, 64), dtype=np.uint8)
    rnd_s = finite[rng.integers(0, len(finite), size=(4000, 4))]
    return np.concatenate([codes, rnd]), np.concatenate([scales, rnd_s])


def _row_memory(mem: dict, base: int, sf: int, codes: np.ndarray, scales: np.ndarray) -> None:
    packed = codes[:, 0::2] | (codes[:, 1::2] << 4)
    for i in range(32):
        mem[base + i] = packed[:, i].copy()
    for j in range(4):
        mem[sf + j] = scales[:, j].copy()


def _row_values(codes: np.ndarray, scales: np.ndarray, exp_shift: int) -> np.ndarray:
    v = e2m1_decode(torch.from_numpy(codes)).double().numpy()
    s = e4m3_decode(torch.from_numpy(scales)).double().numpy()
    return v * np.repeat(s, 16, axis=1) * 2.0**exp_shift  # by physical K


def _logical(values: np.ndarray) -> np.ndarray:
    """Physical-K values -> the logical order both operands share (ptx.rs_physical_k)."""
    out = np.empty_like(values)
    for lk in range(0, 64, 2):
        lo, hi = ptx.rs_physical_k(lk)
        out[:, lk], out[:, lk + 1] = values[:, lo], values[:, hi]
    return out


def _f16_at(mem: dict, addr: int) -> np.ndarray:
    bits = mem[addr].astype(np.uint16) | (mem[addr + 1].astype(np.uint16) << 8)
    return bits.view(np.float16).astype(np.float64)


def test_rs_order_is_a_permutation():
    phys = [p for lk in range(0, 64, 2) for p in ptx.rs_physical_k(lk)]
    assert sorted(phys) == list(range(64))


@pytest.mark.parametrize("exp_shift", [-14, 0])
def test_rs_y_rows_are_exact_in_the_shared_order(exp_shift):
    codes, scales = _rows64(np.random.default_rng(11))
    mem: dict[int, np.ndarray] = {}
    _row_memory(mem, RAW, SF, codes, scales)
    for i in range(128):
        mem[DST + i] = np.zeros(len(codes), dtype=np.uint8)
    ops = []
    for a in range(2):
        ops += [RAW + 4 * a, RAW + 16 + 4 * a, SF] + [DST + 16 * (4 * a + j) for j in range(4)]
    _Interp(ops, mem, len(codes)).run(ptx.rs_y_units_asm(2, exp_shift))
    got = np.stack([_f16_at(mem, DST + 2 * lk) for lk in range(64)], axis=1)
    want = _logical(_row_values(codes, scales, exp_shift))
    assert np.array_equal(got, want), np.argwhere(got != want)[:3]


@pytest.mark.parametrize("exp_shift", [-14, 0])
def test_rs_x_fragment_is_exact_in_the_shared_order(exp_shift):
    """Thread t's 16 registers hold rows g and g+8 at the logical k of the wgmma A fragment
    (u32 index rh + 2*jp + 4*s <-> k = 16s + 8jp + 2t + {0, 1})."""
    codes, scales = _rows64(np.random.default_rng(12))
    rows = (codes, np.roll(codes, 5, axis=0)), (scales, np.roll(scales, 3, axis=0))
    RAW2, SF2 = RAW + 0x40, SF + 0x10
    want = [_logical(_row_values(rows[0][rh], rows[1][rh], exp_shift)) for rh in range(2)]
    for t in range(4):
        mem: dict[int, np.ndarray] = {}
        _row_memory(mem, RAW, SF, rows[0][0], rows[1][0])
        _row_memory(mem, RAW2, SF2, rows[0][1], rows[1][1])
        interp = _Interp([0] * 16 + [RAW + 8 * t, RAW2 + 8 * t, SF + t, SF2 + t], mem, len(codes))
        interp.run(ptx.rs_x_fragment_asm(exp_shift))
        for rh in range(2):
            for s_ in range(4):
                for jp in range(2):
                    lo, hi = _halves(interp.regs[f"${rh + 2 * jp + 4 * s_}"])
                    lk = 16 * s_ + 8 * jp + 2 * t
                    assert np.array_equal(lo.astype(np.float64), want[rh][:, lk]), (t, rh, s_, jp)
                    assert np.array_equal(hi.astype(np.float64), want[rh][:, lk + 1]), (t, rh, s_, jp)


def test_rs_fragment_check_catches_a_swapped_slot(monkeypatch):
    good = ptx.rs_x_fragment_asm(-14)
    bad = good.replace("prmt.b32 $2, he", "prmt.b32 $TMP, he").replace(
        "prmt.b32 $4, ho", "prmt.b32 $2, ho").replace("prmt.b32 $TMP, he", "prmt.b32 $4, he")
    assert bad != good
    monkeypatch.setattr(ptx, "rs_x_fragment_asm", lambda exp_shift: bad)
    with pytest.raises(AssertionError):
        test_rs_x_fragment_is_exact_in_the_shared_order(-14)


class _GlobalInterp(_Interp):
    """The pre-pass asm reads and writes global memory: same byte-addressed model."""

    _ld_global_v4_b32 = _Interp._ld_shared_v4_b32
    _ld_global_b32 = _Interp._ld_shared_b32
    _st_global_v4_b32 = _Interp._st_shared_v4_b32


@pytest.mark.parametrize("exp_shift", [-14, 0])
def test_prepass_item_is_bit_identical_to_the_shared_decode(exp_shift):
    """y_source="prepass": one workspace item (64 K of a row, global -> global)
    holds, byte for byte, what the two shared-memory Y units of that row store into the
    unswizzled chunks 0..7 of the row (the TMA box's 128-byte swizzle then moves chunk c of
    box row r to c ^ (r % 8), as the shared decode's addresses do: test_hopper_prepass_workspace)."""
    codes, scales = _rows64(np.random.default_rng(13))
    mem: dict[int, np.ndarray] = {}
    _row_memory(mem, RAW, SF, codes, scales)
    DST2 = DST + 0x100
    for i in range(128):
        mem[DST + i] = np.zeros(len(codes), dtype=np.uint8)
        mem[DST2 + i] = np.full(len(codes), 0xA5, dtype=np.uint8)
    ops = []
    for a in range(2):
        ops += [RAW + 4 * a, RAW + 16 + 4 * a, SF] + [DST + 16 * (4 * a + j) for j in range(4)]
    _Interp(ops, mem, len(codes)).run(ptx.rs_y_units_asm(2, exp_shift))
    _GlobalInterp([RAW, SF, DST2], mem, len(codes)).run(ptx.rs_y_global_asm(exp_shift))
    for i in range(128):
        assert np.array_equal(mem[DST + i], mem[DST2 + i]), i
    got = np.stack([_f16_at(mem, DST2 + 2 * lk) for lk in range(64)], axis=1)
    assert np.array_equal(got, _logical(_row_values(codes, scales, exp_shift)))


@pytest.mark.parametrize("exp_shift", [-14, 0])
def test_prepass_batched_item_runs_the_single_item_instructions(exp_shift):
    """The prepass builds: the batched pre-pass (all of a thread's loads in one asm
    block, then one decode-and-store block per item) runs, per item, exactly the loads and the
    decode/store instructions of :func:`ptx.rs_y_global_asm` (checked above to be bit-identical
    to the shared-memory decode): the store block with its operands named as the single-item
    block's registers is the single-item block minus its loads, and the load block loads item
    i's words and scale word from its own addresses, predicated on its own flag."""
    import re

    single = [ln for ln in ptx.rs_y_global_asm(exp_shift).splitlines() if not ln.startswith(".reg")]
    loads = [ln for ln in single if ln.startswith("ld.global")]
    names = {8: "s", 9: "$2"}
    store = re.sub(r"\$(\d+)", lambda m: names.get(int(m[1]), f"W{m[1]}"), ptx.rs_y_global_store_asm(exp_shift))
    assert [ln for ln in store.splitlines() if not ln.startswith(".reg")] == [ln for ln in single if ln not in loads]
    n = 3
    batch = ptx.rs_y_global_load_asm(n).splitlines()
    for i in range(n):
        raw, sf, ok = (f"${9 * n + 3 * i + k}" for k in range(3))
        w = [f"${9 * i + k}" for k in range(9)]
        assert f"setp.ne.u32 p{i}, {ok}, 0;" in batch
        want = [
            f"@p{i} ld.global.v4.b32 {{{w[0]}, {w[1]}, {w[2]}, {w[3]}}}, [{raw}];",
            f"@p{i} ld.global.v4.b32 {{{w[4]}, {w[5]}, {w[6]}, {w[7]}}}, [{raw}+16];",
            f"@p{i} ld.global.b32 {w[8]}, [{sf}];",
        ]
        assert all(x in batch for x in want)
        single_i = [ln.replace("{W0, W1, W2, W3}", "{" + ", ".join(w[:4]) + "}")
                    .replace("{W4, W5, W6, W7}", "{" + ", ".join(w[4:8]) + "}")
                    .replace("s, [$1]", f"{w[8]}, [{sf}]").replace("[$0", f"[{raw}") for ln in loads]
        assert [f"@p{i} " + ln for ln in single_i] == want
