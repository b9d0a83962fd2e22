"""Correct rounding of exact dyadic values (integer * 2^exponent) to fp16, in integer arithmetic.

Going through float64 first would round twice once the integer passes 53 bits, so the rounding
is done on the integer itself: keep 11 significant bits (fewer in the subnormal range),
round to nearest with ties to even, then the kept value is exact in float64 and in fp16.
IEEE overflow: a value whose rounding (with unbounded exponent) exceeds 65504 becomes inf,
i.e. |v| >= 65520 -> inf, 65520 - tiny -> 65504.
"""

import torch

FP16_MAX = 65504.0
FP16_OVERFLOW_THRESHOLD = 65520.0   # the midpoint between 65504 and 2^16
_FP16_MANTISSA_BITS = 10
_FP16_MIN_NORMAL_EXPONENT = -14


def bit_length(a: torch.Tensor) -> torch.Tensor:
    """Bit length of nonnegative int64 values (0 for 0), by binary search on shifts."""
    length = torch.zeros_like(a)
    for step in (32, 16, 8, 4, 2, 1):
        high = (a >> step) > 0
        length += step * high.long()
        a = torch.where(high, a >> step, a)
    return length + (a > 0).long()


def round_scaled_int_to_fp16(numerator: torch.Tensor, exponent: int = -20) -> torch.Tensor:
    """fp16 nearest to numerator * 2^exponent (int64 numerator), ties to even; 0 gives +0."""
    magnitude = numerator.abs()
    top_bit = bit_length(magnitude) - 1                 # value in [2^(top+exp), 2^(top+exp+1))
    # fp16 keeps bits down to 2^(max(top+exp, -14) - 10); drop the bits below that
    ulp_exponent = torch.clamp(top_bit + exponent, min=_FP16_MIN_NORMAL_EXPONENT) \
        - _FP16_MANTISSA_BITS
    drop = torch.clamp(ulp_exponent - exponent, min=0)
    kept = magnitude >> drop
    remainder = magnitude - (kept << drop)
    half = (torch.ones_like(drop) << drop) >> 1
    round_up = (drop > 0) & ((remainder > half) | ((remainder == half) & (kept % 2 == 1)))
    kept = kept + round_up.long()
    # kept has at most 12 bits, so this float64 is exact; > 65504 rounds to inf in .half()
    value = torch.ldexp(kept.to(torch.float64), (drop + exponent).to(torch.float64))
    value = torch.where(numerator < 0, -value, value)
    return value.to(torch.float16)


def ulp16(x: torch.Tensor) -> torch.Tensor:
    """fp16 unit in the last place at |x| (float64): 2^(floor(log2|x|) - 10), 2^-24 below 2^-14."""
    x = x.abs().to(torch.float64)
    _, e = torch.frexp(x)                                  # x = m * 2^e, m in [0.5, 1)
    exponent = torch.clamp(e.to(torch.float64) - 1, min=_FP16_MIN_NORMAL_EXPONENT)
    exponent = torch.where(x == 0, _FP16_MIN_NORMAL_EXPONENT, exponent)   # frexp(0) has e = 0
    return torch.ldexp(torch.ones_like(x), exponent - _FP16_MANTISSA_BITS)
