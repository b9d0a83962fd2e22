"""A perturbed build is its own compile-cache entry; the production key is unchanged."""

import importlib

from kernel.compile_cache import CompileCache
from kernel.hopper.config import DEFAULT_CONFIG
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
