"""profiling.timeline --per-cta and profiling.timeline_plot (CPU): per-CTA medians relative to
each launch's first start, the planned work per CTA adding up to the problem's whole weight, and
the CSV -> plot round trip."""

from __future__ import annotations

import math
import random

import pytest

from kernel.hopper.variants import SPLIT_WARP_CONFIG
from kernel.plan import make_plan
from profiling import timeline_plot
from profiling.timeline import cta_work, per_cta_medians, per_cta_path, write_per_cta

POINTS = ("start", "epilogue_first", "epilogue_last_end")


def _launch(t0, offsets):
    """Stamps of one launch: per point, per CTA, t0 + offset ns (None: not reached -> 0)."""
    return {p: [0 if o[i] is None else t0 + o[i] for o in offsets] for i, p in enumerate(POINTS)}


def test_per_cta_medians_are_relative_to_each_launchs_first_start():
    a = _launch(10_000_000, [(0, 5_000, 9_000), (1_000, None, 12_000)])
    b = _launch(90_000_000, [(2_000, 8_000, 13_000), (0, None, 10_000)])  # CTA 1 starts first here
    c = _launch(5_000_000, [(0, 6_000, 11_000), (500, None, 11_500)])
    empty = {p: [0, 0] for p in POINTS}
    rows = per_cta_medians([a, empty, b, c])
    assert len(rows) == 2
    assert rows[0]["start"] == pytest.approx(0.0)  # medians of 0, 2, 0 us
    assert rows[0]["epilogue_last_end"] == pytest.approx(11.0)  # 9, 13, 11
    assert rows[1]["start"] == pytest.approx(0.5)  # 1, 0, 0.5
    assert math.isnan(rows[1]["epilogue_first"])


def _random_sizes(rng):
    return [(rng.choice([1, 40, 64, 65, 128, 130, 250]), rng.choice([128, 256, 384, 1000]),
             256 * rng.choice([1, 2, 5, 28]), 1) for _ in range(rng.randint(1, 8))]


@pytest.mark.parametrize("seed", range(12))
def test_the_planned_work_of_the_ctas_adds_up_to_the_whole_problem(seed):
    rng = random.Random(seed)
    sizes = _random_sizes(rng)
    ctas = rng.choice([1, 3, 16, 132])
    plan = make_plan(sizes, tile_m=128, tile_n=128, tile_k=256, max_ctas=ctas, schedule="balanced")
    assert plan.total_tiles  # every drawn group has rows and columns
    # the balanced split: every tile on one CTA, at its cost x its K tiles
    bal = cta_work(plan, SPLIT_WARP_CONFIG)
    whole = sum(plan.tile_cost(t) * plan.k_tiles(plan.locate(t).slot) for t in range(plan.total_tiles))
    assert sum(w.cost for w in bal) == whole
    assert sum(int(w.what.split()[0]) + (int(w.what.split()[3]) if "light" in w.what else 0) for w in bal) == plan.total_tiles
    assert all(w.whole == (0 if "light" in w.what else int(w.what.split()[0])) for w in bal)


@pytest.mark.parametrize("seed", range(12))
def test_the_planned_work_of_a_cut_grid_adds_up_to_the_whole_problem(seed):
    """schedule="split_last": every K tile of every tile counted once over the CTAs, each cut
    tile's two halves named on two CTAs."""
    from kernel.hopper.variants import WIDE_Y_CONFIG
    from kernel.plan import FULL_COST

    rng = random.Random(seed)
    sizes = [(m, n, max(k, 512), l) for m, n, k, l in _random_sizes(rng)]  # two K tiles or more: cuttable
    tiles = make_plan(sizes, tile_m=256, tile_n=128, tile_k=256, max_ctas=None).total_tiles
    # on even seeds two whole rounds and at most half a grid of tiles left (cut); any grid on odd ones
    ctas = -(-2 * tiles // 5) if seed % 2 == 0 else rng.choice([2, 7, 16, 132])
    plan = make_plan(sizes, tile_m=256, tile_n=128, tile_k=256, max_ctas=ctas, schedule="split_last")
    work = cta_work(plan, WIDE_Y_CONFIG)
    whole = sum(FULL_COST * plan.k_tiles(plan.locate(t).slot) for t in range(plan.total_tiles))
    assert sum(w.cost for w in work) == whole
    cut = sum(plan.split_index(t) is not None for t in range(plan.total_tiles))
    assert sum("(publish)" in w.what for w in work) == sum("(combine)" in w.what for w in work) == cut
    assert all(w.whole == (0 if "half" in w.what else int(w.what.split()[0])) for w in work)
    left = tiles - 2 * plan.num_ctas
    if seed % 2 == 0 and 0 < left:
        assert cut == left, (tiles, plan.num_ctas)


def test_csv_round_trip_plot_and_summary(tmp_path):
    import struct

    medians = [{"start": 0.1 * c, "epilogue_first": 40.0 + c, "epilogue_last_end": 100.0 + (30.0 if c == 3 else c)}
               for c in range(6)]
    work = [(100 + c, f"{c} tiles") for c in range(6)]
    path = write_per_cta(per_cta_path(tmp_path, "bench1", SPLIT_WARP_CONFIG.label + "~no_epilogue"), "v", work, medians)
    assert "~" not in path.name
    label, rows = timeline_plot.read_per_cta(path)
    assert label == "v" and [r["modelled"] for r in rows] == [100 + c for c in range(6)]
    assert timeline_plot.cta_end(rows[3]) == pytest.approx(130.0)
    line = timeline_plot.summary_line(label, rows, late=1)
    assert "CTA 3 130.0 us (103: 3 tiles)" in line
    png = timeline_plot.plot([(label, rows), (label, rows)], tmp_path / "t.png")
    head = png.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", head[16:24])[1] > 600  # two rows of panels


def test_a_csv_that_is_not_a_timeline_is_refused_with_its_name(tmp_path, capsys):
    bad = tmp_path / "speed.csv"
    bad.write_text("variant,us\na,1.0\n")
    with pytest.raises(timeline_plot.TimelineCsvError, match=r"speed.csv.*missing columns"):
        timeline_plot.read_per_cta(bad)
    assert timeline_plot.main([str(bad), "-o", str(tmp_path / "x.png")]) == 2
    assert "speed.csv" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_the_end_against_work_line_is_least_squares_and_absent_without_spread():
    assert timeline_plot.fit([1, 2, 3, 4], [3.0, 5.0, 7.0, 9.0]) == pytest.approx((1.0, 2.0))
    assert timeline_plot.fit([5, 5, 5], [1.0, 2.0, 3.0]) is None
