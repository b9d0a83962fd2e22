"""An independent, slow oracle in Python Fractions, and a builder of dot products with chosen values.

Decoding goes through ml_dtypes and raw nibbles/bytes, rounding through a bisection over every
finite fp16 value, so nothing here shares code with oracle.reference.
"""

import bisect
from fractions import Fraction

import ml_dtypes
import numpy as np
import torch

from oracle import GroupCodes, data_from_codes

E2M1 = [Fraction(float(v)) for v in
        np.arange(16, dtype=np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float64)]
E4M3 = [None if np.isnan(v) else Fraction(float(v)) for v in
        np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)]
_FP16_BITS = np.arange(0x7C00, dtype=np.uint16)                 # +0 .. 65504, increasing
_FP16_VALUES = [Fraction(float(v)) for v in _FP16_BITS.view(np.float16)] + [Fraction(65536)]
_FP16_BITS = list(_FP16_BITS) + [0x7C00]                        # 2^16 stands for overflow


def round_to_fp16(x: Fraction) -> float:
    """Correctly rounded fp16 (ties to even bit pattern, IEEE overflow), as a Python float."""
    magnitude = abs(x)
    if magnitude >= _FP16_VALUES[-1]:
        rounded = float("inf")
    else:
        hi = bisect.bisect_left(_FP16_VALUES, magnitude)
        if _FP16_VALUES[hi] == magnitude:
            index = hi
        else:
            lo = hi - 1
            below, above = magnitude - _FP16_VALUES[lo], _FP16_VALUES[hi] - magnitude
            index = lo if below < above else hi if above < below else (
                lo if _FP16_BITS[lo] % 2 == 0 else hi)
        rounded = float("inf") if index == len(_FP16_VALUES) - 1 else float(_FP16_VALUES[index])
    return -rounded if x < 0 else rounded


def _operand_fractions(packed, scales, k):
    raw = packed.reshape(packed.shape[0], k // 2).view(torch.uint8).tolist()
    scale_bytes = scales.reshape(scales.shape[0], k // 16).view(torch.uint8).tolist()
    rows = []
    for row_bytes, row_scales in zip(raw, scale_bytes):
        codes = [c for byte in row_bytes for c in (byte & 0xF, byte >> 4)]
        scale = [E4M3[s] for s in row_scales]
        rows.append(None if None in scale else [E2M1[c] * scale[i // 16]
                                                for i, c in enumerate(codes)])
    return rows


def exact_outputs(data) -> list[list[list[Fraction | None]]]:
    """Per group [m][n] exact Fractions, None where a NaN scale is involved."""
    outputs = []
    for (a, b, _), (sfa, sfb), (m, n, k, _) in zip(data[0], data[1], data[3]):
        rows, cols = _operand_fractions(a, sfa, k), _operand_fractions(b, sfb, k)
        outputs.append([[None if r is None or c is None else sum(x * y for x, y in zip(r, c))
                         for c in cols] for r in rows])
    return outputs


# ---- a 1 x 1 x K problem whose exact output is a chosen multiple of 2^-20 ----

_POSITIVE_CODES = {1: 1, 2: 2, 3: 3, 4: 4, 5: 6, 6: 8, 7: 12}      # code -> value * 2
_A_TERMS = sorted(((twice * int(E4M3[byte] * 512), code, byte)
                   for code, twice in _POSITIVE_CODES.items() for byte in range(1, 0x7F)),
                  reverse=True)


def _power_of_two_operand(t: int) -> tuple[int, int]:
    """(code, scale byte) whose value * 2^10 is 2^t, for 0 <= t <= 20."""
    code, t_scale = {18: (2, 17), 19: (4, 17), 20: (6, 17)}.get(t, (1, t))
    p = t_scale - 9                                               # scale value 2^p
    return code, (p + 7) << 3 if p >= -6 else 1 << (p + 9)


def dot_with_numerator(numerator: int):
    """data for one 1 x 1 output whose exact value is numerator * 2^-20 (numerator != 0)."""
    magnitude, sign_bit = abs(numerator), 8 if numerator < 0 else 0
    t = min((magnitude & -magnitude).bit_length() - 1, 20)
    b_code, b_byte = _power_of_two_operand(t)
    remaining, blocks = magnitude >> t, []
    while remaining:
        value, code, byte = next(term for term in _A_TERMS if term[0] <= remaining)
        blocks.append((code | sign_bit, byte))
        remaining -= value
    k = 16 * len(blocks)
    a_codes, b_codes = torch.zeros(1, k, dtype=torch.uint8), torch.zeros(1, k, dtype=torch.uint8)
    a_codes[0, 0::16] = torch.tensor([code for code, _ in blocks], dtype=torch.uint8)
    b_codes[0, 0::16] = b_code
    sfa = torch.tensor([[byte for _, byte in blocks]], dtype=torch.uint8)
    sfb = torch.full((1, len(blocks)), b_byte, dtype=torch.uint8)
    return data_from_codes([GroupCodes(a_codes, sfa, b_codes, sfb)])
