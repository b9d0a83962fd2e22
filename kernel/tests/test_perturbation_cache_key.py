"""A perturbed build is its own compile-cache entry; the production key is unchanged."""

import importlib

from kernel.compile_cache import CompileCache
from kernel.hopper.variants import DEFAULT_CONFIG
from kernel.perturbation import Perturbation

launch = importlib.import_module("kernel.hopper.launch")


def test_perturbation_is_part_of_the_compile_key(monkeypatch):
    builds = []
    monkeypatch.setattr(launch.PIPELINE.hooks, "build",
                        lambda config, g, dump_dir=None, perturbation=None, ablation=None:
                        builds.append(perturbation) or object())
    monkeypatch.setattr(launch.PIPELINE, "compile_cache", CompileCache("hopper-test"))
    p, q = Perturbation(1), Perturbation(2)
    a = launch.compile_for(DEFAULT_CONFIG, 2)
    b = launch.compile_for(DEFAULT_CONFIG, 2, p)
    c = launch.compile_for(DEFAULT_CONFIG, 2, Perturbation(1))
    d = launch.compile_for(DEFAULT_CONFIG, 2, q)
    assert a is not b and b is c and b is not d
    assert builds == [None, p, q]
    cache = launch.PIPELINE.compile_cache
    assert (DEFAULT_CONFIG, 2) in cache.keys()  # production key as before
    assert cache.stats.compiles == 3 and cache.stats.hits == 1


def test_run_time_perturbations_share_one_build_per_group_count(monkeypatch):
    from kernel.perturbation import runtime_perturbation

    builds = []
    monkeypatch.setattr(launch.PIPELINE.hooks, "build",
                        lambda config, g, dump_dir=None, perturbation=None, ablation=None:
                        builds.append((g, perturbation)) or object())
    monkeypatch.setattr(launch.PIPELINE, "compile_cache", CompileCache("hopper-test"))
    seeds = [runtime_perturbation(s) for s in (1, 4, 5, 996)]  # "delays" seeds (seed % 4 in 0, 1)
    first = launch.compile_for(DEFAULT_CONFIG, 3, seeds[0])
    assert all(launch.compile_for(DEFAULT_CONFIG, 3, p) is first for p in seeds)
    other = launch.compile_for(DEFAULT_CONFIG, 2, seeds[1])
    assert other is not first
    # the filler wgmmas are compiled in: the "window" seeds share a second build
    filled = [runtime_perturbation(s) for s in (3, 7, 999)]
    second = launch.compile_for(DEFAULT_CONFIG, 3, filled[0])
    assert second is not first and all(launch.compile_for(DEFAULT_CONFIG, 3, p) is second for p in filled)
    form, form_filled = seeds[0].compile_form, filled[0].compile_form
    # the build is traced with the compile form, never a seed: nothing seed-dependent is compiled
    assert builds == [(3, form), (2, form), (3, form_filled)]
    assert (DEFAULT_CONFIG, 3, form, None) in launch.PIPELINE.compile_cache.keys()


def test_prepare_puts_the_seed_table_on_the_device_as_data():
    import torch

    from kernel.perturbation import Perturbation, runtime_perturbation
    import oracle

    data = oracle.make_inputs(((130, 70, 256, 1),), 1, device="cpu")
    p = runtime_perturbation(5)
    prep = launch.prepare(data, DEFAULT_CONFIG, dry_run=True, perturbation=p)
    assert prep.delay_table is not None and prep.delay_table.dtype == torch.int32
    assert prep.delay_table.tolist() == p.device_words()
    assert launch.prepare(data, DEFAULT_CONFIG, dry_run=True, perturbation=Perturbation(5)).delay_table is None
    assert launch.prepare(data, DEFAULT_CONFIG, dry_run=True).delay_table is None
