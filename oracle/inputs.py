"""Problem tuples in the leaderboard's format, from a seed or from explicit codes.

data = (abc_tensors, sfasfb_tensors, sfasfb_reordered_tensors, problem_sizes):
[(a, b, c)], [(sfa, sfb)], [(sfa_r, sfb_r)], [(m, n, k, 1)] per group (FACTS.md).
Everything is built on the CPU and moved at the end, so a seed gives the same bytes on every
device; the layout changes where tensors live, never their values (the shared layouts reuse
group 0's operand for every group).

Layouts: separate (own tensors per group); shared_a / shared_b (every group holds the same a, sfa,
sfa_r objects, resp. b; needs equal M and K, resp. N and K); views (each kind of tensor is one
buffer, every group's tensor a view at a 256-byte aligned offset, gaps poisoned); packed_c (all
c are contiguous chunks of one flat fp16 buffer at 16-byte aligned offsets, gaps NaN).
"""

import torch

from .datautil import data_to
from .distributions import DISTRIBUTIONS, GroupCodes, draw_groups
from .formats import as_e4m3, as_fp4x2, pack_e2m1
from .layouts import blocked_buffer, blocked_from_buffer, to_blocked

LAYOUTS = ("separate", "shared_a", "shared_b", "views", "packed_c")
VIEW_ALIGN_BYTES = 256      # `views`: every tensor starts at a 256-byte aligned offset
PACKED_C_ALIGN_BYTES = 16   # `packed_c`: the alignment a vectorized 16-byte store needs
_GAP_BYTES = {"ab": 0x77, "scales": 0x7F, "c": 0xFF}   # gaps: +6 codes, NaN scales, NaN fp16


def make_inputs(problem_sizes, seed: int, distribution: str = "uniform", device="cpu",
                layout: str = "separate"):
    """A seeded problem; see distributions.py for the distributions. c is filled with NaN."""
    return data_from_codes(draw_groups(problem_sizes, seed, distribution), layout=layout,
                           device=device)


def _require_equal(groups, layout, operand):
    dims = {(g.a_codes.shape if operand == "a" else g.b_codes.shape) for g in groups}
    if len(dims) > 1:
        rows = "M" if operand == "a" else "N"
        raise ValueError(f"layout {layout!r} needs equal {rows} and K in every group, "
                         f"got {sorted(dims)}")


def data_from_codes(groups: list[GroupCodes], *, layout: str = "separate", device="cpu"):
    """Build the problem tuple from per-group codes and scale bytes (uint8 CPU tensors)."""
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; known: {LAYOUTS}")
    if layout == "shared_a":
        _require_equal(groups, layout, "a")
    if layout == "shared_b":
        _require_equal(groups, layout, "b")
    abc, sf, sf_r, sizes = [], [], [], []
    shared = {}
    for g in groups:
        (m, k), n = g.a_codes.shape, g.b_codes.shape[0]
        if g.b_codes.shape[1] != k or g.sfa.shape != (m, k // 16) or g.sfb.shape != (n, k // 16):
            raise ValueError(f"inconsistent group shapes a {tuple(g.a_codes.shape)} "
                             f"b {tuple(g.b_codes.shape)} sfa {tuple(g.sfa.shape)} "
                             f"sfb {tuple(g.sfb.shape)}")
        operands = {}
        for name, codes, scales in (("a", g.a_codes, g.sfa), ("b", g.b_codes, g.sfb)):
            if layout == f"shared_{name}" and name in shared:
                operands[name] = shared[name]
                continue
            packed = as_fp4x2(pack_e2m1(codes)).unsqueeze(-1)
            scales = as_e4m3(scales.contiguous()).unsqueeze(-1)
            operands[name] = shared[name] = (packed, scales, to_blocked(scales))
        (a, sfa, sfa_r), (b, sfb, sfb_r) = operands["a"], operands["b"]
        c = torch.full((m, n, 1), float("nan"), dtype=torch.float16)
        abc.append((a, b, c))
        sf.append((sfa, sfb))
        sf_r.append((sfa_r, sfb_r))
        sizes.append((m, n, k, 1))
    if layout == "views":
        abc, sf, sf_r = _into_shared_buffers(abc, sf, sf_r)
    if layout == "packed_c":
        cs = _place_in_one_buffer([c for _, _, c in abc], PACKED_C_ALIGN_BYTES, _GAP_BYTES["c"])
        abc = [(a, b, c) for (a, b, _), c in zip(abc, cs)]
    return data_to((abc, sf, sf_r, sizes), device)


def _place_in_one_buffer(tensors, align: int, gap_byte: int):
    """Copies of `tensors` as views of one uint8 buffer, each at an `align`-byte offset."""
    offsets, end = [], 0
    for t in tensors:
        start = -(-end // align) * align
        offsets.append(start)
        end = start + t.numel() * t.element_size()
    buffer = torch.full((end,), gap_byte, dtype=torch.uint8)
    views = []
    for t, start in zip(tensors, offsets):
        chunk = buffer[start:start + t.numel() * t.element_size()]
        chunk.copy_(t.contiguous().view(-1).view(torch.uint8))
        views.append(chunk.view(t.dtype).view(t.shape))
    return views


def _into_shared_buffers(abc, sf, sf_r):
    """`views` layout: one buffer per kind (a, b, c, sfa, sfb, sfa_r, sfb_r)."""
    def place(tensors, kind):
        return _place_in_one_buffer(tensors, VIEW_ALIGN_BYTES, _GAP_BYTES[kind])

    a_s, b_s, c_s = (place([grp[i] for grp in abc], "c" if i == 2 else "ab") for i in range(3))
    sfa_s, sfb_s = (place([grp[i] for grp in sf], "scales") for i in range(2))
    # blocked scales: place the contiguous buffer order, then take the same permuted view
    sfa_r_s, sfb_r_s = (
        [blocked_from_buffer(buf)
         for buf in place([blocked_buffer(grp[i]) for grp in sf_r], "scales")]
        for i in range(2))
    return (list(zip(a_s, b_s, c_s)), list(zip(sfa_s, sfb_s)), list(zip(sfa_r_s, sfb_r_s)))


__all__ = ["LAYOUTS", "DISTRIBUTIONS", "make_inputs", "data_from_codes"]
