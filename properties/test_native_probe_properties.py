"""The native probe (kernel.native_probe) decides exactly as the Python probe does.

* ``test_native_walk_is_the_python_walk``: on random problem structures (lists or tuples at every
  level, wrong arity, non-sequences, non-tensors, tensor subclasses, Parameters, inference
  tensors, sizes as tuples, lists, namedtuples, with floats and bools, empty), the native walk
  either declines (None, only outside its documented domain: then the Python probe decides) or
  returns the very key bytes of :func:`kernel.fast_path.identity_key`, the flat tensors of
  :func:`kernel.fast_path.flatten` (the same objects) and the same sum of version counters;
  equal keys, equal key equality relations.
* ``test_native_metadata_is_the_python_metadata``: on lists of tensors of every kind (views,
  other dtypes, devices, dimensions, empty, zero-dimensional, Parameters, subclasses, sparse,
  lazy copies, inference tensors, non-tensors), the native ``metadata`` declines (None, only
  outside its documented domain) or returns the very bytes of :func:`kernel.fast_path.metadata`;
  the bytes differ whenever a pointer, dtype, device, size or stride does.
* ``NativeVsPythonMachine``: two :class:`kernel.fast_path.FastPath` caches, one probing natively
  and one in Python, see the same calls and changes (same objects, new tensors, values written
  in place, resize_/as_strided_/set_/transpose_, writes through an alias, regrouped tensors
  within and across the three lists, list/tuple flips, sizes replaced or edited, float and bool
  sizes, wrong arity, non-tensors, freed tensors, another config or stream); after every call
  both give the same hit or miss, the same key and the same flat tensors, and that decision is
  the one a model of the cache's contract expects (a hit exactly when the same objects in the
  same structure come back with the metadata they were stored with, the same sizes, config and
  stream: values written in place still hit).
"""

from __future__ import annotations

import collections
import gc
import weakref

import pytest
import torch
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis import given
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from kernel import native_probe
from kernel.fast_path import FastPath, flatten, identity_key, metadata
from properties.native import Counting, native_or_skip
from properties.release import ensure_freed

pytestmark = pytest.mark.properties


class Sub(torch.Tensor):
    pass


Size = collections.namedtuple("Size", "m n k l")
CONFIGS = (object(), object())


def _new_tensor(kind: str, i: int = 0):
    if kind == "plain":
        return torch.zeros(2 + i % 3, 3)
    if kind == "param":
        return torch.nn.Parameter(torch.zeros(2, 3), requires_grad=False)
    if kind == "sub":
        return torch.zeros(2, 3).as_subclass(Sub)
    if kind == "inference":
        with torch.inference_mode():
            return torch.zeros(2, 3)
    if kind == "bumped":
        t = torch.zeros(3)
        for _ in range(i % 4 + 1):
            t.add_(1)
        return t
    raise ValueError(kind)


def native_domain(data) -> bool:
    """Where the native walk must decide (not decline): its documented domain."""
    def seq(o):
        return type(o) in (list, tuple)

    if not seq(data) or len(data) != 4:
        return False
    if not all(seq(p) and all(seq(e) for e in p) for p in data[:3]):
        return False
    sizes = data[3]
    if not seq(sizes) or not sizes or not all(type(s) is tuple for s in sizes):
        return False
    flat = [x for p in data[:3] for e in p for x in e]
    return all(type(t) in (torch.Tensor, torch.nn.Parameter) and not t.is_inference() for t in flat)


@pytest.fixture(scope="module")
def native():
    return native_or_skip()


# ---- one walk on a random structure ---------------------------------------------------------

CONTAINERS = st.sampled_from([tuple, list])
ITEM = st.one_of(
    st.tuples(st.just("pool"), st.integers(0, 5)),
    st.tuples(st.just("new"), st.sampled_from(["plain", "param", "sub", "inference", "bumped"])),
    st.tuples(st.just("obj"), st.sampled_from([1, None, "x", 1.5])),
)
ENTRY = st.tuples(st.sampled_from(["tuple", "list", "tuple", "list", "int", "none"]), st.lists(ITEM, max_size=4))
SIZE_VALUE = st.one_of(st.integers(0, 300), st.sampled_from([1.0, 64.0, True, False]))
SIZE = st.tuples(st.sampled_from([tuple, tuple, list, Size]), st.lists(SIZE_VALUE, min_size=4, max_size=4))
RECIPE = st.fixed_dictionaries({
    "data": st.sampled_from(["tuple", "list", "tuple", "list", "three", "five", "none", "int"]),
    "parts": st.lists(st.tuples(CONTAINERS, st.lists(ENTRY, max_size=3)), min_size=3, max_size=3),
    "sizes": st.tuples(st.sampled_from([list, tuple, list]), st.lists(SIZE, max_size=3)),
    "config": st.integers(0, 1),
})


def materialize(recipe, pool):
    def item(ref):
        what, arg = ref
        if what == "pool":
            return pool[arg]
        if what == "new":
            return _new_tensor(arg, len(pool))
        return arg

    def entry(e):
        kind, items = e
        made = [item(r) for r in items]
        return {"tuple": tuple, "list": list}.get(kind, lambda m: {"int": 3, "none": None}[kind])(made)

    parts = [container(entry(e) for e in entries) for container, entries in recipe["parts"]]
    outer, sizes = recipe["sizes"]
    sizes = outer((Size(*v) if c is Size else c(v)) for c, v in sizes)
    four = [*parts, sizes]
    data = {"tuple": lambda: tuple(four), "list": lambda: four, "three": lambda: tuple(four[:3]),
            "five": lambda: [*four, []], "none": lambda: None, "int": lambda: 7}[recipe["data"]]()
    return data, CONFIGS[recipe["config"]]


@settings(max_examples=300, deadline=None)
@given(recipe=RECIPE, bumps=st.lists(st.integers(0, 5), max_size=6))
def test_native_walk_is_the_python_walk(native, recipe, bumps):
    pool = [_new_tensor("plain", i) for i in range(6)]
    for i in bumps:
        pool[i].add_(1)
    data, config = materialize(recipe, pool)
    got = native(data, config)
    if got is None:
        assert not native_domain(data), "the native walk declined a problem of its domain"
        return
    assert native_domain(data), "the native walk decided a problem outside its domain"
    key, versions, tensors = got
    assert type(key) is bytes and key == identity_key(data, config)
    flat = flatten(data)
    assert len(tensors) == len(flat) and all(a is b for a, b in zip(tensors, flat))
    assert versions == sum(t._version for t in flat)
    meta = native_probe.METADATA(tensors)
    if meta is None:
        assert any(type(t) is Sub for t in flat), "the native metadata declined plain tensors"
    else:
        assert meta == metadata(flat)


@settings(max_examples=200, deadline=None)
@given(first=RECIPE, second=RECIPE)
def test_native_keys_are_equal_exactly_when_python_keys_are(native, first, second):
    """Two problems over the same objects: equal native keys iff equal Python keys (where the
    native walk declines, the Python key is the one used)."""
    pool = [_new_tensor("plain", i) for i in range(6)]
    a, ca = materialize(first, pool)
    b, cb = materialize(second, pool)

    def key(data, config):
        got = native(data, config)
        return got[0] if got is not None else identity_key(data, config)

    assert (key(a, ca) == key(b, cb)) == (identity_key(a, ca) == identity_key(b, cb))


def test_the_walk_check_catches_a_wrong_native_walk(native):
    """The comparisons above fail for a native walk that drops a tensor's version, or a tensor."""
    data = ([(torch.zeros(2), torch.zeros(2), torch.zeros(2))], [(torch.zeros(2), torch.zeros(2))],
            [(torch.zeros(2), torch.zeros(2))], [(1, 2, 3, 4)])
    data[0][0][0].add_(1)
    key, versions, tensors = native(data, CONFIGS[0])
    assert key == identity_key(data, CONFIGS[0]) and versions == 1 and len(tensors) == 7
    # regrouped across the lists: the same flat tensors, the same entry lengths, another key
    (abc,), (sf,), (bl,), sizes = data
    regrouped = ([abc, sf], [bl], [], sizes)
    assert native(regrouped, CONFIGS[0])[0] != key
    assert identity_key(regrouped, CONFIGS[0]) != key


@pytest.mark.parametrize("edit", ["clear", "shorter_entry", "more_entries", "other_tensors"])
def test_a_finalizer_editing_the_problem_during_the_walk_never_corrupts_it(native, edit):
    """The walk's allocations may run the cyclic GC (Python 3.11 collects inside an allocation),
    hence a finalizer that edits the very lists being walked: the result is None or the walk of
    the problem before or after the edit, never a mix (an earlier build that trusted its first
    pass wrote past its buffers here and crashed the interpreter)."""
    pool = [torch.zeros(2) for _ in range(12)]
    abc = [tuple(pool[0:3]), tuple(pool[3:6])]
    data = [abc, [tuple(pool[6:8])], [tuple(pool[8:10])], [(1, 2, 3, 4)]]
    ran = []

    class Editor:
        def __del__(self):
            ran.append(edit)
            if edit == "clear":
                abc.clear()
            elif edit == "shorter_entry":
                abc[1] = (pool[10],)
            elif edit == "more_entries":
                abc.extend([tuple(pool[0:3])] * 50)
            else:
                abc[0] = (pool[11], pool[10], pool[9])

    def walk():
        flat = flatten(data)
        return identity_key(data, None), [id(t) for t in flat], sum(t._version for t in flat)

    before = walk()
    threshold = gc.get_threshold()
    gc.collect()
    editor = Editor()
    editor.cycle = editor
    del editor
    keep = [[] for _ in range(200)]  # empties the list free list: the walk's list is a GC allocation
    gc.set_threshold(1)
    try:
        got = native(data, None)
    finally:
        gc.set_threshold(*threshold)
    del keep
    gc.collect()
    assert ran == [edit]
    if got is not None:
        assert (got[0], [id(t) for t in got[2]], got[1]) in (before, walk())


# ---- the metadata an entry is checked against after an in-place write -----------------------

def _metadata_tensor(kind: str, base: torch.Tensor):
    if kind == "same":
        return base
    if kind == "clone":
        return base.clone()
    if kind == "transposed":
        return base.t() if base.dim() == 2 else base
    if kind == "offset":
        return base.view(-1)[1:] if base.numel() > 1 else base
    if kind == "other_dtype":
        return base.view(torch.int32)
    if kind == "fp8":
        return base.view(torch.uint8).view(torch.float8_e4m3fn)
    if kind == "fp4":
        return base.view(torch.uint8).view(torch.float4_e2m1fn_x2)
    if kind == "unit_stride":
        return base.as_strided((1, *base.shape), (7, *base.stride()))
    if kind == "zero_dim":
        return torch.tensor(3.0)
    if kind == "empty":
        return torch.empty(0, 4)
    if kind == "meta":
        return torch.empty(base.shape, device="meta")
    if kind == "param":
        return torch.nn.Parameter(base.clone(), requires_grad=False)
    if kind == "sub":
        return base.as_subclass(Sub)
    if kind == "sparse":
        return base.to_sparse()
    if kind == "lazy_clone":
        return torch._lazy_clone(base)
    if kind == "inference":
        with torch.inference_mode():
            return base.clone()
    if kind == "cuda":
        return base.cuda() if torch.cuda.is_available() else base
    if kind == "not_a_tensor":
        return 3
    raise ValueError(kind)


METADATA_KINDS = ("same", "clone", "transposed", "offset", "other_dtype", "fp8", "fp4", "unit_stride", "zero_dim",
                  "empty", "meta", "param", "sub", "sparse", "lazy_clone", "inference", "cuda", "not_a_tensor")


@settings(max_examples=200, deadline=None)
@given(kinds=st.lists(st.tuples(st.sampled_from(METADATA_KINDS), st.integers(0, 2)), max_size=6))
def test_native_metadata_is_the_python_metadata(native, kinds):
    pool = [torch.zeros(4, 6), torch.zeros(2, 8), torch.zeros(3, 2)]
    tensors = [_metadata_tensor(kind, pool[i]) for kind, i in kinds]
    got = native_probe.METADATA(tensors)
    exact = all(type(t) in (torch.Tensor, torch.nn.Parameter) and t.layout == torch.strided for t in tensors)
    if got is None:
        assert not exact, "the native metadata declined a list of its domain"
        return
    assert exact, "the native metadata decided a list outside its domain"
    assert got == metadata(tensors)
    # one tensor's bytes equal another's exactly when pointer, dtype, device, sizes and strides do
    for t in tensors:
        for u in tensors:
            same = (t.data_ptr(), t.dtype, t.device, tuple(t.shape), t.stride()) == (
                u.data_ptr(), u.dtype, u.device, tuple(u.shape), u.stride())
            assert (native_probe.METADATA([t]) == native_probe.METADATA([u])) == same


# ---- two caches, one native, one Python, against the contract ------------------------------

PARTS = 3


class NativeVsPythonMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.native_fn = native_or_skip()
        self.counting = Counting(self.native_fn)
        native_probe.PROBE = self.counting
        self.stream = [7]
        self.py = FastPath(64, stream_id=lambda device_index: self.stream[0], native=False)
        self.nat = FastPath(64, stream_id=lambda device_index: self.stream[0], native=True)
        self.model: dict = {}  # structure key -> (stream, metadata, weakrefs of the tensors)
        self.pool: list = []
        self.shape = "list"
        self.config = CONFIGS[0]
        self.calls = 0

    def teardown(self):
        native_probe.PROBE = self.native_fn

    # -- the problem ---------------------------------------------------------------------
    @initialize(groups=st.integers(1, 3))
    def problem(self, groups):
        self.pool = [_new_tensor("plain", i) for i in range(7 * groups + 2)]
        it = iter(self.pool)
        self.parts = [[tuple(next(it) for _ in range(n)) for _ in range(groups)] for n in (3, 2, 2)]
        self.sizes = [(8 * (g + 1), 16, 64, 1) for g in range(groups)]
        self.call()

    def data(self):
        four = [*self.parts, self.sizes]
        return {"list": four, "tuple": tuple(four), "three": tuple(four[:3]), "five": [*four, None],
                "none": None}[self.shape]

    def snapshot(self, data):
        """The contract's view: None where nothing may hit (nor be stored)."""
        if type(data) not in (list, tuple) or len(data) != 4:
            return None
        parts, sizes = data[:3], data[3]
        if not all(type(p) in (list, tuple) and all(type(e) in (list, tuple) for e in p) for p in parts):
            return None
        flat = [x for p in parts for e in p for x in e]
        if not all(isinstance(t, torch.Tensor) and not t.is_inference() for t in flat):
            return None
        if sizes and all(type(s) is tuple for s in sizes):
            skey = ("id", tuple(map(id, sizes)))
        else:
            skey = ("value", tuple(tuple((type(x), x) for x in s) for s in sizes))
        structure = tuple(tuple(tuple(map(id, e)) for e in p) for p in parts)
        described = tuple((t.data_ptr(), t.dtype, t.device, tuple(t.shape), t.stride()) for t in flat)
        return (id(self.config), structure, skey), described, flat

    @rule()
    def call(self):
        self.calls += 1
        data = self.data()
        hp, tp, kp = self.py.probe(data, self.config)
        hn, tn, kn = self.nat.probe(data, self.config)
        assert (hp is None) == (hn is None), f"python hit={hp is not None}, native hit={hn is not None}"
        assert kp == kn, "the two probes computed different keys"
        assert (tp is None) == (tn is None) and (tp is None or all(a is b for a, b in zip(tp, tn, strict=True)))
        if hp is not None:
            assert hp.launch_args == hn.launch_args
        snap = self.snapshot(data)
        for k in [k for k, (_, _, refs) in self.model.items() if any(r() is None for r in refs)]:
            del self.model[k]  # a freed tensor evicted it
        expected = (snap is not None and self.model.get(snap[0], (None,))[:2] == (self.stream[0], snap[1]))
        assert (hp is not None) == expected, f"hit={hp is not None}, the contract says {expected}"
        if hp is None and snap is not None:  # the miss path stores what passed validation
            token = ("launch", self.calls)
            self.py.store(data, self.config, None, token, tensors=tp, key=kp)
            self.nat.store(data, self.config, None, token, tensors=tn, key=kn)
            self.model[snap[0]] = (self.stream[0], snap[1], [weakref.ref(t) for t in snap[2]])

    # -- changes a caller makes between calls ---------------------------------------------
    def _slots(self):
        return [(p, e, j) for p in range(PARTS) for e in range(len(self.parts[p])) for j in range(len(self.parts[p][e]))]

    def _set(self, slot, value):
        p, e, j = slot
        entry = self.parts[p][e]
        if type(entry) is list:
            entry[j] = value  # the same list, edited in place
        else:
            self.parts[p][e] = tuple(value if i == j else x for i, x in enumerate(entry))

    @rule(i=st.integers(0, 99), op=st.sampled_from(["add_", "resize_", "as_strided_", "set_", "transpose_",
                                                    "alias_write", "nothing"]))
    def in_place(self, i, op):
        slots = self._slots()
        if slots:
            p, e, j = slots[i % len(slots)]
            t = self.parts[p][e][j]
            if isinstance(t, torch.Tensor) and not t.is_inference() and type(t) is not Sub:
                if op == "add_":
                    t.add_(1)
                elif op == "resize_":
                    t.resize_(t.numel() + 1)
                elif op == "as_strided_":
                    t.as_strided_((1,), (1,))
                elif op == "set_":
                    t.set_(torch.zeros(5).untyped_storage())
                elif op == "transpose_" and t.dim() == 2:
                    t.transpose_(0, 1)
                elif op == "alias_write":  # new values through another tensor: the counter of t stays
                    torch.empty(0, dtype=t.dtype).set_(t.untyped_storage()).fill_(3.0)
        self.call()

    @rule(i=st.integers(0, 99), what=st.sampled_from(["pool", "plain", "param", "sub", "inference", "bumped",
                                                      "int", "none"]), k=st.integers(0, 99))
    def replace(self, i, what, k):
        slots = self._slots()
        if slots:
            if what == "pool":
                value = self.pool[k % len(self.pool)]
            elif what in ("int", "none"):
                value = 5 if what == "int" else None
            else:
                value = _new_tensor(what, k)
                self.pool.append(value)
            self._set(slots[i % len(slots)], value)
        self.call()

    @rule(src=st.integers(0, 99), dst=st.integers(0, 99))
    def regroup(self, src, dst):
        """The last tensor of one entry moves to another (same list or another): flat order may stay."""
        entries = [(p, e) for p in range(PARTS) for e in range(len(self.parts[p]))]
        (ps, es), (pd, ed) = entries[src % len(entries)], entries[dst % len(entries)]
        source = self.parts[ps][es]
        if source:
            moved = source[-1]
            self.parts[ps][es] = type(source)(source[:-1])
            target = self.parts[pd][ed]
            self.parts[pd][ed] = type(target)((*target, moved))
        self.call()

    @rule(src=st.integers(0, 2), front=st.booleans())
    def move_entry(self, src, front):
        """A whole entry moves to the neighbouring list (the flat order may stay the same)."""
        dst = (src + 1) % PARTS if front else (src - 1) % PARTS
        if self.parts[src]:
            entry = self.parts[src].pop(-1 if front else 0)
            if front:
                self.parts[dst].insert(0, entry)
            else:
                self.parts[dst].append(entry)
        self.call()

    @rule(level=st.sampled_from(["entry", "sizes", "size"]), i=st.integers(0, 99))
    def flip_container(self, level, i):
        flip = {list: tuple, tuple: list}
        if level == "entry":
            entries = [(p, e) for p in range(PARTS) for e in range(len(self.parts[p]))]
            if entries:
                p, e = entries[i % len(entries)]
                self.parts[p][e] = flip[type(self.parts[p][e])](self.parts[p][e])
        elif level == "sizes":
            self.sizes = flip[type(self.sizes)](self.sizes)
        elif self.sizes:
            sizes = list(self.sizes)
            g = i % len(sizes)
            sizes[g] = flip.get(type(sizes[g]), tuple)(sizes[g])
            self.sizes = type(self.sizes)(sizes)
        self.call()

    @rule(g=st.integers(0, 99), what=st.sampled_from(["same_values", "float", "bool", "namedtuple", "edit",
                                                      "edit_back", "append", "drop", "empty"]))
    def sizes_change(self, g, what):
        sizes = list(self.sizes)
        if what == "empty":
            sizes = []
        elif what == "append":
            sizes.append((8, 8, 64, 1))
        elif sizes:
            g = g % len(sizes)
            s = sizes[g]
            if what == "same_values":
                sizes[g] = type(s)(list(s)) if type(s) is not Size else Size(*s)
            elif what == "float":
                sizes[g] = tuple((*s[:3], 1.0))
            elif what == "bool":
                sizes[g] = tuple((*s[:3], True))
            elif what == "namedtuple":
                sizes[g] = Size(*s)
            elif what in ("edit", "edit_back"):
                if type(s) is list:
                    s[3] = 2 if what == "edit" else 1  # the same list object, edited in place
                else:
                    sizes[g] = [*s[:3], 2 if what == "edit" else 1]
            elif what == "drop":
                del sizes[g]
        self.sizes = sizes if type(self.sizes) is list else tuple(sizes)
        self.call()

    @rule(shape=st.sampled_from(["list", "tuple", "list", "tuple", "three", "five", "none"]))
    def data_shape(self, shape):
        self.shape = shape
        self.call()

    @rule(c=st.integers(0, 1))
    def config(self, c):
        self.config = CONFIGS[c]
        self.call()

    @rule(s=st.sampled_from([7, 8]))
    def stream(self, s):
        self.stream[0] = s
        self.call()

    @rule(i=st.integers(0, 99))
    def free(self, i):
        """A tensor of the problem is freed (replaced by a new one): its entries are evicted."""
        slots = self._slots()
        if slots:
            slot = slots[i % len(slots)]
            p, e, j = slot
            old = self.parts[p][e][j]
            if isinstance(old, torch.Tensor):
                ref = weakref.ref(old)
                for s in slots:  # every occurrence
                    if self.parts[s[0]][s[1]][s[2]] is old:
                        self._set(s, _new_tensor("plain", i))
                self.pool = [t for t in self.pool if t is not old]
                del old
                assert ensure_freed(ref), "the test itself still holds the freed tensor"
        self.call()

    @invariant()
    def same_sizes(self):
        assert len(self.py) == len(self.nat)


NativeVsPythonMachine.TestCase.settings = settings(max_examples=100, stateful_step_count=30, deadline=None)


def test_native_and_python_caches_decide_alike(native):
    runs = []
    orig = NativeVsPythonMachine.teardown

    def teardown(self):
        runs.append((self.counting.decided, self.counting.declined))
        orig(self)

    NativeVsPythonMachine.teardown = teardown
    try:
        NativeVsPythonMachine.TestCase().runTest()
    finally:
        NativeVsPythonMachine.teardown = orig
    decided = sum(d for d, _ in runs)
    declined = sum(n for _, n in runs)
    assert decided > 0 and declined > 0, f"the native walk decided {decided} and declined {declined} calls"
