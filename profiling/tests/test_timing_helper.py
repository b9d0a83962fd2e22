"""The timing helper's statistics, rotation and sizing, on a fake clock (no GPU)."""

import math
import statistics

import pytest

from profiling import timing
from profiling.timing import FakeClock, Replayer, copies_for, launches_for, summarize, time_device


def test_summarize_matches_statistics():
    xs = [5.0, 1.0, 3.0, 2.0, 4.0, 100.0]
    s = summarize(xs)
    assert s.n == 6 and s.median == statistics.median(xs) == 3.5
    assert s.min == 1.0 and s.max == 100.0
    assert math.isclose(s.mean, statistics.fmean(xs)) and math.isclose(s.stdev, statistics.stdev(xs))
    # numpy 'linear' quartiles of [1, 2, 3, 4, 5, 100]: 2.25 and 4.75
    assert math.isclose(s.q1, 2.25) and math.isclose(s.q3, 4.75)
    assert math.isclose(s.iqr, 2.5) and math.isclose(s.rel_iqr, 2.5 / 3.5)
    one = summarize([7.0])
    assert one.median == one.q1 == one.q3 == 7.0 and one.stdev == 0.0
    with pytest.raises(ValueError):
        summarize([])


def _fake_launches(clock, durations_by_copy, calls):
    def make(i):
        def launch():
            calls.append(i)
            d = durations_by_copy[i]
            clock.advance(d() if callable(d) else d)
        return launch
    return [make(i) for i in range(len(durations_by_copy))]


def test_rotation_warmup_and_samples():
    clock, calls = FakeClock(), []
    launches = _fake_launches(clock, [10.0, 20.0, 30.0], calls)
    t = time_device(launches, samples=5, warmup=2, launches_per_replay=6, clock=clock)
    # prepare calls every copy once, then each replay cycles 0,1,2,0,1,2
    assert calls[:3] == [0, 1, 2]
    assert calls[3:9] == [0, 1, 2, 0, 1, 2]
    assert len(calls) == 3 + (2 + 5) * 6
    assert t.samples_us == (20.0,) * 5  # per launch: (10+20+30)*2 / 6
    assert t.median_us == 20.0 and t.spread_us == 0.0
    assert (t.copies, t.launches_per_replay, t.warmup, t.method) == (3, 6, 2, "fake")
    assert clock.syncs == 7  # every replay (warm-up included) synchronizes


def test_warmup_excluded_and_distribution_kept():
    clock, calls = FakeClock(), []
    seq = iter([1000.0] * 3 + [10.0, 11.0, 12.0, 13.0, 90.0])  # prepare + 2 warm-up, then 5 samples

    launches = _fake_launches(clock, [lambda: next(seq)], calls)
    t = time_device(launches, samples=5, warmup=2, launches_per_replay=1, clock=clock)
    assert t.samples_us == (10.0, 11.0, 12.0, 13.0, 90.0)
    assert t.median_us == 12.0  # the outlier moves the mean, not the median
    assert t.stats.mean > 27
    d = t.as_dict()
    assert d["device_median_us"] == 12.0 and d["device_samples_us"] == [10.0, 11.0, 12.0, 13.0, 90.0]
    assert d["device_iqr_us"] == 2.0 and d["device_method"] == "fake"


def test_replayer_is_a_benchmark_target():
    clock, calls = FakeClock(), []
    r = Replayer(_fake_launches(clock, [4.0, 6.0], calls), launches_per_replay=4, clock=clock).prepare()
    assert r.method == "events" and r.order() == [0, 1, 0, 1]
    assert r.replay() == 5.0 and r.replay() == 5.0
    assert r.timing().samples_us == (5.0, 5.0)
    with pytest.raises(RuntimeError):
        Replayer([lambda: None], clock=FakeClock()).timing()
    with pytest.raises(ValueError):
        Replayer([], clock=FakeClock())
    with pytest.raises(ValueError):
        Replayer([lambda: None], method="nope", clock=FakeClock())


def test_copies_for_exceeds_l2():
    l2 = timing.H200_L2_BYTES
    assert copies_for(200_000_000) == 1  # bench1-sized: already three L2s
    n = copies_for(11_710_000)  # bench4
    assert n * 11_710_000 >= 3 * l2 and (n - 1) * 11_710_000 < 3 * l2
    assert copies_for(1000) == 64  # capped
    assert copies_for(10**9, max_total_bytes=1.5e9) == 1
    assert copies_for(0) == 1


def test_launches_for_is_a_multiple_of_copies_and_deterministic():
    assert launches_for(76.1, 1) == 14
    assert launches_for(76.1, 4) == 16
    assert launches_for(0.1, 3) == 258  # capped at 256, rounded up to a multiple of 3
    assert launches_for(5000.0, 2) == 2
    assert launches_for(0.0, 1) == 256
