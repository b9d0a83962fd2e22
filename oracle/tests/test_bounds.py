from fractions import Fraction

import pytest
import torch
from hypothesis import given, strategies as st

from oracle import (DISTRIBUTIONS, GroupCodes, as_uint8, check_outputs, clone_data, compare, error_bound,
                    data_from_codes, exact_sum_mask, expected_outputs, fp32_model_outputs,
                    make_inputs, ulp16)

from . import fraction_oracle
from oracle.distributions import truncation_adversary

from .model_kernels import (CHUNK_ORDERS, blockwise_outputs, chunked_fp32, cut_fp32, sequential_fp32,
                            sequential_outputs)

# what the subjects declare (KernelConstraints.accumulation_chunk): none, Hopper wgmma,
# tcgen05 block-scaled MMA, the CPU model's K tiles
DECLARED_CHUNKS = [None, 16, 64, 128, 256]

SHAPES = [[(16, 24, 256, 1), (8, 40, 512, 1)], [(12, 8, 1024, 1)]]


@pytest.mark.parametrize("shapes", SHAPES, ids=["two_groups", "k1024"])
@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_bound_holds_for_honest_fp32_kernels(distribution, shapes):
    for seed in range(2):
        data = make_inputs(shapes, seed, distribution)
        for name, outputs in (("torch fp32 matmul", fp32_model_outputs(data)),
                              ("truncating sequential", sequential_outputs(data, toward_zero=True)),
                              ("nearest reversed", sequential_outputs(data, toward_zero=False,
                                                                      reverse=True)),
                              ("blockwise", blockwise_outputs(data))):
            report = check_outputs(data, outputs)
            assert report.ok, f"{name}, seed {seed}:\n{report}"


@given(seed=st.integers(0, 2 ** 31), distribution=st.sampled_from(DISTRIBUTIONS),
       m=st.integers(1, 24), n=st.integers(1, 24), k=st.sampled_from([16, 64, 256, 768]))
@pytest.mark.properties
def test_bound_holds_for_torch_fp32_matmul_on_random_problems(seed, distribution, m, n, k):
    data = make_inputs([(m, n, k, 1)], seed, distribution)
    report = check_outputs(data, fp32_model_outputs(data))
    assert report.ok, str(report)


def test_both_parts_of_the_bound_are_needed_on_adversarial_data():
    """All-positive products with fine granularity: no cancellation, so truncation errors add up
    (E is not decoration) and they move fp16 outputs by an ulp (the ulp term is needed too)."""
    gen = torch.Generator().manual_seed(0)
    draw = lambda lo, hi, *shape: torch.randint(lo, hi, shape, generator=gen).to(torch.uint8)  # noqa
    m, n, k = 32, 32, 1024
    group = GroupCodes(draw(1, 8, m, k), draw(0x01, 0x40, m, k // 16),
                       draw(1, 8, n, k), draw(0x01, 0x40, n, k // 16))
    data = data_from_codes([group])
    (e,) = expected_outputs(data)
    assert not e.exact_sum.any()
    fp32_error = (sequential_fp32(data, toward_zero=True)[0].double() - e.exact[..., 0]).abs()
    # a sequential truncating sum of positive terms loses about K/4 ulps: E is within ~12x of it
    assert float((fp32_error / e.accumulation_error[..., 0]).max()) > 0.05
    got = sequential_outputs(data, toward_zero=True)
    assert int((got[0].double() != e.reference.double()).sum()) > 0
    assert compare(got, [e.reference], [e.bound]).ok


def _formula_bound(e):
    """E + ulp16(|x| + E) without zeroing exact-sum elements."""
    return e.accumulation_error + ulp16(e.exact.abs() + e.accumulation_error)


def _violations(data, wrong, bound_of):
    expected = expected_outputs(data)
    return compare(fp32_model_outputs(wrong), [e.reference for e in expected],
                   [bound_of(e) for e in expected])


@pytest.mark.parametrize("k", [256, 512, 1024])
@pytest.mark.parametrize("distribution", ["uniform", "gaussian"])
def test_doubling_one_block_scale_is_caught(distribution, k):
    m, n, row, block = 16, 48, 5, 3
    data = make_inputs([(m, n, k, 1)], k, distribution)
    wrong = clone_data(data)
    sfa = as_uint8(wrong[1][0][0])
    assert 0x08 <= int(sfa[row, block, 0]) < 0x70
    sfa[row, block, 0] += 8                                     # exponent + 1: scale doubled
    for bound_of in (lambda e: e.bound, _formula_bound):
        report = _violations(data, wrong, bound_of)
        assert report.violations >= n // 2, report
        assert {v.row for v in report.worst} == {row}


@pytest.mark.parametrize("k", [256, 512, 1024])
@pytest.mark.parametrize("distribution", ["uniform", "gaussian"])
def test_dropping_the_last_k_block_is_caught(distribution, k):
    m, n = 16, 48
    data = make_inputs([(m, n, k, 1)], k + 1, distribution)
    wrong = clone_data(data)
    as_uint8(wrong[1][0][0])[:, -1, 0] = 0                      # the last 16 K values vanish
    for bound_of in (lambda e: e.bound, _formula_bound):
        assert _violations(data, wrong, bound_of).violations >= m * n // 2


@pytest.mark.parametrize("distribution", ["exact_sum", "leaderboard", "tiny"])
def test_exact_sum_distributions_are_exact_everywhere(distribution):
    data = make_inputs([(16, 24, 512, 1), (8, 8, 4096, 1)], 0, distribution)
    assert all(mask.all() for mask in exact_sum_mask(data))
    assert all((bound == 0).all() for bound in error_bound(data))


def test_exact_sum_mask_means_bitwise_equality_for_a_truncating_kernel():
    for distribution in ("uniform", "sparse", "gaussian", "nan_scales"):
        data = make_inputs([(16, 16, 512, 1)], 1, distribution)
        (mask,), (expected,) = exact_sum_mask(data), expected_outputs(data)
        got = sequential_outputs(data, toward_zero=True)[0]
        equal = (got.double() == expected.reference.double())
        assert equal[mask].all(), distribution
    assert not exact_sum_mask(make_inputs([(16, 16, 512, 1)], 1, "uniform"))[0].any()


def test_nan_elements_are_not_exact_and_have_zero_bound():
    data = make_inputs([(16, 16, 256, 1)], 2, "nan_scales")
    (e,) = expected_outputs(data)
    assert e.nan.any() and not e.exact_sum[e.nan].any() and (e.bound[e.nan] == 0).all()
    assert torch.isnan(e.reference[e.nan]).all() and not torch.isnan(e.reference[~e.nan]).any()


# ---- the bound for a declared accumulation order: sound, and tight enough to catch a x2 looser one ----


@given(seed=st.integers(0, 2 ** 31), distribution=st.sampled_from([*DISTRIBUTIONS, "truncation_adversary"]),
       m=st.integers(1, 5), n=st.integers(1, 5), k_blocks=st.integers(1, 448),
       chunk=st.sampled_from(DECLARED_CHUNKS), order=st.sampled_from(CHUNK_ORDERS),
       toward_zero=st.booleans())
@pytest.mark.properties
def test_accumulation_in_the_declared_order_never_exceeds_the_bound(
        seed, distribution, m, n, k_blocks, chunk, order, toward_zero):
    """True fp32 additions (nearest or toward zero) in an order the declaration allows, K up to
    7168: the fp32 result is within E of the exact sum and its fp16 rounding within the bound."""
    k = 16 * k_blocks
    if distribution == "truncation_adversary":
        data = data_from_codes([truncation_adversary(m, n, k)])
    else:
        data = make_inputs([(m, n, k, 1)], seed, distribution)
    (e,) = expected_outputs(data, chunk)
    (acc,) = chunked_fp32(data, chunk, toward_zero=toward_zero, order=order)
    finite = ~e.nan[..., 0] & torch.isfinite(e.exact[..., 0])
    error = (acc.double() - e.exact[..., 0]).abs()
    assert (error[finite] <= e.accumulation_error[..., 0][finite]).all(), float((error - e.accumulation_error[..., 0])[finite].max())
    report = check_outputs(data, [acc.to(torch.float16).unsqueeze(-1)], chunk=chunk)
    assert report.ok, str(report)


@pytest.mark.parametrize("k", [1024, 7168])
@pytest.mark.parametrize("chunk", DECLARED_CHUNKS)
def test_a_bound_twice_as_loose_misses_a_planted_error(chunk, k):
    """Tightness of E: on the truncation adversary an honest truncating accumulation in the
    declared order comes within 2/3 of E, so a planted error of 1.5x that honest error is flagged
    by E and let through by 2E (a x2 looser bound fails here)."""
    data = data_from_codes([truncation_adversary(2, 3, k)])
    (e,) = expected_outputs(data, chunk)
    (acc,) = chunked_fp32(data, chunk, toward_zero=True, order="acc_first")
    honest = (acc.double() - e.exact[..., 0]).abs()
    bound = e.accumulation_error[..., 0]
    assert (honest <= bound).all()
    planted = 1.5 * honest
    assert (planted > bound).all(), f"E is more than 1.5x the honest error: {float((honest / bound).min()):.3f}"
    assert (planted <= 2 * bound).all()


def _fp16_distance(x: Fraction, error: Fraction, r: float) -> Fraction:
    """max |fp16(v) - r| over v in [x - error, x + error], infinities read as +-65520 (Fractions)."""
    clip = lambda v: Fraction(max(-65520.0, min(65520.0, v)))  # noqa: E731
    ends = (fraction_oracle.round_to_fp16(x + error), fraction_oracle.round_to_fp16(x - error))
    return max(clip(ends[0]) - clip(r), clip(r) - clip(ends[1]))


@pytest.mark.parametrize("chunk", [None, 16])
@pytest.mark.parametrize("distribution", ["uniform", "extreme"])  # the others are exact sums at this size
def test_the_fp16_step_is_the_rounding_interval_of_x_plus_minus_e(distribution, chunk):
    """bound = max distance of fp16(x +- E) from the reference, checked against Fractions and an
    independent fp16 rounding: never below it (sound), at most one 2^-20 widening above it (no
    extra ulp, no factor)."""
    data = make_inputs([(6, 7, 512, 1)], 4, distribution)
    (e,) = expected_outputs(data, chunk)
    (exact,) = fraction_oracle.exact_outputs(data)
    nonzero = 0
    for i in range(6):
        for j in range(7):
            bound = Fraction(float(e.bound[i, j, 0]))
            if exact[i][j] is None or bool(e.exact_sum[i, j, 0]):
                assert bound == 0
                continue
            x, error = exact[i][j], Fraction(float(e.accumulation_error[i, j, 0]))
            r = fraction_oracle.round_to_fp16(x)
            assert _fp16_distance(x, error, r) <= bound <= _fp16_distance(x, error + Fraction(1, 2 ** 20), r)
            nonzero += bound > 0
    assert nonzero > 0


@pytest.mark.parametrize("chunk,max_median_ulps", [(16, 1), (64, 2), (256, 4)])
def test_median_bound_at_k7168_is_a_few_ulps(chunk, max_median_ulps):
    """At the standard shapes' K on uniform codes the bound is a few fp16 ulps (51 with no order
    declared, before the a-posteriori bound), and the CPU model's actual output stays inside."""
    data = make_inputs([(32, 32, 7168, 1)], 7, "uniform")
    (e,) = expected_outputs(data, chunk)
    finite = torch.isfinite(e.reference)
    ulps = (e.bound / ulp16(e.reference.double()))[finite]
    assert float(ulps.median()) <= max_median_ulps
    (acc,) = chunked_fp32(data, chunk, toward_zero=True, order="acc_first")
    assert check_outputs(data, [acc.to(torch.float16).unsqueeze(-1)], chunk=chunk).ok


@pytest.mark.parametrize("chunk", [16, 256])
def test_dropping_the_last_k_block_at_k7168_is_flagged_on_most_elements(chunk):
    """The planted error of the issue: at K = 7168 the bound with no declared order flagged a
    dropped last 16-K block on about 20% of the elements."""
    m, n = 32, 48
    data = make_inputs([(m, n, 7168, 1)], 5, "uniform")
    wrong = clone_data(data)
    as_uint8(wrong[1][0][0])[:, -1, 0] = 0
    (e,) = expected_outputs(data, chunk)
    report = compare(fp32_model_outputs(wrong), [e.reference], [e.bound])
    assert report.violations >= 0.6 * m * n, report


# ---- a declared cut (KernelConstraints.k_split): head and tail chains, then one fp32 addition ----

K_SPLIT = 256
CUT_KS = [512, 1536, 4096, 7168]


def _cut_point(k):
    return (k // (2 * K_SPLIT)) * K_SPLIT


def mirrored_cut_codes(m, n, k, seed, flip=0.02):
    """Head sum about +X, tail sum about -X: positive head products, and a tail whose first h
    elements repeat the head's 16-element blocks (codes and scales) in reverse block order with
    A negated, a fraction ``flip`` of them redrawn (any sign); the rest of the tail random."""
    gen = torch.Generator().manual_seed(seed)
    draw = lambda lo, hi, *shape: torch.randint(lo, hi, shape, generator=gen).to(torch.uint8)  # noqa
    h, blocks = _cut_point(k), _cut_point(k) // 16
    a, b = draw(0, 16, m, k), draw(0, 16, n, k)
    sfa, sfb = draw(0x20, 0x58, m, k // 16), draw(0x20, 0x58, n, k // 16)
    a[:, :h], b[:, :h] = draw(1, 8, m, h), draw(1, 8, n, h)
    reversed_blocks = lambda x: x.view(x.shape[0], blocks, 16).flip(1).reshape(x.shape[0], h)  # noqa
    a[:, h:2 * h], b[:, h:2 * h] = reversed_blocks(a[:, :h]) | 0x8, reversed_blocks(b[:, :h])
    sfa[:, blocks:2 * blocks], sfb[:, blocks:2 * blocks] = sfa[:, :blocks].flip(1), sfb[:, :blocks].flip(1)
    redrawn = torch.rand(m, h, generator=gen) < flip
    a[:, h:2 * h] = torch.where(redrawn, draw(0, 16, m, h), a[:, h:2 * h])
    return GroupCodes(a, sfa, b, sfb)


def cut_cancellation_codes(m, n, k):
    """Exact in the uncut chain order, far off in the cut one: the head's last block sums to
    2^14, the tail's first block to -2^14, and the other K - h - 16 tail products are
    -0.9375 * 2^-10, under half an fp32 ulp of 2^14. The chain adds them to a zero accumulator
    (exactly); the cut tail adds them to -2^14, where nearest and toward-zero rounding both drop
    them, so the cut result is 0 and the exact value -(K - h - 16) * 0.9375 * 2^-10."""
    h = _cut_point(k)
    a, b = torch.zeros(m, k, dtype=torch.uint8), torch.zeros(n, k, dtype=torch.uint8)
    sfa = torch.full((m, k // 16), 0x38, dtype=torch.uint8)              # 1
    sfb = torch.full((n, k // 16), 0x38, dtype=torch.uint8)
    a[:, h - 16:h], a[:, h:h + 16], a[:, h + 16:] = 0x6, 0xE, 0xB         # 4, -4, -1.5
    b[:, h - 16:h + 16], b[:, h + 16:] = 0x6, 0x2                          # 4, 1
    blocks = slice(h // 16 - 1, h // 16 + 1)
    sfa[:, blocks], sfb[:, blocks] = 0x50, 0x50                            # 8: products of +-2^10
    sfa[:, h // 16 + 1:], sfb[:, h // 16 + 1:] = 0x10, 0x0A                # 2^-5, 1.25 * 2^-6
    return GroupCodes(a, sfa, b, sfb)


def _cut_problem(kind, k):
    m, n = 3, 4
    if kind == "mirrored":
        return data_from_codes([mirrored_cut_codes(m, n, k, seed=k)])
    if kind == "cut_cancellation":
        return data_from_codes([cut_cancellation_codes(m, n, k)])
    if kind == "truncation_adversary":
        return data_from_codes([truncation_adversary(m, n, k)])
    return make_inputs([(m, n, k, 1)], k, kind)


def _assert_within(data, acc, chunk, k_split):
    """acc (the fp32 accumulator [m, n]) within E of the exact sum, its fp16 rounding within the
    bound, for the declaration (chunk, k_split)."""
    (e,) = expected_outputs(data, chunk, k_split)
    finite = ~e.nan[..., 0] & torch.isfinite(e.exact[..., 0])
    excess = (acc.double() - e.exact[..., 0]).abs() - e.accumulation_error[..., 0]
    assert (excess[finite] <= 0).all(), float(excess[finite].max())
    report = check_outputs(data, [acc.to(torch.float16).unsqueeze(-1)], chunk=chunk, k_split=k_split)
    assert report.ok, str(report)


@pytest.mark.parametrize("k", CUT_KS)
@pytest.mark.parametrize("kind", ["uniform", "gaussian", "extreme", "mirrored", "cut_cancellation",
                                  "truncation_adversary"])
def test_cut_accumulation_stays_within_the_k_split_bound(kind, k):
    """True fp32 additions in the cut order (head and tail each from 0, chunk by chunk in K order,
    then one fp32 addition), nearest and toward zero: within the bound for k_split = 256."""
    data = _cut_problem(kind, k)
    for toward_zero in (False, True):
        for chunk, order in ((16, "acc_first"), (64, "block_fma")):
            (acc,) = cut_fp32(data, chunk, K_SPLIT, toward_zero=toward_zero, order=order)
            _assert_within(data, acc, chunk, K_SPLIT)


@given(seed=st.integers(0, 2 ** 31), distribution=st.sampled_from([*DISTRIBUTIONS, "mirrored"]),
       m=st.integers(1, 4), n=st.integers(1, 4), k=st.sampled_from([256, 768, *CUT_KS]),
       chunk=st.sampled_from([16, 64, 128, 256]), order=st.sampled_from(CHUNK_ORDERS),
       toward_zero=st.booleans())
@pytest.mark.properties
def test_cut_accumulation_never_exceeds_the_k_split_bound(seed, distribution, m, n, k, chunk, order,
                                                          toward_zero):
    """Any declared chunk and chunk order, cut at k_split = 256 (not cut below K = 512)."""
    if distribution == "mirrored":
        data = data_from_codes([mirrored_cut_codes(m, n, k, seed)])
    else:
        data = make_inputs([(m, n, k, 1)], seed, distribution)
    (acc,) = cut_fp32(data, chunk, K_SPLIT, toward_zero=toward_zero, order=order)
    _assert_within(data, acc, chunk, K_SPLIT)


@pytest.mark.parametrize("kind,k", [(kind, k) for kind in ("uniform", "mirrored", "cut_cancellation")
                                    for k in (256, 384, *CUT_KS) if kind == "uniform" or k >= 2 * K_SPLIT])
def test_the_k_split_bound_covers_the_chain_bound(kind, k):
    """max(E, E_cut): never below the uncut bound, equal to it where K < 2 k_split (no cut) and
    whatever k_split is with no declared chunk (the any-order bound covers every cut)."""
    data = _cut_problem(kind, k)
    for chunk in (16, 64, 256):
        (chain,), (cut,) = expected_outputs(data, chunk), expected_outputs(data, chunk, K_SPLIT)
        assert (cut.accumulation_error >= chain.accumulation_error).all()
        assert (cut.bound >= chain.bound).all()
        if k < 2 * K_SPLIT:
            assert torch.equal(cut.accumulation_error, chain.accumulation_error)
            assert torch.equal(cut.bound, chain.bound)
    (plain,), (ignored,) = expected_outputs(data), expected_outputs(data, None, K_SPLIT)
    assert torch.equal(plain.bound, ignored.bound)


@pytest.mark.parametrize("k", [512, 4096])
@pytest.mark.parametrize("toward_zero", [False, True])
def test_the_cut_bound_is_needed(toward_zero, k):
    """On cut_cancellation_codes the cut order's fp16 output is outside the chain-only bound on
    every element, and inside the k_split bound."""
    data = data_from_codes([cut_cancellation_codes(3, 4, k)])
    (acc,) = cut_fp32(data, 16, K_SPLIT, toward_zero=toward_zero)
    assert (acc == 0).all()
    got = [acc.to(torch.float16).unsqueeze(-1)]
    assert check_outputs(data, got, chunk=16).violations == 12
    assert check_outputs(data, got, chunk=16, k_split=K_SPLIT).ok
    (chain,) = chunked_fp32(data, 16, toward_zero=toward_zero)
    assert check_outputs(data, [chain.to(torch.float16).unsqueeze(-1)], chunk=16).ok


@pytest.mark.parametrize("chunk,k_split", [(16, 100), (16, 8), (64, 96), (16, 0), (16, -256), (None, 0),
                                           (16, 256.0)])
def test_k_split_must_be_a_positive_multiple_of_the_chunk(chunk, k_split):
    data = make_inputs([(2, 3, 512, 1)], 0, "uniform")
    with pytest.raises(ValueError, match="k_split must be a positive"):
        expected_outputs(data, chunk, k_split)


# ---- compare() rules on hand-made tensors ----

INF, NAN = float("inf"), float("nan")


def _ok(got, ref, bound):
    as_fp16 = lambda x: torch.tensor([[[x]]], dtype=torch.float16)  # noqa: E731
    return compare([as_fp16(got)], [as_fp16(ref)], [torch.tensor([[[bound]]], dtype=torch.float64)]).ok


@pytest.mark.parametrize("got,ref,bound,ok", [
    (1.25, 1.0, 0.5, True), (2.0, 1.0, 0.5, False), (1.0, 1.0, 0.0, True),
    (-0.0, 0.0, 0.0, True),                                     # signed zeros are equal
    (65504.0, INF, 16.0, True), (65472.0, INF, 16.0, False), (65504.0, INF, 0.0, False),
    (INF, INF, 0.0, True), (-INF, INF, 1000.0, False), (-INF, -INF, 0.0, True),
    (INF, 65504.0, 16.0, True), (INF, 65504.0, 15.0, False), (INF, 60000.0, 100.0, False),
    (NAN, NAN, 0.0, True), (0.0, NAN, 1e9, False), (NAN, 0.0, 1e9, False), (INF, NAN, 0.0, False),
])
def test_compare_rules(got, ref, bound, ok):
    assert _ok(got, ref, bound) is ok


def test_report_names_the_worst_elements_with_coordinates():
    ref = [torch.zeros(4, 5, 1, dtype=torch.float16), torch.ones(3, 2, 1, dtype=torch.float16)]
    bound = [torch.full((4, 5, 1), 0.1, dtype=torch.float64), torch.zeros(3, 2, 1, dtype=torch.float64)]
    got = [r.clone() for r in ref]
    got[0][2, 3, 0] = 0.5
    got[0][1, 1, 0] = 0.2
    got[1][2, 0, 0] = NAN
    report = compare(got, ref, bound)
    assert (report.violations, report.nan_mismatches, report.checked) == (3, 1, 26)
    assert [(v.group, v.row, v.col) for v in report.worst] == [(1, 2, 0), (0, 2, 3), (0, 1, 1)]
    assert "group 0 [2, 3]" in str(report) and not report.ok


def test_compare_rejects_wrong_shapes_and_dtypes():
    ref = [torch.zeros(2, 2, 1, dtype=torch.float16)]
    bound = [torch.zeros(2, 2, 1, dtype=torch.float64)]
    for bad in (torch.zeros(2, 3, 1, dtype=torch.float16), torch.zeros(2, 2, 1)):
        with pytest.raises(ValueError):
            compare([bad], ref, bound)
    with pytest.raises(ValueError):
        compare([], ref, bound)
