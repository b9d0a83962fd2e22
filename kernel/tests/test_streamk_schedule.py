"""Stream-K over the balanced lists (kernel.plan ``streamk_*``, the Hopper ``stream_k`` variant),
on the CPU.

Properties of the host functions over random problems (ragged M, N and K per group, any grid):
every tile's K tiles run exactly once, its pieces in K order on consecutive CTAs; no CTA's weight
exceeds the even share by more than one K tile; a CTA hands on only from its first piece and
waits only at its last; the boundary protocol (claim / publish / take, kernel.plan) always ends
with every tile's full K chain in order and every state word idle, also when the grid is not
co-resident (CTAs start late, in any order, on fewer SMs than CTAs). The device twins
(kernel.device_schedule), executed on the host by CuTe DSL's JIT, agree with the host bit for bit.
"""

# no `from __future__ import annotations`: cute.jit reads the device functions' annotations

import random

import pytest
import torch

from kernel.plan import (FULL_COST, LIGHT_COST, STREAMK_CLAIMED, STREAMK_END, STREAMK_IDLE, STREAMK_PUBLISHED,
                         STREAMK_TAKEN, balanced_locate, make_plan, streamk_boundary, streamk_pieces, streamk_ranges,
                         streamk_weight)

TM = TN = 128
TK = 256


def _random_sizes(rng, groups):
    ms = [0, 1, 40, 63, 64, 65, 128, 129, 176, 192, 248, 320, 384]
    return [(rng.choice(ms), rng.choice([0, 128, 129, 512, 1000]), TK * rng.choice([1, 2, 3, 7, 28]), 1)
            for _ in range(groups)]


def _entries(sizes):
    """[(slot, light, K tiles)] of every entry E, full list then light list."""
    full = sum(1 for _ in _iter(sizes, 0))
    return [e for e in _iter(sizes, 0)] + [e for e in _iter(sizes, 1)], full


def _iter(sizes, light_list):
    n = 0
    for s, (m, nn, k, _l) in enumerate(sizes):
        tm, tn = -(-m // TM), -(-nn // TN)
        light = int(tm > 0 and m - (tm - 1) * TM <= TM // 2)
        per = light if light_list else tm - light
        for _ in range(tn * per):
            slot, _mb, _nb = balanced_locate(sizes, TM, TN, light_list, n)
            assert slot == s
            n += 1
            yield s, light_list, k // TK


def _cases(seed, count):
    rng = random.Random(seed)
    for _ in range(count):
        sizes = _random_sizes(rng, rng.randint(1, 6))
        ctas = rng.choice([1, 2, 3, 7, 16, 60, 132])
        yield sizes, ctas


def _k1(piece, entries):
    return entries[piece.entry][2] if piece.k1 == STREAMK_END else piece.k1


def test_every_k_tile_once_in_order_on_consecutive_ctas():
    for sizes, ctas in _cases(1, 300):
        entries, _nf = _entries(sizes)
        runs = {e: [] for e in range(len(entries))}
        for c in range(ctas):
            for p in streamk_pieces(sizes, TM, TN, TK, ctas, c):
                runs[p.entry].append((c, p.k0, _k1(p, entries)))
        for e, (_s, _l, kt) in enumerate(entries):
            r = sorted(runs[e])
            assert r and r[0][1] == 0 and r[-1][2] == kt, (sizes, ctas, e, r)
            for (c0, _a, b), (c1, a, _b) in zip(r, r[1:]):
                assert a == b and c1 == c0 + 1, (sizes, ctas, e, r)
            assert all(a < b for _c, a, b in r)


def test_weights_are_even_to_one_k_tile():
    """Each of the streamk_ranges(W, ctas) ranges weighs at most its share plus one K tile."""
    for sizes, ctas in _cases(2, 300):
        entries, _nf = _entries(sizes)
        total = streamk_weight(sizes, TM, TN, TK)
        assert total == sum(kt * (LIGHT_COST if light else FULL_COST) for _s, light, kt in entries)
        for c in range(ctas):
            w = sum((_k1(p, entries) - p.k0) * (LIGHT_COST if entries[p.entry][1] else FULL_COST)
                    for p in streamk_pieces(sizes, TM, TN, TK, ctas, c))
            assert w <= -(-total // streamk_ranges(total, ctas)) + FULL_COST, (sizes, ctas, c, w, total)


def test_hand_on_first_and_wait_last():
    for sizes, ctas in _cases(3, 300):
        for c in range(ctas):
            pieces = streamk_pieces(sizes, TM, TN, TK, ctas, c)
            for i, p in enumerate(pieces):
                assert p.waits == (p.k0 > 0) and p.publishes == (p.k1 != STREAMK_END)
                if p.publishes:
                    assert i == 0, (sizes, ctas, c, pieces)
                if p.waits:
                    assert i == len(pieces) - 1, (sizes, ctas, c, pieces)


def test_bench1_gains_and_the_one_round_shapes_do_not_split_badly():
    """On bench1 the balanced split's makespan is 11 quarter units per K tile (308 over 28 K
    tiles); stream-K's is within one K tile of the average (the reason the variant exists)."""
    sizes = [(m, 4096, 7168, 1) for m in (80, 176, 128, 72, 64, 248, 96, 160)]
    plan = make_plan(sizes, tile_m=TM, tile_n=TN, tile_k=TK, max_ctas=132, schedule="balanced")
    entries, _nf = _entries(plan.sizes)
    loads = [sum((_k1(p, entries) - p.k0) * (LIGHT_COST if entries[p.entry][1] else FULL_COST)
                 for p in streamk_pieces(plan.sizes, TM, TN, TK, 132, c)) for c in range(132)]
    balanced = max(sum(plan.tile_cost(t) for t in plan.cta_tiles(c)) * 28 for c in range(132))
    assert balanced == 308 and max(loads) <= 280


class _Cta:
    """One CTA of the protocol model: its pieces as steps, the claim at its start."""

    def __init__(self, c, pieces, entries):
        self.c, self.pieces, self.entries = c, pieces, entries
        self.i, self.started, self.claimed, self.done = 0, False, False, False
        self.acc, self.waiting = None, False


def _run_protocol(sizes, ctas, rng, resident, take=True, order=None):
    entries, _nf = _entries(sizes)
    state = [STREAMK_IDLE] * (ctas + 1)
    partial = [None] * (ctas + 1)
    out = {}
    if order is None:
        order = list(range(ctas))
        rng.shuffle(order)  # the order CTAs get an SM
    pending = [_Cta(c, streamk_pieces(sizes, TM, TN, TK, ctas, c), entries) for c in order]
    running = []
    steps = 0
    while pending or running:
        while pending and len(running) < resident:
            running.append(pending.pop(0))
        steps += 1
        assert steps < 100000, "the protocol did not finish"
        cta = rng.choice(running)
        c = cta.c
        if not cta.started:
            cta.started = True
            if cta.pieces and cta.pieces[0].publishes:  # the claim of the boundary it ends in
                old = state[c + 1]
                if old == STREAMK_IDLE:
                    state[c + 1] = STREAMK_CLAIMED
                    cta.claimed = True
                else:
                    assert old == STREAMK_TAKEN
                    state[c + 1] = STREAMK_IDLE
            continue
        if cta.i == len(cta.pieces):
            running.remove(cta)
            continue
        p = cta.pieces[cta.i]
        k0 = p.k0
        if p.waits:
            if not cta.waiting:
                old = state[c]
                if old == STREAMK_IDLE and take:  # nobody claimed the prefix: take the whole tile
                    state[c] = STREAMK_TAKEN
                    cta.acc, k0 = [], 0
                else:
                    cta.waiting = True
                    continue
            if cta.waiting:
                if state[c] != STREAMK_PUBLISHED:
                    continue  # spin
                cta.acc = list(partial[c])
                state[c] = STREAMK_IDLE
                cta.waiting = False
        else:
            cta.acc = []
        cta.acc += list(range(k0, _k1(p, entries)))
        if p.publishes:
            if cta.claimed:
                partial[c + 1] = list(cta.acc)
                state[c + 1] = STREAMK_PUBLISHED
        else:
            assert p.entry not in out
            out[p.entry] = cta.acc
        cta.i += 1
    return entries, out, state


@pytest.mark.parametrize("resident", [1, 2, 5, 1000])
def test_the_boundary_protocol_finishes_with_every_chain_whole(resident):
    rng = random.Random(4 + resident)
    for sizes, ctas in _cases(5 + resident, 120):
        entries, out, state = _run_protocol(sizes, ctas, rng, resident)
        assert sorted(out) == list(range(len(entries)))
        for e, (_s, _l, kt) in enumerate(entries):
            assert out[e] == list(range(kt)), (sizes, ctas, e, out[e])
        assert all(s == STREAMK_IDLE for s in state)


def test_a_protocol_without_the_take_hangs_when_not_co_resident():
    """The model can fail: a suffix CTA that always waits (never takes the tile) spins forever on
    the only SM when it starts before its prefix CTA; with the take it runs the whole tile."""
    sizes = [(128, 128, TK * 8, 1)]
    pieces = [streamk_pieces(sizes, TM, TN, TK, 2, c) for c in range(2)]
    assert pieces[1][-1].waits and pieces[0][0].publishes
    rng = random.Random(0)
    with pytest.raises(AssertionError, match="did not finish"):
        _run_protocol(sizes, 2, rng, 1, take=False, order=[1, 0])
    _entries_, out, state = _run_protocol(sizes, 2, rng, 1, order=[1, 0])
    assert out == {0: list(range(8))} and state == [STREAMK_IDLE] * 3


def test_device_twins_match_the_host():
    cutlass = pytest.importorskip("cutlass")
    import cutlass.cute as cute
    from cutlass.cute.runtime import from_dlpack

    from kernel import device_schedule as ds

    groups = 4

    @cute.jit
    def run(sizes: cute.Tensor, ctas_of: cute.Tensor, out: cute.Tensor, pieces: cute.Tensor, n: cutlass.Int32):
        # ctas_of[i] = (cta, ctas) -> out[i] = (ea, ka, eb, kb, count, nf); pieces[i, q] = the piece
        for i in range(n):
            ea, ka, eb, kb, nf = ds.streamk_range(sizes, groups, 128, 128, 256, ctas_of[i, 1], ctas_of[i, 0])
            cnt = ds.streamk_count(ea, ka, eb, kb)
            out[i, 0] = ea
            out[i, 1] = ka
            out[i, 2] = eb
            out[i, 3] = kb
            out[i, 4] = cnt
            out[i, 5] = nf
            for q in range(cnt):
                e, k0, k1, w, p = ds.streamk_piece(ea, ka, eb, kb, q)
                pieces[i, q, 0] = e
                pieces[i, q, 1] = k0
                pieces[i, q, 2] = k1
                pieces[i, q, 3] = w
                pieces[i, q, 4] = p

    rng = random.Random(6)
    for _ in range(30):
        sizes = _random_sizes(rng, groups)
        ctas = rng.choice([1, 3, 17, 132])
        rows = [(c, ctas) for c in range(ctas)]
        out = torch.full((len(rows), 6), -7, dtype=torch.int32)
        pieces = torch.full((len(rows), 64, 5), -7, dtype=torch.int32)
        run(from_dlpack(torch.tensor(sizes, dtype=torch.int32)), from_dlpack(torch.tensor(rows, dtype=torch.int32)),
            from_dlpack(out), from_dlpack(pieces), cutlass.Int32(len(rows)))
        for c, row in enumerate(out.tolist()):
            assert row[:2] == list(streamk_boundary(sizes, TM, TN, TK, ctas, c))
            assert row[2:4] == list(streamk_boundary(sizes, TM, TN, TK, ctas, c + 1))
            host = streamk_pieces(sizes, TM, TN, TK, ctas, c)
            assert row[4] == len(host), (sizes, ctas, c)
            assert row[5] == _entries(sizes)[1]
            for q, p in enumerate(host):
                assert pieces[c, q].tolist() == [p.entry, p.k0, p.k1, int(p.waits), int(p.publishes)]
