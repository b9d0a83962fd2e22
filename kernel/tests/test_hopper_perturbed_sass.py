"""The perturbed sm_90a builds, checked on a CPU from their SASS (kernel/perturbation.py).

* a production build (``perturbation=None``) and a perturbation with delays and poison both off
  compile to the same instruction stream: disabled sites trace nothing;
* production has no delay instruction (a plain ``NANOSLEEP``; the pipelines' own wait loops use
  ``NANOSLEEP.SYNCS``) and no poison store; the perturbed build has its seeded delays, every
  immediate one a value of the seed's delay table, and the jittered build its register delays;
* the run-time build (one build for every seed) has a register delay at every site
  the compile-time build can delay, and its delay table is an argument (production: none);
* the run-time build keeps production's wgmma waits (ptxas serializes nothing) in the variants
  where it once did not, and in the run-time builds of the catalog's wgmma-wait mutants
  (``NVFP4_SASS_ALL_VARIANTS=1``: every declared variant, about 2 minutes here);
* the consumers' ``decode`` site (a register delay plus the seed's warp skew) sits between the
  barrier that ends a sub-block and the next dequant's first shared read, in the delays build
  only; in the build of the missing-publish-barrier mutant a raw-stage poison store follows it
  before any barrier (what the skew exposes);
* every poison store sits where the protocol hands the region back (profiling.poison_sites): after
  a barrier or an mbarrier wait with no shared read in between, and before the release (a barrier,
  an mbarrier arrive) or, on the producer side, before the fenced async copy that refills it; in
  the cooperative layouts and in every production variant;
* phase 1 of the prepass build (kernel/perturbation.py role ``phase1``): the run-time build reads
  every phase-1 site's table word and puts a delay on each side of each phase-1 synchronization
  instruction (claims, publish, completion wait, count-through and reset), production none; the
  checked build has the checker's claim map and reset read-back, the unchecked one neither.
"""

import importlib
import json
import os
import subprocess
import sys
import tempfile

import pytest

from kernel.perturbation import Perturbation, runtime_perturbation
from profiling import poison_sites, sass

pytestmark = pytest.mark.compile

launch = importlib.import_module("kernel.hopper.launch")
from kernel.hopper.variants import DECLARED_VARIANTS, PRODUCTION_VARIANTS, SPLIT_WARP_CONFIG

# the default variant (cp.async, one warpgroup), the fastest (TMA, A from registers, two
# warpgroups), and split roles (dequant warpgroups, fp16 mbarrier ring)
LABELS = (
    "h90_m128n128k256_s3_wg1_fp16",
    "h90_m128n128k256_s4_wg2_swap_fp16_tma_prmt_rs",
    "h90_m128n128k256_s4_wg2_dq1b4_swap_fp16_tma_prmt_rs",
    # the fastest variant with C staged through shared memory
    "h90_m128n128k256_s4_wg2_swap_fp16_tma_prmt_rs_es",
)
# the cooperative layouts (barriers and fp16 ping-pong buffers), not the split roles
COOPERATIVE = tuple(label for label in LABELS if "_dq" not in label)
# the poison-site rules: the cooperative layouts and every production variant
POISON_LABELS = COOPERATIVE + tuple(c.label for c in PRODUCTION_VARIANTS if c.label not in COOPERATIVE)
# the production prepass build (phase 1)
PREPASS = SPLIT_WARP_CONFIG.label
DELAYS = Perturbation(3, max_delay_ns=4000, density_pct=70, poison=False)
JITTERED = Perturbation(4, poison=False, jitter="warp")
POISON_ONLY = Perturbation(1, delays=False, poison=True)
DISABLED = Perturbation(1, delays=False, poison=False)
# the run-time build (what the properties use): every site reads its delay from the device table
RUNTIME = Perturbation(3, max_delay_ns=4000, density_pct=70, poison=False, runtime=True)
# filler wgmmas (real shape, zero A, into the real accumulator) ahead of every real group
FILLED = Perturbation(3, poison=True, wgmma_fill=16, runtime=True)
# what the perturbed property runs on the seeds without fillers: poison on, every delay from the table
PROPERTY = runtime_perturbation(1).compile_form
assert PROPERTY.wgmma_fill == 0 and PROPERTY.poison and PROPERTY.runtime
# the property's other two run-time builds: "quiet" (no delay site: production's schedule, plus
# poison) and "window" (no delay site, FILL fillers in every FILL_STRIDE-th wgmma group)
QUIET = runtime_perturbation(2).compile_form
WINDOW = runtime_perturbation(3).compile_form
assert (QUIET.kind, WINDOW.kind) == ("quiet", "window") and QUIET.poison and WINDOW.poison
# the property's build without the happens-before checker (Perturbation.checks)
UNCHECKED = runtime_perturbation(1, checks=False).compile_form
assert PROPERTY.checks and QUIET.checks and WINDOW.checks and not UNCHECKED.checks
BUILDS = {"unchecked": UNCHECKED, "production": None, "delays": DELAYS, "jittered": JITTERED, "poison": POISON_ONLY, "disabled": DISABLED,
          "runtime": RUNTIME, "filled": FILLED, "property": PROPERTY, "quiet": QUIET, "window": WINDOW}
# the run-time build's wgmma waits: LABELS and the declared variants whose run-time build once serialized
# every wgmma (a predicated nanosleep per delay site; docs/results.md) and are still declared; every
# declared variant with NVFP4_SASS_ALL_VARIANTS=1
ONCE_SERIALIZED = (
    "h90_m64n128k256_s4_wg1_swap_fp16",
    "h90_m128n128k256_s4_wg1_fp16_tma_prmt",
)
_CONFIGS = {c.label: c for c in DECLARED_VARIANTS}
RUNTIME_LABELS = (tuple(c.label for c in DECLARED_VARIANTS) if os.environ.get("NVFP4_SASS_ALL_VARIANTS") == "1"
                  else LABELS + ONCE_SERIALIZED)


class _Builds(dict):
    """(label, build name) -> the kernel function's instructions, compiled on first use (so a
    ``-k LABEL`` selection compiles only that variant); the builds are the process's shared ones
    (the production builds are the other static tests' too)."""

    def __init__(self, static_builds):
        super().__init__()
        self.static_builds = static_builds
        self.configs = {c.label: c for c in DECLARED_VARIANTS}

    def __missing__(self, key):
        label, name = key
        self[key] = self.static_builds.code(self.configs[label], 8, perturbation=BUILDS[name])
        return self[key]


@pytest.fixture(scope="module")
def code(static_builds):
    return _Builds(static_builds)


def _text(code):
    return [f"{i.predicate} {i.opcode} {i.operands}" for i in code]


def _delays(code):
    return [i for i in code if i.opcode == "NANOSLEEP"]


@pytest.mark.parametrize("label", LABELS)
def test_disabled_perturbation_traces_the_production_code(code, label):
    assert _text(code[label, "disabled"]) == _text(code[label, "production"])


@pytest.mark.parametrize("label", LABELS)
def test_production_has_no_delays_and_no_poison(code, label):
    prod = code[label, "production"]
    assert not _delays(prod), f"{label}: production SASS has delay instructions {_delays(prod)[:3]}"
    assert not poison_sites.poison_stores(prod)


def _report_ops(code):
    """The checker's report atomics (kernel.hopper.ptx.hb_check*): an or of the rule's bit into
    the record and a compare-and-swap of the first site per check site (and a count, an add,
    which production's prepass claims also use)."""
    ors = [i for i in code if i.opcode.startswith("REDG.E.OR")]
    cas = [i for i in code if i.opcode.startswith("ATOMG.E.CAS")]
    adds = [i for i in code if i.opcode.startswith("REDG.E.ADD")]
    return ors, cas, adds


@pytest.mark.parametrize("label", LABELS + (PREPASS,))
def test_the_checker_is_compiled_into_the_checked_harness_builds_only(code, label):
    """Production and the harness build without ``checks`` have no report atomic; the checked
    build has the report at every check site: at least the sites every layout has (wgmma fence,
    reuse of the last buffer, producer exit, epilogue), one or, one compare-and-swap and one
    count each."""
    prod_ors, prod_cas, prod_adds = _report_ops(code[label, "production"])
    assert not prod_ors and not prod_cas
    assert _report_ops(code[label, "unchecked"])[:2] == ([], [])
    ors, cas, adds = _report_ops(code[label, "property"])
    # the prepass build also counts phase 1's publishes (one add: harness check_phase1_publish)
    shadow = 1 if code.configs[label].y_source == "prepass" else 0
    assert len(ors) >= 4 and len(ors) == len(cas) == len(adds) - len(prod_adds) - shadow, (
        label, len(ors), len(cas), len(adds), len(prod_adds))


@pytest.mark.parametrize("label", LABELS)
def test_seeded_delays_are_present_at_the_sites(code, label):
    got = _delays(code[label, "delays"])
    immediates = {int(i.operands.rstrip(" ;"), 16) for i in got}
    table = {v for v in DELAYS.table().values() if v}
    assert len(immediates) >= 3, f"{label}: only {len(immediates)} distinct delays in the perturbed SASS"
    assert immediates <= table, f"{label}: delays {sorted(immediates - table)} are not in the seed's table"
    jittered = _delays(code[label, "jittered"])
    assert jittered and all(i.operands.startswith("R") for i in jittered), "jittered delays must be run-time values"


@pytest.mark.parametrize("label", LABELS)
def test_run_time_build_reads_every_delay_from_its_table(code, label):
    """One build serves every seed: each site sleeps for a register value (the table word; ptxas
    branches around it where the word is 0); it has at least one delay per site the
    compile-time build delayed at, and no immediate delays."""
    got = _delays(code[label, "runtime"])
    assert got and all(i.operands.startswith("R") for i in got), got[:3]
    dense = _delays(code[label, "delays"])  # 70 % of the sites of the stalling roles
    assert len(got) >= len(dense), f"{label}: {len(got)} run-time delay sites, {len(dense)} compile-time"
    assert not _delays(code[label, "production"])


def _poison_kinds(cfg) -> set:
    """The (hand-back, release) kinds of the build's poison sites: the producer's, after the
    empty wait and before its fenced copy (every build; the prepass build's Y ring too); the
    consumers', after their barrier and before the raw stage's empty arrive (the builds whose
    consumers decode Y from the raw stage); an fp16 buffer's, between two barriers (two fp16
    buffers: with four, kernel.hopper.kernel needs no reuse barrier and poisons none)."""
    kinds = {("SYNCS", "LDGSTS" if cfg.loader == "cp_async" else "UTMALDG")}
    if cfg.y_source != "prepass":
        kinds.add(("BAR", "SYNCS"))
        if cfg.fp16_buffers == 2:
            kinds.add(("BAR", "BAR"))
    return kinds


@pytest.mark.parametrize("label", POISON_LABELS)
def test_poison_sites_are_where_the_protocol_hands_regions_back(code, label):
    sites = poison_sites.poison_sites(code[label, "poison"])
    bad = [s for s in sites if not s.legal]
    assert not bad, f"{label}: poison stores outside a hand-back window: {bad}"
    kinds = {(s.before.split(".")[0], s.after.split(".")[0]) for s in sites}
    want = _poison_kinds(code.configs[label])
    assert want <= kinds, (label, sorted(kinds), sorted(want))


# phase 1's synchronization instructions in the prepass build (the run-time build has no checker):
# the claims' and the count-through's ATOMG.E.ADD, the publish's REDG.E.ADD (red.release), the
# completion wait's LDG.E.STRONG.GPU (ld.acquire), the reset's STG.E.STRONG.GPU
_PHASE1_SYNC = ("ATOMG.E.ADD", "REDG.E.ADD", "LDG.E.STRONG", "STG.E.STRONG")


def _phase1_sites(ins):
    """Phase 1's synchronization instructions grouped by site: runs with no delay between them."""
    groups, last_delay = [], -1
    for n, i in enumerate(ins):
        if i.opcode == "NANOSLEEP":
            last_delay = n
        elif i.opcode.startswith(_PHASE1_SYNC):
            if groups and last_delay < groups[-1][-1]:
                groups[-1].append(n)
            else:
                groups.append([n])
    return groups


def test_phase1_sites_read_their_delays_from_the_table(code):
    """Every (phase1, site, when) slot of kernel.perturbation is read by the prepass build's
    run-time build (``LDG.E.CONSTANT`` at the slot's table offset); production reads none."""
    from kernel.perturbation import SITES, SLOT_INDEX, WHENS

    def loads(ins):
        return {i.operands.rstrip(" ;").rsplit("+", 1)[-1].rstrip("]") for i in ins
                if i.opcode.startswith("LDG.E.CONSTANT") and "+0x" in i.operands}

    got, prod = loads(code[PREPASS, "runtime"]), loads(code[PREPASS, "production"])
    want = {hex(4 * SLOT_INDEX["phase1", site, when]) for site in SITES["phase1"] for when in WHENS}
    assert want <= got, f"phase-1 slots never read: {sorted(want - got)}"
    assert not want & prod


def test_phase1_sync_instructions_sit_between_two_delays(code):
    """In the run-time build each phase-1 site (two claims, the publish, the completion wait, the
    count-through, the reset) has a register ``NANOSLEEP`` before its first synchronization
    instruction and after its last, with no CTA barrier between; production has the same
    synchronization instructions, in the same order, and no ``NANOSLEEP`` at all."""
    build, prod = code[PREPASS, "runtime"], code[PREPASS, "production"]
    ops = lambda ins: [i.opcode for i in ins if i.opcode.startswith(_PHASE1_SYNC)]  # noqa: E731
    assert ops(build) == ops(prod), (ops(build), ops(prod))
    assert not _delays(prod)
    sites = _phase1_sites(build)
    assert len(sites) == 6, [[build[n].opcode for n in g] for g in sites]
    for g in sites:
        before = next((i for i in reversed(build[:g[0]]) if i.opcode == "NANOSLEEP" or i.opcode.startswith("BAR")), None)
        after = next((i for i in build[g[-1] + 1:] if i.opcode == "NANOSLEEP" or i.opcode.startswith("BAR")), None)
        for side, i in (("before", before), ("after", after)):
            assert i is not None and i.opcode == "NANOSLEEP" and i.operands.startswith("R"), (
                f"no table delay {side} the phase-1 site at 0x{build[g[0]].offset:x} ({build[g[0]].opcode}): {i}")


def test_phase1_checks_are_compiled_into_the_checked_prepass_build_only(code):
    """The checked build marks each claim in the claim map (an ``ATOMG.E.OR`` per claim site: the
    first claim and the loop's) and reads the three counters back after the reset (three
    ``LDG.E.STRONG.GPU`` after the reset's stores); the unchecked run-time build and production
    have neither."""
    def census(ins):
        ors = sum(i.opcode.startswith("ATOMG.E.OR") for i in ins)
        resets = [n for n, i in enumerate(ins) if i.opcode.startswith("STG.E.STRONG")]
        read_back = sum(i.opcode.startswith("LDG.E.STRONG") for i in ins[resets[-1] + 1:resets[-1] + 8]) if resets else 0
        return ors, read_back

    assert census(code[PREPASS, "property"]) == (2, 3)
    assert census(code[PREPASS, "unchecked"]) == census(code[PREPASS, "production"]) == (0, 0)


@pytest.mark.parametrize("label", COOPERATIVE)
def test_two_buffer_wgmma_waits_leave_at_most_one_group_in_flight(code, label):
    """Two fp16 buffers: before a buffer is rewritten, the wgmma that read it (one sub-block
    back) must have retired, so no wgmma wait may leave more than one group in flight (a
    ``wait_group(2)`` lets it still read the buffer the next dequant overwrites)."""
    waits = [i for i in code[label, "production"] if i.opcode.startswith("WARPGROUP.DEPBAR")]
    assert waits, f"{label}: no wgmma wait found"
    lax = [i for i in waits if int(i.operands.split(",")[-1].strip().rstrip(";"), 16) > 1]
    assert not lax, f"{label}: wgmma waits leaving {[i.operands for i in lax]} in flight at 0x{lax[0].offset:x}"


@pytest.mark.parametrize("label", LABELS)
def test_filler_wgmmas_stay_asynchronous(code, label):
    """The filler build (``wgmma_fill``): every real wgmma group carries the fillers, in the
    group (HGMMAs of the real shape, no wait among them or before the group's commit), and the
    wgmma waits are the production ones (ptxas serialized nothing). Groups are counted between
    ``gsb0`` marks; a wait inside a run of HGMMAs closes a group (what a serialized filler looks
    like). The split variant's peeled first group is cut after its first HGMMA in production
    too (``ARRIVE; HGMMA; DEPBAR.LE gsb0, 0x0; ARRIVE; 7 HGMMAs``): there the first filler takes
    that place. The filler build may unroll a loop less, so groups and waits are compared as
    sets, and the filler build may have fewer waits, never more."""
    def groups(ins):
        out, cur = [], []
        for i in ins:
            if i.opcode.startswith("HGMMA"):
                cur.append(i)
                if "gsb0" in i.operands:
                    out.append(cur)
                    cur = []
            elif i.opcode.startswith("WARPGROUP.DEPBAR") and cur:
                out.append(cur)  # a group cut by a wait: serialized
                cur = []
        return out

    def waits(ins):
        return [i.operands for i in ins if i.opcode.startswith("WARPGROUP.DEPBAR")]

    prod, filled = code[label, "production"], code[label, "filled"]
    assert set(waits(filled)) == set(waits(prod)) and len(waits(filled)) <= len(waits(prod)), (
        f"{label}: ptxas serialized the fillers: {len(waits(filled))} waits, production {len(waits(prod))}")
    pg = {len(g) for g in groups(prod)}
    cfg = code.configs[label]
    atoms = (cfg.tile_n if cfg.swapped else cfg.tile_m) // (64 * cfg.consumer_warpgroups)  # m64 atoms per warpgroup
    per_group = FILLED.wgmma_fill * atoms
    assert {len(g) for g in groups(filled)} == {n + per_group if n > 1 else n for n in pg}, (
        label, sorted(pg), sorted({len(g) for g in groups(filled)}))
    shapes = {i.opcode for i in filled if i.opcode.startswith("HGMMA")}
    assert shapes == {i.opcode for i in prod if i.opcode.startswith("HGMMA")}, shapes  # the real shape only


def _groups(ins):
    """HGMMAs per wgmma group, in code order (a group ends at its ``gsb0``; a wait inside a run of
    HGMMAs cuts it: what a serialized build looks like)."""
    out, cur = [], 0
    for i in ins:
        if i.opcode.startswith("HGMMA"):
            cur += 1
            if "gsb0" in i.operands:
                out.append(cur)
                cur = 0
        elif i.opcode.startswith("WARPGROUP.DEPBAR") and cur:
            out.append(-cur)
            cur = 0
    return out


@pytest.mark.parametrize("label", COOPERATIVE)
def test_quiet_and_window_builds_run_production_s_schedule_with_slow_groups(code, label):
    """The "quiet" and "window" builds trace no delay site (no ``NANOSLEEP``: the consumers run as
    fast as production) and keep production's wgmma waits; "window" fills every second group
    (the even sub-blocks: FILL x atoms real-shape HGMMAs ahead of the real ones, in the group) and
    leaves the next one as production has it, so a long group is followed by a short one whose
    issue does not wait for the long one to drain (docs/results.md)."""
    from kernel.perturbation import FILL, FILL_STRIDE

    prod = code[label, "production"]
    cfg = code.configs[label]
    atoms = (cfg.tile_n if cfg.swapped else cfg.tile_m) // (64 * cfg.consumer_warpgroups)
    for name in ("quiet", "window"):
        build = code[label, name]
        assert not _delays(build), f"{label} [{name}]: {len(_delays(build))} delay instructions"
        assert _waits(build) == _waits(prod), (label, name, _waits(build), _waits(prod))
    assert _groups(code[label, "quiet"]) == _groups(prod)
    want = [n + (FILL * atoms if i % FILL_STRIDE == 0 else 0) for i, n in enumerate(_groups(prod))]
    assert _groups(code[label, "window"]) == want, (label, _groups(code[label, "window"]), want)


def _waits(ins):
    return [i.operands.rstrip(" ;") for i in ins if i.opcode.startswith("WARPGROUP.DEPBAR")]


def _not_serialized(label, build, prod):
    """The run-time build keeps production's waits: the same kinds (``gsb0, 0x1`` between real
    groups, ``0x0`` before the epilogue), no more of them, and no more full drains (a serialized
    build has one ``DEPBAR.LE gsb0, 0x0`` per HGMMA). Fewer waits are allowed: with poison on,
    ptxas unrolls the k loop of ``..._k128_s5`` less (16 HGMMAs, 3 waits, not 48 and 7)."""
    got, want = _waits(build), _waits(prod)
    drains = lambda w: sum(x.endswith("0x0") for x in w)  # noqa: E731
    assert set(got) == set(want) and len(got) <= len(want) and drains(got) <= drains(want), (
        f"{label}: run-time build waits {len(got)} ({drains(got)} full drains), production {len(want)} "
        f"({drains(want)}): ptxas serialized the wgmmas")


@pytest.mark.parametrize("label", RUNTIME_LABELS)
def test_run_time_build_keeps_the_production_wgmma_waits(code, label):
    """The run-time build's delay sites (``ptx.sleep_ns_from_table``: branch-free, the jitter share
    computed once per thread) do not serialize the wgmmas: checked on the property's build
    (poison on) and on the poison-free one. A predicated ``@p nanosleep`` per site made ptxas put a
    ``DEPBAR.LE gsb0, 0x0`` after every HGMMA in five declared variants (``ONCE_SERIALIZED``: those still declared) (C7520 "WG.AR
    in divergent path"), and so did a branch-free site that read ``%tid`` itself."""
    prod = code[label, "production"]
    for name in ("property", "runtime"):
        _not_serialized(f"{label} [{name}]", code[label, name], prod)


# the catalog's lax-wait mutants: their perturbed verdict needs the wgmma that read the buffer being
# rewritten still in flight, so their own run-time builds must keep their own (lax) waits (the
# other catalog mutants' run-time builds were checked once, docs/results.md)
WINDOW_MUTANTS = ("hopper_sync_wgmma_wait_lax__rs", "hopper_sync_wgmma_wait_lax__default")
_MUTANT_WAITS = r"""
import importlib, json, sys
from kernel.perturbation import runtime_perturbation
from kernel.hopper.variants import DECLARED_VARIANTS
from profiling import sass
launch = importlib.import_module("kernel.hopper.launch")
configs = {c.label: c for c in DECLARED_VARIANTS}
out = {}
for label in sys.argv[2:]:
    for name, pert in (("production", None), ("property", runtime_perturbation(1, checks=False).compile_form),
                       ("window", runtime_perturbation(3, checks=False).compile_form)):
        ins = sass.kernel_code(launch.static_build(configs[label], sys.argv[1] + "/" + name, perturbation=pert)["cubin"])
        out[label, name] = [i.operands.rstrip(" ;") for i in ins if i.opcode.startswith("WARPGROUP.DEPBAR")]
print(json.dumps([[k[0], k[1], v] for k, v in out.items()]))
"""


def test_wgmma_wait_mutants_run_time_builds_keep_their_waits(tmp_path):
    """The catalog's lax-wait mutant (``wait_group(2)``; both variants share the edit, so one
    mutated copy) on its run-time build: the mutant's own waits, not one drain per HGMMA (with a
    predicated ``@p nanosleep`` per site the ``_rs`` build was serialized, so the perturbed
    property ran it fully synchronous and could not see the lax wait). Checked on the run-time
    builds without the happens-before checker: with it (``checks``, the property's builds) ptxas serializes this mutant's ``_rs`` build (more registers live: it then has
    no room for a third fragment set in flight), and that does not matter there: the checker
    sees the lax wait from its own counts of groups committed and waited for, not from a race."""
    from ci import mutation_runner as mr
    from ci.mutants import MUTANTS

    mutants = [m for m in MUTANTS if m.name in WINDOW_MUTANTS]
    assert len({(m.target, m.original, m.replacement) for m in mutants}) == 1  # one edit, two variants
    root = tmp_path / "mutant"
    mr.make_copy(root, mr.repo_files(), [])
    mutants[0].apply(root)
    env = dict(os.environ, PYTHONPATH=str(root), PYTHONDONTWRITEBYTECODE="1", CUTE_DSL_ARCH="sm_90a")
    with tempfile.TemporaryDirectory() as dump:
        proc = subprocess.run([sys.executable, "-c", _MUTANT_WAITS, dump, *sorted({m.variant for m in mutants})],
                              cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = {(label, name): waits for label, name, waits in json.loads(proc.stdout.strip().splitlines()[-1])}
    for m in mutants:
        prod = got[m.variant, "production"]
        assert any(w.endswith("0x2") for w in prod), f"{m.name}: the mutant's lax wait is not in its SASS"
        build = got[m.variant, "property"]
        drains = lambda w: sum(x.endswith("0x0") for x in w)  # noqa: E731
        assert set(build) == set(prod) and len(build) <= len(prod) and drains(build) <= drains(prod), (
            f"{m.name}: run-time build waits {build}, the mutant's production {prod}")
        # the window build (no delay site, fillers) keeps the mutant's lax waits exactly
        assert got[m.variant, "window"] == prod, f"{m.name}: window build waits {got[m.variant, 'window']}, {prod}"


def _decode_sites(ins):
    """Indices of the delay instructions right before a dequant's first shared read: a
    ``NANOSLEEP`` whose next barrier, mbarrier, shared access, sleep or HGMMA is an ``LDS``, ahead
    of the staged epilogue's first ``STSM`` (its ``epilogue_read`` site is the same pattern)."""
    kinds = ("BAR", "SYNCS", "LDS", "STS", "NANOSLEEP", "HGMMA")
    end = next((n for n, i in enumerate(ins) if i.opcode.startswith("STSM")), len(ins))
    out = []
    for n, i in enumerate(ins[:end]):
        if i.opcode == "NANOSLEEP":
            nxt = next((j for j in ins[n + 1:] if j.opcode.startswith(kinds)), None)
            if nxt is not None and nxt.opcode.startswith("LDS"):
                out.append(n)
    return out


def _first_after(ins, n, poison):
    """What comes first after instruction ``n``: a ``BAR.SYNC`` or a poison store."""
    return next((("BAR" if ins[k].opcode.startswith("BAR.SYNC") else "POISON") for k in range(n + 1, len(ins))
                 if ins[k].opcode.startswith("BAR.SYNC") or k in poison), None)


@pytest.mark.parametrize("label", COOPERATIVE)
def test_decode_site_skews_a_warp_between_the_barrier_and_the_dequant_reads(code, label):
    """The consumers' ``decode`` site (kernel/perturbation.py): in the property's delays build a
    register delay (the slot's word plus the seed's warp skew) right after the barrier that ends
    a sub-block and before the next dequant's first shared read, in every sub-block after the
    first (the first follows the raw stage's mbarrier wait); none in production, quiet, window.
    In production order a barrier comes after it before any poison store. Read on the property's
    build without the happens-before checker: the checker's own shared loads of its shadow state
    (after the skewed sleep before the wgmma wait) would pass for a dequant's first read in this
    instruction-pattern search; its sites are tested by
    test_the_checker_is_compiled_into_the_checked_harness_builds_only."""
    prop = code[label, "unchecked"]
    after_barrier = [n for n in _decode_sites(prop)
                     if next(j for j in reversed(prop[:n]) if j.opcode.startswith(("BAR", "SYNCS", "LDS", "STS",
                                                                                   "NANOSLEEP"))).opcode.startswith("BAR.SYNC")]
    n_sub = 4  # 256-K tiles of 64-K sub-blocks
    assert len(after_barrier) >= n_sub - 1, f"{label}: {len(after_barrier)} decode sites after a barrier"
    assert all(prop[n].operands.startswith("R") for n in after_barrier)
    for name in ("production", "quiet", "window"):
        assert not _decode_sites(code[label, name]), name
    poison = set(poison_sites.poison_stores(prop))
    assert {_first_after(prop, n, poison) for n in _decode_sites(prop)} == {"BAR"}


_MUTANT_DECODE = r"""
import importlib, json, sys
from kernel.perturbation import runtime_perturbation
from kernel.hopper.variants import DECLARED_VARIANTS
from profiling import sass
launch = importlib.import_module("kernel.hopper.launch")
configs = {c.label: c for c in DECLARED_VARIANTS}
ins = sass.kernel_code(launch.static_build(configs[sys.argv[2]], sys.argv[1], perturbation=runtime_perturbation(1).compile_form)["cubin"])
print(json.dumps([[i.predicate, i.opcode, i.operands] for i in ins]))
"""


def test_missing_publish_barrier_lets_a_skewed_warp_read_a_poisoned_stage(tmp_path):
    """The aim of the decode site's warp skew, in SASS: ``hopper_sync_no_publish_barrier__default``
    (one warpgroup) has, after the last sub-block's decode site, the raw stage's poison stores
    before any barrier, so the warps that did not sleep poison the stage while the skewed warp has
    not read it yet (in production a barrier always comes first)."""
    from ci import mutation_runner as mr
    from ci.mutants import BY_NAME

    m = BY_NAME["hopper_sync_no_publish_barrier__default"]
    root = tmp_path / "mutant"
    mr.make_copy(root, mr.repo_files(), [])
    m.apply(root)
    env = dict(os.environ, PYTHONPATH=str(root), PYTHONDONTWRITEBYTECODE="1", CUTE_DSL_ARCH="sm_90a")
    with tempfile.TemporaryDirectory() as dump:
        proc = subprocess.run([sys.executable, "-c", _MUTANT_DECODE, dump, m.variant],
                              cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads(proc.stdout.strip().splitlines()[-1])
    ins = [sass.Instruction("kernel", n, *r) for n, r in enumerate(rows)]
    poison = set(poison_sites.poison_stores(ins))
    firsts = [_first_after(ins, n, poison) for n in _decode_sites(ins)]
    assert "POISON" in firsts, firsts


# the staged epilogue (C through shared memory): the cooperative layout's and the prepass build's
STAGED_C = tuple(label for label in (*LABELS, PREPASS) if _CONFIGS[label].epilogue == "smem")


def _publish_barriers(ins):
    """Index of the ``BAR.SYNC`` that ends each run of ``STSM`` (a staged-epilogue pass written)."""
    bars = (next((k for k in range(last, len(ins)) if ins[k].opcode.startswith("BAR.SYNC")), None)
            for _, last in sass.runs(ins, "STSM", ("BAR.SYNC",)))
    return [b for b in bars if b is not None]


@pytest.mark.parametrize("label", STAGED_C)
def test_epilogue_read_site_sleeps_between_the_publish_barrier_and_the_read_back(code, label):
    """The consumers' ``epilogue_read`` site (kernel/perturbation.py, a skewed site): in the
    run-time build a register delay (the slot's word plus the seed's warp skew, always executed)
    right after each barrier that publishes a staged pass of C and before the pass's first shared
    read; in production the read follows the barrier directly."""
    for name, want in (("runtime", "NANOSLEEP"), ("production", "LDS")):
        ins = code[label, name]
        bars = _publish_barriers(ins)
        assert bars, f"{label} {name}: no staged epilogue pass (the test no longer matches the kernel)"
        for b in bars:
            nxt = next((i for i in ins[b + 1:] if i.opcode == "NANOSLEEP" or i.opcode.startswith(("LDS", "BAR", "STSM"))),
                       None)
            assert nxt is not None and nxt.opcode.startswith(want), (
                f"{label} {name}: after the publish barrier at 0x{ins[b].offset:x} comes {nxt and nxt.opcode}, not {want}")
            if want == "NANOSLEEP":
                assert nxt.operands.startswith("R"), nxt
