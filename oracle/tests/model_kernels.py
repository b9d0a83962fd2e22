"""Honest fp32 model kernels in other summation orders and rounding modes, for the bound tests."""

import torch

from oracle import dequantize


def _toward_zero_fp32(exact: torch.Tensor) -> torch.Tensor:
    """float64 -> fp32 rounding toward zero (what a truncating adder keeps)."""
    nearest = exact.to(torch.float32)
    too_far = nearest.double().abs() > exact.abs()
    return torch.where(too_far, torch.nextafter(nearest, torch.zeros_like(nearest)), nearest)


def sequential_outputs(data, *, toward_zero: bool, reverse: bool = False):
    """fp32 accumulation one product at a time (exact products), then one rounding to fp16."""
    return [acc.to(torch.float16).unsqueeze(-1)
            for acc in sequential_fp32(data, toward_zero=toward_zero, reverse=reverse)]


def sequential_fp32(data, *, toward_zero: bool, reverse: bool = False):
    """The fp32 accumulators [m, n] of sequential_outputs, before the fp16 rounding."""
    outputs = []
    for a, b in dequantize(data):
        accumulator = torch.zeros(a.shape[0], b.shape[0], dtype=torch.float32)
        order = range(a.shape[1] - 1, -1, -1) if reverse else range(a.shape[1])
        for k in order:
            exact = accumulator.double() + a[:, k:k + 1].double() * b[:, k].double()
            accumulator = _toward_zero_fp32(exact) if toward_zero else exact.to(torch.float32)
        outputs.append(accumulator)
    return outputs


def blockwise_outputs(data):
    """Per 16-element block: exact partial sum (as block-scaled MMA does), then fp32 adds."""
    outputs = []
    for a, b in dequantize(data):
        k = a.shape[1]
        blocks = torch.einsum("mbk,nbk->bmn", a.double().view(a.shape[0], k // 16, 16),
                              b.double().view(b.shape[0], k // 16, 16)).to(torch.float32)
        accumulator = torch.zeros_like(blocks[0])
        for block in blocks:
            accumulator = accumulator + block
        outputs.append(accumulator.to(torch.float16).unsqueeze(-1))
    return outputs
