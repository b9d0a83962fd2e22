from fractions import Fraction

import pytest
import torch
from hypothesis import given, strategies as st

from oracle import (DISTRIBUTIONS, GroupCodes, as_uint8, clone_data, data_from_codes,
                    draw_groups, make_inputs, reference, reference_exact)
from oracle.reference import exact_int_matmul, group_integers

from .fraction_oracle import dot_with_numerator, exact_outputs, round_to_fp16

UNIT = 2 ** 20          # numerators are in units of 2^-20


def _bits(t):
    return t.view(torch.int16)


def _assert_matches_fractions(data):
    fractions = exact_outputs(data)
    for out, (numerator, nan), exact in zip(reference(data), reference_exact(data), fractions):
        for i, row in enumerate(exact):
            for j, x in enumerate(row):
                if x is None:
                    assert bool(nan[i, j]) and torch.isnan(out[i, j, 0])
                    continue
                assert not bool(nan[i, j]) and Fraction(int(numerator[i, j]), UNIT) == x
                expected = torch.tensor(round_to_fp16(x), dtype=torch.float16)
                assert _bits(out[i, j, 0]) == _bits(expected), (i, j, x, out[i, j, 0])


small_sizes = st.lists(st.tuples(st.integers(1, 6), st.integers(1, 6),
                                 st.sampled_from([16, 32, 48, 64]), st.just(1)),
                       min_size=1, max_size=3)


@given(sizes=small_sizes, seed=st.integers(0, 2 ** 31), distribution=st.sampled_from(DISTRIBUTIONS))
@pytest.mark.properties
def test_reference_equals_fraction_arithmetic(sizes, seed, distribution):
    _assert_matches_fractions(make_inputs(sizes, seed, distribution))


@given(m=st.integers(1, 4), n=st.integers(1, 4), k=st.sampled_from([16, 32]),
       seed=st.integers(0, 2 ** 31))
@pytest.mark.properties
def test_reference_equals_fractions_for_arbitrary_scale_bytes(m, n, k, seed):
    """Every scale byte, negative, subnormal and NaN ones included."""
    gen = torch.Generator().manual_seed(seed)
    draw = lambda *shape: torch.randint(0, 256, shape, generator=gen).to(torch.uint8)  # noqa
    group = GroupCodes(draw(m, k) % 16, draw(m, k // 16), draw(n, k) % 16, draw(n, k // 16))
    _assert_matches_fractions(data_from_codes([group]))


ROUNDING_CASES = [   # (exact value, fp16 result)
    (Fraction(2049), 2048.0), (Fraction(2051), 2052.0), (Fraction(2049) + Fraction(1, 1024), 2050.0),
    (1 + Fraction(1, 2048), 1.0), (1 + Fraction(3, 2048), 1 + 2.0 ** -9),
    (Fraction(32768 + 16), 32768.0), (Fraction(32768 + 48), 32832.0),
    (Fraction(65504), 65504.0), (65520 - Fraction(1, UNIT), 65504.0),
    (Fraction(65520), float("inf")), (Fraction(-65520), float("-inf")),
    (Fraction(2 ** 24), float("inf")), (Fraction(-3, UNIT), -3 * 2.0 ** -20),
    (Fraction(1, 2 ** 14) - Fraction(1, UNIT), 2.0 ** -14 - 2.0 ** -20),
]


@pytest.mark.parametrize("value,expected", ROUNDING_CASES, ids=str)
def test_rounding_at_ties_overflow_and_subnormals(value, expected):
    assert round_to_fp16(value) == expected                     # the slow oracle agrees
    data = dot_with_numerator(int(value * UNIT))
    assert Fraction(int(reference_exact(data)[0][0][0, 0]), UNIT) == value
    assert float(reference(data)[0][0, 0, 0]) == expected


def test_exact_cancellation_and_negative_zero_codes_give_positive_zero():
    codes = torch.zeros(1, 32, dtype=torch.uint8)
    codes[0, 0], codes[0, 16] = 2, 10                            # +1 and -1, same scale
    ones = torch.full((1, 32), 2, dtype=torch.uint8)
    scale = torch.full((1, 2), 0x38, dtype=torch.uint8)
    negative_zeros = torch.full((1, 32), 8, dtype=torch.uint8)
    for a in (codes, negative_zeros):
        out = reference(data_from_codes([GroupCodes(a, scale, ones, scale)]))[0]
        assert _bits(out).item() == 0                            # +0, not -0


def test_nan_scale_poisons_exactly_its_row_or_column():
    data = make_inputs([(8, 6, 64, 1)], 3)
    as_uint8(data[1][0][0])[2, 1, 0] = 0xFF
    as_uint8(data[1][0][1])[4, 3, 0] = 0x7F
    nan = torch.isnan(reference(data)[0][..., 0])
    expected = torch.zeros(8, 6, dtype=torch.bool)
    expected[2, :] = True
    expected[:, 4] = True
    assert torch.equal(nan, expected)


def _python_matmul(a, b):
    return [[sum(x * y for x, y in zip(r, c)) for c in b.tolist()] for r in a.tolist()]


def test_split_and_single_float64_paths_are_exact():
    gen = torch.Generator().manual_seed(0)
    limit = 2752512                                              # 12 * 448 * 512
    a = torch.randint(-limit, limit + 1, (5, 4096), generator=gen)
    b = torch.randint(limit // 2, limit + 1, (4, 4096), generator=gen)
    a[:2] = a[:2].abs().clamp(min=limit // 2)                    # rows without cancellation
    exact = _python_matmul(a, b)                                 # needs more than 53 bits
    assert max(abs(v) for row in exact for v in row) > 2 ** 53
    assert exact_int_matmul(a, b).tolist() == exact              # takes the split path
    small = (a >> 8, b >> 8)
    assert exact_int_matmul(*small).tolist() == _python_matmul(*small)
    assert torch.equal(exact_int_matmul(*small, force_split=True), exact_int_matmul(*small))
    full = torch.full((2, 4096), limit)
    assert exact_int_matmul(full, -full).tolist() == [[-limit * limit * 4096] * 2] * 2


def test_permuting_groups_permutes_outputs():
    sizes = [(8, 16, 64, 1), (24, 8, 128, 1), (16, 32, 32, 1)]
    data = make_inputs(sizes, 11, "uniform")
    order = [2, 0, 1]
    permuted = tuple([part[g] for g in order] for part in data)
    for out, expected in zip(reference(permuted), [reference(data)[g] for g in order]):
        assert torch.equal(_bits(out), _bits(expected))


def test_splitting_k_adds_exact_numerators():
    (group,) = draw_groups([(12, 10, 512, 1)], seed=5, distribution="uniform")

    def k_slice(lo, hi):
        return data_from_codes([GroupCodes(group.a_codes[:, lo:hi], group.sfa[:, lo // 16:hi // 16],
                                           group.b_codes[:, lo:hi], group.sfb[:, lo // 16:hi // 16])])

    whole, first, second = (reference_exact(k_slice(*r))[0][0]
                            for r in ((0, 512), (0, 256), (256, 512)))
    assert torch.equal(whole, first + second)


def test_doubling_one_block_scale_doubles_exactly_its_contribution():
    data = make_inputs([(6, 9, 256, 1)], 8, "uniform")
    row, block = 4, 5
    a_int, b_int, _ = group_integers(data, 0)
    columns = slice(16 * block, 16 * block + 16)
    contribution = exact_int_matmul(a_int[row:row + 1, columns], b_int[:, columns])[0]
    doubled = clone_data(data)
    sfa = as_uint8(doubled[1][0][0])
    assert 0x08 <= int(sfa[row, block, 0]) < 0x70               # normal: +1 in the exponent field
    sfa[row, block, 0] += 8
    difference = reference_exact(doubled)[0][0] - reference_exact(data)[0][0]
    expected = torch.zeros_like(difference)
    expected[row] = contribution
    assert torch.equal(difference, expected)
