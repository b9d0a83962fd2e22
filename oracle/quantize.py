"""NVFP4 quantization of real-valued data, for realistic ("gaussian") test inputs.

Choices, made the way common NVFP4 recipes make them:
- one scale per 16 consecutive elements of a row: amax / 6 (6 is the largest E2M1 value),
  clamped to 448 (largest E4M3) and rounded to nearest-even E4M3 by torch's cast;
- a block whose scale rounds to 0 (all-zero or below ~2^-10) gets scale 0 and codes +0;
- elements x / scale rounded to the nearest E2M1 value, ties to the even code (IEEE style),
  saturating at 6 (the scale may have rounded down, so |x / scale| can exceed 6 slightly);
  a negative element that rounds to zero keeps its sign (code 8, -0).
"""

import torch

from .formats import E4M3_MAX, e4m3_decode

_E2M1_MAGNITUDES = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=torch.float64)
_E2M1_MIDPOINTS = (_E2M1_MAGNITUDES[1:] + _E2M1_MAGNITUDES[:-1]) / 2


def round_to_e2m1(values: torch.Tensor) -> torch.Tensor:
    """Real values -> nearest E2M1 code (uint8), ties to the even code, saturating at +-6."""
    values = values.to(torch.float64)
    magnitude = values.abs().clamp(max=6.0).unsqueeze(-1)
    midpoints = _E2M1_MIDPOINTS.to(values.device)
    index = (magnitude > midpoints).sum(-1)                      # ties round down here...
    on_tie = (magnitude == midpoints).any(-1)
    index = index + (on_tie & (index % 2 == 1)).long()           # ...then move to the even code
    sign = (values < 0) | ((values == 0) & torch.signbit(values))
    return (index + 8 * sign.long()).to(torch.uint8)


def quantize_nvfp4(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x [mn, k] (k % 16 == 0) -> (E2M1 codes uint8 [mn, k], E4M3 scale bytes uint8 [mn, k/16])."""
    if x.dim() != 2 or x.shape[1] % 16:
        raise ValueError(f"expected [mn, k] with k a multiple of 16, got {tuple(x.shape)}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError("quantize_nvfp4 needs finite input")
    mn, k = x.shape
    blocks = x.to(torch.float32).view(mn, k // 16, 16)
    amax = blocks.abs().amax(-1)
    scale_bytes = (amax / 6).clamp(max=E4M3_MAX).to(torch.float8_e4m3fn).view(torch.uint8)
    scale = e4m3_decode(scale_bytes).to(torch.float64)
    safe_scale = torch.where(scale > 0, scale, torch.ones_like(scale)).unsqueeze(-1)
    codes = round_to_e2m1(blocks.to(torch.float64) / safe_scale)
    codes = torch.where((scale > 0).unsqueeze(-1), codes, torch.zeros_like(codes))
    return codes.view(mn, k), scale_bytes
