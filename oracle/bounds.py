"""How far an honest fp32-accumulating kernel may land from the exact reference, per element.

Model of an honest kernel: every product a_i * b_i of dequantized values is formed exactly (it
has at most 12 significant bits, exact in fp32), the K products are added in fp32 in ANY order
(any tree, also with round-toward-zero additions as tensor cores may do), and the fp32 result
is rounded once to fp16 (round to nearest even).

Derivation. Let x be the exact dot product, S = sum |a_i b_i|, u = 2^-23 (the relative error of
one fp32 addition under any rounding mode, directed ones included; round-to-nearest gives 2^-24).
A sum of K terms in any tree order has |fl32(sum) - x| <= gamma_{K-1} S with
gamma_n = n u / (1 - n u) (Higham, Accuracy and Stability, 2nd ed., §4.2 and Lemma 3.1);
call this E. Rounding y = fl32(sum) to fp16 moves it by at most half an fp16 ulp at |y| <= |x|+E;
the reference r = fp16(x) is within half an ulp at |x| of x. Hence
    |fp16(y) - r| <= E + ulp16(|x| + E) =: bound,
with ulp16(v) = 2^(floor(log2 v) - 10) for v >= 2^-14 and 2^-24 below (ulp16 is monotone).
Overflow: fp16(y) is +inf iff y >= 65520, which needs x + E >= 65520; compare() therefore
treats +-inf as +-65520 and applies the same bound (see compare.py).

Exact elements: every product is a multiple of g = 2^(v_a(i) + v_b(j)) * 2^-20, where v_a(i) is
the smallest 2-adic valuation of row i's nonzero integers (likewise v_b(j)). Every partial sum
is then a multiple of g of magnitude <= S; if S < 2^24 g it is an integer below 2^24 times a
power of two, exact in fp32, so the kernel's fp32 sum is x itself and its fp16 output must equal
the reference (up to the sign of zero). exact_sum_mask marks these elements and the bound
there is 0. Elements with a NaN scale get bound 0 (NaN positions are compared separately).
"""

from dataclasses import dataclass

import torch

from .reference import PRODUCT_EXPONENT, exact_int_matmul, group_integers
from .rounding import bit_length, round_scaled_int_to_fp16, ulp16

FP32_ADDITION_UNIT = 2.0 ** -23            # covers round-toward-zero as well as nearest
_FLOAT64_SLACK = 1 + 2.0 ** -40            # S and E are evaluated in float64: keep E an upper bound
_FP32_SIGNIFICAND = 24


@dataclass
class Expected:
    """Everything the oracle knows about one group's output ([m, n, 1] tensors)."""
    reference: torch.Tensor        # fp16, correctly rounded exact value (NaN where a scale is NaN)
    exact: torch.Tensor            # float64 approximation of the exact value (for reports)
    accumulation_error: torch.Tensor   # E: float64
    bound: torch.Tensor            # float64, 0 on exact-sum elements
    exact_sum: torch.Tensor        # bool: every fp32 partial sum provably exact
    nan: torch.Tensor              # bool: a NaN scale touches this element


def _min_valuation(x: torch.Tensor) -> torch.Tensor:
    """Per row, the smallest 2-adic valuation of the nonzero entries (62 for an all-zero row)."""
    lowest_bit = x & (-x)                      # same for x and -x in two's complement
    smallest = torch.where(x != 0, lowest_bit, 2 ** 62).amin(dim=1)
    return bit_length(smallest) - 1


def gamma(terms: int, unit: float = FP32_ADDITION_UNIT) -> float:
    """gamma_{terms-1}: the relative error bound of adding `terms` numbers in any order."""
    n = max(terms - 1, 0) * unit
    return n / (1 - n)


def expected_outputs(data) -> list[Expected]:
    """Reference, exact value, accumulation error, bound and exact-sum mask for every group."""
    results = []
    for group in range(len(data[0])):
        a_int, b_int, nan = group_integers(data, group)
        k = data[3][group][2]
        numerator = exact_int_matmul(a_int, b_int)
        abs_sum = exact_int_matmul(a_int.abs(), b_int.abs())          # S * 2^20, exact
        scale = 2.0 ** PRODUCT_EXPONENT
        exact = numerator.to(torch.float64) * scale
        error = abs_sum.to(torch.float64) * (scale * gamma(k) * _FLOAT64_SLACK)
        shift = (_min_valuation(a_int).unsqueeze(1) + _min_valuation(b_int).unsqueeze(0))
        exact_sum = ((abs_sum >> shift.clamp(max=62)) < 2 ** _FP32_SIGNIFICAND) & ~nan
        bound = error + ulp16(exact.abs() + error)
        bound = torch.where(exact_sum | nan, torch.zeros_like(bound), bound)
        reference = round_scaled_int_to_fp16(numerator, PRODUCT_EXPONENT)
        reference = torch.where(nan, torch.full_like(reference, float("nan")), reference)
        exact = torch.where(nan, torch.full_like(exact, float("nan")), exact)
        results.append(Expected(*(t.unsqueeze(-1) for t in (
            reference, exact, error, bound, exact_sum, nan))))
    return results


def error_bound(data) -> list[torch.Tensor]:
    """Per group float64 [m, n, 1]: the largest |kernel - reference| an honest kernel may show."""
    return [e.bound for e in expected_outputs(data)]


def exact_sum_mask(data) -> list[torch.Tensor]:
    """Per group bool [m, n, 1]: elements a correct kernel must reproduce bit for bit (+-0 aside)."""
    return [e.exact_sum for e in expected_outputs(data)]
