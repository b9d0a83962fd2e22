"""The Hopper kernel on an sm_90 GPU: exact results on ragged shapes, guards, bitwise reruns.

Skipped at collection where no sm_90 device exists (the reason is shown).
"""

import pytest
import torch

from kernel.hopper import DECLARED_VARIANTS, compile_cache, custom_kernel, unavailable_reason

_reason = unavailable_reason()
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.sm90,
    pytest.mark.skipif(_reason is not None, reason=_reason or ""),
]

SHAPES = {
    "rag2": [(40, 136, 256, 1), (200, 72, 512, 1)],
    "rag8": [(1, 8, 256, 1), (7, 100, 256, 1), (64, 128, 512, 1), (129, 257, 256, 1),
             (255, 24, 768, 1), (0, 40, 256, 1), (96, 520, 256, 1), (33, 1000, 512, 1)],
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("dist", ["wide", "leaderboard"])
@pytest.mark.parametrize("config", DECLARED_VARIANTS, ids=lambda c: c.label)
def test_exact_and_deterministic(config, shape, dist):
    from ci.hopper_dev_check import check, make_problem

    seed = sum(map(ord, config.label + shape + dist)) % 10007
    data, deq, guards = make_problem(SHAPES[shape], seed, dist)
    outs = custom_kernel(data, config)
    torch.cuda.synchronize()
    ratio, where = check(data, deq, guards, outs)
    assert ratio <= 1.0, f"repro: config={config.label} shape={shape} dist={dist} seed={seed}: {where}"
    first = [o.clone() for o in outs]
    for (_, _, c) in data[0]:
        c.fill_(float("nan"))
    again = custom_kernel(data, config)
    torch.cuda.synchronize()
    for g, (x, y) in enumerate(zip(first, again)):
        assert torch.equal(x.view(torch.int16), y.view(torch.int16)), f"group {g} differs on rerun (seed={seed})"


def test_one_compile_for_a_sweep_of_shapes():
    from ci.hopper_dev_check import make_problem

    config = DECLARED_VARIANTS[0]
    before = compile_cache.stats.compiles
    for seed, sizes in enumerate([[(64, 64, 256, 1), (8, 8, 512, 1)], [(300, 200, 256, 1), (1, 1000, 256, 1)]]):
        data, _, _ = make_problem(sizes, seed, "wide")
        custom_kernel(data, config)
    assert compile_cache.stats.compiles - before <= 1
