"""Problem tuples in the leaderboard's format, from a seed or from explicit codes.

data = (abc_tensors, sfasfb_tensors, sfasfb_reordered_tensors, problem_sizes):
[(a, b, c)], [(sfa, sfb)], [(sfa_r, sfb_r)], [(m, n, k, 1)] per group; sfa_r / sfb_r are the
scales in the cuBLAS blocked layout (oracle/layouts.py).
Everything is built on the CPU and moved at the end, so a seed gives the same bytes on every
device; the layout changes where tensors live, never their values (the shared layouts reuse
group 0's operand for every group).

Layouts: separate (own tensors per group); shared_a / shared_b (every group holds the same a, sfa,
sfa_r objects, resp. b; needs equal M and K, resp. N and K); views (each kind of tensor is one
buffer, every group's tensor a view at a 256-byte aligned offset, gaps poisoned); packed_c (all
c are contiguous chunks of one flat fp16 buffer at 16-byte aligned offsets, gaps NaN);
leaderboard (the public leaderboard generator's layout: every tensor the (mn, k, l)-permuted view
of an (l, mn, k) buffer, c prefilled with standard normal fp16, the blocked scales' padding left
as random {1, 2} fill, and the plain scales sfa/sfb kept in host memory wherever the others go:
see :func:`place` and oracle.host_memory).
"""

import torch

from .datautil import data_to
from .distributions import DISTRIBUTIONS, GroupCodes, draw_groups
from .formats import as_e4m3, as_fp4x2, pack_e2m1
from .host_memory import host_only
from .layouts import blocked_buffer, blocked_from_buffer, blocked_rests, to_blocked

LAYOUTS = ("separate", "shared_a", "shared_b", "views", "packed_c", "leaderboard")
LEADERBOARD_SCALE_FILL = (0x38, 0x40)  # E4M3 1.0 and 2.0: the generator's randint(1, 3) fill
VIEW_ALIGN_BYTES = 256      # `views`: every tensor starts at a 256-byte aligned offset
PACKED_C_ALIGN_BYTES = 16   # `packed_c`: the alignment a vectorized 16-byte store needs
_GAP_BYTES = {"ab": 0x77, "scales": 0x7F, "c": 0xFF}   # gaps: +6 codes, NaN scales, NaN fp16


def make_inputs(problem_sizes, seed: int, distribution: str = "uniform", device="cpu",
                layout: str = "separate", draw_device="cpu"):
    """A seeded problem; see distributions.py for the distributions. c is filled with NaN (the
    leaderboard layout prefills normals). ``draw_device``: where the codes are drawn (the CPU
    makes a seed's bytes the same on every machine)."""
    return data_from_codes(draw_groups(problem_sizes, seed, distribution, draw_device), layout=layout,
                           device=device, seed=seed)


def _require_equal(groups, layout, operand):
    dims = {(g.a_codes.shape if operand == "a" else g.b_codes.shape) for g in groups}
    if len(dims) > 1:
        rows = "M" if operand == "a" else "N"
        raise ValueError(f"layout {layout!r} needs equal {rows} and K in every group, "
                         f"got {sorted(dims)}")


def data_from_codes(groups: list[GroupCodes], *, layout: str = "separate", device="cpu",
                    seed: int = 0):
    """Build the problem tuple from per-group codes and scale bytes (uint8 CPU tensors).
    ``seed`` seeds what a layout fills beside the values (the leaderboard layout's c prefill and
    blocked-scale padding)."""
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; known: {LAYOUTS}")
    if layout == "leaderboard":
        return place(_leaderboard_tensors(groups, seed), device, layout)
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
    return place((abc, sf, sf_r, sizes), device, layout)


def place(data, device, layout: str):
    """The problem on ``device`` as ``layout`` places it: every tensor there (with the sharing and
    views the layout built), except in the leaderboard layout, whose plain scales stay in host
    memory: CPU tensors when ``device`` is a GPU, :func:`oracle.host_memory.host_only` tensors
    when it is the CPU (so a subject that reads them as device tensors fails on every machine)."""
    moved = data_to(data, device)
    if layout != "leaderboard":
        return moved
    on_cpu = torch.device(device).type == "cpu"
    host = [tuple(host_only(t.cpu()) if on_cpu else t.cpu() for t in pair) for pair in data[1]]
    return moved[0], host, moved[2], moved[3]


def _permuted_view(rows_major: torch.Tensor) -> torch.Tensor:
    """[mn, k] -> the (mn, k, 1) permute(1, 2, 0) view of an (1, mn, k) buffer (the generator's)."""
    return rows_major.unsqueeze(0).permute(1, 2, 0)


def _leaderboard_tensors(groups: list[GroupCodes], seed: int):
    """The leaderboard generator's tensors for these codes, on the CPU (module docstring)."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    fill = torch.tensor(LEADERBOARD_SCALE_FILL, dtype=torch.uint8)
    abc, sf, sf_r, sizes = [], [], [], []
    for g in groups:
        (m, k), n = g.a_codes.shape, g.b_codes.shape[0]
        operands = []
        for codes, scales in ((g.a_codes, g.sfa), (g.b_codes, g.sfb)):
            rows = codes.shape[0]
            rest_m, rest_k = blocked_rests(rows, k // 16)
            pad = fill[torch.randint(0, 2, (rest_m * 128, rest_k * 4), generator=gen)]
            operands.append((_permuted_view(as_fp4x2(pack_e2m1(codes))),
                             _permuted_view(as_e4m3(scales.contiguous())),
                             to_blocked(as_e4m3(scales.contiguous()), pad_fill=pad)))
        (a, sfa, sfa_r), (b, sfb, sfb_r) = operands
        c = _permuted_view(torch.randn((m, n), generator=gen).to(torch.float16))
        abc.append((a, b, c))
        sf.append((sfa, sfb))
        sf_r.append((sfa_r, sfb_r))
        sizes.append((m, n, k, 1))
    return abc, sf, sf_r, sizes


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


__all__ = ["LAYOUTS", "DISTRIBUTIONS", "make_inputs", "data_from_codes", "place"]
