"""One device call for the Hopper kernel: compile every variant, check it exactly, time it.

    source .device/env.sh && python3 ci/hopper_dev_check.py --out $OUT

For each variant of ``kernel.hopper.DECLARED_VARIANTS`` (or ``--variants i,j``): ragged shapes
and the four leaderboard shapes against a float64 reference (fp16-ulp plus fp32-accumulation
tolerance), NaN-poisoned outputs, guard regions around every C, a bitwise rerun check, then
CUDA-graph replay timing (median) next to cuBLAS bf16 on pre-dequantized operands.
Inputs are drawn as codes from a seeded torch.Generator; a failure line carries the seed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import traceback

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")

import torch  # noqa: E402

E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]
GUARD = 64  # fp16 elements of guard before and after every C
SENTINEL = 0x7BCD

STANDARD = {
    "bench1": [(m, 4096, 7168, 1) for m in (80, 176, 128, 72, 64, 248, 96, 160)],
    "bench2": [(m, 7168, 2048, 1) for m in (40, 76, 168, 72, 164, 148, 196, 160)],
    "bench3": [(m, 3072, 4096, 1) for m in (192, 320)],
    "bench4": [(m, 4096, 1536, 1) for m in (128, 384)],
}
RAGGED_256 = {
    "rag2": [(40, 136, 256, 1), (200, 72, 512, 1)],
    "rag8": [(1, 8, 256, 1), (7, 100, 256, 1), (64, 128, 512, 1), (129, 257, 256, 1),
             (255, 24, 768, 1), (0, 40, 256, 1), (96, 520, 256, 1), (33, 1000, 512, 1)],
}
RAGGED_128 = {"rag2k128": [(50, 300, 384, 1), (130, 64, 128, 1)]}


def blocked_from_rowmajor(sf_u8: torch.Tensor) -> torch.Tensor:
    """[mn, k16] uint8 -> the (32,4,rest_m,4,rest_k,1) view of the cuBLAS blocked layout."""
    mn, k16 = sf_u8.shape
    rest_m, rest_k = (mn + 127) // 128, (k16 + 3) // 4
    buf = torch.zeros(rest_m * rest_k * 512, dtype=torch.uint8, device=sf_u8.device)
    i = torch.arange(mn, device=sf_u8.device).view(-1, 1)
    j = torch.arange(k16, device=sf_u8.device).view(1, -1)
    off = ((i // 128) * rest_k + j // 4) * 512 + (i % 32) * 16 + ((i % 128) // 32) * 4 + j % 4
    buf[off.reshape(-1)] = sf_u8.reshape(-1)
    view = torch.as_strided(buf, (32, 4, rest_m, 4, rest_k, 1),
                            (16, 4, rest_k * 512, 1, 512, rest_m * rest_k * 512))
    return view.view(torch.float8_e4m3fn)


def draw_operand(rows, k, gen, dist, device):
    if dist == "leaderboard":
        codes = torch.tensor([0, 1, 2, 3, 8, 9, 10, 11])[torch.randint(0, 8, (rows, k), generator=gen)]
        sf = torch.tensor([0x38, 0x40], dtype=torch.uint8)[torch.randint(0, 2, (rows, k // 16), generator=gen)]
    else:  # "wide": all 16 codes, scales 2^-9 (subnormal) .. 3.75 with random sign
        codes = torch.randint(0, 16, (rows, k), generator=gen)
        sf = torch.randint(1, 0x48, (rows, k // 16), generator=gen)
        sf = sf | (torch.randint(0, 8, (rows, k // 16), generator=gen) == 0).long() * 0x80
        sf = sf.to(torch.uint8)
    packed = (codes[:, 0::2] | (codes[:, 1::2] << 4)).to(torch.uint8)
    return codes.to(device), packed.to(device), sf.to(device)


def make_problem(sizes, seed, dist, device="cuda"):
    gen = torch.Generator().manual_seed(seed)
    abc, sfs, sfr, deq, guards = [], [], [], [], []
    for (m, n, k, _) in sizes:
        ca, pa, sa = draw_operand(m, k, gen, dist, device)
        cb, pb, sb = draw_operand(n, k, gen, dist, device)
        flat = torch.full((m * n + 2 * GUARD,), SENTINEL, dtype=torch.int16, device=device)
        c = flat[GUARD:GUARD + m * n].view(torch.float16).view(m, n, 1)
        c.fill_(float("nan"))
        a = pa.view(torch.float4_e2m1fn_x2).view(m, k // 2, 1)
        b = pb.view(torch.float4_e2m1fn_x2).view(n, k // 2, 1)
        abc.append((a, b, c))
        sfs.append((sa.view(torch.float8_e4m3fn).view(m, k // 16, 1), sb.view(torch.float8_e4m3fn).view(n, k // 16, 1)))
        sfr.append((blocked_from_rowmajor(sa), blocked_from_rowmajor(sb)))
        deq.append((ca, sa, cb, sb))
        guards.append(flat)
    return (abc, sfs, sfr, [tuple(s) for s in sizes]), deq, guards


def dequant(codes, sf_u8, dtype=torch.float64):
    table = torch.tensor(E2M1, dtype=torch.float64, device=codes.device)
    scale = sf_u8.view(torch.float8_e4m3fn).to(torch.float64).repeat_interleave(16, dim=1)
    return (table[codes] * scale).to(dtype)


def check(data, deq, guards, outputs):
    """Worst violation (ratio err/tol) and a description; ratio <= 1 passes."""
    worst, where = 0.0, "ok"
    for g, ((m, n, k, _), (ca, sa, cb, sb), out, flat) in enumerate(zip(data[3], deq, outputs, guards)):
        head, tail = flat[:GUARD], flat[GUARD + m * n:]
        if not (bool((head == SENTINEL).all()) and bool((tail == SENTINEL).all())):
            return float("inf"), f"group {g}: guard region overwritten"
        if m == 0 or n == 0:
            continue
        A, B = dequant(ca, sa), dequant(cb, sb)
        ref = A @ B.T
        mag = A.abs() @ B.abs().T
        got = out.view(m, n).to(torch.float64)
        ref16 = ref.to(torch.float16).to(torch.float64)
        ulp = torch.where(ref16.abs() >= 2**-14, 2.0 ** (torch.floor(torch.log2(ref16.abs().clamp_min(2**-14))) - 10), torch.full_like(ref, 2.0**-24))
        tol = ulp + 2.0 * k * 2.0**-24 * mag
        err = (got - ref).abs()
        both_inf = torch.isinf(got) & torch.isinf(ref16) & (torch.sign(got) == torch.sign(ref16))
        err = torch.where(both_inf, torch.zeros_like(err), err)
        err = torch.where(torch.isnan(got), torch.full_like(err, float("inf")), err)
        ratio = err / tol
        r = float(ratio.max())
        if r > worst:
            idx = int(ratio.argmax())
            i, j = divmod(idx, n)
            worst = r
            where = f"group {g} ({m}x{n}x{k}) [{i},{j}] got {float(got[i, j])!r} ref {float(ref[i, j])!r} tol {float(tol[i, j]):.3g}"
    return worst, where


def graph_time_us(fn, reps=20, inner=10):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
        fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(inner):
            fn()
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        g.replay()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) * 1000.0 / inner)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/hopper_out"))
    ap.add_argument("--variants", default="all")
    ap.add_argument("--no-time", action="store_true")
    ap.add_argument("--time-variants", default="all")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    import kernel.hopper as H

    variants = list(H.DECLARED_VARIANTS)
    if args.variants != "all":
        variants = [variants[int(i)] for i in args.variants.split(",")]
    timed = None if args.time_variants == "all" else {int(i) for i in args.time_variants.split(",")}
    print(f"device {torch.cuda.get_device_name()} sms {torch.cuda.get_device_properties(0).multi_processor_count} torch {torch.__version__}", flush=True)
    results = []
    cublas = {}
    for vi, cfg in enumerate(variants):
        row = {"variant": cfg.label, "checks": [], "times": {}}
        results.append(row)
        try:
            t0 = time.perf_counter()
            for G in (2, 8):
                H.compile_for(cfg, G)
            row["compile_s"] = round(time.perf_counter() - t0, 1)
            shapes = dict(RAGGED_256)
            if cfg.tile_k == 128:
                shapes.update(RAGGED_128)
            shapes.update(STANDARD)
            for si, (name, sizes) in enumerate(shapes.items()):
                dists = ("wide", "leaderboard") if name.startswith("bench") else ("wide",)
                for dist in dists:
                    seed = 1000 * vi + 10 * si + len(dist)
                    data, deq, guards = make_problem(sizes, seed, dist)
                    outs = H.custom_kernel(data, cfg)
                    torch.cuda.synchronize()
                    ratio, where = check(data, deq, guards, [o for o in outs])
                    first = [o.clone() for o in outs]
                    for (_, _, c) in data[0]:
                        c.fill_(float("nan"))
                    outs2 = H.custom_kernel(data, cfg)
                    torch.cuda.synchronize()
                    same = all(torch.equal(x.view(torch.int16), y.view(torch.int16)) for x, y in zip(first, outs2))
                    ok = ratio <= 1.0 and same
                    row["checks"].append({"shape": name, "dist": dist, "seed": seed, "ratio": ratio, "bitwise_rerun": same, "ok": ok, "worst": where})
                    print(f"{cfg.label:40s} {name:9s} {dist:11s} seed={seed:5d} {'PASS' if ok else 'FAIL'} worst_ratio={ratio:.3g} rerun_bitwise={same} {'' if ok else where}", flush=True)
                    if name.startswith("bench") and dist == "wide" and not args.no_time and (timed is None or vi in timed):
                        prep = H.prepare(data, cfg)
                        row["times"][name] = graph_time_us(lambda: H.launch(prep))
                        if name not in cublas:
                            bf = [(dequant(ca, sa, torch.bfloat16), dequant(cb, sb, torch.bfloat16)) for (ca, sa, cb, sb) in deq]
                            cublas[name] = graph_time_us(lambda: [a @ b.T for a, b in bf])
        except Exception as exc:  # keep going: one broken variant must not hide the others
            row["error"] = f"{type(exc).__name__}: {exc}"
            print(f"{cfg.label}: ERROR {row['error']}", flush=True)
            traceback.print_exc()
    with open(os.path.join(args.out, "hopper_check.json"), "w") as f:
        json.dump({"results": results, "cublas_bf16_us": cublas}, f, indent=1, default=str)
    print("\nvariant                                   pass   " + "  ".join(f"{b:>16s}" for b in STANDARD))
    print(f"{'cuBLAS bf16 (pre-dequantized)':41s} {'':5s}  " + "  ".join(f"{cublas.get(b, float('nan')):16.1f}" for b in STANDARD))
    for row in results:
        npass = sum(c["ok"] for c in row["checks"])
        cells = []
        for b in STANDARD:
            t = row["times"].get(b)
            cells.append(f"{t:8.1f} ({cublas[b] / t:4.2f}x)" if t and b in cublas else f"{'-':>16s}")
        status = "ERR" if "error" in row else f"{npass}/{len(row['checks'])}"
        print(f"{row['variant']:41s} {status:5s}  " + "  ".join(cells))
    return 0 if all("error" not in r and all(c["ok"] for c in r["checks"]) for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
