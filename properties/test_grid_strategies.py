"""The strategies reach past one round of each subject's grid, counted with the subject's own plan.

On the CPU (every CI run), for the CPU model's variants and the Hopper production variants
(planned as a dry run plans them: 132 SMs where no sm_90 GPU is present):

* a variant's :class:`~properties.subjects.GridPlanner` makes the plan its host pipeline makes;
* the main property's draws (:func:`properties.strategies.examples`) include problems with more
  tiles than the grid has CTAs, at least three rounds of it, more light tiles (M <= tile_m / 2)
  than CTAs, and, on a balanced grid, CTAs the split leaves without a tile;
* so do the fixed corners that every profile runs (``multi_round_corners``);
* the main property on the model catches a plan whose CTA ranges lose tiles only past one round
  (the catalog's ``plan_range_length_rounded_down``, applied to kernel.plan's text).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, find, settings

import oracle
from ci.mutants import BY_NAME
from kernel import model
from kernel.family import FAMILIES
from kernel import plan as plan_module
from properties.checks import SubjectCheckFailed, check_example
from properties.strategies import (MULTI_ROUND_CORNERS, MULTI_ROUND_MAX_K, corner_examples, examples,
                                   grid_shape)
from properties.subjects import resolve_subject

ROOT = Path(__file__).resolve().parents[1]
# the production builds, and every declared build of a schedule they do not use
_PRODUCTION = resolve_subject("model") + resolve_subject("hopper")
VARIANTS = _PRODUCTION + [v for v in resolve_subject("hopper", "all")
                          if v.planner.schedule not in {p.planner.schedule for p in _PRODUCTION}]
# enough draws to find each kind of problem; a multi-round problem is about one draw in six
FIND = settings(max_examples=300, derandomize=True, database=None, deadline=None,
                suppress_health_check=list(HealthCheck))


def _ids(v):
    return v.test_id


def test_every_variant_has_a_planner():
    assert [v.test_id for v in VARIANTS if v.planner is None] == []
    assert any(v.planner.schedule == "balanced" for v in VARIANTS), "no balanced grid among the variants"


@pytest.mark.parametrize("variant", VARIANTS, ids=_ids)
def test_the_planner_makes_the_plan_the_subject_runs(variant):
    """The planner's plan is the subject's: the model's plan_for, the Hopper pipeline's dry-run
    prepare (validation, then kernel.plan.make_plan with the hooks' CTA cap and the config's
    tile shape and schedule)."""
    corners = corner_examples(variant.constraints, planner=variant.planner)
    for name in (*MULTI_ROUND_CORNERS, "empty_groups_around_work", "tile_multiples_plus_one", "max_groups"):
        sizes = [list(s) for s in corners[name].sizes]
        want = variant.planner.plan(sizes)
        if variant.subject == "model":
            config = next(c for c in model.DECLARED_VARIANTS if c.label == variant.label)
            got = model.plan_for(config, sizes)
        else:
            family = FAMILIES[variant.subject]
            data = oracle.make_inputs(sizes, 0, device="cpu")
            got = family.pipeline.prepare(data, family.find(variant.label), dry_run=True).plan
        assert got == want, (variant.label, name)


def _shape(variant, example):
    return grid_shape(variant.planner.plan(example.sizes))


@pytest.mark.parametrize("variant", VARIANTS, ids=_ids)
def test_draws_pass_one_round_of_the_grid(variant):
    ctas = variant.planner.ctas
    wanted = {
        "more tiles than CTAs": lambda s: s.tiles > ctas,
        "three rounds or more": lambda s: s.rounds >= 3,
        "more light tiles than CTAs": lambda s: s.light_tiles > ctas,
    }
    if variant.planner.schedule == "balanced":
        wanted["a CTA the balanced split leaves idle"] = lambda s: s.idle_ctas > 0 and s.tiles > ctas
    for what, holds in wanted.items():
        example = find(examples(variant), lambda e: holds(_shape(variant, e)), settings=FIND)
        shape = _shape(variant, example)
        assert holds(shape), (what, example, shape)
        # kept cheap: K is one 256-K tile at most (one more where the groups' K differ; three for
        # the split_last schedule, whose cut needs two K tiles or more)
        k_max = 3 * 256 if variant.planner.schedule == "split_last" else 256 + MULTI_ROUND_MAX_K
        assert all(k <= k_max for _, _, k, _ in example.sizes) or shape.tiles <= ctas, example


@pytest.mark.parametrize("variant", VARIANTS, ids=_ids)
def test_draws_pass_one_round_with_groups_of_different_k(variant):
    """Multi-round draws whose groups' K differ: on the prepass build's balanced grid these run
    the snake split (kernel.plan.LaunchPlan.k_uniform false), odd rounds included."""
    ctas = variant.planner.ctas

    def mixed_rounds(e) -> bool:  # groups with tiles whose K tiles differ, past one round
        return not variant.planner.plan(e.sizes).k_uniform and _shape(variant, e).tiles > ctas

    example = find(examples(variant), mixed_rounds, settings=FIND)
    assert mixed_rounds(example), example


@pytest.mark.parametrize("variant", VARIANTS, ids=_ids)
def test_corners_pass_one_round_of_the_grid(variant):
    corners = corner_examples(variant.constraints, planner=variant.planner)
    assert set(MULTI_ROUND_CORNERS) <= set(corners)
    ctas = variant.planner.ctas
    light = _shape(variant, corners["light_tiles_idle_ctas"])
    assert light.tiles > ctas and light.light_tiles == light.tiles, light
    if variant.planner.schedule == "balanced":
        assert light.idle_ctas > 0, light
    mixed = _shape(variant, corners["three_rounds_mixed_tiles"])
    assert mixed.tiles > 2 * ctas and mixed.rounds >= 3 and mixed.light_tiles > 0, mixed
    mixed_k = corners["three_rounds_mixed_k"]
    plan = variant.planner.plan(mixed_k.sizes)
    assert _shape(variant, mixed_k).tiles > 2 * ctas and not plan.k_uniform, mixed_k
    if variant.planner.schedule == "balanced":  # the snake split: some CTA runs an odd round
        assert max(len(plan.cta_tiles(c)) for c in range(plan.num_ctas)) >= 2, mixed_k
    for name in ("last_round_quarter_odd_k", "last_round_quarter_two_k"):
        plan = variant.planner.plan(corners[name].sizes)
        assert 2 * ctas < plan.total_tiles <= 2 * ctas + ctas // 2, (name, plan.total_tiles)
        if variant.planner.schedule == "split_last":  # every leftover tile cut, each half non-empty
            cut = [t for t in range(plan.total_tiles) if plan.split_index(t) is not None]
            assert len(cut) == plan.total_tiles - 2 * ctas, (name, len(cut))
    for name in MULTI_ROUND_CORNERS[:3]:
        assert all(k <= 256 + MULTI_ROUND_MAX_K for _, _, k, _ in corners[name].sizes)
    # without a planner (a subject whose plan is unknown) there are none
    assert not set(MULTI_ROUND_CORNERS) & set(corner_examples(variant.constraints))


def test_the_model_property_catches_ranges_that_lose_tiles_past_one_round(monkeypatch):
    mutated = BY_NAME["plan_range_length_rounded_down"].load(ROOT)
    monkeypatch.setattr(plan_module.LaunchPlan, "tiles_per_cta", mutated.LaunchPlan.tiles_per_cta)
    variant = next(v for v in VARIANTS if v.subject == "model" and v.planner.schedule == "contiguous")

    def fails(example) -> bool:
        try:
            check_example(variant, example, rerun=False)
        except SubjectCheckFailed:
            return True
        return False

    example = find(examples(variant), fails, settings=settings(FIND, max_examples=50))
    assert _shape(variant, example).tiles > variant.planner.ctas, example
