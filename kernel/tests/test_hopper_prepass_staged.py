"""prepass_store="staged": phase 1 writes each decoded item to a shared
slot, then the warp stores whole 128-byte runs. The two inline-PTX blocks are run here on a
32-lane model of the instructions they use (addresses and data movement; the decode itself is
the production decode, checked bit for bit in test_hopper_dequant_bits.py): every item lands
exactly at its run, absent items are not written, each warp store covers whole runs, and no
shared access has a bank conflict within a quarter warp."""

import re

import pytest

from kernel.hopper import ptx

MASK32 = 0xFFFFFFFF
# the registers the address arithmetic and the copy write (the decode's are left symbolic)
MODELLED = {"sk", "sa", "i", "c", "c16", "o", "lo", "hi", "ok", "d", "c64", "p"}


def _val(regs, tok):
    tok = tok.strip()
    if tok.startswith("$") or re.match(r"^[a-z]", tok):
        return regs[tok]
    return int(tok, 0)


def run_warp(asm: str, lane_inputs: list[dict], smem: dict, gmem: dict, trace: list):
    """Execute ``asm`` for 32 lanes in lockstep. Supported: the integer ops, shfl.sync.idx,
    ld/st.shared.v4, predicated st.global.v4, bar.warp.sync; decode lines (anything touching
    the q* pair registers but a store) are skipped, the q* registers hold symbolic values."""
    regs = [dict(inp) for inp in lane_inputs]
    for line in asm.splitlines():
        line = line.strip().rstrip(";")
        if not line or line in "{}" or line.startswith(".reg") or line.startswith("bar.warp.sync"):
            continue
        pred = None
        if line.startswith("@"):
            pred, line = line.split(None, 1)
            pred = pred[1:]
        op, _, rest = line.partition(" ")
        args = [a.strip() for a in re.split(r",(?![^{]*})", rest)]
        if op.startswith("shfl.sync.idx"):
            src = [r[args[1]] for r in regs]
            for r in regs:
                r[args[0]] = src[_val(r, args[2]) & 31]
            continue
        if op.startswith("st.shared") or op.startswith("ld.shared") or op.startswith("st.global"):
            addrs = []
            for lane, r in enumerate(regs):
                if pred and not r[pred]:
                    continue
                if op.startswith("ld"):
                    addr = _val(r, args[1].strip("[]"))
                    vals = smem.get(addr, ("stale",) * 4)  # an absent item's slot: old bytes
                    for name, v in zip(args[0].strip("{}").split(","), vals):
                        r[name.strip()] = v
                else:
                    addr = _val(r, args[0].strip("[]"))
                    vals = tuple(r[n.strip()] for n in args[1].strip("{}").split(","))
                    (smem if op.startswith("st.shared") else gmem)[addr] = vals
                addrs.append((lane, addr))
            trace.append((op, addrs))
            continue
        if args[0] not in MODELLED:
            continue  # the decode: its pair registers stay symbolic
        for r in regs:
            if op == "mov.b64":
                lo, hi = (x.strip() for x in args[1].strip("{}").split(","))
                r[args[0]] = (r[lo] & MASK32) | ((r[hi] & MASK32) << 32)
                continue
            a = [_val(r, x) for x in args[1:]]
            if op.startswith("and"):
                v = a[0] & a[1]
            elif op.startswith("xor"):
                v = a[0] ^ a[1]
            elif op.startswith("shl"):
                v = a[0] << a[1]
            elif op.startswith("shr"):
                v = a[0] >> a[1]
            elif op.startswith("add"):
                v = a[0] + a[1]
            elif op.startswith("cvt"):
                v = a[0]
            elif op.startswith("setp.ne"):
                v = a[0] != a[1]
            else:
                raise AssertionError(f"unmodelled instruction {line!r}")
            r[args[0]] = v if isinstance(v, bool) else v & (MASK32 if ".b64" not in op and ".s64" not in op and "u64" not in op else (1 << 64) - 1)


def _pairs(lane):
    return {f"q{a}_{t}_{j}": ("item", lane, a, t, j) for a in range(2) for t in range(4) for j in range(4)}


@pytest.mark.parametrize("absent", [(), (5,), (0, 31), tuple(range(20, 32))])
def test_staged_items_land_on_their_runs_in_whole_runs_without_bank_conflicts(absent):
    base = 0x4000  # the warp's 32 slots (128-byte aligned)
    # runs in an order unrelated to the lanes, not contiguous (items of two rows with a gap)
    runs = [0x100000 + 128 * ((7 * lane) % 32) + (0x8000 if lane >= 16 else 0) for lane in range(32)]
    smem, gmem, trace = {}, {}, []
    item_inputs = [dict(_pairs(lane), **{"$9": base + 128 * lane, "$10": (lane % 8) * 16}) for lane in range(32)]
    item_asm = ptx.rs_y_staged_item_asm(-14)
    item_inputs_present = [inp if lane not in absent else None for lane, inp in enumerate(item_inputs)]
    # absent items: their lanes skip the item block (the kernel's `if ok`), but join the copy
    for lane, inp in enumerate(item_inputs_present):
        if inp is None:
            continue
        lane_trace = []
        run_warp(item_asm, [inp] * 32, smem, {}, lane_trace)  # one lane's stores (32 identical copies)
    # quarter-warp bank check of the item stores (chunk c of 8 consecutive lanes)
    for c in range(8):
        for q in range(4):
            groups = [((base + 128 * l) ^ ((l % 8) * 16) ^ (16 * c)) // 16 % 8 for l in range(8 * q, 8 * q + 8)]
            assert len(set(groups)) == 8
    copy_inputs = [{"$0": base, "$1": runs[l] & MASK32, "$2": runs[l] >> 32, "$3": int(l not in absent), "$4": l}
                   for l in range(32)]
    run_warp(ptx.rs_y_staged_copy_asm(), copy_inputs, smem, gmem, trace)
    expected = {}
    for lane in range(32):
        if lane in absent:
            continue
        for a in range(2):
            for j in range(4):
                expected[runs[lane] + 16 * (4 * a + j)] = tuple(("item", lane, a, t, j) for t in range(4))
    assert gmem == expected
    loads = [addrs for op, addrs in trace if op.startswith("ld.shared")]
    stores = [addrs for op, addrs in trace if op.startswith("st.global")]
    assert len(loads) == len(stores) == 8
    for addrs in loads:  # each quarter warp reads 8 distinct 16-byte bank groups
        for q in range(4):
            groups = [a // 16 % 8 for lane, a in addrs if 8 * q <= lane < 8 * q + 8]
            assert len(groups) == len(set(groups)) == 8
    for addrs in stores:  # whole 128-byte runs: every run touched is written completely
        by_run = {}
        for _lane, a in addrs:
            by_run.setdefault(a // 128, set()).add(a % 128)
        assert len(by_run) <= 4 and all(chunks == set(range(0, 128, 16)) for chunks in by_run.values())


def test_the_staged_item_writes_the_same_values_as_the_global_item():
    """Both asm blocks share the decode lines; only each chunk's store differs."""
    direct = ptx.rs_y_global_store_asm(-14).splitlines()
    staged = ptx.rs_y_staged_item_asm(-14).splitlines()
    strip = lambda lines: [l for l in lines if not l.startswith(("st.", ".reg", "xor.b32 s"))]
    assert strip(direct) == strip(staged)
    assert sum(l.startswith("st.global.v4") for l in direct) == sum(l.startswith("st.shared.v4") for l in staged) == 8
