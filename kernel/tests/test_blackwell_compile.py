"""The host path on a CPU: compile for sm_100a, compile once per (config, group count)."""

import pytest
import torch

import kernel.blackwell as bw
import oracle.inputs as oracle_inputs  # the project's own module: an import error fails, never skips
from kernel.errors import InvalidProblemError
from kernel.plan import make_plan

pytestmark = pytest.mark.compile


def _shape_sets(count: int, groups: int, seed: int):
    """`count` distinct problem-size lists with `groups` groups (ragged M and N, K in 256s)."""
    gen = torch.Generator().manual_seed(seed)
    seen, out = set(), []
    while len(out) < count:
        sizes = tuple(
            (
                int(torch.randint(1, 400, (), generator=gen)),
                int(torch.randint(1, 600, (), generator=gen)),
                256 * int(torch.randint(1, 5, (), generator=gen)),
                1,
            )
            for _ in range(groups)
        )
        if sizes not in seen:
            seen.add(sizes)
            out.append(list(sizes))
    return out


@pytest.mark.parametrize(
    "config",
    [bw.DEFAULT_CONFIG, bw.BlackwellConfig(warp_roles="monolithic", num_ab_stages=1, num_acc_stages=1)],
    ids=lambda c: c.label,
)
def test_shape_sweep_compiles_once(config):
    """20 shape sets through one variant: one compile; shapes and pointers are run-time values."""
    bw.compile_cache.clear()
    sweep = _shape_sets(20, groups=3, seed=20261129)
    for i, sizes in enumerate(sweep):
        data = oracle_inputs.make_inputs(sizes, seed=i, device="cpu")
        prepared = bw.prepare(data, config, dry_run=True, compile=True)
        # the plan is the shared one, the tables follow it, outputs keep the caller's order
        assert prepared.plan == make_plan(
            sizes, tile_m=config.tile_m, tile_n=config.tile_n, tile_k=config.tile_k,
            max_ctas=prepared.plan.num_ctas if config.warp_roles == "specialized" else None,
            schedule=config.resolved().schedule,
        )
        assert prepared.tables.sizes.tolist() == [list(s) for s in prepared.plan.sizes]
        assert prepared.tables.tile_prefix.tolist() == list(prepared.plan.tile_prefix)
        assert all(out is c for out, (_, _, c) in zip(prepared.outputs, data[0]))
        ptrs = prepared.tables.pointers.tolist()
        for slot, group in enumerate(prepared.plan.group_order):
            a, b, c = data[0][group]
            sfa_r, sfb_r = data[2][group]
            assert ptrs[slot] == [a.data_ptr(), b.data_ptr(), c.data_ptr(), sfa_r.data_ptr(), sfb_r.data_ptr()]
    assert bw.compile_cache.stats.compiles == 1, bw.compile_cache.stats
    assert bw.compile_cache.stats.hits == len(sweep) - 1
    assert bw.compile_cache.keys() == [(config.resolved(), 3)]


def test_group_count_and_config_are_the_cache_key():
    bw.compile_cache.clear()
    first = bw.compile_for(bw.DEFAULT_CONFIG, 2)
    assert bw.compile_for(bw.DEFAULT_CONFIG.resolved(), 2) is first  # default and resolved: one entry
    assert bw.compile_for(bw.DEFAULT_CONFIG, 5) is not first
    assert bw.compile_cache.stats.compiles == 2 and bw.compile_cache.stats.hits == 1


def test_k_must_be_whole_k_tiles():
    data = oracle_inputs.make_inputs([(64, 128, 384, 1)], seed=0, device="cpu")
    with pytest.raises(InvalidProblemError) as info:
        bw.prepare(data, dry_run=True)
    assert info.value.rule == "k_granularity"


def test_cpu_tensors_need_dry_run():
    data = oracle_inputs.make_inputs([(64, 128, 256, 1)], seed=0, device="cpu")
    with pytest.raises(InvalidProblemError) as info:
        bw.prepare(data)
    assert info.value.rule == "device"
