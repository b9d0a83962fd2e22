"""Dequantized operands and a plain fp32 model kernel (dequantize -> fp32 matmul -> fp16).

The model kernel is the honest kernel bounds.py describes; tests use it to show the bound holds,
and the other suites can use it as a simple baseline on any device.
"""

import torch

from .formats import e2m1_decode, e4m3_decode, unpack_e2m1


def dequantize_operand(packed: torch.Tensor, scales: torch.Tensor, k: int) -> torch.Tensor:
    """Packed E2M1 [rows, k/2, 1] and E4M3 scales [rows, k/16, 1] -> float32 [rows, k] (exact)."""
    rows = packed.shape[0]
    values = e2m1_decode(unpack_e2m1(packed.reshape(rows, k // 2))).view(rows, k // 16, 16)
    return (values * e4m3_decode(scales.reshape(rows, k // 16)).unsqueeze(-1)).view(rows, k)


def dequantize(data) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per group (A float32 [m, k], B float32 [n, k])."""
    return [(dequantize_operand(a, sfa, k), dequantize_operand(b, sfb, k))
            for (a, b, _), (sfa, sfb), (_, _, k, _) in zip(data[0], data[1], data[3])]


def fp32_model_outputs(data) -> list[torch.Tensor]:
    """Per group fp16 [m, n, 1] = fp16(fp32 matmul of the dequantized operands)."""
    return [(a @ b.T).to(torch.float16).unsqueeze(-1) for a, b in dequantize(data)]
