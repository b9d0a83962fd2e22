import pytest
import torch
from hypothesis import given, strategies as st

from oracle.formats import as_uint8
from oracle.layouts import (blocked_buffer, blocked_offset, blocked_rests, from_blocked,
                            to_blocked)

RAGGED = [(1, 1), (5, 3), (128, 4), (129, 5), (130, 8), (257, 9), (384, 2)]


def _random_scales(mn, k16, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, 0x7F, (mn, k16), generator=gen).to(torch.uint8)


def test_offset_formula_hand_values():
    assert blocked_offset(0, 0, 1, 1) == 0
    assert blocked_offset(33, 5, 2, 2) == (0 * 2 + 1) * 512 + 1 * 16 + 1 * 4 + 1
    assert blocked_offset(130, 2, 2, 1) == 1 * 512 + 2 * 16 + 0 * 4 + 2
    assert blocked_offset(0, 0, 2, 3, b=1) == 6 * 512


@pytest.mark.parametrize("mn,k16", RAGGED)
def test_every_element_sits_at_the_formula_offset(mn, k16):
    sf = _random_scales(mn, k16)
    blocked = to_blocked(sf)
    rest_m, rest_k = blocked_rests(mn, k16)
    assert blocked.shape == (32, 4, rest_m, 4, rest_k, 1)
    flat = blocked_buffer(blocked).reshape(-1)      # memory order of the fresh buffer
    assert flat.numel() == rest_m * rest_k * 512
    for i in range(mn):
        for j in range(k16):
            assert flat[blocked_offset(i, j, rest_m, rest_k)] == sf[i, j], (i, j)


@pytest.mark.parametrize("mn,k16", RAGGED)
def test_padding_bytes_and_memory_order(mn, k16):
    blocked = to_blocked(_random_scales(mn, k16))
    buffer = blocked_buffer(blocked)
    assert buffer.is_contiguous() and buffer.shape[3:] == (32, 4, 4)
    rest_m, rest_k = blocked_rests(mn, k16)
    flat = buffer.reshape(-1)
    i, j = torch.meshgrid(torch.arange(rest_m * 128), torch.arange(rest_k * 4), indexing="ij")
    at = flat[blocked_offset(i, j, rest_m, rest_k)]
    assert (at[mn:] == 0x7F).all()
    assert (at[:mn, k16:] == 0).all()
    # the offsets of all padded positions are a permutation of the buffer
    assert torch.equal(blocked_offset(i, j, rest_m, rest_k).flatten().sort().values,
                       torch.arange(flat.numel()))


def test_custom_pad_bytes():
    padded = from_blocked(to_blocked(_random_scales(3, 3), row_pad_byte=0xAA, col_pad_byte=0x55),
                          3, 3, keep_padding=True)
    assert (padded[3:] == 0xAA).all() and (padded[:3, 3:] == 0x55).all()


def test_dtype_is_kept_both_ways():
    sf = _random_scales(40, 6).view(torch.float8_e4m3fn)
    blocked = to_blocked(sf.unsqueeze(-1))
    assert blocked.dtype == torch.float8_e4m3fn
    back = from_blocked(blocked, 40, 6)
    assert back.dtype == torch.float8_e4m3fn and torch.equal(as_uint8(back), as_uint8(sf))


@given(mn=st.integers(1, 300), k16=st.integers(1, 20), seed=st.integers(0, 2 ** 31))
@pytest.mark.properties
def test_round_trip_on_ragged_sizes(mn, k16, seed):
    sf = _random_scales(mn, k16, seed)
    assert torch.equal(from_blocked(to_blocked(sf), mn, k16), sf)
