"""Host side of the TMA loader's tensor maps (kernel/tensor_maps.py), without a driver."""

import pytest
import torch

from kernel import tensor_maps as tm
from kernel.plan import make_plan
from kernel.validation import KernelConstraints, validate_problem


def _groups(sizes):
    import oracle

    data = oracle.make_inputs(sizes, 3, device="cpu")
    return validate_problem(data, KernelConstraints(k_granularity=256, device_type="cpu"))


def test_rows_map_rules():
    assert tm.RowsMap(0x1000, 200, 3584, 128).problems() == []
    assert any("16-byte" in p for p in tm.RowsMap(0x1008, 200, 3584, 128).problems())
    assert any("multiple of 16" in p for p in tm.RowsMap(0x1000, 200, 3592, 128).problems())
    assert any("box rows" in p for p in tm.RowsMap(0x1000, 200, 3584, 512).problems())
    assert any("128" in p for p in tm.RowsMap(0x1000, 200, 3584, 128, box_bytes=64).problems())
    with pytest.raises(ValueError, match="tensor map"):
        tm.encode(tm.RowsMap(0x1000, 0, 3584, 128))  # rejected before any driver call


def test_slot_maps_follow_the_plan_and_skip_empty_groups():
    sizes = [(40, 136, 256, 1), (0, 40, 256, 1), (200, 72, 512, 1)]
    groups = _groups(sizes)
    plan = make_plan([g.size for g in groups], tile_m=128, tile_n=128, tile_k=256, max_ctas=132)
    maps = tm.slot_maps(plan, groups, 128, 64)
    assert len(maps) == plan.num_groups
    for slot, g in enumerate(plan.group_order):
        a, b = maps[slot]
        m, n, k, _ = sizes[g]
        if m == 0 or n == 0:
            assert a is None and b is None
            continue
        assert (a.address, a.rows, a.row_bytes, a.box_rows) == (groups[g].a.data_ptr(), m, k // 2, 128)
        assert (b.address, b.rows, b.row_bytes, b.box_rows) == (groups[g].b.data_ptr(), n, k // 2, 64)


def test_table_layout_and_cache(monkeypatch):
    """[G, 2, 128] in slot order, A then B; one build per distinct (maps, device)."""
    monkeypatch.setattr(tm, "encode", lambda m: (m.address % 251).to_bytes(1, "little") * tm.TENSOR_MAP_BYTES)
    groups = _groups([(64, 128, 256, 1), (130, 64, 256, 1)])
    plan = make_plan([g.size for g in groups], tile_m=128, tile_n=128, tile_k=256, max_ctas=132)
    cache = tm.TensorMapCache()
    table = cache.get(plan, groups, 128, 128, torch.device("cpu"))
    assert table.shape == (2, 2, tm.TENSOR_MAP_BYTES) and table.dtype == torch.uint8
    for slot, g in enumerate(plan.group_order):
        assert int(table[slot, 0, 0]) == groups[g].a.data_ptr() % 251
        assert int(table[slot, 1, 0]) == groups[g].b.data_ptr() % 251
    assert cache.get(plan, groups, 128, 128, torch.device("cpu")) is table and cache.stats.builds == 1
    cache.get(plan, groups, 128, 64, torch.device("cpu"))  # another box: another table
    assert cache.stats.builds == 2


def test_immutable_lru_builds_once_and_evicts_the_oldest():
    from kernel.tables import ImmutableLru

    lru, built = ImmutableLru(capacity=2), []
    make = lambda k: lambda: built.append(k) or [k]  # noqa: E731
    a = lru.get("a", make("a"))
    assert lru.get("a", make("a")) is a and built == ["a"]
    lru.get("b", make("b"))
    lru.get("a", make("a"))  # a is now the newest
    lru.get("c", make("c"))  # evicts b
    lru.get("b", make("b"))
    assert built == ["a", "b", "c", "b"] and (lru.stats.hits, lru.stats.builds) == (2, 4)
