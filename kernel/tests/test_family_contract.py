"""Every kernel family honours one host contract, checked on the CPU through the dry-run path.

The registry (``kernel.family``) is what subjects, benchmarks, the ncu sweep and the static
report iterate; a family that drifts from the shared pipeline (its own validation, its own
plan, another return type) fails here, not on a GPU.
"""

from __future__ import annotations

import dataclasses

import pytest

import oracle
from kernel.errors import DeviceUnavailableError, InvalidProblemError, UnsupportedConfigError
from kernel.family import FAMILIES, families, family_for_arch, family_for_capability, get_family
from kernel.host_pipeline import HostPipeline
from kernel.plan import make_plan

FAMILY_NAMES = [f.name for f in families()]


@pytest.fixture(params=FAMILY_NAMES)
def family(request):
    return get_family(request.param)


def test_registry_lookups():
    assert set(FAMILIES) == {"hopper", "blackwell"}
    for f in families():
        assert family_for_arch(f.arch) is f
        assert family_for_capability((f.required_major, 0)) is f
        assert f.module.ARCH == f.arch
    assert family_for_capability(None) is None
    assert family_for_capability((8, 0)) is None
    with pytest.raises(KeyError, match="known"):
        get_family("ampere")


def test_variant_scopes(family):
    prod, exp = family.production_variants, family.experimental_variants
    assert 1 <= len(prod) <= 6, "the main job runs a handful of production variants (each adds a GPU minute)"
    assert family.default_config in prod
    assert not set(prod) & set(exp), "a variant is production or experimental, not both"
    labels = [c.label for c in family.declared_variants]
    assert len(labels) == len(set(labels)), "labels name variants uniquely"
    assert family.variants("production") == prod and family.variants("all") == prod + exp
    harness_options = {"ablate", "ablation", "perturbation", "strict"}
    assert not {f.name for f in dataclasses.fields(type(family.default_config))} & harness_options, \
        "harness and profiling build options are passed to the build, never fields of a variant's config"
    for c in family.declared_variants:
        assert family.find(c.label) is c
    with pytest.raises(KeyError, match="declared"):
        family.find("no-such-variant")
    with pytest.raises(ValueError):
        family.variants("nightly")


def test_one_pipeline_per_family(family):
    assert isinstance(family.pipeline, HostPipeline)
    assert family.pipeline.hooks.name == family.name and family.pipeline.hooks.arch == family.arch


SIZES = [(40, 136, 256, 1), (0, 40, 256, 1), (200, 72, 512, 1), (130, 0, 256, 1)]


@pytest.mark.parametrize("config_index", [0, 1])
def test_dry_run_contract(family, config_index):
    """Validation, the shared plan, CPU tables and caller-order outputs, with no GPU and no compile."""
    config = family.production_variants[config_index]
    k = family.constraints(config).k_granularity
    sizes = [(m, n, k * (1 + i % 2), 1) for i, (m, n, _, _) in enumerate(SIZES)]
    data = oracle.make_inputs(sizes, 3, device="cpu")
    prep = family.prepare(data, config, dry_run=True)
    resolved = family.pipeline.hooks.resolve(config)
    assert prep.config == resolved and prep.dry_run and prep.compiled is None
    assert prep.plan == make_plan(
        sizes, tile_m=resolved.tile_m, tile_n=resolved.tile_n, tile_k=resolved.tile_k,
        max_ctas=family.pipeline.hooks.max_ctas(resolved, dry_run=True), schedule=resolved.schedule,
    )
    assert all(out is c for out, (_, _, c) in zip(prep.outputs, data[0])), "outputs: the callers' c, caller order"
    assert prep.tables.sizes.tolist() == [list(s) for s in prep.plan.sizes]
    assert prep.tables.tile_prefix.tolist() == list(prep.plan.tile_prefix)
    ptrs = prep.tables.pointers.tolist()
    for slot, group in enumerate(prep.plan.group_order):
        a, b, c = data[0][group]
        sfa_r, sfb_r = data[2][group]
        assert ptrs[slot] == [a.data_ptr(), b.data_ptr(), c.data_ptr(), sfa_r.data_ptr(), sfb_r.data_ptr()]
    # a dry run is never launched
    with pytest.raises(DeviceUnavailableError):
        family.launch(prep)


def test_dry_run_rejects_bad_input_with_the_shared_error(family):
    config = family.default_config
    k = family.constraints(config).k_granularity
    data = oracle.make_inputs([(8, 8, k, 1), (8, 8, k, 1)], 3, device="cpu")
    data[0][1] = (data[0][1][0], data[0][1][1], data[0][0][2])  # group 1's c is group 0's
    with pytest.raises(InvalidProblemError) as info:
        family.prepare(data, config, dry_run=True)
    assert (info.value.rule, info.value.group, info.value.tensor) == ("aliasing", 1, "c")
    with pytest.raises(InvalidProblemError) as info:
        family.prepare(oracle.make_inputs([(8, 8, k + 16, 1)], 3, device="cpu"), config, dry_run=True)
    assert info.value.rule == "k_granularity"


def test_bad_group_count_is_one_error_type(family):
    with pytest.raises(UnsupportedConfigError):
        family.compile_for(family.default_config, 0)
    with pytest.raises(UnsupportedConfigError):
        family.compile_for(family.default_config, family.constraints(family.default_config).max_groups + 1)


def test_empty_problem_launches_nothing(family):
    """Every group empty: the contract returns the outputs without a GPU or a compile."""
    config = family.default_config
    k = family.constraints(config).k_granularity
    data = oracle.make_inputs([(0, 8, k, 1), (8, 0, k, 1)], 3, device="cpu")
    prep = family.prepare(data, config, dry_run=True)
    assert prep.plan.total_tiles == 0 and prep.tables is None
    assert family.launch(prep) == [c for _, _, c in data[0]]


def test_missing_dependency_tells_a_broken_project_import_from_an_absent_package():
    from kernel.family import missing_dependency

    assert missing_dependency(ModuleNotFoundError("No module named 'cutlass'", name="cutlass"))
    assert missing_dependency(ImportError("cannot import name 'x' from 'cutlass.cute'", name="cutlass.cute"))
    assert not missing_dependency(ImportError("cannot import name 'DEFAULT_TABLE'", name="kernel.hopper.dispatch"))
    assert not missing_dependency(ModuleNotFoundError("No module named 'oracle.gone'", name="oracle.gone"))


@pytest.mark.parametrize("site", ["subjects", "entry", "usage"])
def test_a_broken_project_import_fails_instead_of_skipping(monkeypatch, site):
    """Every place that turns an unimportable family into a skip re-raises an ImportError of the
    repository's own modules (a renamed name must fail the run, not skip the family's tests)."""
    from kernel import family as family_module

    broken = ImportError("cannot import name 'GONE' from 'kernel.hopper.dispatch'", name="kernel.hopper.dispatch")

    def boom(*args, **kwargs):
        raise broken

    hopper = FAMILIES["hopper"]
    monkeypatch.setattr(family_module.KernelFamily, "unavailable_reason", boom)
    monkeypatch.setattr(family_module.KernelFamily, "variants", boom)
    monkeypatch.setattr(family_module.KernelFamily, "production_variants", property(boom))
    with pytest.raises(ImportError, match="GONE"):
        if site == "subjects":
            from properties.subjects import _family_variants

            _family_variants(hopper, None)
        elif site == "entry":
            from properties.test_entry_calling_pattern import _family_entry

            _family_entry("hopper")
        else:
            from properties.usage import variant_lines

            variant_lines()
    # an absent third-party package still skips, with the reason
    absent = ModuleNotFoundError("No module named 'cutlass'", name="cutlass")

    def gone(*args, **kwargs):
        raise absent

    monkeypatch.setattr(family_module.KernelFamily, "unavailable_reason", gone)
    monkeypatch.setattr(family_module.KernelFamily, "variants", gone)
    monkeypatch.setattr(family_module.KernelFamily, "production_variants", property(gone))
    if site == "subjects":
        from properties.subjects import _family_variants

        assert "cutlass" in _family_variants(hopper, None)[0].skip_reason
    elif site == "entry":
        from properties.test_entry_calling_pattern import _family_entry

        assert "cutlass" in _family_entry("hopper").skip_reason
    else:
        from properties.usage import variant_lines

        assert any("not importable here" in line and "cutlass" in line for line in variant_lines())
