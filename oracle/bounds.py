"""How far an honest fp32-accumulating kernel may land from the exact reference, per element.

Declared accumulation order. A subject declares ``chunk`` (``KernelConstraints.accumulation_chunk``):
K is cut into consecutive chunks of ``chunk`` elements, in K order, and the fp32 accumulator t
is updated once per chunk:

    t_0 = 0,   t_j = the fp32 evaluation of  t_{j-1} + (the chunk's exact products)

in ANY order of fp32 additions (any binary tree over those chunk + 1 operands, the chunk's own
partial sum first or not, any rounding mode whose relative error is at most u = 2^-23: nearest
gives 2^-24, round-toward-zero as tensor cores may do gives 2^-23). Every product
a_i * b_i of dequantized values is exact (it has at most 12 significant bits), then t_N is
rounded once to fp16 (round to nearest even). ``chunk=None`` declares nothing about the order:
one chunk of all K products, any order (the bound of a plain fp32 matmul).
What the subjects declare: the CPU model ``tile_k`` (``acc += a_tile @ b_tile.T``, torch's
fp32 matmul over one K tile in an unspecified order); the Hopper kernel 16 (one wgmma of K=16
per accumulator update, its internal order unspecified); tcgen05 block-scaled MMA 64 (K=64 per
instruction).

Cut accumulation. A subject may also declare ``k_split`` (``KernelConstraints.k_split``, a
positive multiple of chunk; the Hopper kernel's ``split_last`` schedule declares ``tile_k``):
where h = (K // (2 k_split)) k_split > 0, an output may instead be the fp32 sum of two
accumulations, each from 0 in the declared chunk order, one over the head (K elements [0, h))
and one over the tail ([h, K)). h is a multiple of chunk, so no chunk straddles it and the
chunks are those of the uncut order.

Derivation of E (the fp32 error). Let s_j be the exact sum of the products of chunks 1..j (exact
integers times 2^-20, computed below in int64), A_j the sum of |products| of chunk j,
S = sum_j A_j, gamma_n = n u / (1 - n u). A sum of n terms in any tree order is within
gamma_{n-1} * (sum of the terms' magnitudes) of the exact sum (Higham, Accuracy and Stability,
2nd ed., Lemma 3.1 and §4.2). With e_j = |t_j - s_j| and |t_{j-1}| <= |s_{j-1}| + e_{j-1}:

    e_1 <= gamma_{chunk} A_1,   e_j <= (1 + gamma_chunk) e_{j-1} + gamma_chunk (|s_{j-1}| + A_j)
    =>  e_N <= gamma_chunk (1 + gamma_chunk)^(N-1) (S + sum_{j=1}^{N-1} |s_j|)

Block FMA. Tensor cores may evaluate one update as a block FMA instead of a tree of fp32
additions: align the chunk + 1 operands to the largest exponent, drop the bits below 24
significant ones of it (each operand loses less than u * max|operand|), add exactly, round once
(u |result|); the model of Fasi, Higham, Mikaitis and Pranesh, "Numerical behavior of NVIDIA
tensor cores" (PeerJ CS, 2021). That update errs by at most (chunk + 2) u (|t_{j-1}| + A_j),
so E uses gamma_{chunk+2} in place of gamma_chunk, and covers both:

    E := gamma_{chunk+2} (1 + gamma_{chunk+2})^(N-1) (S + sum_{j=1}^{N-1} |s_j|)

(with no declared order, one chunk of K terms in any tree: E = gamma_{K-1} S). The a-posteriori
partial sums |s_j| replace the sum of |terms| over all of K: with random signs |s_j| grows like
sqrt(j), so E is about chunk * u * sum_j |s_j| instead of K * u * S (at K = 7168, uniform codes:
a median of 51 fp16 ulps for K * u * S, about 1 for chunk 16; see oracle/tests/test_bounds.py).

E of a cut accumulation. Let the head be chunks 1..N_h, so s_h := s_{N_h} is the exact head
sum. The head is a chain of its own: its result t_head is within E_head of s_h, E_head the E
above over chunks 1..N_h (S_head, partial sums s_j for j < N_h). The tail is a chain from 0
whose partial sums are s_j - s_h (exact int64 differences): its result t_tail is within E_tail
of s_N - s_h, E_tail the E above over chunks N_h + 1..N (S_tail = S - S_head, partial sums
s_j - s_h for N_h < j < N). The one fp32 addition errs by at most u |t_head + t_tail|, and
|t_head + t_tail| <= |s_N| + E_head + E_tail, so

    E_cut := E_head + E_tail + u (|s_N| + E_head + E_tail)

Either order may compute any element, so the bound uses max(E, E_cut). With no declared chunk
k_split changes nothing: the cut order is one more tree of fp32 additions over the K products,
which gamma_{K-1} S already covers.

The fp16 step is taken exactly: fp16 rounding is monotone, so a kernel result y with
|y - x| <= E rounds into [fp16(x - E), fp16(x + E)], both computed by correct integer rounding
of the widened interval (x - E and x + E rounded outward to multiples of 2^-20). The bound is
the larger distance of those two ends from the reference r = fp16(x):

    bound = max(fp16(x + E) - r, r - fp16(x - E))    (infinities read as +-65520)

No rigorous bound given E can be smaller: both ends are values an fp32 result within E may
round to. Overflow: fp16(y) is +inf iff y >= 65520; compare() reads +-inf as +-65520 on both
sides, and this bound is computed the same way (see compare.py).

Exact elements: every product is a multiple of g = 2^(v_a(i) + v_b(j)) * 2^-20, where v_a(i) is
the smallest 2-adic valuation of row i's nonzero integers (likewise v_b(j)). Every partial sum
is then a multiple of g of magnitude <= S; if S < 2^24 g it is an integer below 2^24 times a
power of two, exact in fp32, so the kernel's fp32 sum is x itself in any order and its fp16
output must equal the reference (up to the sign of zero). The same holds for a cut
accumulation: its head and tail partial sums (s_j and s_j - s_h) are sums of products too,
multiples of g of magnitude <= S. exact_sum_mask marks these elements and the bound there is 0.
Elements with a NaN scale get bound 0 (NaN positions are compared separately).
"""

import math
from dataclasses import dataclass

import torch

from .reference import PRODUCT_EXPONENT, exact_int_matmul, group_integers
from .rounding import FP16_OVERFLOW_THRESHOLD, bit_length, round_scaled_int_to_fp16, ulp16

FP32_ADDITION_UNIT = 2.0 ** -23            # covers round-toward-zero as well as nearest
_FLOAT64_SLACK = 1 + 2.0 ** -30            # E is evaluated in float64 (<= 2^20 roundings): keep it an upper bound
_FP32_SIGNIFICAND = 24
_BLOCK_FMA_EXTRA_TERMS = 2                 # gamma_{chunk+2}, not gamma_chunk: see "Block FMA" above
_EXACT_FLOAT64_CHUNK = 512                 # chunk sums of |products| < 2^44 stay below 2^53: exact in float64
_PREFIX_BATCH_ELEMENTS = 1 << 22           # float64 elements of chunk sums held at once (32 MiB)

__all__ = ["Expected", "FP32_ADDITION_UNIT", "accumulation_error", "cut_point", "error_bound",
           "exact_sum_mask", "expected_outputs", "gamma", "ulp16"]


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


def _prefix_magnitudes(a_int: torch.Tensor, b_int: torch.Tensor, chunk: int) -> torch.Tensor:
    """float64 [m, n]: sum_{j=1}^{N-1} |s_j| in units of 2^-20, s_j the exact sum of the first j
    chunks (N = ceil(K / chunk)). The s_j are exact int64; the float64 sum of their magnitudes
    is an approximation covered by _FLOAT64_SLACK."""
    m, k = a_int.shape
    n = b_int.shape[0]
    total = torch.zeros(m, n, dtype=torch.float64, device=a_int.device)
    running = torch.zeros(m, n, dtype=torch.int64, device=a_int.device)
    starts = list(range(0, k, chunk))[:-1]          # the last chunk's prefix is the result itself
    if not starts or m == 0 or n == 0:
        return total
    if chunk > _EXACT_FLOAT64_CHUNK or k % chunk:
        for k0 in starts:
            running += exact_int_matmul(a_int[:, k0:k0 + chunk], b_int[:, k0:k0 + chunk])
            total += running.abs().to(torch.float64)
        return total
    batch = max(1, _PREFIX_BATCH_ELEMENTS // (m * n))
    a3 = a_int.to(torch.float64).view(m, k // chunk, chunk)
    b3 = b_int.to(torch.float64).view(n, k // chunk, chunk)
    for j0 in range(0, len(starts), batch):
        j1 = min(j0 + batch, len(starts))
        sums = torch.einsum("mjc,njc->jmn", a3[:, j0:j1], b3[:, j0:j1]).to(torch.int64)
        prefixes = running.unsqueeze(0) + sums.cumsum(dim=0)
        total += prefixes.abs().to(torch.float64).sum(dim=0)
        running = prefixes[-1]
    return total


def cut_point(k: int, chunk: int | None, k_split: int | None) -> int:
    """h: the first K element of the tail of a cut accumulation (module docstring); 0 when K is
    never cut (no k_split, no declared chunk, or K < 2 k_split)."""
    if k_split is None:
        return 0
    if isinstance(k_split, bool) or not isinstance(k_split, int) or k_split < 1:
        raise ValueError(f"k_split must be a positive integer, got {k_split!r}")
    if chunk is None:
        return 0
    if k_split % chunk:
        raise ValueError(f"k_split must be a positive multiple of the accumulation chunk {chunk}, "
                         f"got {k_split}")
    return (k // (2 * k_split)) * k_split


def _chain_error(a_int: torch.Tensor, b_int: torch.Tensor, abs_sum: torch.Tensor,
                 chunk: int) -> torch.Tensor:
    """E of one chain from 0 over all the K elements of a_int, b_int (units of 2^-20)."""
    k = a_int.shape[1]
    chunk = min(chunk, k)
    chunks = -(-k // chunk)
    g = gamma(chunk + 1 + _BLOCK_FMA_EXTRA_TERMS)
    growth = math.exp((chunks - 1) * math.log1p(g))
    magnitudes = abs_sum.to(torch.float64) + _prefix_magnitudes(a_int, b_int, chunk)
    return magnitudes * (g * growth * _FLOAT64_SLACK)


def _cut_error(a_int: torch.Tensor, b_int: torch.Tensor, abs_sum: torch.Tensor,
               numerator: torch.Tensor, chunk: int, h: int) -> torch.Tensor:
    """E_cut of the module docstring: head [0, h) and tail [h, K) chains, then one fp32 add."""
    assert 0 < h < a_int.shape[1] and h % chunk == 0, (h, chunk)   # no chunk straddles h
    head_abs = exact_int_matmul(a_int[:, :h].abs(), b_int[:, :h].abs())
    head = _chain_error(a_int[:, :h], b_int[:, :h], head_abs, chunk)
    tail = _chain_error(a_int[:, h:], b_int[:, h:], abs_sum - head_abs, chunk)
    both = head + tail
    return (both + (numerator.abs().to(torch.float64) + both) * FP32_ADDITION_UNIT) * _FLOAT64_SLACK


def accumulation_error(a_int: torch.Tensor, b_int: torch.Tensor, abs_sum: torch.Tensor,
                       chunk: int | None, k_split: int | None = None,
                       numerator: torch.Tensor | None = None) -> torch.Tensor:
    """E of the module docstring, float64 [m, n] in units of 2^-20 (times 2^-20 by the caller):
    max(E, E_cut) where ``k_split`` cuts this K. ``numerator``: the exact sum a_int @ b_int.T
    when the caller has it (computed here otherwise, for a cut only)."""
    k = a_int.shape[1]
    if chunk is None:
        cut_point(k, chunk, k_split)                # validates k_split; the bound covers any cut
        return abs_sum.to(torch.float64) * (gamma(k) * _FLOAT64_SLACK)
    if chunk < 1:
        raise ValueError(f"accumulation chunk must be >= 1, got {chunk}")
    chunk = int(chunk)
    h = cut_point(k, chunk, k_split)
    error = _chain_error(a_int, b_int, abs_sum, chunk)
    if h == 0:
        return error
    numerator = exact_int_matmul(a_int, b_int) if numerator is None else numerator
    return torch.maximum(error, _cut_error(a_int, b_int, abs_sum, numerator, chunk, h))


def _fp16_distance(numerator: torch.Tensor, error_units: torch.Tensor,
                   reference: torch.Tensor) -> torch.Tensor:
    """max |fp16(v) - r| over v in [x - E, x + E] (x = numerator * 2^-20, E = error_units * 2^-20),
    infinities read as +-65520."""
    widened = torch.ceil(error_units).clamp(max=2.0 ** 62).to(torch.int64)
    ends = [round_scaled_int_to_fp16(numerator + sign * widened, PRODUCT_EXPONENT) for sign in (1, -1)]
    limit = FP16_OVERFLOW_THRESHOLD
    r = reference.to(torch.float64).clamp(-limit, limit)
    high, low = (e.to(torch.float64).clamp(-limit, limit) for e in ends)
    return torch.maximum(high - r, r - low)


def expected_outputs(data, chunk: int | None = None, k_split: int | None = None) -> list[Expected]:
    """Reference, exact value, accumulation error, bound and exact-sum mask for every group,
    for a subject that declares accumulation ``chunk`` and ``k_split`` (see the module
    docstring). Raises ValueError when k_split is not a positive multiple of chunk."""
    results = []
    for group in range(len(data[0])):
        a_int, b_int, nan = group_integers(data, group)
        k = data[3][group][2]
        numerator = exact_int_matmul(a_int, b_int)
        abs_sum = exact_int_matmul(a_int.abs(), b_int.abs())          # S * 2^20, exact
        scale = 2.0 ** PRODUCT_EXPONENT
        exact = numerator.to(torch.float64) * scale
        error_units = accumulation_error(a_int, b_int, abs_sum, chunk, k_split, numerator)
        shift = (_min_valuation(a_int).unsqueeze(1) + _min_valuation(b_int).unsqueeze(0))
        exact_sum = ((abs_sum >> shift.clamp(max=62)) < 2 ** _FP32_SIGNIFICAND) & ~nan
        reference = round_scaled_int_to_fp16(numerator, PRODUCT_EXPONENT)
        bound = _fp16_distance(numerator, error_units, reference)
        bound = torch.where(exact_sum | nan, torch.zeros_like(bound), bound)
        reference = torch.where(nan, torch.full_like(reference, float("nan")), reference)
        exact = torch.where(nan, torch.full_like(exact, float("nan")), exact)
        results.append(Expected(*(t.unsqueeze(-1) for t in (
            reference, exact, error_units * scale, bound, exact_sum, nan))))
    return results


def error_bound(data, chunk: int | None = None, k_split: int | None = None) -> list[torch.Tensor]:
    """Per group float64 [m, n, 1]: the largest |kernel - reference| an honest kernel may show."""
    return [e.bound for e in expected_outputs(data, chunk, k_split)]


def exact_sum_mask(data) -> list[torch.Tensor]:
    """Per group bool [m, n, 1]: elements a correct kernel must reproduce bit for bit (+-0 aside)."""
    return [e.exact_sum for e in expected_outputs(data)]
