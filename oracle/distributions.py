"""Random NVFP4 problems drawn as codes (E2M1 nibbles, E4M3 bytes).

  uniform      all 16 codes; scales 2^-3 .. 1.875*2^2 (random mantissa): outputs mostly finite
  sparse       ~90% zero codes (+0 and -0), uniform scales
  exact_sum    all codes; scales small enough that every fp32 partial sum is exact (see
               exact_sum_max_scale_byte), so a correct kernel is bitwise equal to the reference
  extreme      scales 1 .. 448: most outputs overflow fp16 to +-inf
  tiny         subnormal scales 0x01..0x07, mostly zero codes: many fp16-subnormal outputs
  nan_scales   uniform with 2 scale bytes of sfa and 2 of sfb set to 0x7F/0xFF per group
  gaussian     quantize_nvfp4 of standard normal data (realistic)
  leaderboard  the public leaderboard's generator: each packed byte drawn from [0, 255) and
               masked with 0b1011_1011 (codes {+-0, +-0.5, +-1, +-1.5}), scales {1, 2}

Every draw uses the torch.Generator it is given (CPU), never the global RNG, in a fixed order,
so a (seed, distribution, sizes) triple names one problem on every machine.
"""

from dataclasses import dataclass

import torch

from .formats import _E4M3_TIMES_512
from .quantize import quantize_nvfp4


@dataclass(frozen=True)
class GroupCodes:
    """One group as codes: a [m, k], b [n, k] E2M1 codes; sfa [m, k/16], sfb [n, k/16] E4M3 bytes."""
    a_codes: torch.Tensor
    sfa: torch.Tensor
    b_codes: torch.Tensor
    sfb: torch.Tensor


def _randint(low, high, shape, gen):
    return torch.randint(low, high, shape, generator=gen, dtype=torch.int64, device=gen.device)


def _randbytes(low, high, shape, gen):
    """``_randint``'s values and generator use (torch draws the same 32-bit words for a range below
    2^32 whatever the dtype), as uint8: the bulk code and scale draws, in half the time."""
    return torch.randint(low, high, shape, generator=gen, dtype=torch.uint8, device=gen.device)


def _pick(choices, shape, gen) -> torch.Tensor:
    table = torch.tensor(choices, dtype=torch.uint8, device=gen.device)
    return table[_randbytes(0, len(choices), shape, gen).long()]


def _scale_bytes(exponent_lo: int, exponent_hi: int, shape, gen) -> torch.Tensor:
    """Positive E4M3 bytes with exponent field in [lo, hi] and a random mantissa, never NaN."""
    exponent = _randbytes(exponent_lo, exponent_hi + 1, shape, gen)
    mantissa = _randbytes(0, 8, shape, gen)
    mantissa = torch.where((exponent == 15) & (mantissa == 7), 6, mantissa)   # 0x7F is NaN
    return (exponent << 3) | mantissa


def _all_codes(shape, gen):
    return _randbytes(0, 16, shape, gen)


def _leaderboard_codes(shape, gen):
    """Codes as the leaderboard draws them: a packed byte from [0, 255) (its randint(255)), each
    nibble masked to its sign bit and two low bits; low nibble first."""
    rows, k = shape
    packed = _randbytes(0, 255, (rows, k // 2), gen) & 0b1011_1011
    return torch.stack((packed & 0xF, packed >> 4), dim=-1).reshape(rows, k)


def _draw_operand(rows, k, gen, codes_fn, scales_fn):
    return codes_fn((rows, k), gen), scales_fn((rows, k // 16), gen)


def _uniform_scales(shape, gen):          # 2^-3 .. 1.875 * 2^2: outputs mostly finite
    return _scale_bytes(4, 9, shape, gen)


def _sparse_codes(shape, gen):            # ~90% zeros, both +0 and -0
    zero = _pick([0, 8], shape, gen)
    nonzero = _randbytes(1, 8, shape, gen) + 8 * _randbytes(0, 2, shape, gen)
    return torch.where(torch.rand(shape, generator=gen, device=gen.device) < 0.9, zero, nonzero)


def exact_sum_max_scale_byte(k: int) -> int:
    """Largest E4M3 byte s with 36 * k * value(s)^2 < 16.

    Why it makes every fp32 partial sum exact: |a_i| <= 6 s and |b_i| <= 6 s, so the sum of
    |products| S < 16 = 2^4. Every product is an integer times 2^-20, hence so is every partial
    sum, and |partial| <= S < 2^24 * 2^-20: an integer below 2^24 times a power of two, which
    fp32 represents exactly, whatever the order of additions and the rounding mode.
    """
    values = _E4M3_TIMES_512[:0x7F].to(torch.float64) / 512      # bytes 0..0x7E, increasing
    ok = (36 * k * values ** 2 < 16).nonzero()
    return int(ok.max())


def _draw_group(distribution: str, m: int, n: int, k: int, gen) -> GroupCodes:
    if distribution == "gaussian":
        a_codes, sfa = quantize_nvfp4(torch.randn((m, k), generator=gen, device=gen.device).cpu())
        b_codes, sfb = quantize_nvfp4(torch.randn((n, k), generator=gen, device=gen.device).cpu())
        return GroupCodes(a_codes, sfa, b_codes, sfb)
    codes_fn, scales_fn = _all_codes, _uniform_scales
    if distribution == "sparse":
        codes_fn = _sparse_codes
    elif distribution == "exact_sum":
        top = exact_sum_max_scale_byte(k)
        scales_fn = lambda shape, g: _randint(0, top + 1, shape, g).to(torch.uint8)  # noqa: E731
    elif distribution == "extreme":               # scales 1 .. 448: most outputs overflow fp16
        scales_fn = lambda shape, g: _scale_bytes(7, 15, shape, g)  # noqa: E731
    elif distribution == "tiny":                  # subnormal scales, mostly zero/small codes
        codes_fn = lambda shape, g: torch.where(  # noqa: E731
            torch.rand(shape, generator=g, device=g.device) < 0.75, 0, _pick([1, 2, 9, 10], shape, g))
        scales_fn = lambda shape, g: _randint(1, 8, shape, g).to(torch.uint8)  # noqa: E731
    elif distribution == "leaderboard":           # the leaderboard's generator (module docstring)
        codes_fn = _leaderboard_codes
        scales_fn = lambda shape, g: _pick([0x38, 0x40], shape, g)  # noqa: E731
    elif distribution not in ("uniform", "nan_scales"):
        raise ValueError(f"unknown distribution {distribution!r}; known: {DISTRIBUTIONS}")
    a_codes, sfa = _draw_operand(m, k, gen, codes_fn, scales_fn)
    b_codes, sfb = _draw_operand(n, k, gen, codes_fn, scales_fn)
    if distribution == "nan_scales":
        sfa, sfb = _poison_scales(sfa, gen), _poison_scales(sfb, gen)
    return GroupCodes(a_codes.to(torch.uint8), sfa, b_codes.to(torch.uint8), sfb)


def _poison_scales(scales: torch.Tensor, gen, count: int = 2) -> torch.Tensor:
    """Set `count` random scale bytes to NaN (0x7F or 0xFF): whole output rows/columns go NaN."""
    scales = scales.clone()
    flat = scales.view(-1)
    if flat.numel() == 0:  # an empty group has no scale to poison
        return scales
    positions = _randint(0, flat.numel(), (count,), gen)
    flat[positions] = _pick([0x7F, 0xFF], (count,), gen)
    return scales


DISTRIBUTIONS = ("uniform", "sparse", "exact_sum", "extreme", "tiny", "nan_scales",
                 "gaussian", "leaderboard")


def draw_groups(problem_sizes, seed: int, distribution: str = "uniform", device="cpu") -> list[GroupCodes]:
    """Codes for every group, from torch.Generator(seed) on the CPU; ``device`` draws them with a
    generator of that device instead (fast for large problems; the bytes of a seed then depend on
    the device, as the leaderboard's own draws on the GPU do)."""
    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"unknown distribution {distribution!r}; known: {DISTRIBUTIONS}")
    gen = torch.Generator(device=device).manual_seed(seed)
    groups = []
    for size in problem_sizes:
        m, n, k, batches = size
        if batches != 1 or min(m, n) < 0 or k < 1 or k % 16:
            raise ValueError(f"problem size {tuple(size)}: need l == 1, m, n >= 0, k a positive "
                             f"multiple of 16")
        groups.append(_draw_group(distribution, m, n, k, gen))
    return groups


def truncation_adversary(m: int, n: int, k: int):
    """Codes where a truncating fp32 accumulator loses almost a full ulp on every addition after
    the first block: 16 products of 2^10 (sum 2^14), then K - 16 products of 0.9375 * 2^-9, just
    under ulp32(2^14) = 2^-9, each dropped entirely by a round-toward-zero addition. No
    cancellation, so the error of an honest truncating kernel comes close to E."""
    blocks = k // 16
    a_codes = torch.full((m, k), 0x3, dtype=torch.uint8)        # 1.5
    b_codes = torch.full((n, k), 0x2, dtype=torch.uint8)        # 1.0
    a_codes[:, :16], b_codes[:, :16] = 0x6, 0x6                  # 4.0
    sfa = torch.full((m, blocks), 0x10, dtype=torch.uint8)       # 2^-5
    sfb = torch.full((n, blocks), 0x12, dtype=torch.uint8)       # 1.25 * 2^-5
    sfa[:, 0], sfb[:, 0] = 0x50, 0x50                            # 8: 4 * 8 = 2^5 per operand
    return GroupCodes(a_codes, sfa, b_codes, sfb)
