"""The exact grouped NVFP4 GEMM: integer accumulation, one correct rounding to fp16.

A dequantized element is (E2M1 value * 2) * (E4M3 value * 2^9) * 2^-10: an integer of at most
22 bits (|.| <= 12 * 229376 < 2^22) times 2^-10, so out[i, j] * 2^20 is the integer
sum_k A[i, k] * B[j, k] (|.| < 2^44 * K < 2^63 for K <= 2^19), computed exactly below.
The reference reads the ROW-MAJOR scales; check_blocked_scales checks the reordered copy.

Signed zeros: an exact zero is returned as +0. A kernel whose fp32 accumulator starts at +0 also
returns +0 for exact cancellation, but a kernel may produce -0 (e.g. all products -0 in some
orders); compare() treats -0 and +0 as equal.
NaN: out[i, j] is NaN iff a NaN scale (0x7F/0xFF) lies in sfa row i or sfb row j (within K).
"""

import torch

from .formats import e2m1_twice, e4m3_times_512, unpack_e2m1
from .rounding import round_scaled_int_to_fp16

PRODUCT_EXPONENT = -20          # out * 2^20 is an integer
_FLOAT64_EXACT = 2 ** 53
_SPLIT_BITS = 11


def operand_integers(packed: torch.Tensor, scales: torch.Tensor, k: int
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """Packed E2M1 [rows, k/2, 1] and E4M3 scales [rows, k/16, 1] ->
    (int64 [rows, k] = dequantized value * 2^10, bool [rows] = row has a NaN scale)."""
    rows = packed.shape[0]
    if packed.shape[:2] != (rows, k // 2) or scales.shape[:2] != (rows, k // 16):
        raise ValueError(f"operand shapes {tuple(packed.shape)} / {tuple(scales.shape)} "
                         f"do not match k = {k}")
    codes = unpack_e2m1(packed.reshape(rows, k // 2))
    # the plain scales may live in host memory (the leaderboard layout): read them where A is
    scale_int, scale_nan = e4m3_times_512(scales.to(packed.device).reshape(rows, k // 16))
    values = e2m1_twice(codes).view(rows, k // 16, 16) * scale_int.unsqueeze(-1)
    return values.view(rows, k), scale_nan.any(dim=1)


def exact_int_matmul(a: torch.Tensor, b: torch.Tensor, *, force_split: bool = False
                     ) -> torch.Tensor:
    """Exact int64 a @ b.T for int64 a [m, k], b [n, k] with |a|, |b| < 2^22, via float64 BLAS.

    float64 adds integers exactly while every partial sum stays below 2^53, in any order and
    with or without FMA. If max|a| * max|b| * k might pass 2^53, a is split into 11-bit halves
    a = hi * 2^11 + lo (|hi|, lo < 2^11), so each half-product sum is < 2^33 * k <= 2^52 for
    k <= 2^19, and the halves are combined in int64.
    """
    k = a.shape[1]
    if k > 2 ** 19:
        raise ValueError(f"K = {k} > 2^19: the exact int64 accumulation could overflow")
    a_max = int(a.abs().max()) if a.numel() else 0
    b_max = int(b.abs().max()) if b.numel() else 0
    b64 = b.to(torch.float64).T
    if not force_split and a_max * b_max * k < _FLOAT64_EXACT:
        return (a.to(torch.float64) @ b64).to(torch.int64)
    hi = a >> _SPLIT_BITS                       # floor division: lo is in [0, 2^11)
    lo = a - (hi << _SPLIT_BITS)
    both = torch.cat((hi, lo)).to(torch.float64) @ b64
    m = a.shape[0]
    return (both[:m].to(torch.int64) << _SPLIT_BITS) + both[m:].to(torch.int64)


def group_integers(data, group: int):
    """(A int64 [m, k], B int64 [n, k], NaN mask [m, n]) of one group, units 2^-10 each."""
    (a, b, _), (sfa, sfb), (m, n, k, _) = data[0][group], data[1][group], data[3][group]
    a_int, a_nan = operand_integers(a, sfa, k)
    b_int, b_nan = operand_integers(b, sfb, k)
    if a_int.shape[0] != m or b_int.shape[0] != n:
        raise ValueError(f"group {group}: tensors have {a_int.shape[0]} x {b_int.shape[0]} rows, "
                         f"problem size says {m} x {n}")
    return a_int, b_int, a_nan.unsqueeze(1) | b_nan.unsqueeze(0)


def reference_exact(data) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per group (int64 numerator [m, n] of the exact output in units of 2^-20, NaN mask [m, n])."""
    results = []
    for group in range(len(data[0])):
        a_int, b_int, nan = group_integers(data, group)
        results.append((exact_int_matmul(a_int, b_int), nan))
    return results


def reference(data) -> list[torch.Tensor]:
    """Per group the correctly rounded fp16 output [m, n, 1] on the input's device."""
    outputs = []
    for numerator, nan in reference_exact(data):
        out = round_scaled_int_to_fp16(numerator, PRODUCT_EXPONENT)
        out = torch.where(nan, torch.tensor(float("nan"), dtype=out.dtype, device=out.device), out)
        outputs.append(out.unsqueeze(-1))
    return outputs
