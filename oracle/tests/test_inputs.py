import pytest
import torch

from oracle import (DISTRIBUTIONS, LAYOUTS, as_uint8, check_blocked_scales, clone_data, data_to,
                    make_inputs, reference, replace_outputs, unpack_e2m1)
from oracle.distributions import exact_sum_max_scale_byte
from oracle.inputs import PACKED_C_ALIGN_BYTES, VIEW_ALIGN_BYTES

SIZES = [(96, 64, 256, 1), (40, 136, 512, 1), (128, 8, 256, 1)]
EQUAL_MK = [(64, 64, 256, 1), (64, 136, 256, 1)]
EQUAL_NK = [(96, 64, 256, 1), (40, 64, 256, 1)]


def _sizes_for(layout):
    return {"shared_a": EQUAL_MK, "shared_b": EQUAL_NK}.get(layout, SIZES)


def _bytes(data):
    """Every tensor of the problem as uint8 copies (c as raw fp16 bits), for exact equality."""
    out = []
    for group in (*data[0], *data[1], *data[2]):
        for t in group:
            out.append(t.contiguous().view(torch.uint8).clone() if t.dtype != torch.float16
                       else t.contiguous().view(torch.int16).clone())
    return out


def _equal(x, y):
    return len(x) == len(y) and all(torch.equal(a, b) for a, b in zip(x, y))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_every_combination_builds_a_consistent_problem(distribution, layout):
    sizes = _sizes_for(layout)
    data = make_inputs(sizes, seed=7, distribution=distribution, layout=layout)
    assert data[3] == sizes
    leaderboard = layout == "leaderboard"  # pads with random scales, prefills c with normals
    assert check_blocked_scales(data, check_padding=not leaderboard) == []
    for (a, b, c), (sfa, sfb), (m, n, k, _) in zip(data[0], data[1], data[3]):
        assert a.shape == (m, k // 2, 1) and a.dtype == torch.float4_e2m1fn_x2
        assert b.shape == (n, k // 2, 1) and b.dtype == torch.float4_e2m1fn_x2
        assert sfa.shape == (m, k // 16, 1) and sfa.dtype == torch.float8_e4m3fn
        assert sfb.shape == (n, k // 16, 1) and sfb.dtype == torch.float8_e4m3fn
        assert c.shape == (m, n, 1) and c.dtype == torch.float16
        assert torch.isfinite(c).all() if leaderboard else torch.isnan(c).all()
        assert a.is_contiguous() and b.is_contiguous() and c.is_contiguous()
    assert _equal(_bytes(data), _bytes(make_inputs(sizes, 7, distribution, layout=layout)))
    assert not _equal(_bytes(data), _bytes(make_inputs(sizes, 8, distribution, layout=layout)))


def test_layouts_change_storage_not_values():
    separate = reference(make_inputs(SIZES, 3, "uniform"))
    for layout in ("views", "packed_c"):
        other = reference(make_inputs(SIZES, 3, "uniform", layout=layout))
        assert all(torch.equal(x.view(torch.int16), y.view(torch.int16))
                   for x, y in zip(separate, other))


def test_shared_layouts_share_tensor_objects_and_keep_the_other_operand():
    data = make_inputs(EQUAL_MK, 1, layout="shared_a")
    (a0, b0, _), (a1, b1, _) = data[0]
    assert a0 is a1 and data[1][0][0] is data[1][1][0] and data[2][0][0] is data[2][1][0]
    assert b0 is not b1
    separate = make_inputs(EQUAL_MK, 1)
    assert torch.equal(as_uint8(separate[0][1][1]), as_uint8(b1))    # b values do not move
    data = make_inputs(EQUAL_NK, 1, layout="shared_b")
    assert data[0][0][1] is data[0][1][1] and data[1][0][1] is data[1][1][1]


def test_shared_layouts_reject_unequal_sizes():
    with pytest.raises(ValueError, match="shared_a"):
        make_inputs(EQUAL_NK, 1, layout="shared_a")
    with pytest.raises(ValueError, match="shared_b"):
        make_inputs(EQUAL_MK, 1, layout="shared_b")


def test_views_layout_uses_one_buffer_per_kind_at_256_byte_offsets():
    data = make_inputs(SIZES, 2, layout="views")
    kinds = {"a": [g[0] for g in data[0]], "b": [g[1] for g in data[0]],
             "c": [g[2] for g in data[0]], "sfa": [g[0] for g in data[1]],
             "sfb": [g[1] for g in data[1]], "sfa_r": [g[0] for g in data[2]],
             "sfb_r": [g[1] for g in data[2]]}
    pointers = set()
    for name, tensors in kinds.items():
        storages = {t.untyped_storage().data_ptr() for t in tensors}
        assert len(storages) == 1, name
        pointers |= storages
        for t in tensors:
            assert (t.storage_offset() * t.element_size()) % VIEW_ALIGN_BYTES == 0, name
    assert len(pointers) == len(kinds)


def test_packed_c_is_one_flat_buffer_of_contiguous_chunks():
    data = make_inputs(SIZES, 2, layout="packed_c")
    cs = [c for _, _, c in data[0]]
    assert len({c.untyped_storage().data_ptr() for c in cs}) == 1
    assert all(c.is_contiguous() and (c.storage_offset() * 2) % PACKED_C_ALIGN_BYTES == 0
               for c in cs)
    ends = [c.storage_offset() + c.numel() for c in cs]
    assert all(end <= nxt.storage_offset() for end, nxt in zip(ends, cs[1:]))


def test_data_to_and_clone_keep_aliasing():
    data = make_inputs(SIZES, 4, layout="views")
    for copy in (data_to(data, "cpu"), clone_data(data)):
        assert len({g[2].untyped_storage().data_ptr() for g in copy[0]}) == 1
        assert _equal(_bytes(copy), _bytes(data))
    cloned = clone_data(data)
    assert cloned[0][0][2].untyped_storage().data_ptr() != data[0][0][2].untyped_storage().data_ptr()
    cloned[0][0][2].zero_()
    assert torch.isnan(data[0][0][2]).all()
    shared = clone_data(make_inputs(EQUAL_MK, 1, layout="shared_a"))
    assert shared[0][0][0] is shared[0][1][0]


def test_replace_outputs_swaps_only_c():
    data = make_inputs(SIZES, 5)
    new = [torch.zeros_like(c) for _, _, c in data[0]]
    replaced = replace_outputs(data, new)
    assert all(r[2] is n and r[0] is d[0] for r, n, d in zip(replaced[0], new, data[0]))
    with pytest.raises(ValueError):
        replace_outputs(data, new[:1])


def _codes(data, operand):
    return [unpack_e2m1(g[operand][..., 0]) for g in data[0]]


def _scales(data, operand):
    return torch.cat([as_uint8(g[operand]).flatten() for g in data[1]])


def test_distribution_signatures():
    big = [(128, 128, 1024, 1)]
    sparse = torch.cat([c.flatten() for c in _codes(make_inputs(big, 1, "sparse"), 0)])
    zero_fraction = float(((sparse == 0) | (sparse == 8)).float().mean())
    assert 0.88 < zero_fraction < 0.92
    tiny = _scales(make_inputs(big, 1, "tiny"), 0)
    assert tiny.min() >= 1 and tiny.max() <= 7
    nan_scales = _scales(make_inputs(big, 1, "nan_scales"), 0)
    assert 1 <= int(((nan_scales == 0x7F) | (nan_scales == 0xFF)).sum()) <= 2
    leaderboard = make_inputs(big, 1, "leaderboard")
    assert set(_codes(leaderboard, 0)[0].unique().tolist()) <= {0, 1, 2, 3, 8, 9, 10, 11}
    assert set(_scales(leaderboard, 0).unique().tolist()) == {0x38, 0x40}
    uniform = make_inputs(big, 1, "uniform")
    assert len(_codes(uniform, 0)[0].unique()) == 16
    extreme = reference(make_inputs(big, 1, "extreme"))[0]
    assert float(torch.isinf(extreme).float().mean()) > 0.3
    tiny_out = reference(make_inputs(big, 1, "tiny"))[0].abs()
    assert bool(((tiny_out > 0) & (tiny_out < 2.0 ** -14)).any())


def test_exact_sum_scale_limit():
    for k in (16, 256, 4096, 7168):
        top = exact_sum_max_scale_byte(k)
        value = float(torch.tensor([top], dtype=torch.uint8).view(torch.float8_e4m3fn).float())
        assert 36 * k * value ** 2 < 16


def test_bad_problem_sizes_are_rejected():
    for sizes in ([(16, 16, 24, 1)], [(16, 16, 32, 2)], [(-1, 16, 32, 1)], [(16, 16, 0, 1)]):
        with pytest.raises(ValueError):
            make_inputs(sizes, 0)


def test_empty_groups_are_built():
    """M = 0 or N = 0 is a legal group (empty output) for every layout that allows it."""
    data = make_inputs([(0, 16, 32, 1), (16, 0, 32, 1), (3, 5, 32, 1)], 0)
    assert [tuple(abc[2].shape) for abc in data[0]] == [(0, 16, 1), (16, 0, 1), (3, 5, 1)]
    with pytest.raises(ValueError):
        make_inputs(SIZES, 0, distribution="nope")
    with pytest.raises(ValueError):
        make_inputs(SIZES, 0, layout="nope")


def test_check_blocked_scales_catches_a_corrupted_reordered_tensor():
    data = make_inputs(SIZES, 6)
    as_uint8(data[2][1][0])[0, 0, 0, 0, 0, 0] ^= 0x01
    problems = check_blocked_scales(data)
    assert len(problems) == 1 and "group 1 sfa" in problems[0]
    data = make_inputs(SIZES, 6)
    padded_row = SIZES[0][0]                         # first padded row of group 0's sfa
    as_uint8(data[2][0][0])[padded_row % 32, (padded_row % 128) // 32, 0, 0, 0, 0] = 0
    assert "padded rows" in check_blocked_scales(data)[0]
    assert check_blocked_scales(data, check_padding=False) == []
