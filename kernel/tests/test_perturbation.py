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
