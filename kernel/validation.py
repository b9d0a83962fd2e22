"""Input validation shared by every kernel: one typed error, raised before any launch.

Every rule has a stable identifier (``InvalidProblemError.rule``). Decisions recorded here:

* groups with M == 0 or N == 0 are accepted and produce empty outputs (they own no tile);
* K must be a positive multiple of the kernel's K granularity;
* inputs may alias each other (groups sharing one A, B or scale tensor are legal), but an
  output ``c`` may overlap no input and no other output;
* the plain (row-major) scale tensors ``sfa``/``sfb`` are checked only for what a kernel that
  never reads them needs: type, dtype and shape, on whatever device the caller keeps them (the
  leaderboard's generator leaves them in host memory). A kernel that reads them declares
  ``KernelConstraints.reads_plain_scales`` and gets every rule on them, device included.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import torch

from kernel.errors import InvalidProblemError

SF_VEC_SIZE = 16


@dataclass(frozen=True)
class KernelConstraints:
    """What a kernel (or any subject) accepts; the property strategies draw inside these."""

    k_granularity: int = 256
    max_groups: int = 64
    device_type: str = "cuda"  # where every tensor must live ("cpu" for the CPU model)
    alignment_bytes: int = 16  # every base pointer (TMA needs 16)
    max_dim: int = 1 << 20  # M, N, K upper bound (keeps offsets in int32 arithmetic)
    # the fp32 accumulator is updated once per this many K elements, in K order, each update in
    # any order of fp32 additions; None: no order declared. oracle.bounds derives the error bound
    # from it (the Hopper wgmma updates per 16, tcgen05 block-scaled MMA per 64, the CPU model per K tile)
    accumulation_chunk: int | None = None
    # when set (a positive multiple of accumulation_chunk), a group's K may be cut once, at
    # h = (K // (2 * k_split)) * k_split elements, whenever h > 0 (K >= 2 * k_split): the head
    # (K elements [0, h)) and the tail ([h, K)) are each accumulated from 0 in the declared chunk
    # order, and the result is their fp32 sum (one fp32 addition). Any output element may be
    # computed either way (cut or not); oracle.bounds bounds both. None: K is never cut
    k_split: int | None = None
    # the kernel reads the plain (row-major) sfa/sfb; False: it reads only the blocked copies, and
    # the plain ones may live anywhere (the leaderboard keeps them in host memory)
    reads_plain_scales: bool = False
    # per-group row counts (M) where the subject's work changes shape beyond the common tile edges
    # (a narrower wgmma from that many rows down: the Hopper y_tail64 widths); the property
    # strategies draw each of them and the next one up besides properties.strategies.EDGE_SIZES
    m_edges: tuple[int, ...] = ()


@dataclass(frozen=True)
class GroupTensors:
    a: torch.Tensor
    b: torch.Tensor
    c: torch.Tensor
    sfa: torch.Tensor
    sfb: torch.Tensor
    sfa_blocked: torch.Tensor
    sfb_blocked: torch.Tensor
    size: tuple[int, int, int, int]


def _ceil_div(a: int, b: int) -> int:
    return (a + b - 1) // b


def blocked_shape(mn: int, k: int) -> tuple[int, ...]:
    return (32, 4, _ceil_div(mn, 128), 4, _ceil_div(k // SF_VEC_SIZE, 4), 1)


def blocked_strides(mn: int, k: int) -> tuple[int, ...]:
    """Strides of the permute(3, 4, 1, 5, 2, 0) view of a contiguous (1, rm, rk, 32, 4, 4) buffer."""
    rest_m, rest_k = _ceil_div(mn, 128), _ceil_div(k // SF_VEC_SIZE, 4)
    return (16, 4, rest_k * 512, 1, 512, rest_m * rest_k * 512)


def _fail(rule: str, detail: str, group: int | None = None, tensor: str | None = None):
    raise InvalidProblemError(rule, detail, group=group, tensor=tensor)


def _byte_range(t: torch.Tensor) -> tuple[int, int] | None:
    """[first, last+1) bytes a strided tensor can touch; None when it is empty."""
    if t.numel() == 0:
        return None
    extent = 1 + sum((s - 1) * abs(st) for s, st in zip(t.shape, t.stride()))
    start = t.data_ptr()
    return start, start + extent * t.element_size()


def _check_tensor(
    t: Any,
    name: str,
    group: int,
    dtype: torch.dtype,
    shape: tuple[int, ...],
    strides: tuple[int, ...] | None,
    constraints: KernelConstraints,
    *,
    read_by_kernel: bool = True,
) -> None:
    """Every rule for a tensor the kernel reads or writes; type, dtype and shape alone for one it
    never touches (``read_by_kernel=False``: the plain scales of a kernel that reads the blocked
    ones)."""
    if not isinstance(t, torch.Tensor):
        _fail("type", f"expected a torch.Tensor, got {type(t).__name__}", group, name)
    if t.dtype != dtype:
        _fail("dtype", f"expected {dtype}, got {t.dtype}", group, name)
    if tuple(t.shape) != shape:
        _fail("shape", f"expected shape {list(shape)}, got {list(t.shape)}", group, name)
    if not read_by_kernel:
        return
    if t.device.type != constraints.device_type:
        _fail("device", f"expected a {constraints.device_type} tensor, got {t.device}", group, name)
    if t.numel() == 0:
        return
    if strides is not None:
        # the size-1 L mode's stride never matters; compare the others
        got = tuple(st for st, s in zip(t.stride(), t.shape) if s != 1)
        want = tuple(st for st, s in zip(strides, shape) if s != 1)
        if got != want:
            _fail(
                "strides",
                f"expected strides {list(strides)} (a contiguous K-major layout), got {list(t.stride())}",
                group,
                name,
            )
    if t.data_ptr() % constraints.alignment_bytes:
        _fail(
            "alignment",
            f"data pointer {t.data_ptr():#x} is not {constraints.alignment_bytes}-byte aligned",
            group,
            name,
        )


def validate_problem(data: Any, constraints: KernelConstraints) -> list[GroupTensors]:
    """Check ``data`` (the leaderboard tuple) against ``constraints``; return it unpacked per group.

    Raises :class:`InvalidProblemError` naming the group, the tensor and the rule.
    """
    if not isinstance(data, (tuple, list)) or len(data) != 4:
        _fail("structure", "data must be (abc_tensors, sfasfb_tensors, sfasfb_reordered_tensors, problem_sizes)")
    abc, sfs, sfs_blocked, sizes = data
    num_groups = len(sizes)
    if num_groups == 0:
        _fail("no_groups", "the problem has no groups", tensor="problem_sizes")
    if num_groups > constraints.max_groups:
        _fail(
            "too_many_groups",
            f"{num_groups} groups, this kernel supports at most {constraints.max_groups}",
            tensor="problem_sizes",
        )
    for name, seq in (("abc_tensors", abc), ("sfasfb_tensors", sfs), ("sfasfb_reordered_tensors", sfs_blocked)):
        if len(seq) != num_groups:
            _fail("structure", f"{name} has {len(seq)} entries for {num_groups} problem sizes")

    groups: list[GroupTensors] = []
    device = None
    for g in range(num_groups):
        size = sizes[g]
        if len(size) != 4 or not all(isinstance(x, int) and not isinstance(x, bool) for x in size):
            _fail("size_format", f"problem size must be 4 ints (m, n, k, l), got {size!r}", g, "problem_sizes")
        m, n, k, l = size
        if l != 1:
            _fail("l_is_one", f"l must be 1, got {l}", g, "problem_sizes")
        if m < 0 or n < 0:
            _fail("negative_size", f"m and n must be >= 0, got m={m} n={n}", g, "problem_sizes")
        if k <= 0 or k % constraints.k_granularity:
            _fail(
                "k_granularity",
                f"k={k} must be a positive multiple of {constraints.k_granularity}",
                g,
                "problem_sizes",
            )
        if max(m, n, k) > constraints.max_dim:
            _fail("too_large", f"m, n, k must be <= {constraints.max_dim}, got {(m, n, k)}", g, "problem_sizes")
        if len(abc[g]) != 3 or len(sfs[g]) != 2 or len(sfs_blocked[g]) != 2:
            _fail("structure", "each group needs (a, b, c), (sfa, sfb) and (sfa_blocked, sfb_blocked)", g)
        a, b, c = abc[g]
        sfa, sfb = sfs[g]
        sfa_r, sfb_r = sfs_blocked[g]
        k2, k16 = k // 2, k // SF_VEC_SIZE
        fp4, fp8 = torch.float4_e2m1fn_x2, torch.float8_e4m3fn
        _check_tensor(a, "a", g, fp4, (m, k2, 1), (k2, 1, m * k2), constraints)
        _check_tensor(b, "b", g, fp4, (n, k2, 1), (k2, 1, n * k2), constraints)
        _check_tensor(c, "c", g, torch.float16, (m, n, 1), (n, 1, m * n), constraints)
        plain = constraints.reads_plain_scales
        _check_tensor(sfa, "sfa", g, fp8, (m, k16, 1), (k16, 1, m * k16), constraints, read_by_kernel=plain)
        _check_tensor(sfb, "sfb", g, fp8, (n, k16, 1), (k16, 1, n * k16), constraints, read_by_kernel=plain)
        _check_tensor(sfa_r, "sfa_blocked", g, fp8, blocked_shape(m, k), blocked_strides(m, k), constraints)
        _check_tensor(sfb_r, "sfb_blocked", g, fp8, blocked_shape(n, k), blocked_strides(n, k), constraints)
        for name, t in (("a", a), ("b", b), ("c", c)) + ((("sfa", sfa), ("sfb", sfb)) if plain else ()):
            if device is None:
                device = t.device
            elif t.device != device:
                _fail("same_device", f"on {t.device}, other tensors are on {device}", g, name)
        groups.append(GroupTensors(a, b, c, sfa, sfb, sfa_r, sfb_r, (m, n, k, l)))

    _check_output_aliasing(groups)
    return groups


def _check_output_aliasing(groups: Sequence[GroupTensors]) -> None:
    """An output may overlap no input and no other output (inputs may share storage). Addresses
    are compared within one device: a plain scale tensor kept in host memory cannot overlap an
    output on the GPU, whatever its numeric address."""
    inputs = []
    for g, t in enumerate(groups):
        for name in ("a", "b", "sfa", "sfb", "sfa_blocked", "sfb_blocked"):
            tensor = getattr(t, name)
            r = _byte_range(tensor) if tensor.device == t.c.device else None
            if r is not None:
                inputs.append((r, g, name))
    outputs = [(r, g) for g, t in enumerate(groups) if (r := _byte_range(t.c)) is not None]
    for (lo, hi), g in outputs:
        for (ilo, ihi), ig, name in inputs:
            if lo < ihi and ilo < hi:
                _fail("aliasing", f"output overlaps input {name} of group {ig}", g, "c")
    ordered = sorted(outputs)
    for ((lo1, hi1), g1), ((lo2, hi2), g2) in zip(ordered, ordered[1:]):
        if lo2 < hi1:
            _fail("aliasing", f"output overlaps the output of group {g1}", g2, "c")
