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
