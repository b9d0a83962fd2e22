"""The timeline build (``Perturbation.timeline``) and ``profiling.timeline``'s arithmetic, on a CPU:
the table layout and its decoding, the build's rules, and (compile marker) that the stamps leave
the consumers' K loop alone."""

from __future__ import annotations

import math

import pytest

from kernel.perturbation import (TABLE_WORDS, TIMELINE_CTAS, TIMELINE_POINTS, TIMELINE_WORD0, TIMELINE_WORDS,
                                 Perturbation, timeline_perturbation, timeline_stamps)
from profiling.timeline import launch_rows, summarize


def _words(stamps: dict[tuple[int, str], int]) -> list[int]:
    """A table as the device would leave it: each (cta, point) stamp as two int32 words (signed,
    as torch's int32 tensor reads back)."""
    words = list(timeline_perturbation().device_words())
    names = [n for n, _ in TIMELINE_POINTS]
    for (cta, name), t in stamps.items():
        at = TIMELINE_WORD0 + 2 * (cta * len(TIMELINE_POINTS) + names.index(name))
        lo, hi = t & 0xFFFFFFFF, t >> 32
        words[at] = lo - (1 << 32) if lo >= 1 << 31 else lo
        words[at + 1] = hi - (1 << 32) if hi >= 1 << 31 else hi
    return words


def test_the_timeline_table_follows_the_delay_table():
    p = timeline_perturbation()
    assert len(p.device_words()) == TABLE_WORDS + TIMELINE_WORDS == TIMELINE_WORD0 + TIMELINE_WORDS
    assert len(Perturbation(0, runtime=True, delays=False).device_words()) == TABLE_WORDS
    assert Perturbation.from_tag(p.tag) == p and p.tag.endswith("-tl-rt")
    assert p.compile_form == p and p.kind == "quiet"


@pytest.mark.parametrize("bad", [dict(runtime=False), dict(delays=True), dict(poison=True), dict(checks=True),
                                 dict(wgmma_fill=4)])
def test_a_timeline_build_runs_productions_schedule(bad):
    fields = dict(poison=False, delays=False, runtime=True, timeline=True)
    fields.update(bad)
    with pytest.raises(ValueError, match="timeline runs production's schedule"):
        Perturbation(0, 0, 0, **fields)


def test_stamps_decode_per_cta_and_point_including_the_high_word():
    big = (3 << 32) + 0xFFFFFFF0  # a low word with its top bit set: negative as int32
    words = _words({(0, "start"): big, (0, "epilogue_last_end"): big + 5000, (2, "producer_tail"): 7})
    stamps = timeline_stamps(words, 3)
    assert stamps["start"] == [big, 0, 0]
    assert stamps["epilogue_last_end"] == [big + 5000, 0, 0]
    assert stamps["producer_tail"] == [0, 0, 7]
    assert all(len(v) == 3 for v in stamps.values())
    assert len(timeline_stamps(words, 10 * TIMELINE_CTAS)["start"]) == TIMELINE_CTAS
    with pytest.raises(ValueError, match="not a timeline table"):
        timeline_stamps(words[:TABLE_WORDS], 1)


def test_launch_rows_are_relative_to_the_first_cta_start():
    t0 = 10_000_000
    words = _words({(0, "start"): t0 + 1000, (1, "start"): t0, (0, "epilogue_first"): t0 + 5000,
                    (1, "epilogue_first"): t0 + 9000})
    rows = launch_rows(timeline_stamps(words, 2))
    assert rows["start"] == (2, 0.5, 1.0)
    assert rows["epilogue_first"] == (2, 7.0, 9.0)
    assert rows["phase1_done"][0] == 0 and math.isnan(rows["phase1_done"][1])
    assert launch_rows(timeline_stamps(_words({}), 2)) is None
    # over launches: the medians of the per-launch medians and largest values
    other = dict(rows, epilogue_first=(2, 9.0, 11.0))
    third = dict(rows, epilogue_first=(1, 8.0, 8.0))
    summary = summarize([rows, other, third])
    assert summary["epilogue_first"] == (2, 8.0, 9.0)
    assert summary["phase1_done"][0] == 0


@pytest.mark.compile
@pytest.mark.parametrize("name", ["SPLIT_WARP_CONFIG", "IN_FLIGHT_CONFIG"])
def test_the_stamps_leave_the_k_loop_alone(name, static_builds):
    """The timeline build of the default dispatch's two builds: the production build's wgmmas,
    no clock read between its first and last wgmma (nothing stamped inside the consumers' K
    loop), one plain 64-bit store per "last" stamp site, no stack or local memory beyond the plain
    build's and no local-memory access inside the K loop."""
    from kernel.hopper import variants as cfgmod
    from profiling import sass

    config = getattr(cfgmod, name)
    plain = static_builds.code(config)
    build = static_builds.build(config, perturbation=timeline_perturbation())
    ins = static_builds.code(config, perturbation=timeline_perturbation())
    ops = [i.opcode for i in ins]
    assert sum(o.startswith("HGMMA") for o in ops) == sum(i.opcode.startswith("HGMMA") for i in plain)
    mmas = [n for n, o in enumerate(ops) if o.startswith("HGMMA")]
    clocks = [n for n, i in enumerate(ins) if "GLOBALTIMER" in i.operands]
    assert clocks and not [n for n in clocks if mmas[0] < n < mmas[-1]], "a stamp inside the K loop"
    # plain stores: start, tables_read, the last epilogue and its end, the producer tail (one per
    # ring); on the prepass build phase1_decoded, phase1_passed, phase1_done and the Y ring's tail
    lasts = 5 + (config.y_source == "prepass") * 4
    assert sum(o.startswith("STG.E.64") for o in ops) == lasts
    assert sum(o.startswith("ATOMG.E.CAS.64") for o in ops) >= 3
    usage = [u for u in sass.resource_usage(build["cubin"]) if u.function == ins[0].function][0]
    (plain_usage,) = [u for u in sass.resource_usage(static_builds.cubin(config))
                      if u.function == plain[0].function]
    assert (usage.stack_bytes, usage.local_bytes) == (plain_usage.stack_bytes, plain_usage.local_bytes)
    assert not [n for n, o in enumerate(ops) if o.startswith(("STL", "LDL")) and mmas[0] < n < mmas[-1]]


def test_labelled_builds_take_a_label_or_label_and_part():
    """k_slope's and timeline's variant arguments: LABEL, LABEL~PART; an unknown label is named."""
    from kernel.errors import UnsupportedConfigError
    from kernel.hopper.variants import FASTEST_STAGED_CONFIG, SPLIT_WARP_CONFIG
    from profiling.ablation import labelled_builds

    builds = labelled_builds([SPLIT_WARP_CONFIG.label, SPLIT_WARP_CONFIG.label + "~no_prepass"])
    assert builds[SPLIT_WARP_CONFIG.label].config == SPLIT_WARP_CONFIG
    assert builds[SPLIT_WARP_CONFIG.label].ablation is None
    assert builds[SPLIT_WARP_CONFIG.label + "~no_prepass"].ablation.part == "no_prepass"
    with pytest.raises(ValueError, match="unknown variant 'nope'"):
        labelled_builds(["nope"])
    with pytest.raises(UnsupportedConfigError):
        labelled_builds([FASTEST_STAGED_CONFIG.label + "~no_prepass"])  # no phase 1 to leave out


def test_sequence_rows_period_and_gap_between_consecutive_launches():
    """Three launches: the second starts 10 us after the first (which ends at +12 us: a 2 us
    overlap), the third 11 us after the second, 1 us after its end; an empty launch in between
    is left out and does not reset the sequence. The first launch has no period or gap."""
    from profiling.timeline import sequence_rows

    def stamps(t0, end):
        out = {name: [0, 0] for name, _ in TIMELINE_POINTS}
        out["start"] = [t0, t0 + 300]
        out["epilogue_last_end"] = [end - 500, end]
        return out

    empty = {name: [0, 0] for name, _ in TIMELINE_POINTS}
    rows = sequence_rows([stamps(1_000_000, 1_012_000), empty, stamps(1_010_000, 1_020_000),
                          stamps(1_021_000, 1_030_000)])
    assert len(rows) == 3
    assert rows[0]["period"][0] == 0 and math.isnan(rows[0]["gap"][1])
    assert rows[1]["period"] == (1, 10.0, 10.0) and rows[1]["gap"] == (1, -2.0, -2.0)
    assert rows[2]["period"] == (1, 11.0, 11.0) and rows[2]["gap"] == (1, 1.0, 1.0)
    assert rows[1]["epilogue_last_end"] == (2, 9.75, 10.0)
    s = summarize(rows)
    assert s["period"] == (1, 10.5, 10.5) and s["gap"] == (1, -0.5, -0.5)


def test_later_tiles_are_timed_on_ctas_of_whole_tiles_only():
    """Per CTA of N >= 2 whole tiles of one kind: (last epilogue start - first) / (N - 1), the
    median over them; CTAs with one tile, light tiles, a cut half (``whole`` 0) or a missing
    stamp are left out."""
    from profiling.timeline import CtaWork, later_tile_us

    nan = math.nan
    medians = [
        {"epilogue_first": 50.0, "epilogue_last": 140.0},  # 4 tiles: 30 each
        {"epilogue_first": 48.0, "epilogue_last": 128.0},  # 3 tiles: 40 each
        {"epilogue_first": 52.0, "epilogue_last": 52.0},  # 1 tile: left out
        {"epilogue_first": 40.0, "epilogue_last": 200.0},  # 2 full + 1 light: left out
        {"epilogue_first": 45.0, "epilogue_last": 130.0},  # 2 tiles and a cut half: left out
        {"epilogue_first": nan, "epilogue_last": 90.0},  # never stamped its first epilogue
        {"epilogue_first": 50.0, "epilogue_last": 85.0},  # 2 tiles: 35
    ]
    work = [CtaWork(0, "4 tiles", 4), CtaWork(0, "3 tiles", 3), CtaWork(0, "1 tiles", 1),
            CtaWork(0, "2 full + 1 light", 0), CtaWork(0, "2 tiles + half 1 (combine)", 0), CtaWork(0, "3 tiles", 3),
            CtaWork(0, "2 tiles", 2)]
    assert later_tile_us(medians, work) == (3, 35.0)
    n, t = later_tile_us(medians[2:4], work[2:4])
    assert n == 0 and math.isnan(t)
