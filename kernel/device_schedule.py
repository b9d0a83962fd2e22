"""The device side of ``kernel.plan``, shared by the CuTe DSL kernels (Hopper and Blackwell).

Each function is the device twin of a host function whose properties are fuzzed on the CPU
(``properties/test_plan_properties.py``): :func:`group_search` is
``kernel.plan.device_group_search``, :func:`cta_tile_range` is ``LaunchPlan.cta_tiles``. Both are
``@cute.jit`` helpers, inlined where they are called.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute


@cute.jit
def group_search(tile_prefix: cute.Tensor, tile: cutlass.Int32, num_groups: cutlass.Constexpr[int]) -> cutlass.Int32:
    """The slot s with prefix[s] <= tile < prefix[s+1]: kernel.plan.device_group_search, verbatim."""
    left = cutlass.Int32(0)
    right = cutlass.Int32(num_groups)
    while left < right:
        mid = (left + right) // 2
        if tile_prefix[mid + 1] <= tile:
            left = mid + 1
        else:
            right = mid
    return left


@cute.jit
def cta_tile_range(total_tiles: cutlass.Int32, schedule: cutlass.Constexpr[str]):
    """(first, end, step) of this CTA's tiles: LaunchPlan.cta_tiles for the grid it runs in.

    ``contiguous``: [cta * per, min((cta + 1) * per, total)) with per = ceil(total / grid);
    ``strided``: cta, cta + grid, ... below total.
    """
    cta, _, _ = cute.arch.block_idx()
    num_ctas, _, _ = cute.arch.grid_dim()
    first = cutlass.Int32(cta)
    end = total_tiles
    step = cutlass.Int32(num_ctas)
    if cutlass.const_expr(schedule == "contiguous"):
        per_cta = (total_tiles + num_ctas - 1) // num_ctas
        first = cta * per_cta
        end = first + per_cta
        if end > total_tiles:
            end = total_tiles
        step = cutlass.Int32(1)
    return first, end, step


@cute.jit
def cluster_tile_range(total_tiles: cutlass.Int32, schedule: cutlass.Constexpr[str], cluster: cutlass.Constexpr[int]):
    """(first, end, step) of this CTA's cluster tiles: LaunchPlan.cta_tiles of a plan with
    ``cluster_n`` = ``cluster`` (kernel.plan), the range of cluster ``block_idx // cluster`` of
    ``grid_dim // cluster``, the same for every CTA of a cluster."""
    cta, _, _ = cute.arch.block_idx()
    num_ctas, _, _ = cute.arch.grid_dim()
    unit = cutlass.Int32(cta) // cluster
    units = cutlass.Int32(num_ctas) // cluster
    first = unit
    end = total_tiles
    step = units
    if cutlass.const_expr(schedule == "contiguous"):
        per = (total_tiles + units - 1) // units
        first = unit * per
        end = cutlass.min(first + per, total_tiles)
        step = cutlass.Int32(1)
    return first, end, step
