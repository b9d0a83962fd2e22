"""kernel.perturbation: the seed -> delay table, its tags and the palette (pure Python)."""

import pytest

from kernel.perturbation import BEFORE_ONLY, JITTERS, ROLES, SITES, Perturbation, palette


def test_delay_table_is_a_function_of_the_seed():
    a, b = Perturbation(7).table(), Perturbation(7).table()
    assert a == b
    assert a != Perturbation(8).table(), "two seeds gave the same delay table"


def test_table_covers_every_site_once():
    keys = set(Perturbation(1).table())
    expected = {(r, s, w) for r in ROLES for s in SITES[r] for w in ("before", "after") if not (w == "after" and (r, s) in BEFORE_ONLY)}
    assert keys == expected


@pytest.mark.parametrize("seed", range(1, 13))
def test_delays_are_bounded_and_some_role_runs_behind(seed):
    p = Perturbation(seed, max_delay_ns=3000)
    values = p.table().values()
    assert all(0 <= v <= 3000 for v in values)
    for role in ROLES:
        ns = [p.delay_ns(role, s, "before") for s in SITES[role]]
        if p.role_scale(role) == 0:
            assert not any(ns), f"{role} is idle under seed {seed} but delays"


def test_seeds_spread_roles_apart():
    """Over a few seeds some role stalls (scale 1) while another idles (scale 0): one role then
    runs far ahead of the others, which is what opens race windows."""
    spreads = [
        {p.role_scale(r) for r in ROLES} >= {0.0, 1.0} for p in (Perturbation(s) for s in range(1, 9))
    ]
    assert any(spreads)
    assert sum(v > 0 for p in palette(3) for v in p.table().values()) > 10


def test_no_delays_means_zero_everywhere():
    assert not any(Perturbation(5, delays=False).table().values())
    assert Perturbation(5, delays=False, jitter="warp").jitter_ns == 0


def test_unknown_sites_are_rejected():
    with pytest.raises(KeyError):
        Perturbation(1).delay_ns("consumer", "no_such_site", "before")
    with pytest.raises(KeyError):
        Perturbation(1).delay_ns("consumer", "epilogue", "after")


@pytest.mark.parametrize("bad", [dict(seed=-1), dict(seed=1, max_delay_ns=-5), dict(seed=1, density_pct=101),
                                 dict(seed=1, jitter="block")])
def test_invalid_perturbations_raise(bad):
    with pytest.raises(ValueError):
        Perturbation(**bad)


@pytest.mark.parametrize("p", [*palette(4), Perturbation(9, 100, 10, poison=False, jitter="cta", delays=False)])
def test_tag_round_trips(p):
    assert Perturbation.from_tag(p.tag) == p


def test_palette_is_small_and_distinct():
    pal = palette(3)
    assert len(set(pal)) == 3 and all(p.poison for p in pal)
    assert {p.jitter for p in palette(3)} == set(JITTERS)


def test_run_time_table_words_are_the_seed_table_then_jitter_and_seed():
    from kernel.perturbation import JITTER_MODE_WORD, JITTER_NS_WORD, SEED_WORD, SLOTS, TABLE_WORDS

    p = Perturbation(9, 3000, 60, jitter="warp", runtime=True)
    words = p.device_words()
    assert len(words) == TABLE_WORDS and len(SLOTS) < JITTER_NS_WORD + 3 <= TABLE_WORDS
    assert [words[i] for i in range(len(SLOTS))] == [p.table()[slot] for slot in SLOTS]
    assert (words[JITTER_NS_WORD], words[JITTER_MODE_WORD], words[SEED_WORD]) == (1500, 2, 9)
    assert all(0 <= w < 2**31 for w in words)
    assert Perturbation(9, 3000, 60, runtime=True).device_words()[JITTER_MODE_WORD] == 0
    assert not any(Perturbation(9, delays=False, runtime=True).device_words()[:len(SLOTS)])


def test_run_time_seeds_share_one_compile_form():
    """Every seed runs on one of three builds, its kind (seed % 4): "delays" (delay sites),
    "quiet" (no delay site traced) and "window" (no delay site, filler wgmmas in every
    FILL_STRIDE-th group, compiled in)."""
    from kernel.perturbation import FILL, FILL_EVERY, FILL_STRIDE, KINDS, SLOTS, runtime_perturbation

    forms = {runtime_perturbation(s).compile_form for s in range(1, 40)}
    assert len(forms) == 3 and {f.kind for f in forms} == {"delays", "quiet", "window"}
    for s in range(1, 40):
        p = runtime_perturbation(s)
        assert p.kind == KINDS[s % FILL_EVERY] and p.compile_form.kind == p.kind
        assert (p.wgmma_fill, p.fill_stride) == ((FILL, FILL_STRIDE) if p.kind == "window" else (0, 1))
        assert p.delays == (p.kind == "delays") and p.poison  # poison always on, fillers or not
    windows = [s for s in range(1, 40) if runtime_perturbation(s).kind == "window"]
    assert {runtime_perturbation(s).max_ctas for s in windows} == {0, 1, 2}  # independent of the kind
    (form,) = {f for f in forms if f.kind == "delays"}
    assert form.runtime and form.poison and form.seed == 0 and form.max_ctas == 0 and not form.wgmma_fill
    assert {runtime_perturbation(s).max_ctas for s in range(1, 10)} == {0, 1, 2}  # caps and jitters still vary
    assert {runtime_perturbation(s).jitter for s in range(1, 4)} == {"none", "cta", "warp"}
    delayed = [s for s in range(1, 40) if runtime_perturbation(s).delays]
    assert len({tuple(runtime_perturbation(s).device_words()) for s in delayed}) == len(delayed)  # the seed is data
    assert not any(any(runtime_perturbation(s).device_words()[:len(SLOTS)]) for s in range(1, 40) if s not in delayed)
    assert Perturbation(1, poison=False, runtime=True).compile_form != form  # poison is compiled in
    assert Perturbation(3).compile_form == Perturbation(3)  # compile-time: the perturbation itself
    p = runtime_perturbation(77)
    assert Perturbation.from_tag(p.tag) == p and p.tag.endswith("-rt")


def test_warp_skew_is_seeded_data_of_the_delays_build_only():
    """The consumers' decode site skews one warp per warpgroup (Perturbation.skew): table words
    after the seed, a seeded amount and victim, 3 in 4 run-time seeds with delay sites, none in
    the quiet and window builds or at compile time; data, not part of the compile form."""
    from kernel.perturbation import (SKEW_NS_WORD, SKEW_WARP_WORD, SLOTS, TABLE_WORDS, SEED_WORD,
                                     runtime_perturbation)

    assert SEED_WORD < SKEW_NS_WORD < SKEW_WARP_WORD < TABLE_WORDS
    assert ("consumer", "decode", "before") in SLOTS and ("consumer", "decode", "after") not in SLOTS
    delayed = [runtime_perturbation(s) for s in range(1, 200) if runtime_perturbation(s).delays]
    skews = [p.skew() for p in delayed]
    assert all(p.device_words()[SKEW_NS_WORD:SKEW_WARP_WORD + 1] == list(p.skew()) for p in delayed)
    assert all(p.max_delay_ns // 4 <= ns <= p.max_delay_ns for p, (ns, _) in zip(delayed, skews) if ns)
    share = sum(1 for ns, _ in skews if ns) / len(skews)
    assert 0.6 < share < 0.9, share  # 3 in 4
    assert {v for _, v in skews} == {0, 1, 2, 3}
    assert skews == [p.skew() for p in delayed]  # seeded: the same every time
    assert len({p.compile_form for p in delayed}) == 1  # data: one build for every skew
    for s in range(1, 40):
        p = runtime_perturbation(s)
        if not p.delays:
            assert p.skew()[0] == 0 and p.device_words()[SKEW_NS_WORD] == 0
    assert Perturbation(5).skew()[0] == 0  # compile-time builds: the decode site's seeded delay only
