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


# ---- accumulation in a declared chunk order, with true fp32 additions ----

CHUNK_ORDERS = ("acc_first", "acc_first_reversed", "partial_first", "pairwise", "block_fma")


def _add_fp32(x: torch.Tensor, y: torch.Tensor, toward_zero: bool) -> torch.Tensor:
    """IEEE fp32 x + y, rounded to nearest (torch) or toward zero (nearest, corrected by the
    exact remainder of TwoSum: if the nearest sum lies farther from zero than x + y, step back)."""
    s = x + y
    if not toward_zero:
        return s
    bb = s - x
    remainder = (x - (s - bb)) + (y - bb)            # exact: x + y = s + remainder (TwoSum)
    too_far = ((s > 0) & (remainder < 0)) | ((s < 0) & (remainder > 0))
    return torch.where(too_far, torch.nextafter(s, torch.zeros_like(s)), s)


def _tree_sum(terms: list[torch.Tensor], toward_zero: bool) -> torch.Tensor:
    while len(terms) > 1:
        pairs = [_add_fp32(terms[i], terms[i + 1], toward_zero) for i in range(0, len(terms) - 1, 2)]
        terms = pairs + ([terms[-1]] if len(terms) % 2 else [])
    return terms[0]


def _block_fma(acc: torch.Tensor, products: list[torch.Tensor], toward_zero: bool) -> torch.Tensor:
    operands = torch.stack([acc, *products]).double()                 # exact
    _, exponent = torch.frexp(operands.abs().amax(dim=0))             # max in [2^(e-1), 2^e)
    quantum = torch.ldexp(torch.ones_like(operands[0]), exponent - 24)  # 24 bits from 2^(e-1)
    kept = torch.trunc(operands / quantum) * quantum                  # exact: power-of-two scaling
    total = kept.sum(dim=0)                                           # exact: < 2^53 quanta
    return _toward_zero_fp32(total) if toward_zero else total.to(torch.float32)


def chunked_fp32(data, chunk: int | None, *, toward_zero: bool, order: str = "acc_first"):
    """fp32 accumulators [m, n]: K cut in chunks of ``chunk`` (None: one chunk), each chunk's
    exact products added to the accumulator in one of CHUNK_ORDERS (all allowed by the declared
    order of oracle/bounds.py):

    acc_first           acc + p1, + p2, ... (the accumulator is rounded chunk times per chunk)
    acc_first_reversed  the same, products of the chunk in reverse order
    partial_first       the chunk's sequential sum first, then acc + partial (the CPU model)
    pairwise            the chunk's pairwise tree sum, then acc + partial
    block_fma           the tensor-core model: acc and the products aligned to the largest
                        exponent, truncated to 24 bits below it, added exactly, rounded once
                        (toward zero or to nearest)
    """
    if order not in CHUNK_ORDERS:
        raise ValueError(f"unknown order {order!r}")
    return [_chunked(a, b, chunk, toward_zero, order) for a, b in dequantize(data)]


def cut_fp32(data, chunk: int, k_split: int, *, toward_zero: bool, order: str = "acc_first"):
    """fp32 accumulators [m, n] of the cut order (oracle/bounds.py, KernelConstraints.k_split):
    K cut at h = (K // (2 k_split)) k_split when h > 0, the head [0, h) and the tail [h, K) each
    accumulated from 0 as chunked_fp32 does, then one fp32 addition; not cut when h = 0."""
    if order not in CHUNK_ORDERS:
        raise ValueError(f"unknown order {order!r}")
    outputs = []
    for a, b in dequantize(data):
        h = (a.shape[1] // (2 * k_split)) * k_split
        if h == 0:
            outputs.append(_chunked(a, b, chunk, toward_zero, order))
            continue
        head = _chunked(a[:, :h], b[:, :h], chunk, toward_zero, order)
        tail = _chunked(a[:, h:], b[:, h:], chunk, toward_zero, order)
        outputs.append(_add_fp32(head, tail, toward_zero))
    return outputs


def _chunked(a: torch.Tensor, b: torch.Tensor, chunk: int | None, toward_zero: bool,
             order: str) -> torch.Tensor:
    """The fp32 accumulator [m, n] of chunked_fp32 for dequantized a [m, k], b [n, k]."""
    k = a.shape[1]
    size = k if chunk is None else chunk
    products = [a[:, i:i + 1] * b[:, i] for i in range(k)]  # exact in fp32 (<= 12 bits)
    acc = torch.zeros(a.shape[0], b.shape[0], dtype=torch.float32)
    for k0 in range(0, k, size):
        terms = products[k0:k0 + size]
        if order == "acc_first_reversed":
            terms = terms[::-1]
        if order == "block_fma":
            acc = _block_fma(acc, terms, toward_zero)
            continue
        if order.startswith("acc_first"):
            for p in terms:
                acc = _add_fp32(acc, p, toward_zero)
            continue
        if order == "partial_first":
            partial = terms[0]
            for p in terms[1:]:
                partial = _add_fp32(partial, p, toward_zero)
        else:
            partial = _tree_sum(list(terms), toward_zero)
        acc = _add_fp32(acc, partial, toward_zero)
    return acc
