"""Turn a valid problem into one that breaks exactly one rule (see strategies.BREAKAGES)."""

from __future__ import annotations

import torch

import oracle
from kernel.validation import KernelConstraints
from properties.strategies import InvalidExample


def _at_least(sizes, group, m_min, n_min):
    sizes = [list(s) for s in sizes]
    sizes[group][0] = max(sizes[group][0], m_min)
    sizes[group][1] = max(sizes[group][1], n_min)
    return [tuple(s) for s in sizes]


def _replace(data, group, *, a=None, b=None, c=None):
    abc, sfs, sfs_r, sizes = data
    abc = list(abc)
    old = abc[group]
    abc[group] = (old[0] if a is None else a, old[1] if b is None else b, old[2] if c is None else c)
    return (abc, sfs, sfs_r, sizes)


def broken_problem(inv: InvalidExample, constraints: KernelConstraints, device: str):
    """The tensors of ``inv.base`` with ``inv.breakage`` applied."""
    base, g = inv.base, inv.group
    sizes = list(base.sizes)
    make = lambda s: oracle.make_inputs(s, base.seed, distribution="uniform", device=device)  # noqa: E731
    kind = inv.breakage
    if kind == "no_groups":
        return ([], [], [], [])
    if kind == "too_many_groups":
        gran = constraints.k_granularity
        return make([(1, 1, gran, 1)] * (constraints.max_groups + 1))
    if kind == "k_not_multiple":
        m, n, k, l = sizes[g]
        bad_k = k + max(32, constraints.k_granularity // 2)
        if bad_k % constraints.k_granularity == 0:  # granularity of 32 or less: K can't be off-grid
            raise ValueError("k_not_multiple needs a K granularity above 32")
        sizes[g] = (m, n, bad_k, l)
        return make(sizes)
    if kind == "l_not_one":
        data = make(sizes)
        abc, sfs, sfs_r, ps = data
        ps = list(ps)
        m, n, k, _ = ps[g]
        ps[g] = (m, n, k, 2)
        return (abc, sfs, sfs_r, ps)
    if kind == "wrong_dtype_a":
        sizes = _at_least(sizes, g, 1, 0)
        data = make(sizes)
        return _replace(data, g, a=data[0][g][0].view(torch.uint8))
    if kind == "wrong_shape_b":
        data = make(sizes)
        b = data[0][g][1]
        wrong = torch.zeros((b.shape[0] + 1, b.shape[1], 1), dtype=torch.uint8, device=device)
        return _replace(data, g, b=wrong.view(torch.float4_e2m1fn_x2))
    if kind == "transposed_c":
        sizes = _at_least(sizes, g, 2, 2)
        data = make(sizes)
        m, n = sizes[g][0], sizes[g][1]
        c_t = torch.empty((n, m, 1), dtype=torch.float16, device=device).permute(1, 0, 2)
        return _replace(data, g, c=c_t)
    if kind == "misaligned_a":
        sizes = _at_least(sizes, g, 1, 0)
        data = make(sizes)
        a = data[0][g][0]
        nbytes = a.numel()
        raw = torch.zeros(nbytes + 16, dtype=torch.uint8, device=device)[1 : 1 + nbytes]
        raw.copy_(a.view(torch.uint8).reshape(-1))
        return _replace(data, g, a=raw.view(a.shape).view(torch.float4_e2m1fn_x2))
    if kind == "c_aliases_a":
        sizes = _at_least(sizes, g, 1, 1)
        data = make(sizes)
        a, c = data[0][g][0], data[0][g][2]
        a_bytes, c_bytes = a.numel(), c.numel() * 2
        buf = torch.zeros(max(a_bytes, c_bytes) + 64, dtype=torch.uint8, device=device)
        new_a = buf[:a_bytes].view(a.shape).view(torch.float4_e2m1fn_x2)
        new_a.view(torch.uint8).copy_(a.view(torch.uint8))
        new_c = buf[:c_bytes].view(torch.float16).view(c.shape)
        return _replace(data, g, a=new_a, c=new_c)
    if kind == "c_overlaps_c":
        if len(sizes) == 1:
            sizes.append(sizes[0])
        h = 1 if g == 0 else 0
        sizes = _at_least(sizes, g, 1, 1)
        sizes[h] = sizes[g]
        data = make(sizes)
        return _replace(data, g, c=data[0][h][2])
    if kind == "wrong_device":
        data = make(sizes)
        a = data[0][g][0]
        elsewhere = "meta" if device == "cpu" else "cpu"
        return _replace(data, g, a=a.to(elsewhere))
    raise ValueError(f"unknown breakage {kind!r}")
