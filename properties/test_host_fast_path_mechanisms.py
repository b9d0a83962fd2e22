"""The mechanisms that make the host path cheap decide exactly what the slower ones decided.

* :meth:`kernel.seen_shapes.ShapeTemplate.accept` checks a problem's signature with torch's
  ``TensorGuards`` (one C++ call) and falls back to the element-by-element comparison: on random
  metadata perturbations of a learned problem (dtype, shape, strides, device, subclass, a
  non-tensor, one object twice, requires_grad, a negative view, an inference tensor) the guard's
  yes implies the comparison's, and the accept decision (and the pointers) are those of a
  template without a guard;
* :class:`kernel.seen_shapes.OverlapCheck` (numpy) is the pairwise aliasing rule;
* the seen-shape tables come from one gather (:class:`kernel.host_pipeline.TableLayout`): the
  pointer table and the patched tensor maps equal a from-scratch encoding, and a family's
  fourth table without ``patches()`` is filled through ``fill``;
* the first call of a new signature encodes each tensor map once (no second table beside the
  template's), and a seen-shape call encodes none.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import oracle
from kernel import seen_shapes as ss
from kernel.fast_path import flatten
from kernel.host_pipeline import AuxTable
from kernel.plan import make_plan
from kernel.seen_shapes import AuxTemplate, OverlapCheck, ShapeTemplate, _outputs_disjoint
from kernel.tables import slot_pointers
from kernel.tensor_maps import encode_slots, slot_maps
from kernel.validation import validate_problem
from properties.strategies import problem_sizes
from properties.subjects import SizeLimits
from properties.test_fast_path_properties import CONFIG, CONSTRAINTS, CpuHooks, RecordingPipeline

pytestmark = pytest.mark.properties

LIMITS = SizeLimits(max_groups=3, max_m=140, max_n=140, max_k_blocks=2)


def _learn(data):
    groups = validate_problem(data, CONSTRAINTS)
    plan = make_plan([g.size for g in groups], tile_m=64, tile_n=64, tile_k=64, max_ctas=4)
    return ShapeTemplate.learn(CONFIG, CONFIG, tuple(g.size for g in groups), flatten(data), CONSTRAINTS, plan)


def test_tensor_guards_are_available_and_used():
    """On this torch the C++ check is there and passes its self-test (a torch where it changed
    fails here, and the seen path runs on the Python comparison alone)."""
    assert ss.tensor_guards() is not None
    template = _learn(oracle.make_inputs([(64, 64, 64, 1), (8, 16, 128, 1)], 1, device="cpu"))
    assert template.guard is not None


def test_a_template_keeps_no_tensor_alive():
    """The guard holds metadata only: the learned problem's tensors are freed with the problem."""
    import gc
    import weakref

    data = oracle.make_inputs([(64, 64, 64, 1), (8, 16, 128, 1)], 1, device="cpu")
    template = _learn(data)
    refs = [weakref.ref(t) for t in flatten(data)]
    del data
    gc.collect()
    assert template.guard is not None and not any(r() is not None for r in refs)


def test_a_tensor_twice_gets_no_guard_and_is_still_accepted():
    """The guard refuses one object in two places (a shared A): such a signature keeps the
    Python comparison, which accepts it."""
    data = oracle.make_inputs([(64, 64, 64, 1), (64, 64, 64, 1)], 2, device="cpu", layout="shared_a")
    template = _learn(data)
    assert template.guard is None
    assert template.accept(data, flatten(data)) is not None


class Sub(torch.Tensor):
    pass


def _perturb(t: torch.Tensor, how: str, other: torch.Tensor):
    """``t`` changed in one metadata field (or not at all: ``clone``)."""
    if not isinstance(t, torch.Tensor):
        return t
    if how == "clone":
        return t.clone()
    if how == "dtype":
        same_size = {1: [torch.uint8, torch.int8, torch.float8_e5m2, torch.float8_e4m3fn],
                     2: [torch.int16, torch.bfloat16, torch.float16]}[t.element_size()]
        return t.view([d for d in same_size if d != t.dtype][0])
    if how == "shape":
        return t[:-1] if t.shape[0] > 1 else t.unsqueeze(0)
    if how == "strides":
        return torch.empty_strided(t.shape, tuple(s + 1 for s in t.stride()), dtype=t.dtype)
    if how == "unit_stride":  # the stride of a size-1 mode: validation ignores it, the template does not
        strides = list(t.stride())
        for i, s in enumerate(t.shape):
            if s == 1:
                strides[i] += 7
        return torch.empty_strided(t.shape, tuple(strides), dtype=t.dtype)
    if how == "meta":
        return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta")
    if how == "subclass":
        return t.as_subclass(Sub)
    if how == "not_a_tensor":
        return None
    if how == "twice":
        return other
    if how == "requires_grad":
        return t.detach().clone().requires_grad_() if t.dtype == torch.float16 else t.clone()
    if how == "neg_view":
        return t._neg_view() if t.dtype == torch.float16 else t.clone()
    if how == "inference":
        with torch.inference_mode():
            return t.clone()
    raise ValueError(how)


PERTURBATIONS = ("clone", "dtype", "shape", "strides", "unit_stride", "meta", "subclass", "not_a_tensor", "twice",
                 "requires_grad", "neg_view", "inference")


@settings(max_examples=150, deadline=None)
@given(sizes=problem_sizes(CONSTRAINTS, LIMITS), seed=st.integers(0, 2**16),
       changes=st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(PERTURBATIONS), st.integers(0, 10**6)),
                        min_size=0, max_size=3))
def test_guard_and_comparison_decide_alike(sizes, seed, changes):
    first = oracle.make_inputs(sizes, seed, device="cpu")
    guarded = _learn(first)
    plain = _learn(first)
    plain.guard = None
    assert guarded.guard is not None
    data = oracle.clone_data(first)
    tensors = flatten(data)
    for where, how, other in changes:
        i = where % len(tensors)
        tensors[i] = _perturb(tensors[i], how, tensors[other % len(tensors)])
    g = len(sizes)
    data = ([tuple(tensors[3 * j:3 * j + 3]) for j in range(g)],
            [tuple(tensors[3 * g + 2 * j:3 * g + 2 * j + 2]) for j in range(g)],
            [tuple(tensors[5 * g + 2 * j:5 * g + 2 * j + 2]) for j in range(g)], data[3])
    if guarded.guard.check(*tensors):
        assert plain.signature_matches(tensors), "the guard passed what the comparison refuses"
    got, want = guarded.accept(data, tensors), plain.accept(data, tensors)
    assert (got is None) == (want is None)
    if got is not None:
        assert np.array_equal(got, want)
        assert got.tolist() == [t.data_ptr() for t in tensors]
    if not changes:
        assert got is not None, "an unchanged copy of a learned problem was refused"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 200), st.integers(1, 60), st.booleans()), min_size=0, max_size=12))
def test_overlap_check_matches_pairwise_rule(ranges):
    starts = np.array([lo for lo, _, _ in ranges], dtype=np.int64)
    spans = [(ext, out) for _, ext, out in ranges]
    pairwise = not any(
        (oi or oj) and lo_i < lo_j + ej and lo_j < lo_i + ei
        for i, (lo_i, ei, oi) in enumerate(ranges) for j, (lo_j, ej, oj) in enumerate(ranges) if i < j
    )
    assert OverlapCheck(spans).ok(starts) == pairwise == _outputs_disjoint(starts.tolist(), spans)


def test_overlap_check_near_the_address_limit():
    """Addresses just under 2^61 (what accept lets through) do not overflow the arithmetic."""
    top = (1 << 61) - 4096
    check = OverlapCheck([(1024, True), (1024, False), (2048, False)])
    assert check.ok(np.array([top, top - 1024, top - 4096], dtype=np.int64))
    assert not check.ok(np.array([top, top + 1000, top - 4096], dtype=np.int64))
    assert not check.ok(np.array([top, top - 1024, top - 1500], dtype=np.int64))


def test_an_address_past_2_61_takes_the_full_path():
    data = oracle.make_inputs([(64, 64, 64, 1)], 3, device="cpu")
    template = _learn(data)
    tensors = flatten(data)
    assert template.accept(data, tensors) is not None
    real = torch.Tensor.data_ptr
    try:
        ss._PTR = lambda t: real(t) | (1 << 61)
        assert template.accept(data, tensors) is None
    finally:
        ss._PTR = real


# ---- the tables: one gather, maps encoded once ----------------------------------------------

def _fake_encoder(calls: list):
    def encode(rm) -> bytes:
        calls.append(rm)
        words = np.arange(16, dtype=np.uint64) * np.uint64(rm.rows * 7 + rm.row_bytes * 3 + rm.box_rows)
        words[5] = np.uint64(rm.address)
        return words.tobytes()
    return encode


class MapHooks(CpuHooks):
    """The CPU double with a tensor-map fourth table (fake encoder that counts its calls)."""

    def __init__(self):
        self.calls: list = []

    def aux_table(self, config, plan, groups, device, strict=False):
        maps = slot_maps(plan, groups, config.tile_m, config.tile_n)
        return AuxTable(torch.from_numpy(encode_slots(maps, _fake_encoder(self.calls))), "uint8", 64)

    def aux_template(self, config, plan, groups):
        from kernel.tensor_maps import map_template

        return map_template(plan, groups, config.tile_m, config.tile_n, _fake_encoder(self.calls))


class FillOnly(AuxTemplate):
    """A fourth table with no ``patches()``: per slot, the group's c pointer and a constant."""

    def __init__(self, plan, g):
        self.index = np.array([3 * grp + 2 for grp in plan.group_order], dtype=np.int64)
        self.shape = (len(self.index), 16)
        self.nbytes = 16 * len(self.index)

    def fill(self, out, pointers):
        words = out.view(np.int64).reshape(-1, 2)
        words[:, 0] = pointers[self.index]
        words[:, 1] = 0x5A5A


class FillHooks(CpuHooks):
    def aux_table(self, config, plan, groups, device, strict=False):
        raise AssertionError("the template builds this table")

    def aux_template(self, config, plan, groups):
        return FillOnly(plan, len(groups))


def _pipeline(hooks):
    pipeline = RecordingPipeline()
    pipeline.hooks = hooks
    return pipeline


@settings(max_examples=40, deadline=None)
@given(sizes=problem_sizes(CONSTRAINTS, LIMITS), seed=st.integers(0, 2**16))
def test_maps_are_encoded_once_and_patched_like_fresh_encodings(sizes, seed):
    hooks = MapHooks()
    pipeline = _pipeline(hooks)
    first = oracle.make_inputs(sizes, seed, device="cpu")
    prepared = pipeline.prepare(first, CONFIG)
    if prepared.plan.total_tiles == 0:
        return
    maps = slot_maps(prepared.plan, prepared.groups, CONFIG.tile_m, CONFIG.tile_n)
    present = sum(a is not None for a, _ in maps)
    # each map once, and the first A and last B map at two probe addresses (the address word)
    assert len(hooks.calls) == 2 * present + 4, "a map was encoded twice on the first call of its shapes"
    want = encode_slots(maps, _fake_encoder([]))
    assert np.array_equal(prepared.aux.tensor.numpy(), want)
    assert prepared.tables.pointers.tolist() == [list(p) for p in slot_pointers(prepared.plan, prepared.groups)]
    hooks.calls.clear()
    second = oracle.make_inputs(sizes, seed + 1, device="cpu")
    again = pipeline.prepare(second, CONFIG)
    assert again.template is prepared.template and hooks.calls == [], "the seen path encoded maps"
    groups = validate_problem(second, CONSTRAINTS)
    assert np.array_equal(again.aux.tensor.numpy(),
                          encode_slots(slot_maps(again.plan, groups, CONFIG.tile_m, CONFIG.tile_n), _fake_encoder([])))
    assert again.tables.pointers.tolist() == [list(p) for p in slot_pointers(again.plan, groups)]
    assert again.aux.tensor.shape == want.shape and again.aux.tensor.dtype == torch.uint8


def test_a_fourth_table_without_patches_is_filled():
    pipeline = _pipeline(FillHooks())
    sizes = [(64, 64, 64, 1), (0, 64, 64, 1), (130, 8, 128, 1)]
    for seed in range(3):
        data = oracle.make_inputs(sizes, seed, device="cpu")
        prepared = pipeline.prepare(data, CONFIG)
        words = prepared.aux.tensor.view(torch.int64).reshape(-1, 2).tolist()
        cs = [data[0][g][2].data_ptr() for g in prepared.plan.group_order]
        assert words == [[c, 0x5A5A] for c in cs]
        assert prepared.tables.pointers.tolist() == [list(p) for p in slot_pointers(prepared.plan, prepared.groups)]
    assert sum(t.stats["accepted"] for t in pipeline.templates._entries.values()) == 2
