"""The seen-shape path accepts exactly what full validation accepts, and launches the right tables.

:mod:`kernel.seen_shapes` lets a problem whose shape signature passed full validation before
skip every rule but the address rules. These properties drive the real pipeline (the CPU double
of ``test_fast_path_properties``: only the stream handle and the argument marshalling are
replaced) and check, on problems built *after* a template of their shapes exists:

* every breakage of ``properties.breakages`` (every rule x every tensor, on shapes just seen)
  raises the very error ``validate_problem`` raises, and launches nothing;
* a valid problem of seen shapes takes the seen path (it is exercised, not bypassed) and
  launches exactly the tables a from-scratch ``validate -> plan -> tables`` gives;
* the aliasing sweep agrees with the pairwise rule on random byte ranges;
* tensor-map templates (:class:`kernel.tensor_maps.MapTemplate`) write addresses exactly where
  a descriptor holds them, and refuse encodings where no single word behaves like the address.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import oracle
from kernel.errors import InvalidProblemError
from kernel.seen_shapes import _outputs_disjoint, flat_index
from kernel.fast_path import flatten
from kernel.tensor_maps import RowsMap, address_word, encode_slots, map_template
from kernel.validation import validate_problem
from properties.breakages import broken_problem
from properties.strategies import (BREAKAGES, Example, InvalidExample, applicable_breakages, breakage_tensor,
                                   problem_sizes)
from properties.subjects import SizeLimits
from properties.test_fast_path_properties import CONSTRAINTS, CONFIG, RecordingPipeline, expected_launch

pytestmark = pytest.mark.properties

LIMITS = SizeLimits(max_groups=4, max_m=140, max_n=140, max_k_blocks=2)


def _fresh(data):
    """New tensors with the same shapes and values (what a caller passes on its next call)."""
    return oracle.clone_data(data)


def _accepted(pipeline) -> int:
    return sum(t.stats["accepted"] for t in pipeline.templates._entries.values())


@settings(max_examples=120, deadline=None)
def broken_and_valid_twin(sizes, seed, breakage, group):
    """The problem ``breakage`` breaks (in group ``group`` modulo the group count), and a valid
    problem of its sizes (None when the breakage is in the sizes themselves: no template can
    match them)."""
    group %= len(sizes)
    inv = InvalidExample(Example(sizes, seed, "uniform", "separate"), breakage, BREAKAGES[breakage],
                         None if breakage in ("too_many_groups", "no_groups") else group,
                         breakage_tensor(breakage))
    broken = broken_problem(inv, CONSTRAINTS, "cpu")
    try:
        valid = oracle.make_inputs([tuple(s) for s in broken[3]], seed + 1, device="cpu")
        validate_problem(valid, CONSTRAINTS)
    except Exception:
        valid = None
    return broken, valid


@given(sizes=problem_sizes(CONSTRAINTS, LIMITS), seed=st.integers(0, 2**16),
       breakage=st.sampled_from([b for b in applicable_breakages(CONSTRAINTS)]), group=st.integers(0, 3))
def test_seen_path_refuses_what_validation_refuses(sizes, seed, breakage, group):
    broken, valid = broken_and_valid_twin(sizes, seed, breakage, group)
    pipeline = RecordingPipeline()
    # a valid problem of the broken one's sizes, twice: the template is learned, then used
    if valid is not None:
        pipeline.run(valid, CONFIG)
        before = _accepted(pipeline)
        pipeline.run(_fresh(valid), CONFIG)
        if expected_launch(valid)[1][-1]:
            assert _accepted(pipeline) == before + 1, "a valid problem of seen shapes missed the seen path"
    with pytest.raises(InvalidProblemError) as want:
        validate_problem(broken, CONSTRAINTS)
    launched = len(pipeline.launched)
    try:
        pipeline.run(broken, CONFIG)
    except InvalidProblemError as got:
        assert (got.rule, got.group, got.tensor) == (want.value.rule, want.value.group, want.value.tensor), (got, want.value)
    else:
        raise AssertionError(f"{breakage}: accepted by the pipeline, refused by validation ({want.value})")
    assert len(pipeline.launched) == launched, "an invalid problem was launched"


@settings(max_examples=60, deadline=None)
@given(data=st.data(), seed=st.integers(0, 2**16), layout=st.sampled_from(oracle.LAYOUTS))
def test_seen_path_launches_fresh_tables(data, seed, layout):
    sizes = data.draw(problem_sizes(CONSTRAINTS, LIMITS, layout), label="sizes")
    pipeline = RecordingPipeline()
    first = oracle.make_inputs(sizes, seed, device="cpu", layout=layout)
    pipeline.run(first, CONFIG)
    for round_ in range(3):
        data = oracle.make_inputs([tuple(s) for s in first[3]], seed + 1 + round_, device="cpu", layout=layout)
        before, launched = _accepted(pipeline), len(pipeline.launched)
        want = expected_launch(data)
        outs = pipeline.run(data, CONFIG)
        assert all(o is c for o, (_, _, c) in zip(outs, data[0]))
        if want[1][-1]:
            assert _accepted(pipeline) == before + 1
            assert pipeline.launched[-1] == want, "the seen path launched stale or wrong tables"
        else:
            assert len(pipeline.launched) == launched


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 200), st.integers(1, 60), st.booleans()), min_size=0, max_size=12))
def test_aliasing_sweep_matches_pairwise_rule(ranges):
    starts = [lo for lo, _, _ in ranges]
    spans = [(ext, out) for _, ext, out in ranges]
    pairwise = not any(
        (oi or oj) and lo_i < lo_j + ej and lo_j < lo_i + ei
        for i, (lo_i, ei, oi) in enumerate(ranges) for j, (lo_j, ej, oj) in enumerate(ranges) if i < j
    )
    assert _outputs_disjoint(starts, spans) == pairwise


def test_flat_index_matches_flatten():
    data = oracle.make_inputs([(8, 16, 64, 1), (0, 8, 64, 1), (24, 8, 128, 1)], 3, device="cpu")
    flat = flatten(data)
    names = ("a", "b", "c", "sfa", "sfb", "sfa_blocked", "sfb_blocked")
    where = {"a": (0, 0), "b": (0, 1), "c": (0, 2), "sfa": (1, 0), "sfb": (1, 1), "sfa_blocked": (2, 0), "sfb_blocked": (2, 1)}
    for g in range(3):
        for name in names:
            part, i = where[name]
            assert flat[flat_index(name, g, 3)] is data[part][g][i]


# ---- tensor-map templates ------------------------------------------------------------------

def _fake_encoder(word: int, transform=lambda a: a):
    """An 'encoder' whose descriptor holds ``transform(address)`` at ``word`` and shape bytes elsewhere."""
    def encode(rm: RowsMap) -> bytes:
        words = np.arange(16, dtype=np.uint64) * np.uint64(rm.rows * 7 + rm.row_bytes * 3 + rm.box_rows)
        words[word] = np.uint64(transform(rm.address) & (2**64 - 1))
        return words.tobytes()
    return encode


@pytest.mark.parametrize("word", [0, 1, 5, 15])
def test_address_word_is_found_where_the_address_is(word):
    assert address_word(RowsMap(0x7F00_0000_1000, 64, 128, 128), _fake_encoder(word)) == word


@pytest.mark.parametrize("transform", [lambda a: a >> 4, lambda a: a + 64, lambda a: a ^ 0xFF00])
def test_address_word_refuses_an_encoding_that_is_not_the_plain_address(transform):
    assert address_word(RowsMap(0x7F00_0000_1000, 64, 128, 128), _fake_encoder(3, transform)) is None


def test_address_word_refuses_an_address_spread_over_two_words():
    def encode(rm):
        words = np.zeros(16, dtype=np.uint64)
        words[2] = np.uint64(rm.address & 0xFFFF_FFFF)
        words[3] = np.uint64(rm.address >> 32)
        return words.tobytes()
    assert address_word(RowsMap(0x7F00_0000_1000, 64, 128, 128), encode) is None


@settings(max_examples=40, deadline=None)
@given(sizes=problem_sizes(CONSTRAINTS, LIMITS), seed=st.integers(0, 2**16), word=st.integers(0, 15))
def test_map_template_equals_encoding_the_new_addresses(sizes, seed, word):
    """Patched maps of a new problem == the maps encoded from scratch for it."""
    from kernel.plan import make_plan

    encoder = _fake_encoder(word)
    first = oracle.make_inputs(sizes, seed, device="cpu")
    groups = validate_problem(first, CONSTRAINTS)
    plan = make_plan([g.size for g in groups], tile_m=64, tile_n=64, tile_k=64, max_ctas=4)
    template = map_template(plan, groups, 64, 64, encoder)
    if plan.total_tiles == 0:
        return
    assert template is not None and template.word == word
    second = oracle.make_inputs(sizes, seed + 1, device="cpu")
    groups2 = validate_problem(second, CONSTRAINTS)
    from kernel.tensor_maps import slot_maps

    want = encode_slots(slot_maps(plan, groups2, 64, 64), encoder)
    got = np.zeros(template.nbytes, dtype=np.uint8)
    template.fill(got, np.array([t.data_ptr() for t in flatten(second)], dtype=np.int64))
    assert np.array_equal(got.reshape(want.shape), want)


def test_map_template_is_none_when_the_word_cannot_be_measured():
    from kernel.plan import make_plan

    data = oracle.make_inputs([(64, 64, 64, 1)], 1, device="cpu")
    groups = validate_problem(data, CONSTRAINTS)
    plan = make_plan([g.size for g in groups], tile_m=64, tile_n=64, tile_k=64, max_ctas=4)
    assert map_template(plan, groups, 64, 64, _fake_encoder(3, lambda a: a >> 4)) is None


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs the CUDA driver to encode real tensor maps")
def test_real_tensor_maps_patch_like_fresh_encodings():
    """On a GPU machine: the driver's own descriptors, patched at random addresses == encoded there."""
    from kernel.tensor_maps import encode

    torch.zeros(1, device="cuda")  # the encoder needs a current CUDA context, as in a real launch
    rng = np.random.default_rng(0)
    for rows, row_bytes, box in [(1, 128, 64), (130, 128, 128), (4096, 3584, 128), (7168, 1024, 64)]:
        rm = RowsMap(0x7F00_0000_0000, rows, row_bytes, box)
        word = address_word(rm)
        assert word is not None, "the driver's descriptor holds no plain address word"
        base = np.frombuffer(encode(rm), dtype=np.uint64).copy()
        for _ in range(8):
            addr = int(rng.integers(1, 2**42)) * 16
            base[word] = addr
            assert base.tobytes() == encode(RowsMap(addr, rows, row_bytes, box))


def test_harness_builds_neither_use_nor_teach_the_seen_path():
    """A perturbed (few-CTA) or strict preparation takes the full path and leaves no template, so
    a production call never inherits a harness plan; and a production template never serves them."""
    from kernel.perturbation import Perturbation

    pipeline = RecordingPipeline()
    data = oracle.make_inputs([(64, 64, 64, 1), (128, 64, 64, 1)], 3, device="cpu")
    capped = pipeline.prepare(oracle.clone_data(data), CONFIG, perturbation=Perturbation(seed=1, max_ctas=1))
    pipeline.prepare(oracle.clone_data(data), CONFIG, strict=True)
    assert capped.plan.num_ctas == 1 and len(pipeline.templates) == 0
    pipeline.run(data, CONFIG)  # production: learns the template
    assert len(pipeline.templates) == 1
    again = pipeline.prepare(oracle.clone_data(data), CONFIG, perturbation=Perturbation(seed=1, max_ctas=1))
    assert again.plan.num_ctas == 1 and again.perturbation is not None
    assert _accepted(pipeline) == 0
    production = pipeline.prepare(oracle.clone_data(data), CONFIG)
    assert _accepted(pipeline) == 1 and production.plan.num_ctas == expected_launch(data)[3]


@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9,
                    reason="needs an sm_90 GPU (the Hopper kernel runs the seen-shape launches)")
@pytest.mark.parametrize("label", [None, "h90_m128n128k256_s3_wg1_fp16"])
def test_seen_shape_launches_on_the_gpu_match_the_oracle(label):
    """New tensors of seen shapes: the seen path (patched tensor maps, rebased launch arguments)
    writes exactly what the oracle says, problem after problem, including after a hit."""
    from kernel.family import get_family

    family = get_family("hopper")
    config = family.find(label) if label else family.production_variants[1]
    sizes = [(80, 512, 512, 1), (0, 512, 512, 1), (200, 384, 512, 1)]
    family.custom_kernel(oracle.make_inputs(sizes, 0, device="cuda"), config)  # learns the shapes
    for seed in range(1, 4):
        data = oracle.make_inputs(sizes, seed, device="cuda")
        for _, _, c in data[0]:
            c.fill_(float("nan"))
        before = _accepted(family.pipeline)
        outs = family.custom_kernel(data, config)
        family.custom_kernel(data, config)  # a fast-path hit on the rebased arguments
        torch.cuda.synchronize()
        assert _accepted(family.pipeline) == before + 1
        expected = oracle.expected_outputs(data)
        report = oracle.compare(outs, [e.reference for e in expected], [e.bound for e in expected])
        assert report.ok, report
