"""The peer every kernel time is compared with: cuBLAS bf16 on pre-dequantized operands.

Per group ``torch.matmul(A_bf16 [M, K], B_bf16 [N, K]^T)`` into a preallocated bf16 output.
Dequantization is exact in bf16 (every NVFP4 value is), done once before timing, so the peer's
time is cuBLAS's alone. Its H200 medians (2026-11-29: bench1 188.7 us ... bench4 19.2 us) are
docs/results.md row 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

PEER_NAME = "cublas_bf16_predequantized"


@dataclass
class PeerOperands:
    a: list[torch.Tensor]  # bf16 [M, K] per group
    b: list[torch.Tensor]  # bf16 [N, K] per group
    out: list[torch.Tensor]  # bf16 [M, N] per group

    @property
    def bytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (*self.a, *self.b, *self.out))


def dequantized_bf16(data, device=None) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Per group bf16 (A [M, K], B [N, K]) of a leaderboard tuple, exact (oracle.dequantize)."""
    import oracle

    try:
        pairs = oracle.dequantize(data)
    except Exception:  # a decoder that only runs on the CPU: dequantize there, move after
        pairs = oracle.dequantize(oracle.data_to(data, "cpu"))
    device = device if device is not None else data[0][0][0].device
    a = [x.to(device=device, dtype=torch.bfloat16).contiguous() for x, _ in pairs]
    b = [y.to(device=device, dtype=torch.bfloat16).contiguous() for _, y in pairs]
    return a, b


def make_peer(data, device=None) -> PeerOperands:
    a, b = dequantized_bf16(data, device)
    out = [torch.empty(x.shape[0], y.shape[0], dtype=torch.bfloat16, device=x.device) for x, y in zip(a, b)]
    return PeerOperands(a, b, out)


def clone_peer(p: PeerOperands) -> PeerOperands:
    return PeerOperands([t.clone() for t in p.a], [t.clone() for t in p.b], [torch.empty_like(t) for t in p.out])


def peer_launch(p: PeerOperands) -> Callable[[], None]:
    """The peer's launch: one cuBLAS matmul per group (groups with M or N = 0 are no-ops)."""

    def launch():
        for a, b, out in zip(p.a, p.b, p.out):
            if out.numel():
                torch.matmul(a, b.t(), out=out)

    return launch
