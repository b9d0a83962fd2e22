"""Turn a valid problem into one that breaks exactly one rule (see strategies.BREAKAGES).

Tensor breakages are generic over the seven tensors of a group (a, b, c, sfa, sfb and both
blocked scale layouts): each builds a replacement tensor that differs from the valid one in one
respect only (type, dtype, shape, device, strides, base alignment, or c placed over it), so the
validation rule that rejects it is the one named. The partial overlaps
(strategies.PARTIAL_OVERLAPS) place c and one tensor the kernel reads (of the same group or of
another, or another group's c) so that they share only one end: c's last element over the
tensor's first bytes, or c's first element over its last element, by one element (or one byte)
where the alignment rule leaves room for it, so a range test one element short misses them.
The plain scales sfa/sfb of a kernel that reads only the blocked ones are held to type, dtype,
shape and aliasing alone (kernel.validation), so their other breakages are not drawn for it
(strategies.applicable_breakages). The base problem is drawn in the separate or the leaderboard
layout (plain scales in host memory). The CPU model reads the logical view and cannot notice a
wrong stride or a misaligned base; the GPU kernels read bytes, so the rules matter there, and
every one of them is broken here for every tensor.
"""

from __future__ import annotations

import torch

import oracle
from kernel.validation import KernelConstraints
from properties.strategies import PLAIN_SCALES, PROBLEM_BREAKAGES, InvalidExample

# where each tensor sits in the problem tuple: (level, slot) with level 0 = (a, b, c),
# 1 = (sfa, sfb), 2 = (sfa_blocked, sfb_blocked)
_POSITION = {"a": (0, 0), "b": (0, 1), "c": (0, 2), "sfa": (1, 0), "sfb": (1, 1),
             "sfa_blocked": (2, 0), "sfb_blocked": (2, 1)}
_BLOCKED = ("sfa_blocked", "sfb_blocked")


def _at_least(sizes, group, m_min, n_min):
    sizes = [list(s) for s in sizes]
    sizes[group][0] = max(sizes[group][0], m_min)
    sizes[group][1] = max(sizes[group][1], n_min)
    return [tuple(s) for s in sizes]


def _get(data, group, name):
    level, slot = _POSITION[name]
    return data[level][group][slot]


def _replace(data, group, **tensors):
    parts = [list(data[0]), list(data[1]), list(data[2]), data[3]]
    for name, t in tensors.items():
        level, slot = _POSITION[name]
        entry = list(parts[level][group])
        entry[slot] = t
        parts[level][group] = tuple(entry)
    return tuple(parts)


def _raw(t: torch.Tensor) -> torch.Tensor:
    """The same elements as an integer tensor of the same element size (copy_ works on it)."""
    return t.view(torch.uint8 if t.element_size() == 1 else torch.int16)


def _relocated(t: torch.Tensor, buffer: torch.Tensor, byte_offset: int) -> torch.Tensor:
    """A copy of t with t's shape and strides, placed ``byte_offset`` bytes into uint8 ``buffer``."""
    size = t.element_size()
    extent = 1 + sum((s - 1) * st for s, st in zip(t.shape, t.stride()))
    region = buffer[byte_offset : byte_offset + extent * size]
    region = region if size == 1 else region.view(torch.int16)
    placed = region.as_strided(t.shape, t.stride())
    placed.copy_(_raw(t))
    return placed.view(t.dtype)


def _with_other_strides(t: torch.Tensor, name: str) -> torch.Tensor:
    """Same shape, dtype and values, laid out differently in memory."""
    if name in _BLOCKED:
        # the 32-row and 4-row modes swap places in storage: strides (4, 128, ...) for (16, 4, ...)
        _, _, rest_m, _, rest_k, _ = t.shape
        storage = torch.empty((rest_m, rest_k, 4, 32, 4), dtype=torch.uint8, device=t.device)
        view = storage.permute(3, 2, 0, 4, 1).unsqueeze(-1)
    else:
        rows, cols, _ = t.shape
        view = torch.empty((cols, rows, 1), dtype=_raw(t).dtype, device=t.device).permute(1, 0, 2)
    view.copy_(_raw(t))
    return view.view(t.dtype)


def _with_wrong_shape(t: torch.Tensor, name: str) -> torch.Tensor:
    """One row (or one 128-row block of the blocked layout) too many."""
    shape = list(t.shape)
    shape[2 if name in _BLOCKED else 0] += 1
    return torch.zeros(shape, dtype=_raw(t).dtype, device=t.device).view(t.dtype)


def _wrong_dtype(t: torch.Tensor) -> torch.Tensor:
    return t.view(torch.bfloat16) if t.dtype == torch.float16 else t.view(torch.uint8)


def _break_tensor(rule: str, name: str, data, g: int, device: str):
    t = _get(data, g, name)
    if rule == "type":
        return _replace(data, g, **{name: _raw(t).cpu().numpy()})  # the right bytes, not a tensor
    if rule == "dtype":
        return _replace(data, g, **{name: _wrong_dtype(t)})
    if rule == "shape":
        return _replace(data, g, **{name: _with_wrong_shape(t, name)})
    if rule == "device":
        return _replace(data, g, **{name: t.to("meta" if device == "cpu" else "cpu")})
    if rule == "strides":
        return _replace(data, g, **{name: _with_other_strides(t, name)})
    if rule == "alignment":
        buffer = torch.zeros(t.numel() * t.element_size() + 64, dtype=torch.uint8, device=device)
        return _replace(data, g, **{name: _relocated(t, buffer, t.element_size())})
    if rule == "aliasing":
        c = _get(data, g, "c")
        if name == "c":  # c of group g is c of another group
            return _replace(data, g, c=_get(data, 1 if g == 0 else 0, "c"))
        nbytes = max(t.numel() * t.element_size(), c.numel() * 2) + 64
        buffer = torch.zeros(nbytes, dtype=torch.uint8, device=device)
        moved = _relocated(t, buffer, 0)
        over = buffer[: c.numel() * 2].view(torch.float16).view(c.shape)
        return _replace(data, g, **{name: moved, "c": over})
    raise ValueError(f"unknown rule {rule!r}")


def other_group(g: int) -> int:
    """The group whose tensor a breakage across groups overlaps with group ``g``'s c."""
    return 1 if g == 0 else 0


def _one_element_c(size):
    """``size`` with M odd and M * N = 1 (mod 8), M, N >= 2: c's last element then starts 16k
    bytes past its first, so a 16-byte aligned tensor can begin exactly there."""
    m, n, k, l = size
    m = max(m, 2) | 1
    n = max(n, 2)
    n += (m - n) % 8  # odd m: m * m = 1 (mod 8)
    return (m, n, k, l)


def _tensor_sizes(sizes, rule: str, name: str, g: int):
    """Sizes that let the breakage show: non-empty tensors, two rows and columns for a stride
    change to be visible, a second group of the same shape for c over another c; for a partial
    overlap, c's size one element past a multiple of 8 and a second non-empty group."""
    sizes = _at_least(sizes, g, 2, 2)
    partial = rule.startswith("aliasing_")
    if partial:
        sizes[g] = _one_element_c(sizes[g])
    across = name == "c" or rule.endswith("_other")
    if rule.startswith("aliasing") and across:
        if len(sizes) == 1:
            sizes.append(sizes[0])
        h = other_group(g)
        sizes[h] = sizes[g] if name == "c" else _at_least(sizes, h, 2, 2)[h]
    return sizes


def _extent_bytes(t: torch.Tensor) -> int:
    return (1 + sum((s - 1) * st for s, st in zip(t.shape, t.stride()))) * t.element_size()


def _align_down(x: int, a: int) -> int:
    return x // a * a


def _partial_overlap(c: torch.Tensor, x: torch.Tensor, end: str, aligned: bool, device: str):
    """Copies of ``c`` and ``x`` in one new buffer, overlapping by the least their placement
    rules allow: ``end="start"`` puts c's last element over x's first bytes, ``"end"`` c's first
    element over x's last element. ``aligned``: x's base must be 16-byte aligned (c's always
    is), so the one aligned address nearest that element is taken: the overlap is exactly c's
    last element when c's size allows it (``_one_element_c``), and for "end" x's last element
    plus the bytes before it back to a 16-byte boundary (exactly one element when x is a c of
    such a size); unaligned, one byte."""
    align = 16
    cb, xb = _extent_bytes(c), _extent_bytes(x)
    if end == "start":
        c_at = 0
        x_at = _align_down(cb - c.element_size(), align) if aligned else cb - 1
    else:
        if aligned:
            x_at, c_at = 0, _align_down(xb - x.element_size(), align)
        else:
            c_at = -(-(xb - 1) // align) * align
            x_at = c_at - (xb - 1)
    buffer = torch.zeros(max(c_at + cb, x_at + xb) + 64, dtype=torch.uint8, device=device)
    moved_x = _relocated(x, buffer, x_at)
    return _relocated(c, buffer, c_at), moved_x


def _break_problem(kind: str, sizes, g, constraints: KernelConstraints, make):
    if kind == "no_groups":
        return ([], [], [], [])
    if kind == "too_many_groups":
        return make([(1, 1, constraints.k_granularity, 1)] * (constraints.max_groups + 1))
    if kind == "k_not_multiple":
        # off the granularity's grid but a multiple of 16, so every tensor can still be built
        if constraints.k_granularity < 32:
            raise ValueError("k_not_multiple needs a K granularity of 32 or more")
        m, n, k, l = sizes[g]
        sizes[g] = (m, n, k + constraints.k_granularity // 2, l)
        return make(sizes)
    data = make(sizes)
    problem_sizes = list(data[3])
    m, n, k, _ = problem_sizes[g]
    problem_sizes[g] = {"l_not_one": (m, n, k, 2), "negative_m": (-1, n, k, 1), "three_int_size": (m, n, k)}[kind]
    return (data[0], data[1], data[2], problem_sizes)


def broken_problem(inv: InvalidExample, constraints: KernelConstraints, device: str):
    """The tensors of ``inv.base`` with ``inv.breakage`` applied."""
    base, g = inv.base, inv.group
    sizes = list(base.sizes)
    make = lambda s: oracle.make_inputs(s, base.seed, distribution="uniform", device=device,  # noqa: E731
                                        layout=base.layout)
    if inv.breakage in PROBLEM_BREAKAGES:
        return _break_problem(inv.breakage, sizes, g, constraints, make)
    rule, name = inv.breakage.split(":")
    data = make(_tensor_sizes(sizes, rule, name, g))
    if rule.startswith("aliasing_"):  # aliasing_{start,end}[_other]
        h, c, x = overlap_pair(data, inv.breakage, g)
        aligned = name not in PLAIN_SCALES or constraints.reads_plain_scales
        c, x = _partial_overlap(c, x, rule.split("_")[1], aligned, device)
        data = _replace(data, h, **{name: x})
        return _replace(data, g, c=c)
    return _break_tensor(rule, name, data, g, device)


def overlap_pair(data, breakage: str, g: int):
    """(h, c, x) of a partial-overlap breakage of group ``g``: c of group ``g`` and the tensor x
    of group h it overlaps (strategies.PARTIAL_OVERLAPS)."""
    rule, name = breakage.split(":")
    h = other_group(g) if name == "c" or rule.endswith("_other") else g
    return h, _get(data, g, "c"), _get(data, h, name)
