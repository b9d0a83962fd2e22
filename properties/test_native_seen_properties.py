"""The native seen-shape pass (``kernel.native_probe.SEEN_TABLES``) is the Python seen-shape path.

A first call on new tensors of seen shapes runs :meth:`kernel.seen_shapes.ShapeTemplate.accept`
and :meth:`kernel.host_pipeline.HostPipeline.seen_tables` in one C++ call where the native module
is loaded. These properties check, on the real pipeline with the CPU double (its fourth table is
a tensor-map template, so the patched maps are in the block):

* ``test_native_pass_is_the_python_pass``: on random problems of learned shapes, rebuilt with
  random addresses (tensors carved from one storage at random offsets: misaligned, overlapping,
  disjoint), random metadata changes (dtype, shape, strides, device, subclass, non-tensor,
  inference, requires_grad, one object twice) and random structure changes (list/tuple flips,
  entries of another length, missing groups), the native pass accepts exactly when the Python
  accept does (it may only decline outside its documented domain), and an accepted problem's
  block (pointer table and patched tensor maps) is byte for byte the Python path's, with the
  same views;
* ``test_native_pipeline_refuses_like_validation``: every breakage of ``properties.breakages`` on
  learned shapes raises, with the native pass on, the very error (type, rule, group, tensor,
  message) that the Python path and ``validate_problem`` raise, and launches nothing; a valid
  problem of those shapes takes the native pass (counted);
* the shape-template key and the fast-path entry's weak references from the module equal the
  Python ones; without the module (absent, too old, disabled, a fourth table filled by code, a
  torch function mode) the pipeline falls back to the Python path with the same results;
* on a GPU (skipped on CPU): the native pass uploads (driver copy from a reused pageable buffer, or
  torch's copy from pinned memory: kernel/tests/test_native_upload.py tests both) without waiting,
  problem after problem, and every launch's tables hold that problem's pointers.
"""

from __future__ import annotations

import types
import weakref

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import oracle
from oracle.host_memory import plain
from kernel import native_probe
from kernel.errors import InvalidProblemError
from kernel.fast_path import FastPath, flatten
from kernel.host_pipeline import HostPipeline, _native_state
from kernel.seen_shapes import AuxTemplate, signature_key
from kernel.validation import validate_problem
from properties.native import native_or_skip
from properties.strategies import applicable_breakages, problem_sizes
from properties.subjects import SizeLimits
from properties.test_fast_path_properties import CONFIG, CONSTRAINTS, RecordingPipeline, expected_launch
from properties.test_seen_shapes_properties import broken_and_valid_twin

pytestmark = pytest.mark.properties

LIMITS = SizeLimits(max_groups=4, max_m=140, max_n=140, max_k_blocks=2)


@pytest.fixture(scope="module")
def native():
    native_or_skip()
    assert native_probe.SEEN_TABLES is not None, "the loaded module has no seen_tables"
    return native_probe.SEEN_TABLES


class Sub(torch.Tensor):
    pass


def _learned(sizes, seed, layout="separate"):
    """A pipeline that learned ``sizes`` (its template has tiles and tensor maps), or None."""
    pipeline = RecordingPipeline()
    first = oracle.make_inputs(sizes, seed, device="cpu", layout=layout)
    pipeline.run(first, CONFIG)
    template = pipeline.templates.find(CONFIG, first[3])
    return (pipeline, template, first) if template is not None else None


def _carve(data, offsets_bytes):
    """The problem's tensors rebuilt on one shared byte storage, tensor i at ``offsets_bytes[i]``
    (same dtypes, shapes, strides): addresses a caller could hand in, aligned or not, disjoint
    or overlapping."""
    flat = flatten(data)
    spans = []
    for t in flat:
        extent = 1 + sum((s - 1) * abs(st) for s, st in zip(t.shape, t.stride())) if t.numel() else 0
        spans.append(extent * t.element_size())
    storage = torch.empty(max(o + s for o, s in zip(offsets_bytes, spans)) + 64, dtype=torch.uint8).untyped_storage()
    made = []
    for t, off in zip(flat, offsets_bytes):
        size = t.element_size()
        made.append(torch.empty(0, dtype=t.dtype).set_(storage, off // size, t.shape, t.stride()))
    return _regroup(data, made)


def _regroup(data, flat):
    g = len(data[3])
    abc = [tuple(flat[3 * j:3 * j + 3]) for j in range(g)]
    sfs = [tuple(flat[3 * g + 2 * j:3 * g + 2 * j + 2]) for j in range(g)]
    blk = [tuple(flat[5 * g + 2 * j:5 * g + 2 * j + 2]) for j in range(g)]
    return (abc, sfs, blk, list(data[3]))


def _metadata_change(t, kind):
    if kind == "dtype":
        return t.view(torch.int8) if t.element_size() == 1 else t.view(torch.int16)
    if kind == "shape":
        return t[:-1] if t.shape[0] > 1 else torch.empty((2, *t.shape[1:]), dtype=t.dtype)
    if kind == "strides":
        return t.clone(memory_format=torch.contiguous_format) if not t.is_contiguous() else t.t().contiguous().t() \
            if t.dim() == 2 else t.transpose(0, 1).contiguous().transpose(0, 1)
    if kind == "device":
        return t.to("meta")
    if kind == "subclass":
        return t.as_subclass(Sub)
    if kind == "non_tensor":
        return 3
    if kind == "inference":
        with torch.inference_mode():
            return t.clone()
    if kind == "requires_grad":
        return t.view(torch.float16).requires_grad_() if t.dtype == torch.float16 else t
    raise ValueError(kind)


STRUCTURE_CHANGES = ("flip_list", "flip_entry", "short_entry", "long_entry", "drop_group", "swap_parts", "shift_across",
                     "shift_across")


def _structure_change(data, kind, group):
    abc, sfs, blk, sizes = [list(p) for p in data[:3]] + [list(data[3])]
    if kind == "flip_list":
        return (tuple(abc), sfs, blk, sizes)
    if kind == "flip_entry":
        abc[group] = list(abc[group])
        return (abc, sfs, blk, sizes)
    if kind == "short_entry":
        abc[group] = abc[group][:2]
        return (abc, sfs, blk, sizes)
    if kind == "long_entry":
        sfs[group] = (*sfs[group], sfs[group][0])
        return (abc, sfs, blk, sizes)
    if kind == "drop_group":
        return (abc, sfs[:-1], blk, sizes)
    if kind == "swap_parts":
        return (abc, blk, sfs, sizes)
    if kind == "shift_across":  # the same flat list: last c opens the first scale entry
        abc[-1], sfs[0] = abc[-1][:2], (abc[-1][2], *sfs[0])
        return (abc, sfs, blk, sizes)
    raise ValueError(kind)


def _python_pass(pipeline, template, data, tensors):
    """The Python seen path's decision and block: None, or (block bytes, views' geometry)."""
    pointers = template.accept(data, tensors)
    if pointers is None:
        return None
    tables, aux, _ = pipeline.seen_tables(template, pointers, tensors[2].device)
    return _block(tables.pointers, aux.tensor if aux is not None else None)


def _block(pointer_view, aux_view):
    storage = pointer_view.untyped_storage()
    geometry = [(tuple(pointer_view.shape), pointer_view.stride(), pointer_view.storage_offset(), pointer_view.dtype)]
    if aux_view is not None:
        assert aux_view.untyped_storage().data_ptr() == storage.data_ptr(), "two blocks for one problem"
        geometry.append((tuple(aux_view.shape), aux_view.stride(), aux_view.storage_offset(), aux_view.dtype))
    return bytes(storage), geometry


def _in_native_domain(data, tensors) -> bool:
    def seq(o):
        return type(o) in (list, tuple)

    return (seq(data) and len(data) == 4 and all(seq(p) and all(seq(e) for e in p) for p in data[:3])
            and type(tensors) is list
            and all(type(t) in (torch.Tensor, torch.nn.Parameter) for t in tensors))


CHANGE = st.one_of(
    st.just(("fresh",)),
    st.tuples(st.just("carve"), st.sampled_from(["disjoint", "misaligned", "overlap", "random"])),
    st.tuples(st.just("meta"), st.sampled_from(["dtype", "shape", "strides", "device", "subclass", "non_tensor",
                                                "inference", "requires_grad"]), st.integers(0, 10**6)),
    st.tuples(st.just("twice"), st.integers(0, 10**6), st.integers(0, 10**6)),
    st.tuples(st.just("structure"), st.sampled_from(STRUCTURE_CHANGES), st.integers(0, 10**6)),
)


@settings(max_examples=150, deadline=None)
@given(draw=st.data(), seed=st.integers(0, 2**16), layout=st.sampled_from(oracle.LAYOUTS), change=CHANGE,
       rnd=st.randoms(use_true_random=False))
def test_native_pass_is_the_python_pass(native, draw, seed, layout, change, rnd):
    sizes = draw.draw(problem_sizes(CONSTRAINTS, LIMITS, layout), label="sizes")
    learned = _learned(sizes, seed, layout)
    if learned is None:
        return  # no tile: nothing is launched, no template
    pipeline, template, first = learned
    state = _native_state(template)
    assert state, "the native state of a patchable template could not be built"
    data = oracle.make_inputs([tuple(s) for s in first[3]], seed + 1, device="cpu", layout=layout)
    tensors = flatten(data)
    n = len(tensors)
    kind = change[0]
    if kind == "carve":
        pattern = change[1]
        offsets, at = [], 0
        for t in tensors:
            extent = (1 + sum((s - 1) * abs(st) for s, st in zip(t.shape, t.stride()))) * t.element_size()
            if pattern == "disjoint":
                offsets.append(at)
                at += -(-extent // 16) * 16
            elif pattern == "misaligned":
                offsets.append(at + (rnd.choice([1, 2, 4, 8]) if rnd.random() < 0.3 else 0))
                at += -(-extent // 16) * 16 + 16
            elif pattern == "overlap":
                offsets.append(max(0, at - (rnd.randrange(1, 64) * 16 if rnd.random() < 0.3 else 0)))
                at += -(-extent // 16) * 16
            else:
                offsets.append(rnd.randrange(0, 4096) * rnd.choice([1, 2, 16]))
        offsets = [o - o % t.element_size() for o, t in zip(offsets, tensors)]
        data = _carve(data, offsets)
    elif kind == "meta":
        i = change[2] % n
        flat = list(tensors)
        flat[i] = _metadata_change(flat[i], change[1])
        data = _regroup(data, flat)
    elif kind == "twice":
        i, j = change[1] % n, change[2] % n
        flat = list(tensors)
        if flat[j].dtype == flat[i].dtype and flat[j].shape == flat[i].shape and flat[j].stride() == flat[i].stride():
            flat[j] = flat[i]
        data = _regroup(data, flat)
    elif kind == "structure":
        data = _structure_change(data, change[1], change[2] % len(first[3]))
    try:
        tensors = flatten(data)
    except Exception:
        return
    want = _python_pass(pipeline, template, data, tensors)
    got = native(state, data, tensors)
    if want is None:
        assert got is None, f"native accepted what the Python path refuses ({change})"
        return
    if got is None:
        assert not _in_native_domain(data, tensors), f"native declined a plain problem the Python path accepts ({change})"
        return
    assert _block(*got) == want, "the native block differs from the Python block"


def test_native_pass_declines_outside_its_domain(native):
    learned = _learned([(64, 64, 64, 1), (8, 16, 128, 1)], 1)
    pipeline, template, first = learned
    state = _native_state(template)
    data = oracle.make_inputs([(64, 64, 64, 1), (8, 16, 128, 1)], 2, device="cpu")
    tensors = flatten(data)
    assert native(state, data, tensors) is not None
    assert native(state, data, tuple(tensors)) is None  # not an exact list
    assert native(state, iter(data), tensors) is None
    sub = [t.as_subclass(Sub) if i == 4 else t for i, t in enumerate(tensors)]
    assert native(state, data, sub) is None

    class Mode(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    with Mode():
        assert native(state, data, tensors) is None  # the Python path runs the mode
    with pytest.raises(ValueError):
        native(object(), data, tensors)  # not a state capsule


# ---- through the pipeline: errors, counted use, fallbacks ----------------------------------

class CountingSeen:
    def __init__(self, fn):
        self.fn, self.accepted, self.declined = fn, 0, 0

    def __call__(self, state, data, tensors):
        r = self.fn(state, data, tensors)
        if r is None:
            self.declined += 1
        else:
            self.accepted += 1
        return r


def _error(pipeline, data):
    try:
        pipeline.run(data, CONFIG)
    except Exception as err:  # noqa: BLE001 - compared below
        return type(err), str(err), getattr(err, "rule", None), getattr(err, "group", None), getattr(err, "tensor", None)
    return None


@settings(max_examples=120, deadline=None)
@given(sizes=problem_sizes(CONSTRAINTS, LIMITS), seed=st.integers(0, 2**16),
       breakage=st.sampled_from([b for b in applicable_breakages(CONSTRAINTS)]), group=st.integers(0, 3))
def test_native_pipeline_refuses_like_validation(native, sizes, seed, breakage, group):
    counting = CountingSeen(native)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native_probe, "SEEN_TABLES", counting)
        _refuses_like_validation(counting, sizes, seed, breakage, group)


def _refuses_like_validation(counting, sizes, seed, breakage, group):
    broken, valid = broken_and_valid_twin(sizes, seed, breakage, group)
    with_native, without = RecordingPipeline(), RecordingPipeline()
    without.native_seen = False
    if valid is not None:
        for p in (with_native, without):
            p.run(valid, CONFIG)
        accepted = counting.accepted
        again = oracle.clone_data(valid)
        with_native.run(again, CONFIG)
        without.run(oracle.clone_data(again), CONFIG)
        if expected_launch(valid)[1][-1]:
            assert counting.accepted == accepted + 1, "a valid problem of seen shapes missed the native pass"
        assert with_native.launched[-1][:2] == without.launched[-1][:2]
    with pytest.raises(InvalidProblemError) as want:
        validate_problem(broken, CONSTRAINTS)
    launched = len(with_native.launched)
    got = _error(with_native, broken)
    assert got is not None, f"{breakage}: accepted by the pipeline, refused by validation ({want.value})"
    assert got == (type(want.value), str(want.value), want.value.rule, want.value.group, want.value.tensor)
    assert got == _error(without, broken), "the native and the Python path raise different errors"
    assert len(with_native.launched) == launched, "an invalid problem was launched"


@pytest.mark.parametrize("layout", oracle.LAYOUTS)
def test_native_pipeline_launches_what_the_python_pipeline_launches(native, monkeypatch, layout):
    counting = CountingSeen(native)
    monkeypatch.setattr(native_probe, "SEEN_TABLES", counting)
    sizes = [(64, 64, 64, 1), (0, 64, 128, 1), (72, 16, 64, 1)]
    if layout in ("shared_a", "shared_b"):
        sizes = [(64, 64, 128, 1), (64, 64, 128, 1), (64, 64, 128, 1)]
    pipelines = RecordingPipeline(), RecordingPipeline()
    pipelines[1].native_seen = False
    def inputs(seed):
        data = oracle.make_inputs(sizes, seed, device="cpu", layout=layout)
        # the leaderboard layout's plain scales as a GPU machine has them: ordinary host tensors
        # (on a CPU machine they are host-only tensors, which the native pass leaves to Python)
        return data[0], [tuple(map(plain, pair)) for pair in data[1]], data[2], data[3]

    first = inputs(1)
    for p in pipelines:
        p.run(first, CONFIG)
    for seed in range(2, 6):
        data = inputs(seed)
        for p in pipelines:
            p.run(data, CONFIG)
            assert p.launched[-1] == expected_launch(data)
        assert pipelines[0].launched[-1] == pipelines[1].launched[-1]
    assert counting.accepted == 4 and counting.declined == 0


def test_fallback_without_the_module(monkeypatch):
    """No native module (not built, NVFP4_NATIVE_PROBE=0): the Python path, same launches."""
    native_probe.wait()  # a background load started by an earlier test sets the helpers at its end
    monkeypatch.setenv(native_probe.ENV, "0")  # and no new one starts (FastPath(native=True) below)
    for name in ("PROBE", "SEEN_STATE", "SEEN_TABLES", "SIZES_KEY", "REFS", "METADATA"):
        monkeypatch.setattr(native_probe, name, None)
    pipeline = RecordingPipeline(native=True)
    sizes = [(64, 64, 64, 1), (8, 16, 128, 1)]
    pipeline.run(oracle.make_inputs(sizes, 1, device="cpu"), CONFIG)
    data = oracle.make_inputs(sizes, 2, device="cpu")
    pipeline.run(data, CONFIG)
    template = pipeline.templates.find(CONFIG, data[3])
    assert template.stats["accepted"] == 1 and template.native_state is None
    assert pipeline.launched[-1] == expected_launch(data)
    pipeline.run(data, CONFIG)  # a hit: the entry was stored with the Python weak references
    assert pipeline.fast_path.stats.hits == 1
    data[0][0][0].view(torch.uint8).fill_(0x22)  # new values in place: the Python metadata decides
    pipeline.run(data, CONFIG)
    assert (pipeline.fast_path.stats.hits, pipeline.fast_path.stats.rechecked) == (2, 1)


def test_fallback_with_a_module_without_the_helpers(monkeypatch, tmp_path):
    """A loaded module that has only the probe (an older build): the seen path stays Python."""
    native_probe.wait()  # no background load of an earlier test finishes under the patches
    monkeypatch.setattr(native_probe, "PROBE", None)
    monkeypatch.setattr(native_probe, "_state", dict(native_probe._state, failed=False))
    monkeypatch.setattr(native_probe, "library_path", lambda name=None: tmp_path / "x.so")
    (tmp_path / "x.so").write_bytes(b"")
    monkeypatch.setattr(native_probe, "_import", lambda path, name: types.SimpleNamespace(probe=lambda d, c: None))
    for name in ("SEEN_STATE", "SEEN_TABLES", "SIZES_KEY", "REFS", "METADATA", "_module"):
        monkeypatch.setattr(native_probe, name, native_probe.__dict__[name])
    assert native_probe.load(force=True) is not None
    assert native_probe.SEEN_TABLES is None and native_probe.SEEN_STATE is None
    assert native_probe.SIZES_KEY is None and native_probe.REFS is None and native_probe.METADATA is None
    pipeline = RecordingPipeline()
    sizes = [(64, 64, 64, 1)]
    pipeline.run(oracle.make_inputs(sizes, 1, device="cpu"), CONFIG)
    data = oracle.make_inputs(sizes, 2, device="cpu")
    pipeline.run(data, CONFIG)
    assert pipeline.launched[-1] == expected_launch(data)
    assert pipeline.templates.find(CONFIG, data[3]).stats["accepted"] == 1


def test_disabled_by_env(monkeypatch):
    monkeypatch.setenv(native_probe.ENV, "0")
    monkeypatch.setattr(native_probe, "PROBE", None)
    assert native_probe.load() is None and native_probe.describe().startswith("python (native disabled")


def test_a_fourth_table_filled_by_code_keeps_the_python_path(native, monkeypatch):
    """A template without ``patches()`` gets no native state; its problems take the Python path."""
    from properties.test_fast_path_properties import CpuHooks

    class FillOnly(AuxTemplate):
        element = "uint8"

        def __init__(self, slots):
            self.nbytes, self.shape = 8 * slots, (slots, 8)

        def fill(self, out, pointers):
            out[:] = np.frombuffer(np.resize(pointers, self.nbytes // 8).astype(np.int64).tobytes(), dtype=np.uint8)

    class Hooks(CpuHooks):
        def aux_template(self, config, plan, groups):
            return FillOnly(len(plan.group_order))

    counting = CountingSeen(native)
    monkeypatch.setattr(native_probe, "SEEN_TABLES", counting)
    pipeline = RecordingPipeline()
    pipeline.hooks = Hooks()
    sizes = [(64, 64, 64, 1), (8, 16, 128, 1)]
    pipeline.run(oracle.make_inputs(sizes, 1, device="cpu"), CONFIG)
    data = oracle.make_inputs(sizes, 2, device="cpu")
    prepared = pipeline.prepare(data, CONFIG)
    template = pipeline.templates.find(CONFIG, data[3])
    assert template.native_state is False and template.stats["accepted"] == 1
    assert counting.accepted == counting.declined == 0
    want = np.resize(np.array([t.data_ptr() for t in flatten(data)], dtype=np.int64), len(sizes))
    assert prepared.aux.tensor.view(torch.int64).reshape(-1).tolist() == want.tolist()


def test_a_subclass_that_stages_its_own_way_keeps_the_python_path(native):
    class Own(RecordingPipeline):
        def host_buffer(self, nbytes, device):
            return super().host_buffer(nbytes, device)

    assert not Own()._production_staging and RecordingPipeline()._production_staging
    assert HostPipeline.host_buffer is RecordingPipeline.host_buffer


# ---- the other helpers ---------------------------------------------------------------------

SIZE_ITEM = st.one_of(st.integers(0, 2**70), st.sampled_from([True, False, 1.0, 64.0]))
SIZES = st.tuples(st.sampled_from([list, tuple]),
                  st.lists(st.tuples(st.sampled_from([tuple, list]), st.lists(SIZE_ITEM, max_size=5)), max_size=4))


@settings(max_examples=300, deadline=None)
@given(SIZES)
def test_native_sizes_key_is_the_python_key(native, recipe):
    outer, entries = recipe
    sizes = outer(kind(items) for kind, items in entries)
    got = native_probe.SIZES_KEY(sizes)
    config = object()
    want = signature_key(config, sizes)
    if got is None:
        # declined: only where an entry is not a tuple or an item is not an exact int
        assert not all(type(e) is tuple and all(type(x) is int for x in e) for e in sizes)
    else:
        assert (id(config), got) == want and all(a is b for a, b in zip(got, sizes))


def test_native_refs_are_the_python_refs(native):
    tensors = [torch.zeros(3) for _ in range(5)] + [torch.nn.Parameter(torch.zeros(2), requires_grad=False)]
    for i, t in enumerate(tensors):
        for _ in range(i):
            t.add_(1) if i < 5 else None
    called = []
    versions, refs = native_probe.REFS(tensors, called.append)
    assert versions == sum(t._version for t in tensors)
    assert [r() for r in refs] == tensors and all(type(r) is weakref.ref for r in refs)
    del tensors[0]
    import gc

    gc.collect()
    assert len(called) == 1 and called[0] is refs[0]
    with torch.inference_mode():
        inference = torch.zeros(2)
    assert native_probe.REFS(tensors + [inference], called.append) is None
    assert native_probe.REFS(tensors + [torch.zeros(1).as_subclass(Sub)], called.append) is None
    assert native_probe.REFS(tuple(tensors), called.append) is None


# ---- on a GPU: pinned staging, copies that do not wait -------------------------------------

@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (pinned staging and an async copy)")
def test_native_pass_on_the_gpu_stages_each_problem_in_its_own_block(native):
    """Many first calls back to back without a synchronization: each problem's device tables hold
    its own pointers and maps (a staging buffer rewritten while an earlier copy still read it
    would show here), and equal the Python path's."""
    from properties.test_fast_path_properties import cuda_table_pipeline

    sizes = [(64, 64, 64, 1), (0, 64, 128, 1), (72, 16, 64, 1)]
    pipelines = cuda_table_pipeline(), cuda_table_pipeline()
    pipelines[1].native_seen = False
    learn = oracle.make_inputs(sizes, 1, device="cuda")
    for p in pipelines:
        p.run(learn, CONFIG)
    template = pipelines[0].templates.find(CONFIG, learn[3])
    problems = [oracle.make_inputs(sizes, 2 + i, device="cuda") for i in range(64)]
    prepared = [[p.prepare(d, CONFIG) for d in problems] for p in pipelines]
    assert template.native_state and template.stats["accepted"] == 64
    torch.cuda.synchronize()
    for d, native_one, python_one in zip(problems, *prepared):
        assert native_one.tables.pointers.device.type == "cuda"
        assert native_one.tables.pointers.tolist() == python_one.tables.pointers.tolist()
        assert native_one.aux.tensor.cpu().tolist() == python_one.aux.tensor.cpu().tolist()
        groups = validate_problem(d, pipelines[0].hooks.constraints(CONFIG))
        assert native_one.tables.pointers.tolist() == [[getattr(groups[g], c).data_ptr() for c in
                                                        ("a", "b", "c", "sfa_blocked", "sfb_blocked")]
                                                       for g in native_one.plan.group_order]


def test_rebased_arguments_point_at_their_own_cells():
    """``LaunchArgs.rebased`` (the seen-shape marshalling): a copy of the prototype's packed
    arguments whose entries 2 and 3 point at two 64-bit cells holding the new table addresses;
    every other entry and the prototype itself unchanged, each copy independent."""
    import ctypes

    from kernel.host_pipeline import LaunchArgs, _cells_hold

    cells = [(ctypes.c_uint64 * 1)(v) for v in (11, 22, 33, 44)]
    packed = (ctypes.c_void_p * 9)(*[ctypes.addressof(c) for c in cells], 5, 6, 7, 8, 9)
    proto = object.__new__(LaunchArgs)
    proto._packed, proto._capi, proto._result, proto.stream, proto.workspace = packed, None, None, 7, None
    proto.rebasable, proto._image = True, None
    before = list(packed)
    one, two = proto.rebased(0x1000, 0x2040), proto.rebased(0x3000, 0x4040)
    assert _cells_hold(one._packed, [11, 22, 0x1000, 0x2040]) and _cells_hold(two._packed, [11, 22, 0x3000, 0x4040])
    assert list(one._packed)[4:9] == list(two._packed)[4:9] == before[4:9] and list(packed) == before
    assert isinstance(one._packed, ctypes.Array) and one._packed._type_ is ctypes.c_void_p
    assert not one.rebasable and one.stream == 7 and one._keep is proto
    assert one._capi is proto._capi and one._result is proto._result and one.workspace is proto.workspace
    assert one.args is one.exe_args is one.adapted is one._run is one._image is None
    assert vars(one) is not vars(two) and one._packed is not two._packed
    assert one.rebased.__func__ is LaunchArgs.rebased  # an ordinary instance (no attribute shadows a method)
    with pytest.raises(ValueError):
        one.rebased(1, 2)


def test_the_seen_paths_prepared_is_the_dataclasss():
    from dataclasses import fields

    from kernel.host_pipeline import Prepared, _prepared

    args = [object() for _ in range(7)]
    fast = _prepared(*args, 11, "template")
    slow = Prepared(*args, upload_stream=11, template="template")
    assert type(fast) is Prepared and fast == slow
    assert {f.name: getattr(fast, f.name) for f in fields(Prepared)} == {f.name: getattr(slow, f.name) for f in fields(Prepared)}
    with pytest.raises(AttributeError):
        fast.plan = None  # still frozen
    object.__setattr__(fast, "launch_args", 5)  # what launch() does
    assert fast.launch_args == 5 and slow.launch_args is None


def test_a_native_pass_that_raises_falls_back_to_the_python_path(monkeypatch):
    def raising(state, data, tensors):
        raise RuntimeError("out of memory (simulated)")

    monkeypatch.setattr(native_probe, "SEEN_STATE", lambda *args: "a state")
    monkeypatch.setattr(native_probe, "SEEN_TABLES", raising)
    pipeline = RecordingPipeline()
    sizes = [(64, 64, 64, 1), (8, 16, 128, 1)]
    pipeline.run(oracle.make_inputs(sizes, 1, device="cpu"), CONFIG)
    data = oracle.make_inputs(sizes, 2, device="cpu")
    pipeline.run(data, CONFIG)
    template = pipeline.templates.find(CONFIG, data[3])
    assert template.native_state == "a state" and template.stats["accepted"] == 1
    assert pipeline.launched[-1] == expected_launch(data)


# ---- the seen path's objects built without dataclass __init__ -------------------------------

GROUP_FIELDS = ("a", "b", "c", "sfa", "sfb", "sfa_blocked", "sfb_blocked")


def _same_groups(got, want) -> bool:
    """Two lists of GroupTensors hold the very same tensor objects and equal sizes, group by group."""
    return len(got) == len(want) and all(
        all(getattr(x, f) is getattr(y, f) for f in GROUP_FIELDS) and x.size == y.size for x, y in zip(got, want))


@settings(max_examples=60, deadline=None)
@given(sizes=problem_sizes(CONSTRAINTS, LIMITS), seed=st.integers(0, 2**16), use_native=st.booleans())
def test_a_seen_preparation_is_the_dataclasses_and_the_validated_groups(sizes, seed, use_native):
    """A seen-shape preparation (native pass or Python path): its tables and fourth table are the
    frozen dataclasses ``DeviceTables(...)``/``AuxTable(...)`` field for field, and its lazily
    unpacked groups (built from the flat tensor list) are ``validate_problem``'s, tensor for
    tensor; a caller that edits its lists after the call changes nothing in them."""
    from dataclasses import fields

    from kernel.host_pipeline import AuxTable
    from kernel.tables import DeviceTables

    if use_native:
        native_or_skip()
    learned = _learned(sizes, seed)
    if learned is None:
        return
    pipeline, template, _ = learned
    pipeline.native_seen = use_native
    data = oracle.make_inputs(sizes, seed + 1, device="cpu")
    data = ([*data[0]], [*data[1]], [*data[2]], list(data[3]))
    want = validate_problem(data, CONSTRAINTS)
    accepted = template.stats["accepted"]
    prepared = pipeline.prepare(data, CONFIG)
    assert template.stats["accepted"] == accepted + 1, "the problem missed the seen path"
    assert bool(template.native_state) == use_native
    tables, aux = prepared.tables, prepared.aux
    assert type(tables) is DeviceTables and tables == DeviceTables(tables.sizes, tables.tile_prefix, tables.pointers)
    assert [getattr(tables, f.name) for f in fields(DeviceTables)] == [
        template.sizes_table, template.prefix_table, tables.pointers, 0]
    assert aux is not None and type(aux) is AuxTable and aux == AuxTable(aux.tensor, template.aux.element, 64)
    with pytest.raises(AttributeError):
        tables.pointers = None  # still frozen
    data[0].reverse(), data[1].clear(), data[2].append(None)  # the caller's lists, edited after the call
    assert _same_groups(list(prepared.groups), want) and len(prepared.groups) == len(want)
    assert _same_groups([prepared.groups[j] for j in range(len(want))], want)


def test_a_fast_path_entry_is_the_dataclass():
    """``FastPath.store`` builds its ``Entry`` without the dataclass ``__init__``: equal, field for
    field, to ``Entry(...)`` of the same values, with the device index of the problem's tensors."""
    from dataclasses import fields

    from kernel.fast_path import Entry, metadata

    fast_path = FastPath(4, stream_id=lambda device_index: ("stream", device_index), native=False)
    data = oracle.make_inputs([(16, 24, 64, 1), (8, 8, 128, 1)], 3, device="cpu")
    launch, keep, config = object(), object(), object()
    fast_path.store(data, config, None, launch, keep=keep)
    (entry,) = fast_path._entries.values()
    assert type(entry) is Entry
    want = Entry(launch_args=launch, versions=sum(t._version for t in flatten(data)), meta=metadata(flatten(data)),
                 device_index=0,
                 stream_id=("stream", 0), config=config, refs=entry.refs, keep=keep, sizes=list(data[3]),
                 outputs_slice=slice(2, 6, 3))
    assert {f.name: getattr(entry, f.name) for f in fields(Entry)} == {f.name: getattr(want, f.name) for f in fields(Entry)}
    assert entry == want and [r() for r in entry.refs] == flatten(data)
