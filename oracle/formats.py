"""Decoders and packers for the two NVFP4 element formats: E2M1 (the data) and E4M3FN (the scales).

The float decoders serve the fp32 model computations in tests; the integer decoders serve the
exact reference: an E2M1 value times 2 and an E4M3 value times 2^9 are integers, so a dequantized
element is an integer times 2^-10 and every product an integer times 2^-20 (docs/judging.md).
Tables are built from the bit formulas, not from a library, so ml_dtypes can check them.
"""

import torch

E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
               -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)
E4M3_NAN_BYTES = (0x7F, 0xFF)
E4M3_MAX = 448.0

# code -> value * 2 (an integer in -12..12); -0 maps to 0.
_E2M1_TWICE = torch.tensor([int(v * 2) for v in E2M1_VALUES], dtype=torch.int64)
_E2M1_FLOAT = torch.tensor(E2M1_VALUES, dtype=torch.float32)


def _e4m3_times_512(byte: int) -> int:
    """Signed value * 2^9 of a non-NaN E4M3FN byte (bias 7, 3 mantissa bits, subnormals)."""
    sign = -1 if byte & 0x80 else 1
    exponent, mantissa = (byte >> 3) & 0xF, byte & 0x7
    if exponent == 0:                      # subnormal: mantissa * 2^-9
        return sign * mantissa
    return sign * ((8 + mantissa) << (exponent - 1))   # (8+m) * 2^(e-10) * 2^9


_E4M3_NAN = torch.tensor([b in E4M3_NAN_BYTES for b in range(256)])
_E4M3_TIMES_512 = torch.tensor([0 if b in E4M3_NAN_BYTES else _e4m3_times_512(b)
                                for b in range(256)], dtype=torch.int64)
_E4M3_FLOAT = torch.where(_E4M3_NAN, torch.tensor(float("nan")), torch.copysign(  # keeps -0
    _E4M3_TIMES_512.abs().to(torch.float32) / 512, -(torch.arange(256) >> 7).float() + 0.5))


def _lookup(table: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    return table.to(index.device)[as_uint8(index).long()]


def as_uint8(t: torch.Tensor) -> torch.Tensor:
    """Reinterpret a one-byte tensor (uint8, float4_e2m1fn_x2, float8_e4m3fn) as uint8."""
    if t.dtype == torch.uint8:
        return t
    if t.element_size() != 1:
        raise TypeError(f"expected a one-byte dtype, got {t.dtype}")
    return t.view(torch.uint8)


def as_fp4x2(packed: torch.Tensor) -> torch.Tensor:
    """View packed uint8 bytes as torch.float4_e2m1fn_x2 (no copy)."""
    return as_uint8(packed).view(torch.float4_e2m1fn_x2)


def as_e4m3(scale_bytes: torch.Tensor) -> torch.Tensor:
    """View uint8 bytes as torch.float8_e4m3fn (no copy)."""
    return as_uint8(scale_bytes).view(torch.float8_e4m3fn)


def e2m1_decode(codes: torch.Tensor) -> torch.Tensor:
    """E2M1 codes (uint8, 0..15) -> float32 values (code 8 is -0.0)."""
    return _lookup(_E2M1_FLOAT, codes)


def e2m1_twice(codes: torch.Tensor) -> torch.Tensor:
    """E2M1 codes -> int64 value*2, in -12..12 (both zeros give 0)."""
    return _lookup(_E2M1_TWICE, codes)


def e4m3_decode(scale_bytes: torch.Tensor) -> torch.Tensor:
    """E4M3FN bytes (uint8 or float8_e4m3fn) -> float32; 0x7F/0xFF give NaN."""
    return _lookup(_E4M3_FLOAT, scale_bytes)


def e4m3_times_512(scale_bytes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """E4M3FN bytes -> (int64 value*2^9 in -229376..229376 (0 at NaN), bool NaN mask)."""
    return _lookup(_E4M3_TIMES_512, scale_bytes), _lookup(_E4M3_NAN, scale_bytes)


def pack_e2m1(codes: torch.Tensor) -> torch.Tensor:
    """uint8 codes [..., 2k] -> packed uint8 [..., k]; element 2j in the low nibble."""
    if codes.shape[-1] % 2:
        raise ValueError(f"last dimension must be even to pack pairs, got {codes.shape[-1]}")
    codes = as_uint8(codes)
    if bool((codes > 15).any()):
        raise ValueError("E2M1 codes must be in 0..15")
    return codes[..., 0::2] | (codes[..., 1::2] << 4)


def unpack_e2m1(packed: torch.Tensor) -> torch.Tensor:
    """Packed uint8 (or float4_e2m1fn_x2) [..., k] -> uint8 codes [..., 2k]."""
    packed = as_uint8(packed)
    return torch.stack((packed & 0xF, packed >> 4), dim=-1).flatten(-2)
