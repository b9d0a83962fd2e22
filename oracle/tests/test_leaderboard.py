"""The leaderboard's inputs, cases, seeds and check, as oracle.leaderboard writes them."""

from __future__ import annotations

import pytest
import torch

import oracle
from oracle import leaderboard as lb
from oracle.formats import as_uint8
from oracle.host_memory import HostOnlyTensor
from oracle.layouts import blocked_rests, from_blocked

CASE = lb.Case((96, 40, 130), (128, 72, 256), (256, 512, 256), 3, 1111)


def test_the_inputs_have_the_leaderboards_layouts_and_devices():
    data = lb.generate_input(CASE, device="cpu")
    assert oracle.check_blocked_scales(data, check_padding=False) == []
    for (a, b, c), (sfa, sfb), (sfa_r, sfb_r), (m, n, k, l) in zip(*data):
        assert (m, n, k, l) in CASE.sizes
        # every tensor the (mn, k, l)-permuted view of an (l, mn, k) buffer
        assert a.stride() == (k // 2, 1, m * k // 2) and b.stride() == (k // 2, 1, n * k // 2)
        assert c.stride() == (n, 1, m * n) and sfa.stride() == (k // 16, 1, m * k // 16)
        assert a.dtype == torch.float4_e2m1fn_x2 and sfa.dtype == torch.float8_e4m3fn
        # the plain scales in host memory (on a machine without a GPU: a host-only tensor)
        assert isinstance(sfa, HostOnlyTensor) and isinstance(sfb, HostOnlyTensor)
        assert not isinstance(a, HostOnlyTensor) and not isinstance(sfa_r, HostOnlyTensor)
        # c prefilled with normals, not NaN
        assert torch.isfinite(c).all() and c.float().std() > 0.5


def test_the_values_follow_the_leaderboards_distribution():
    big = lb.Case((512,), (512,), (1024,), 1, 3)
    (a, b, _), (sfa, sfb), (sfa_r, _), (m, n, k, _) = (t[0] for t in lb.generate_input(big, device="cpu"))
    raw = as_uint8(a).flatten()
    assert bool(((raw & ~0b1011_1011) == 0).all())  # each nibble: sign bit and two low bits only
    assert int(raw.max()) == 0xBB and len(torch.unique(raw)) == 64  # every allowed byte drawn
    scales = torch.unique(as_uint8(sfa.to("cpu")))
    assert scales.tolist() == [0x38, 0x40]  # E4M3 1.0 and 2.0
    # the blocked scales' padding is random {1, 2} fill, not a constant
    rest_m, rest_k = blocked_rests(m + 1, k // 16)
    odd = lb.generate_input(lb.Case((m + 1,), (n,), (k,), 1, 3), device="cpu")[2][0][0]
    padded = as_uint8(from_blocked(odd, m + 1, k // 16, keep_padding=True))
    pad = padded[m + 1:]
    assert set(torch.unique(pad).tolist()) == {0x38, 0x40}


def test_the_same_seed_gives_the_same_bytes_and_another_seed_others():
    def raw(data):
        return [as_uint8(t.to("cpu")).clone() for grp in (*data[0][:1], *data[1]) for t in grp if t.element_size() == 1]

    first, again, other = (raw(lb.generate_input(CASE, seed, device="cpu")) for seed in (5, 5, 6))
    assert all(torch.equal(x, y) for x, y in zip(first, again))
    assert not all(torch.equal(x, y) for x, y in zip(first, other))


def test_read_cases_reads_a_task_file(tmp_path):
    task = tmp_path / "task.yml"
    task.write_text(
        "files:\n  - {\"name\": \"submission.py\"}\n"
        "tests:\n"
        "  - {\"m\": [96, 128], \"n\": [128, 256], \"k\": [256, 512], \"g\": 2, \"seed\": 1111}\n"
        "benchmarks:\n"
        "  - {\"m\": [8], \"n\": [16], \"k\": [256], \"g\": 1, \"seed\": 3}\n"
        "ranking_by: \"geom\"\n")
    cases = lb.read_cases(task)
    assert cases["tests"] == (lb.Case((96, 128), (128, 256), (256, 512), 2, 1111),)
    assert cases["benchmarks"] == (lb.Case((8,), (16,), (256,), 1, 3),)
    task.write_text("tests:\n  - {\"m\": [1, 2], \"n\": [1], \"k\": [256], \"g\": 2, \"seed\": 1}\n")
    with pytest.raises(ValueError, match="need g = 2 entries"):
        lb.read_cases(task)


def test_the_built_in_lists_are_the_problems():
    assert len(lb.TEST_CASES) == 10 and len(lb.BENCHMARK_CASES) == 4
    assert lb.BENCHMARK_CASES[0].m == (80, 176, 128, 72, 64, 248, 96, 160)
    assert all(c.seed == 1111 and len(c.m) == c.g for c in lb.TEST_CASES + lb.BENCHMARK_CASES)
    assert lb.TEST_CASES[0].spec == "m: [96, 128]; n: [128, 256]; k: [256, 512]; g: 2; seed: 1111"


def test_seeds_combine_and_advance_as_the_evaluator_does():
    assert lb.combine_seeds(1111, 0) == 1111 + 1111 * 1112 // 2
    assert lb.combine_seeds(1111, 10 ** 9) > 10 ** 17
    assert lb.benchmark_seeds(lb.BENCHMARK_CASES[0])[:3] == [1153, 1195, 1237]


def test_the_check_applies_rtol_and_atol_to_the_exact_reference():
    data = lb.generate_input(CASE, device="cpu")
    expected = oracle.reference(data)
    assert lb.check_outputs(data, [e.clone() for e in expected]) == (True, "")
    off = [e.clone() for e in expected]
    i = torch.argmax(off[1].abs())
    tolerance = lb.ATOL + lb.RTOL * float(off[1].flatten()[i].abs())
    off[1].view(-1)[i] += 3 * tolerance
    good, message = lb.check_outputs(data, off)
    assert not good and message.startswith("mismatch found!") and "Number of mismatched elements: 1" in message
    nan = [e.clone() for e in expected]
    nan[0].view(-1)[0] = float("nan")
    assert not lb.check_outputs(data, nan)[0]
    assert not lb.check_outputs(data, expected[:2])[0]
