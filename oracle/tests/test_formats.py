import ml_dtypes
import numpy as np
import pytest
import torch

from oracle.formats import (E2M1_VALUES, as_e4m3, as_fp4x2, as_uint8, e2m1_decode, e2m1_twice,
                            e4m3_decode, e4m3_times_512, pack_e2m1, unpack_e2m1)

ALL_NIBBLES = torch.arange(16, dtype=torch.uint8)
ALL_BYTES = torch.arange(256, dtype=torch.uint8)


def _same_floats(ours: np.ndarray, theirs: np.ndarray):
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    finite = ~np.isnan(theirs)
    np.testing.assert_array_equal(ours[finite], theirs[finite])
    np.testing.assert_array_equal(np.signbit(ours[finite]), np.signbit(theirs[finite]))


def test_e2m1_table_matches_ml_dtypes_for_all_16_codes():
    theirs = np.arange(16, dtype=np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float32)
    _same_floats(e2m1_decode(ALL_NIBBLES).numpy(), theirs)
    _same_floats(np.array(E2M1_VALUES, dtype=np.float32), theirs)


def test_e4m3_table_matches_ml_dtypes_and_torch_for_all_256_bytes():
    ours = e4m3_decode(ALL_BYTES).numpy()
    _same_floats(ours, np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn)
                 .astype(np.float32))
    _same_floats(ours, ALL_BYTES.view(torch.float8_e4m3fn).float().numpy())


def test_e4m3_landmarks():
    values = e4m3_decode(ALL_BYTES)
    assert values[0x7E] == 448 and values[0x01] == 2.0 ** -9 and values[0x08] == 2.0 ** -6
    assert torch.isnan(values[[0x7F, 0xFF]]).all() and int(torch.isnan(values).sum()) == 2
    assert not torch.isinf(values).any()


def test_integer_decoders_are_scaled_float_decoders():
    assert torch.equal(e2m1_twice(ALL_NIBBLES).double(), 2 * e2m1_decode(ALL_NIBBLES).double())
    assert e2m1_twice(ALL_NIBBLES).abs().max() == 12
    ints, nan = e4m3_times_512(ALL_BYTES)
    floats = e4m3_decode(ALL_BYTES).double()
    assert torch.equal(nan, torch.isnan(floats))
    assert torch.equal(ints[~nan].double(), 512 * floats[~nan])
    assert ints.max() == 229376 and (ints[nan] == 0).all()


def test_decoders_accept_float8_and_fp4_views():
    assert torch.equal(e4m3_decode(as_e4m3(ALL_BYTES)).isnan(), e4m3_decode(ALL_BYTES).isnan())
    packed = torch.tensor([0x21, 0xF8], dtype=torch.uint8)
    assert unpack_e2m1(as_fp4x2(packed)).tolist() == [1, 2, 8, 15]


def test_nibble_order_low_nibble_is_the_even_element():
    assert pack_e2m1(torch.tensor([1, 2], dtype=torch.uint8)).tolist() == [0x21]
    assert unpack_e2m1(torch.tensor([0x21], dtype=torch.uint8)).tolist() == [1, 2]


def test_pack_unpack_round_trip():
    gen = torch.Generator().manual_seed(0)
    codes = torch.randint(0, 16, (3, 5, 64), generator=gen).to(torch.uint8)
    packed = pack_e2m1(codes)
    assert packed.shape == (3, 5, 32)
    assert torch.equal(unpack_e2m1(packed), codes)
    assert torch.equal(pack_e2m1(unpack_e2m1(packed)), packed)


def test_pack_rejects_odd_length_and_bad_codes():
    with pytest.raises(ValueError):
        pack_e2m1(torch.zeros(3, dtype=torch.uint8))
    with pytest.raises(ValueError):
        pack_e2m1(torch.tensor([16, 0], dtype=torch.uint8))


def test_views_share_storage():
    raw = torch.arange(8, dtype=torch.uint8)
    fp4 = as_fp4x2(raw)
    assert fp4.dtype == torch.float4_e2m1fn_x2 and fp4.data_ptr() == raw.data_ptr()
    assert as_uint8(as_e4m3(raw)).data_ptr() == raw.data_ptr()
    with pytest.raises(TypeError):
        as_uint8(torch.zeros(2, dtype=torch.float16))
