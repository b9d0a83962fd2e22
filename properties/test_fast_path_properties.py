"""The host fast path never serves a stale launch, and never lets a bad problem through.

A Hypothesis state machine drives the real :class:`kernel.host_pipeline.HostPipeline` (with its
real :class:`kernel.fast_path.FastPath`) through sequences of calls and changes a caller makes
between calls: new tensors of the same shapes, views at the same address with other strides or
dtype, tensors freed and reallocated (the allocator hands the address, and CPython the ``id``,
back), values changed in place, metadata changed in place, storage replaced in place (``set_``:
same shape, new address), one group's ``c`` aliasing another's,
changed problem sizes, another stream. Only the two CUDA touch points are replaced (the stream
handle and the argument marshalling): the double records what each launch would have read.

After every call it checks, against a from-scratch computation on the current problem:

* a valid problem launches exactly the tables a fresh ``validate -> plan -> tables`` gives
  (sizes, tile prefix, every pointer, CTA count), on the stream of this call;
* an invalid problem raises the same :class:`InvalidProblemError` (rule, group, tensor) as
  ``validate_problem`` does, and launches nothing, whether or not an earlier call hit.
"""

from __future__ import annotations

import gc
import weakref

import pytest
import torch
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import oracle
from kernel import native_probe
from kernel.errors import InvalidProblemError
from kernel.fast_path import FastPath, flatten
from kernel.host_pipeline import HostPipeline
from kernel.model import ModelConfig
from kernel.plan import make_plan
from kernel.tables import slot_pointers
from kernel.validation import KernelConstraints, validate_problem
from profiling.host_cpu import CpuMapHooks
from properties.native import Counting, native_or_skip
from properties.release import ensure_freed

pytestmark = pytest.mark.properties

CONSTRAINTS = KernelConstraints(k_granularity=64, device_type="cpu")
CONFIG = ModelConfig(tile_m=64, tile_n=64, tile_k=64, max_ctas=4)


class CpuHooks(CpuMapHooks):
    """A family whose 'GPU' is the CPU (profiling.host_cpu's double), without a fourth table:
    its compiled kernel is a token, its launches are recorded."""

    name = "cpu-double"

    def constraints(self, config):
        return CONSTRAINTS

    def aux_table(self, config, plan, groups, device, strict=False):
        return None


def cuda_table_pipeline() -> HostPipeline:
    """A pipeline whose problems are CUDA problems (tables go to the GPU: the seen-shape pass's
    upload runs for real) but whose launches do nothing: the GPU tests of the table upload
    (kernel/tests/test_native_upload.py, properties/test_native_seen_properties.py)."""
    import types
    from dataclasses import replace

    cuda = replace(CONSTRAINTS, device_type="cuda")

    class Hooks(CpuHooks):
        def constraints(self, config):
            return cuda

    class GpuPipeline(HostPipeline):
        def __init__(self):
            super().__init__(Hooks(), fast_path=FastPath(8, native=False))

        def marshal(self, prepared, handle):
            return types.SimpleNamespace(stream=handle, launch=lambda: None)

    return GpuPipeline()


class RecordedLaunch:
    def __init__(self, log, prepared, handle):
        t = prepared.tables
        self.stream = handle
        self.record = (t.sizes.tolist(), t.tile_prefix.tolist(), t.pointers.tolist(), prepared.plan.num_ctas, handle)
        self._log = log

    def launch(self):
        self._log.append(self.record)


class RecordingPipeline(HostPipeline):
    def __init__(self, native: bool = False):
        super().__init__(CpuHooks(), fast_path=FastPath(8, stream_id=lambda device_index: STREAM[0], native=native))
        self.launched: list = []

    def stream_handle(self, stream, device):
        return STREAM[0] if stream is None else int(stream)

    def marshal(self, prepared, handle):
        return RecordedLaunch(self.launched, prepared, handle)


STREAM = [7]  # the double's "current stream"


def expected_launch(data):
    """What a launch on ``data`` must read, computed from scratch (or the error it must raise)."""
    groups = validate_problem(data, CONSTRAINTS)
    plan = make_plan([g.size for g in groups], tile_m=CONFIG.tile_m, tile_n=CONFIG.tile_n,
                     tile_k=CONFIG.tile_k, max_ctas=CONFIG.max_ctas, schedule=CONFIG.schedule)
    return ([list(s) for s in plan.sizes], list(plan.tile_prefix), [list(p) for p in slot_pointers(plan, groups)],
            plan.num_ctas, STREAM[0])


def _same_version(new, old):
    """Give ``new`` the version counter value of ``old`` (an int or a tensor): fresh tensors all
    start at 0 (inputs moved to a GPU with ``.to()`` too), so the version alone must not be what
    tells two tensors apart."""
    version = old if isinstance(old, int) else old._version
    torch._C._autograd._unsafe_set_version_counter((new,), (version,))
    return new


def _mutable(data):
    abc, sfs, blocked, sizes = data
    return [list(abc), list(sfs), list(blocked), list(sizes)]


class FastPathMachine(RuleBasedStateMachine):
    NATIVE = False  # the Python probe; NativeFastPathMachine below: the native one

    def __init__(self):
        super().__init__()
        self.pipeline = RecordingPipeline(native=self.NATIVE)
        self.data: list = []
        self.calls = 0
        self.kept: list = []  # tensors the "caller" still holds after replacing them
        STREAM[0] = 7

    @initialize(seed=st.integers(0, 2**16), groups=st.integers(1, 3))
    def first_problem(self, seed, groups):
        self.fresh_problem(seed, groups)

    @rule(seed=st.integers(0, 2**16), groups=st.integers(1, 3))
    def fresh_problem(self, seed, groups):
        sizes = [(8 + 8 * ((seed + g) % 5), 16 + 8 * ((seed // 3 + g) % 4), 64 * (1 + (seed + g) % 2), 1)
                 for g in range(groups)]
        self.data = _mutable(oracle.make_inputs(sizes, seed, device="cpu"))
        self._call_and_check()

    @rule(times=st.integers(1, 3))
    def call(self, times):
        for _ in range(times):
            self._call_and_check()

    def _call_and_check(self):
        self.calls += 1
        before = len(self.pipeline.launched)
        try:
            want = expected_launch(self.data)
        except InvalidProblemError as err:
            # no pytest.raises here: its failure is a BaseException, which Hypothesis does not shrink
            try:
                self.pipeline.run(self.data, CONFIG)
            except InvalidProblemError as raised:
                got = raised
            else:
                raise AssertionError(f"an invalid problem ({err.rule}) was accepted: a stale fast-path hit")
            assert (got.rule, got.group, got.tensor) == (err.rule, err.group, err.tensor), (got, err)
            assert len(self.pipeline.launched) == before, "an invalid problem was launched"
            return
        outs = self.pipeline.run(self.data, CONFIG)
        if want[1][-1] == 0:  # no tile: nothing is launched
            assert len(self.pipeline.launched) == before
        else:
            assert len(self.pipeline.launched) == before + 1
            assert self.pipeline.launched[-1] == want, "the launch read stale tables"
        assert all(o is c for o, (_, _, c) in zip(outs, self.data[0]))

    def _group(self, g):
        return g % len(self.data[3])

    @rule(g=st.integers(0, 7), which=st.sampled_from(["a", "b", "c", "sfa", "sfb", "sfa_r", "sfb_r"]),
          keep_old=st.booleans())
    def new_tensor_same_shape(self, g, which, keep_old):
        """A new tensor; the old one is either freed or kept alive elsewhere (then its entry stays)."""
        g = self._group(g)
        if keep_old:
            self.kept.append(self._get(g, which))
        self._replace(g, which, lambda t: t.clone())
        self._call_and_check()

    @rule(g=st.integers(0, 7), which=st.sampled_from(["a", "c", "sfa_r"]))
    def free_and_reallocate(self, g, which):
        """Drop the only reference and allocate the same size: address and id are likely reused."""
        g = self._group(g)
        t = self._get(g, which)
        shape, stride, dtype, offset, version = t.shape, t.stride(), t.dtype, t.storage_offset(), t._version
        payload = torch.empty(0, dtype=torch.uint8).set_(t.untyped_storage()).clone()
        self._set(g, which, None)
        ref = weakref.ref(t)
        del t
        ensure_freed(ref)  # freed unless the problem holds it twice (then it stays, as before)
        storage = torch.empty(payload.numel(), dtype=torch.uint8)
        storage.copy_(payload)
        fresh = torch.empty(0, dtype=dtype).set_(storage.untyped_storage(), offset, shape, stride)
        self._set(g, which, _same_version(fresh, version))
        self._call_and_check()

    @rule(g=st.integers(0, 7))
    def same_pointer_other_dtype(self, g):
        g = self._group(g)
        self._replace(g, "c", lambda t: t.view(torch.bfloat16))
        self._call_and_check()

    @rule(g=st.integers(0, 7))
    def same_pointer_other_strides(self, g):
        g = self._group(g)
        self._replace(g, "a", lambda t: t.as_strided(t.shape, (1, max(1, t.shape[0]), t.numel() or 1)))
        self._call_and_check()

    @rule(g=st.integers(0, 7))
    def metadata_changed_in_place(self, g):
        g = self._group(g)
        c = self._get(g, "c")
        if c.numel() > 1:
            c.as_strided_(c.shape, (1, c.shape[0], c.numel()))
        self._call_and_check()

    @rule(g=st.integers(0, 7), which=st.sampled_from(["a", "b", "c", "sfa", "sfb", "sfa_r", "sfb_r"]))
    def storage_replaced_in_place(self, g, which):
        """The same tensor object on new storage (``set_``), same shape and strides, same bytes:
        a valid problem at another address (the old storage stays alive in ``kept``)."""
        g = self._group(g)
        t = self._get(g, which)
        old = t.untyped_storage()
        self.kept.append(old)
        fresh = torch.empty(old.nbytes(), dtype=torch.uint8)
        fresh.copy_(torch.empty(0, dtype=torch.uint8).set_(old))
        t.set_(fresh.untyped_storage(), t.storage_offset(), t.shape, t.stride())
        self._call_and_check()

    @rule(g=st.integers(0, 7), value=st.sampled_from([0.0, 1.5, float("nan")]))
    def values_changed_in_place(self, g, value):
        g = self._group(g)
        self._get(g, "c").fill_(value)
        torch.empty(0, dtype=torch.uint8).set_(self._get(g, "a").untyped_storage()).fill_(0x11)
        self._call_and_check()

    @precondition(lambda self: len(self.data[3]) > 1)
    @rule(g=st.integers(0, 7))
    def c_aliases_another_group(self, g):
        g = self._group(g)
        other = (g + 1) % len(self.data[3])
        self._set(g, "c", self._get(other, "c"))
        self._call_and_check()

    @rule(g=st.integers(0, 7), dm=st.sampled_from([-8, 8]))
    def sizes_changed(self, g, dm):
        g = self._group(g)
        m, n, k, l = self.data[3][g]
        self.data[3][g] = (max(0, m + dm), n, k, l)
        self._call_and_check()

    @rule(stream=st.sampled_from([7, 8]))
    def switch_stream(self, stream):
        STREAM[0] = stream
        self._call_and_check()

    @invariant()
    def cache_is_bounded(self):
        assert len(self.pipeline.fast_path) <= self.pipeline.fast_path.capacity

    # ---- helpers ---------------------------------------------------------------------------
    _SLOTS = {"a": (0, 0), "b": (0, 1), "c": (0, 2), "sfa": (1, 0), "sfb": (1, 1), "sfa_r": (2, 0), "sfb_r": (2, 1)}

    def _get(self, g, which):
        part, i = self._SLOTS[which]
        return self.data[part][g][i]

    def _set(self, g, which, value):
        part, i = self._SLOTS[which]
        entry = list(self.data[part][g])
        entry[i] = value
        self.data[part][g] = tuple(entry)

    def _replace(self, g, which, fn):
        old = self._get(g, which)
        self._set(g, which, _same_version(fn(old), old))


FastPathMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=25, deadline=None)
test_fast_path_never_stale = FastPathMachine.TestCase


class NativeFastPathMachine(FastPathMachine):
    """The same machine, every probe through the native walk (kernel.native_probe), counted."""

    NATIVE = True

    def __init__(self):
        self.native_fn = native_or_skip()
        self.counting = Counting(self.native_fn)
        native_probe.PROBE = self.counting
        super().__init__()

    def teardown(self):
        native_probe.PROBE = self.native_fn
        NATIVE_WALKS.append(self.counting.decided)


NATIVE_WALKS: list = []
NativeFastPathMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=25, deadline=None)


def recording_prototype(log: list, prepared, handle: int):
    """Launch arguments as ``LaunchArgs`` marshals them on a GPU (profiling.host_cpu.fake_prototype:
    a packed array whose first four entries point at cells holding the tables' addresses), whose C
    entry point reads the tables those cells point at when called and logs what
    :class:`RecordedLaunch` logs: a rebased copy (``LaunchArgs.rebased``) records the tables it
    really points at."""
    import ctypes

    from profiling.host_cpu import fake_prototype

    proto = fake_prototype(prepared, handle)
    t, num_ctas = prepared.tables, prepared.plan.num_ctas
    shapes = (tuple(t.sizes.shape), tuple(t.tile_prefix.shape), tuple(t.pointers.shape))

    def table(address, ctype, shape):
        count = 1
        for extent in shape:
            count *= extent
        flat = list((ctype * count).from_address(address)) if count else []
        if len(shape) == 1:
            return flat
        return [flat[i * shape[1]:(i + 1) * shape[1]] for i in range(shape[0])]

    def capi(packed):
        entries = (ctypes.c_void_p * 3).from_address(packed)
        cells = [ctypes.c_uint64.from_address(entries[i]).value for i in range(3)]
        log.append((table(cells[0], ctypes.c_int32, shapes[0]), table(cells[1], ctypes.c_int32, shapes[1]),
                    table(cells[2], ctypes.c_int64, shapes[2]), num_ctas, handle))
        return 0

    proto._capi = proto._recording = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(capi)
    return proto


class LanePipeline(RecordingPipeline):
    """:class:`RecordingPipeline` whose production launches are arguments rebased from one
    prototype per shape template and stream (:func:`recording_prototype`), as on a GPU: a first
    call on new tensors of seen shapes takes ``run``'s lane (``HostPipeline._run_seen``) where the
    native pass is loaded, and every launch is recorded from the tables its arguments point at."""

    def marshal(self, prepared, handle):
        template = prepared.template
        if template is None:
            return super().marshal(prepared, handle)
        if handle not in template.launch_protos:
            template.launch_protos[handle] = recording_prototype(self.launched, prepared, handle)
        return HostPipeline.marshal(self, prepared, handle)


class LaneFastPathMachine(NativeFastPathMachine):
    """The native machine on :class:`LanePipeline`: first calls on new tensors of seen shapes take
    the lane (counted), repeated calls replay its rebased arguments; nothing may be stale."""

    def __init__(self):
        super().__init__()
        self.pipeline = LanePipeline(native=True)

    def teardown(self):
        super().teardown()
        LANE_CALLS.append(self.pipeline.lane_calls)


LANE_CALLS: list = []
LaneFastPathMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=25, deadline=None)


def test_fast_path_never_stale_through_the_first_call_lane():
    native_or_skip()
    LANE_CALLS.clear()
    LaneFastPathMachine.TestCase().runTest()
    assert sum(LANE_CALLS) > 0, "no first call took the lane"


def test_fast_path_never_stale_with_the_native_probe():
    native_or_skip()
    NATIVE_WALKS.clear()
    NativeFastPathMachine.TestCase().runTest()
    assert sum(NATIVE_WALKS) > 0, "the native probe was never used"


@pytest.fixture(params=[False, True], ids=["python-probe", "native-probe"])
def native(request):
    """Each test below runs with the Python probe and with the native one (skipped, with the
    reason, where it cannot be built)."""
    if not request.param:
        yield False
        return
    fn = native_or_skip()
    counting = Counting(fn)
    native_probe.PROBE = counting
    yield True
    native_probe.PROBE = fn
    assert counting.decided + counting.declined > 0, "the native probe was never consulted"


def test_repeated_call_hits_and_evicts_on_free(native):
    """The cache is used at all (hits), and a freed tensor evicts its entry at once."""
    pipeline = RecordingPipeline(native)
    data = _mutable(oracle.make_inputs([(16, 24, 64, 1), (8, 8, 128, 1)], 5, device="cpu"))
    for _ in range(5):
        pipeline.run(data, CONFIG)
    assert pipeline.fast_path.stats.hits == 4 and pipeline.fast_path.stats.stores == 1
    assert len(pipeline.fast_path) == 1
    a, b, c = data[0][0]
    data[0][0] = (a.clone(), b, c)
    del a
    gc.collect()
    assert len(pipeline.fast_path) == 0, "the entry of a freed tensor must be evicted"


def _write_values(t: torch.Tensor) -> None:
    """New values in ``t`` by an in-place op on ``t`` itself (its version counter moves)."""
    t.view({1: torch.uint8, 2: torch.int16}[t.element_size()]).fill_(0x11)


def test_values_written_in_place_hit_after_a_metadata_check(native):
    """Writing new values into any tensor of the problem, C included, keeps the entry: the call
    compares the metadata once (``rechecked``) and hits; a call with nothing written since hits
    on the version counters alone. New storage under the same object (``set_``) misses, and the
    launch after it reads the new address."""
    pipeline = RecordingPipeline(native)
    data = _mutable(oracle.make_inputs([(16, 24, 64, 1), (8, 8, 128, 1)], 5, device="cpu"))
    pipeline.run(data, CONFIG)
    stats = pipeline.fast_path.stats
    flat = flatten(data)
    for i, t in enumerate(flat):
        _write_values(t)
        pipeline.run(data, CONFIG)
        assert (stats.hits, stats.rechecked, stats.stores) == (i + 1, i + 1, 1), f"tensor {i} written in place"
    pipeline.run(data, CONFIG)
    assert (stats.hits, stats.rechecked) == (len(flat) + 1, len(flat))
    assert pipeline.launched[-1] == expected_launch(data)
    a = data[0][0][0]
    kept = a.untyped_storage()
    a.set_(torch.empty(kept.nbytes(), dtype=torch.uint8).untyped_storage(), a.storage_offset(), a.shape, a.stride())
    pipeline.run(data, CONFIG)
    assert (stats.hits, stats.stores) == (len(flat) + 1, 2), "new storage in place was a hit"
    assert pipeline.launched[-1] == expected_launch(data)


def test_cache_is_bypassed_by_inference_tensors(native):
    pipeline = RecordingPipeline(native)
    with torch.inference_mode():
        data = _mutable(oracle.make_inputs([(16, 24, 64, 1)], 5, device="cpu"))
    pipeline.run(data, CONFIG)
    pipeline.run(data, CONFIG)
    assert pipeline.fast_path.stats.hits == 0 and len(pipeline.launched) == 2


@pytest.mark.parametrize("container", [tuple, list])
@pytest.mark.parametrize("bad", [1.0, True])
def test_a_size_of_another_type_after_a_hit_is_refused(container, bad, native):
    """``1.0 == 1`` and ``True == 1``: a key by value alone would hit; validation refuses both."""
    pipeline = RecordingPipeline(native)
    data = _mutable(oracle.make_inputs([(16, 24, 64, 1), (8, 8, 128, 1)], 5, device="cpu"))
    data[3] = [container(s) for s in data[3]]
    pipeline.run(data, CONFIG)
    pipeline.run(data, CONFIG)
    assert pipeline.fast_path.stats.hits == 1
    m, n, k, _ = data[3][1]
    if container is list:
        data[3][1][3] = bad  # the same list object, edited in place
    else:
        data[3][1] = (m, n, k, bad)
    with pytest.raises(InvalidProblemError) as info:
        pipeline.run(data, CONFIG)
    assert (info.value.rule, info.value.group) == ("size_format", 1)


def test_regrouped_tensors_never_hit(native):
    """The same tensors in the same flat order, grouped differently: a structure error, hit or not."""
    pipeline = RecordingPipeline(native)
    data = _mutable(oracle.make_inputs([(16, 16, 64, 1), (16, 16, 64, 1)], 5, device="cpu"))
    pipeline.run(data, CONFIG)
    pipeline.run(data, CONFIG)
    (a0, b0, c0), (a1, b1, c1) = data[0]
    data[0] = [(a0, b0, c0, a1), (b1, c1)]
    with pytest.raises(InvalidProblemError) as info:
        pipeline.run(data, CONFIG)
    assert info.value.rule == "structure"


def test_tensors_regrouped_across_the_lists_never_hit(native):
    """The same flat tensors and the same entry lengths, but one entry moved from ``abc``'s list to
    ``sfs``'s (so the group counts of the lists differ): a structure error, never a hit. A key of
    ids and entry lengths alone (without how many entries each list holds) hit here."""
    pipeline = RecordingPipeline(native)
    data = _mutable(oracle.make_inputs([(16, 16, 64, 1), (16, 16, 64, 1)], 5, device="cpu"))
    pipeline.run(data, CONFIG)
    pipeline.run(data, CONFIG)
    assert pipeline.fast_path.stats.hits == 1
    # abc: [3, 3], sfs: [2, 2], blocked: [2, 2]  ->  abc: [3], sfs: [3, 2, 2], blocked: [2, 2]
    regrouped = [data[0][:1], [data[0][1], *data[1]], data[2], data[3]]
    with pytest.raises(InvalidProblemError) as info:
        pipeline.run(regrouped, CONFIG)
    assert info.value.rule == "structure"
    assert pipeline.fast_path.stats.hits == 1


def test_a_per_shape_config_is_chosen_on_a_miss_only(native):
    """A family's per-shape choice (hooks ``choose``: kernel.hopper's PER_SHAPE): the fast path keys
    on the config as given, so repeated calls hit without choosing; a miss chooses once, and a
    problem of other sizes gets its own choice."""
    pipeline = RecordingPipeline(native)
    per_shape, chosen = object(), []

    def choose(config, data):
        if config is not per_shape:
            return config
        chosen.append(tuple(map(tuple, data[3])))
        return CONFIG

    pipeline.hooks.choose = choose
    data = _mutable(oracle.make_inputs([(16, 24, 64, 1), (8, 8, 128, 1)], 5, device="cpu"))
    for _ in range(4):
        pipeline.run(data, per_shape)
    assert chosen == [((16, 24, 64, 1), (8, 8, 128, 1))]
    assert pipeline.fast_path.stats.hits == 3 and pipeline.fast_path.stats.stores == 1
    assert pipeline.launched[0] == expected_launch(data)
    pipeline.run(data, CONFIG)  # the same problem with the variant itself: its own entry, no choice
    other = _mutable(oracle.make_inputs([(32, 8, 64, 1)], 6, device="cpu"))
    pipeline.run(other, per_shape)
    assert len(chosen) == 2 and pipeline.fast_path.stats.stores == 3
