import ml_dtypes
import numpy as np
import pytest
import torch
from hypothesis import given, strategies as st

from oracle.formats import e2m1_decode, e4m3_decode
from oracle.quantize import quantize_nvfp4, round_to_e2m1


def _dequantize(codes, scales):
    mn, k = codes.shape
    return (e2m1_decode(codes).double().view(mn, k // 16, 16)
            * e4m3_decode(scales).double().unsqueeze(-1)).view(mn, k)


def _half_step(v):
    """Half the E2M1 grid spacing around |v| (a scaled element), saturating region included."""
    return torch.where(v < 2, 0.25, torch.where(v < 4, 0.5, 1.0))


@given(seed=st.integers(0, 2 ** 31), spread=st.floats(0.5, 50.0))
@pytest.mark.properties
def test_error_is_at_most_half_an_e2m1_step_times_the_scale(seed, spread):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn((8, 64), generator=gen) * spread
    codes, scales = quantize_nvfp4(x)
    scale = e4m3_decode(scales).double().repeat_interleave(16, dim=1)
    # the claim needs a normal scale (>= 2^-6): a subnormal one has a coarse relative step
    normal = (scales >= 0x08).repeat_interleave(16, dim=1)
    assert normal.float().mean() > 0.9
    error = (_dequantize(codes, scales) - x.double()).abs()
    assert (error <= _half_step(x.double().abs() / scale) * scale)[normal].all()


def test_scale_is_amax_over_6_rounded_like_ml_dtypes():
    gen = torch.Generator().manual_seed(1)
    x = torch.randn((16, 128), generator=gen) * 3
    _, scales = quantize_nvfp4(x)
    amax = x.view(16, 8, 16).abs().amax(-1) / 6
    theirs = amax.numpy().astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    np.testing.assert_array_equal(scales.numpy(), theirs)


def test_all_zero_block_gets_zero_scale_and_zero_codes():
    x = torch.zeros(2, 32)
    x[1, 16:] = torch.linspace(-3, 3, 16)
    codes, scales = quantize_nvfp4(x)
    assert scales[0].tolist() == [0, 0] and scales[1, 0] == 0 and scales[1, 1] != 0
    assert (codes[0] == 0).all() and (codes[1, :16] == 0).all()


def test_huge_values_clamp_to_448_and_6():
    x = torch.full((1, 16), 1e6)
    x[0, 1] = -1e6
    codes, scales = quantize_nvfp4(x)
    assert scales.tolist() == [[0x7E]]
    assert codes[0, 0] == 7 and codes[0, 1] == 15


def test_e2m1_rounding_ties_to_even_code():
    ties = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, -0.25, -5.0])
    assert round_to_e2m1(ties).tolist() == [0, 2, 2, 4, 4, 6, 6, 8, 14]


def test_e2m1_rounding_matches_ml_dtypes_on_a_fine_grid():
    grid = torch.arange(-6 * 64, 6 * 64 + 1, dtype=torch.float32) / 64
    theirs = grid.numpy().astype(ml_dtypes.float4_e2m1fn).view(np.uint8)
    np.testing.assert_array_equal(round_to_e2m1(grid).numpy(), theirs)


def test_saturates_beyond_6_and_rejects_bad_input():
    assert round_to_e2m1(torch.tensor([7.0, 100.0, -9.0])).tolist() == [7, 7, 15]
    with pytest.raises(ValueError):
        quantize_nvfp4(torch.zeros(2, 20))
    with pytest.raises(ValueError):
        quantize_nvfp4(torch.full((1, 16), float("inf")))
