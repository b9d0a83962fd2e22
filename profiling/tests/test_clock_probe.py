"""profiling.clock_probe's parsing of nvidia-smi samples (no GPU needed)."""

from profiling.clock_probe import decode_reasons, parse_samples, summarize


def test_reasons_decode_every_bit_and_keep_unknown_ones():
    assert decode_reasons(0) == []
    assert decode_reasons(0x4) == ["sw_power_cap"]
    assert decode_reasons(0x4 | 0x20) == ["sw_power_cap", "sw_thermal"]
    assert decode_reasons(0x4 | 0x1000) == ["sw_power_cap", "0x1000"]


def test_samples_parse_and_summarize_shares():
    lines = [
        "1755, 690.12, 700.00, 61, 0x0000000000000004",
        "1980, 300.50, 700.00, 58, 0x0000000000000000",
        "1740, 695.00, 700.00, 63, 0x0000000000000004",
        "17",  # a line cut by the sampler's stop
        "1740, [N/A], 700.00, 63, 0x4",
    ]
    samples = parse_samples(lines)
    assert [s["clock_mhz"] for s in samples] == [1755.0, 1980.0, 1740.0]
    stats = summarize(samples)
    assert stats["samples"] == 3 and stats["clock_mhz"] == 1755.0 and stats["temp_c"] == 63.0
    assert abs(stats["reasons"]["sw_power_cap"] - 2 / 3) < 1e-9 and list(stats["reasons"]) == ["sw_power_cap"]
    assert summarize([]) == {"samples": 0}


def test_with_codes_zeroes_only_the_named_operand_on_copies():
    import torch

    import oracle
    from profiling.clock_probe import with_codes

    data = oracle.make_inputs([(40, 128, 256, 1), (8, 256, 512, 1)], 3)
    before = [(a.view(torch.uint8).clone(), b.view(torch.uint8).clone()) for a, b, _ in data[0]]
    assert with_codes([data], "random")[0] is data
    (za,) = with_codes([data], "zero_a")
    (zb,) = with_codes([data], "zero_b")
    for g, (a, b) in enumerate(before):
        assert a.any() and b.any()  # random codes to start from
        assert not za[0][g][0].view(torch.uint8).any() and torch.equal(za[0][g][1].view(torch.uint8), b)
        assert not zb[0][g][1].view(torch.uint8).any() and torch.equal(zb[0][g][0].view(torch.uint8), a)
        # the given inputs are untouched
        assert torch.equal(data[0][g][0].view(torch.uint8), a) and torch.equal(data[0][g][1].view(torch.uint8), b)


def test_k_slope_fit_recovers_a_line_and_reports_the_residual():
    import pytest

    from profiling.k_slope import fit_line

    a, b, r = fit_line([2, 6, 24], [5.0 + 1.5 * x for x in (2, 6, 24)])
    assert abs(a - 5.0) < 1e-9 and abs(b - 1.5) < 1e-9 and r < 1e-9
    a, b, r = fit_line([0, 1, 2], [0.0, 2.0, 1.0])
    assert abs(a - 0.5) < 1e-9 and abs(b - 0.5) < 1e-9 and abs(r - 1.0) < 1e-9
    with pytest.raises(ValueError):
        fit_line([4, 4], [1.0, 2.0])


def test_unknown_data_kind_is_refused_before_any_gpu_work(capsys):
    import pytest

    from profiling.clock_probe import main

    with pytest.raises(SystemExit) as e:
        main(["--variant", "any", "--data", "random,ones"])
    assert e.value.code == 2 and "--data 'ones'" in capsys.readouterr().err
