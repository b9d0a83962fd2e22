"""Strict device tables (kernel.tables): guard rows around every table, free for production.

A planted out-of-range slot read (the device group search with its upper bound one past the
end, run over the table memory as a kernel sees it) lands on a guard entry and is caught; the
correct search never does; the CPU model computes the same outputs on guarded tables.
"""

from __future__ import annotations

import random

import pytest
import torch

import kernel.model as model
import oracle
from kernel.plan import device_group_search, make_plan
from kernel.tables import (
    GUARD_POINTER, GUARD_PREFIX, GUARD_ROWS, GUARD_SIZE, GuardEntryRead, TableCache, _storage, build_tables,
    damaged_guards, guarded, read_row,
)


def _plans(count=12, seed=7):
    rng = random.Random(seed)
    for _ in range(count):
        sizes = [(rng.choice([0, 1, 64, 129, 300]), rng.choice([1, 128, 257]), 256, 1) for _ in range(rng.randint(1, 6))]
        yield make_plan(sizes, tile_m=128, tile_n=128, tile_k=256, max_ctas=132, schedule="contiguous")


def _tables(plan, guard_rows):
    pointers = [tuple(1000 * s + c for c in range(5)) for s in range(plan.num_groups)]
    return build_tables(plan, pointers, torch.device("cpu"), guard_rows)


def test_strict_views_equal_production_tables_and_guards_hold_their_fill():
    for plan in _plans():
        prod, strict = _tables(plan, 0), _tables(plan, GUARD_ROWS)
        for name in ("sizes", "tile_prefix", "pointers"):
            assert torch.equal(getattr(prod, name), getattr(strict, name)), name
            # production: no padding, the table starts its allocation
            assert getattr(prod, name).storage_offset() == 0
        store = _storage(strict.sizes, GUARD_ROWS)
        assert (store[:GUARD_ROWS] == GUARD_SIZE).all() and (store[-GUARD_ROWS:] == GUARD_SIZE).all()
        assert (_storage(strict.tile_prefix, GUARD_ROWS)[-GUARD_ROWS:] == GUARD_PREFIX).all()
        assert (_storage(strict.pointers, GUARD_ROWS)[:GUARD_ROWS] == GUARD_POINTER).all()
        assert damaged_guards(strict) == []
        # no valid group has the guard sizes
        assert GUARD_SIZE not in plan.sizes


def test_a_write_past_a_table_damages_its_guard():
    t = _tables(next(_plans()), GUARD_ROWS)
    _storage(t.sizes, GUARD_ROWS)[GUARD_ROWS + t.sizes.shape[0], 0] = 5
    assert damaged_guards(t) == ["sizes"]


def _search_one_past_the_end(prefix_memory, guard_rows, num_groups, tile):
    """The device search with its bound off by one (right = G + 1), reading prefix by address."""
    left, right = 0, num_groups + 1
    while left < right:
        mid = (left + right) // 2
        if int(prefix_memory[guard_rows + mid + 1]) <= tile:
            left = mid + 1
        else:
            right = mid
    return left


def test_planted_out_of_range_slot_read_is_caught():
    caught = 0
    for plan in _plans():
        t = _tables(plan, GUARD_ROWS)
        memory = _storage(t.tile_prefix, GUARD_ROWS)
        for tile in range(plan.total_tiles):
            good = device_group_search(plan.tile_prefix, tile)
            read_row(t, "sizes", good)  # the correct search stays inside the table
            bad = _search_one_past_the_end(memory, GUARD_ROWS, plan.num_groups, tile)
            if bad != good:
                with pytest.raises(GuardEntryRead) as info:
                    read_row(t, "sizes", bad)
                assert info.value.slot >= plan.num_groups and info.value.table == "sizes"
                caught += 1
    assert caught > 0, "the planted search never left the table: the test exercises nothing"


def test_guarded_helper_pads_other_tables():
    maps = torch.arange(2 * 2 * 4, dtype=torch.uint8).reshape(2, 2, 4)
    view = guarded(maps, 2, 0xFF)
    assert torch.equal(view, maps) and view.storage_offset() == 2 * 2 * 4
    assert (_storage(view, 2)[:2] == 0xFF).all() and (_storage(view, 2)[-2:] == 0xFF).all()


class _StrictCache(TableCache):
    def get(self, plan, groups, device, strict=False):
        return super().get(plan, groups, device, strict=True)


def test_model_computes_the_same_outputs_on_guarded_tables(monkeypatch):
    sizes = ((65, 130, 128, 1), (0, 8, 64, 1), (200, 40, 192, 1))
    plain = [c.clone() for c in model.custom_kernel(oracle.make_inputs(sizes, 5, device="cpu"))]
    monkeypatch.setattr(model, "_tables", _StrictCache())
    strict = model.custom_kernel(oracle.make_inputs(sizes, 5, device="cpu"))
    assert all(torch.equal(a, b) for a, b in zip(plain, strict))
    assert model._tables.stats.builds == 1


def test_strict_tables_keep_the_kernels_alignment():
    """The kernels take the tables' addresses as 16-byte aligned (tensor maps: 64): the guard rows
    in front of each table must not move its first real row off that alignment (seen on the H200:
    a 2-row guard put the tile prefix at +8 bytes and every strict launch refused its pointer)."""
    from kernel.tables import GUARD_BYTE, guarded

    for plan in _plans():
        t = _tables(plan, GUARD_ROWS)
        for name in ("sizes", "tile_prefix", "pointers"):
            view = getattr(t, name)
            offset = view.data_ptr() - view.untyped_storage().data_ptr()
            assert offset % 64 == 0, (name, offset)
    maps = guarded(torch.zeros(3, 2, 128, dtype=torch.uint8), GUARD_ROWS, GUARD_BYTE)
    assert (maps.data_ptr() - maps.untyped_storage().data_ptr()) % 64 == 0
