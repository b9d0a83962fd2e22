"""CPU benchmarks: they run on every machine, so regression tracking means something in CI.

* the exact oracle's reference on small leaderboard test shapes;
* the CPU model kernel on one small shape;
* host launch planning (kernel.plan.make_plan) for the standard shapes and a 64-group problem;
* compile time of a couple of declared variants per kernel family, for its architecture
  (sm_90a / sm_100a), each in a fresh process with CUTE_DSL_ARCH set and the DSL's file cache
  off; rounds=1. Skipped, with the reason, when a family does not import or has no
  ``compile_for(config, num_groups)``.

All short: the whole file takes well under a minute plus about 10 s per compile.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from profiling import floors
from profiling.benchmarks import _support as S
from profiling.shape_suite import family_shapes

REPO = Path(__file__).resolve().parents[2]
COMPILE_VARIANTS_PER_FAMILY = 2
COMPILE_NUM_GROUPS = 8
COMPILE_TIMEOUT_S = 600


def _inputs(name):
    return S.host_inputs(name)


@pytest.mark.parametrize("shape_name", ["lbtest2", "lbtest9"])
def test_oracle_reference(benchmark, shape_name):
    import oracle

    benchmark.group = "cpu-oracle"
    data = _inputs(shape_name)
    benchmark.extra_info.update(shape=shape_name, problem_sizes=floors.get_shape(shape_name).problem_sizes())
    benchmark.pedantic(oracle.reference, args=(data,), rounds=10, warmup_rounds=2)


@pytest.mark.parametrize("shape_name", ["lbtest2"])
def test_cpu_model_kernel(benchmark, shape_name):
    from kernel import model

    benchmark.group = "cpu-model"
    data = _inputs(shape_name)
    config, repeat, slowed = model.DEFAULT_CONFIG, 1, None
    slow = S.resolve_slowdown(config)  # NVFP4_BENCH_SLOW: the CPU rehearsal of the regression demo
    if slow is not None:
        config, repeat, slowed = slow.config, slow.repeat, slow.description

    def run():
        for _ in range(repeat):
            model.custom_kernel(data, config=config)

    benchmark.extra_info.update(shape=shape_name, variant=model.DEFAULT_CONFIG.label, slowed=slowed)
    benchmark.pedantic(run, rounds=10, warmup_rounds=2)


_PLAN_SHAPES = {s.name: s.sizes for s in family_shapes("leaderboard-bench")}
_PLAN_SHAPES["g64"] = tuple((64 + 8 * (g % 29), 4096, 7168, 1) for g in range(64))


@pytest.mark.parametrize("shape_name", sorted(_PLAN_SHAPES))
def test_launch_plan(benchmark, shape_name):
    from kernel.plan import make_plan

    benchmark.group = "cpu-plan"
    sizes = _PLAN_SHAPES[shape_name]
    kwargs = dict(tile_m=128, tile_n=128, tile_k=256, max_ctas=132)
    benchmark.extra_info.update(shape=shape_name, groups=len(sizes), **kwargs)
    benchmark.pedantic(make_plan, args=(sizes,), kwargs=kwargs, rounds=50, iterations=20, warmup_rounds=1)


def _compile_params():
    params = []
    for family in S.selected_families():
        variants = S.family_variants(family, need_device=False)[:COMPILE_VARIANTS_PER_FAMILY]
        for v in variants:
            reason = v.skip_reason
            if reason is None and not hasattr(v.module, "compile_for"):
                reason = f"{S.FAMILIES[family]} defines no compile_for(config, num_groups)"
            marks = [pytest.mark.compile] + ([pytest.mark.skip(reason=reason)] if reason else [])
            params.append(pytest.param(v, id=f"{v.id}-{S.ARCH[family]}", marks=marks))
    return params


@pytest.mark.parametrize("variant", _compile_params())
def test_compile(benchmark, variant):
    arch = S.ARCH[variant.family]
    env = dict(os.environ, CUTE_DSL_ARCH=arch, CUTE_DSL_DISABLE_FILE_CACHING="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    cmd = [sys.executable, "-m", "profiling.benchmarks._compile_child", variant.family, variant.label,
           str(COMPILE_NUM_GROUPS)]
    result = {}

    def compile_once():
        proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        if proc.returncode != 0 or not lines:
            raise AssertionError(f"compile of {variant.id} for {arch} failed (rc {proc.returncode}):\n"
                                 f"{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
        result.update(json.loads(lines[-1]))

    benchmark.group = f"cpu-compile-{arch}"
    benchmark.pedantic(compile_once, rounds=1, warmup_rounds=0, iterations=1)
    benchmark.extra_info.update(arch=arch, num_groups=COMPILE_NUM_GROUPS, **result)
