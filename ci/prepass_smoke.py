"""GPU smoke test of the y_source="prepass" variants, before the properties: small problems,
bit-identical to the fastest smem-decode variant (same operand values, same wgmma order; a
build that cuts tiles in K, ``schedule="split_last"``, sums a cut tile's halves in another order,
so its outputs are held to the oracle's bound for the K split it declares instead),
repeated launches (the grid barrier's counters go back to zero by themselves), two problems of
one geometry launched alternately (one workspace: nothing of a launch may look ready to the
next), and two streams at once (each its own workspace). Run under ``timeout``: a wrong grid
barrier hangs.

    python3 -m ci.prepass_smoke [VARIANT ...]    (default: the first declared prepass variant)

A VARIANT is a declared label or ``LABEL:field=value,...`` (that variant with fields changed,
kernel.hopper.variants.resolve_config), so a phase-1 lever is checked before it is declared.

Several labels: each is checked in turn against the same expected outputs (one process: one
start-up and one reference compile for all).
"""

from __future__ import annotations

import sys


def _smoke(pre, oracle, hopper, torch, FASTEST_CONFIG) -> int:
    from kernel.hopper.launch import constraints

    contract = constraints(pre)

    def check(torch, what, got, want, datas):
        return _mismatch(torch, oracle, what, got, want, datas, contract)

    cases = [
        [(40, 512, 256, 1)],
        [(130, 384, 1024, 1), (7, 256, 512, 1), (0, 128, 256, 1), (256, 640, 768, 1)],
        [(96, 7168, 2048, 1)] * 8,
    ]
    bad = 0
    for i, sizes in enumerate(cases):
        data = oracle.make_inputs(sizes, 100 + i, device="cuda")
        want = [c.clone() for c in hopper.custom_kernel(data, config=FASTEST_CONFIG)]
        for rep in range(3):  # the fast path replays the same launch: counters must self-reset
            _nan_outputs(data)
            got = hopper.custom_kernel(data, config=pre)
            torch.cuda.synchronize()
            bad += check(torch, f"case {i} rep {rep} {sizes[:2]}...", got, want, [data])
    # two problems of one geometry, launched alternately without a sync in between: one
    # workspace for both, so a counter left looking ready by the previous launch would let a tile read the other problem's fp16 Y
    da = oracle.make_inputs(cases[1], 21, device="cuda")
    db = oracle.make_inputs(cases[1], 22, device="cuda")
    wa = [c.clone() for c in hopper.custom_kernel(da, config=FASTEST_CONFIG)]
    wb = [c.clone() for c in hopper.custom_kernel(db, config=FASTEST_CONFIG)]
    torch.cuda.synchronize()
    for rep in range(4):
        _nan_outputs(da)
        _nan_outputs(db)
        oa = hopper.custom_kernel(da, config=pre)
        ob = hopper.custom_kernel(db, config=pre)
        torch.cuda.synchronize()
        bad += check(torch, f"alternating problems rep {rep}", oa + ob, wa + wb, [da, db])
    # two streams at once, two problems: each stream its own workspace
    d1 = oracle.make_inputs(cases[2], 7, device="cuda")
    d2 = oracle.make_inputs(cases[1], 8, device="cuda")
    w1 = [c.clone() for c in hopper.custom_kernel(d1, config=FASTEST_CONFIG)]
    w2 = [c.clone() for c in hopper.custom_kernel(d2, config=FASTEST_CONFIG)]
    torch.cuda.synchronize()
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    for _ in range(5):
        with torch.cuda.stream(s1):
            o1 = hopper.custom_kernel(d1, config=pre)
        with torch.cuda.stream(s2):
            o2 = hopper.custom_kernel(d2, config=pre)
    torch.cuda.synchronize()
    bad += check(torch, "two streams", o1 + o2, w1 + w2, [d1, d2])
    return bad


def _mismatch(torch, oracle, what: str, got, want, datas, contract) -> int:
    """1 when ``got`` (the outputs of the problems ``datas``, in order) is wrong, printed: not
    bit-identical to ``want``, or, for a build that declares a K split (``contract.k_split``),
    outside the oracle's bound for that split."""
    if contract.k_split is None:
        return _differs(torch, what, got, want)
    violations, at = 0, 0
    for data in datas:
        outputs = got[at:at + len(data[0])]
        at += len(data[0])
        violations += oracle.check_outputs(data, outputs, chunk=contract.accumulation_chunk,
                                           k_split=contract.k_split).violations
    ok = violations == 0 and at == len(got)
    print(f"{what}: {'within the bound of its K split' if ok else f'{violations} outside the bound'}", flush=True)
    return int(not ok)


def _nan_outputs(data) -> None:
    for g in data[0]:
        g[2].fill_(float("nan"))


def compare_with_twins(pairs, cases, seed0: int, reps: int = 2, back_to_back_last: bool = False) -> int:
    """GPU: for each (build, twin) config pair and each case (a size list; inputs seeded
    ``seed0 + i``), the build's C bit-identical to the twin's, ``reps`` times with the outputs
    NaN-filled before each; ``back_to_back_last``: the last repetition launches the build twice
    with no synchronization between. The number of differing runs (each printed)."""
    import torch

    import oracle
    from kernel import hopper

    bad = 0
    for build, twin in pairs:
        print(f"== {build.label} vs {twin.label}", flush=True)
        for i, sizes in enumerate(cases):
            data = oracle.make_inputs(sizes, seed0 + i, device="cuda")
            want = [c.clone() for c in hopper.custom_kernel(data, config=twin)]
            torch.cuda.synchronize()
            for rep in range(reps):
                _nan_outputs(data)
                got = hopper.custom_kernel(data, config=build)
                if back_to_back_last and rep == reps - 1:
                    got = hopper.custom_kernel(data, config=build)
                torch.cuda.synchronize()
                bad += _differs(torch, f"case {i} rep {rep} {sizes[:2]}...", got, want)
    return bad


def _differs(torch, what: str, got, want) -> int:
    """Print whether ``got`` is bit-identical to ``want``; 1 when it differs."""
    same = len(got) == len(want) and all(torch.equal(a.view(torch.int16), b.view(torch.int16)) for a, b in zip(got, want))
    print(f"{what}: {'bit-identical' if same else 'DIFFERS'}", flush=True)
    return int(not same)


def main(argv=None) -> int:
    import torch

    import oracle
    from kernel import hopper
    from kernel.hopper.variants import DECLARED_VARIANTS, FASTEST_CONFIG, resolve_config

    argv = sys.argv[1:] if argv is None else argv
    specs = argv or [next(c.label for c in DECLARED_VARIANTS if c.y_source == "prepass")]
    try:
        configs = [resolve_config(spec) for spec in specs]
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    bad = 0
    for pre in configs:
        print(f"== {pre.label}", flush=True)
        bad += _smoke(pre, oracle, hopper, torch, FASTEST_CONFIG)
    print("prepass smoke:", "OK" if not bad else f"{bad} FAILED")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
