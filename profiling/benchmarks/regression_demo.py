"""Show the benchmark regression workflow working, on the GPU machine.

    python3 -m profiling.benchmarks.regression_demo [--family hopper] [--shape bench3] [--fail median:5%]

Runs pytest-benchmark on the family's default variant and the cuBLAS peer, on one shape:

1. ``baseline``: ``--benchmark-save`` into a fresh storage folder (under .benchmarks/, git-ignored);
2. ``rerun``: unchanged, ``--benchmark-compare=0001 --benchmark-compare-fail=...``: must pass;
3. ``slowed``: NVFP4_BENCH_SLOW=auto (fewer A/B pipeline stages, under the default variant's
   benchmark name), same comparison: the kernel must be flagged, the peer not. When the stage
   reduction is within noise, a second slowed run with ``repeat:2`` (two launches per timed
   launch) is made, so the demonstration never depends on one config's sensitivity;
4. prints the run-to-run spread of the unchanged runs (pytest-benchmark median, device median)
   and the within-run relative IQR, and writes everything to ``--report`` (JSON).

Exit status 0 when the unchanged rerun passed and a slowed run was flagged.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _pytest(nodeids, storage: Path, save: str, extra_env: dict, compare_fail: str | None) -> dict:
    cmd = [sys.executable, "-m", "pytest", *nodeids, "--benchmark-only", "-p", "no:cacheprovider", "-q",
           f"--benchmark-storage=file://{storage}", f"--benchmark-save={save}", "--benchmark-columns=min,median,iqr,max,rounds"]
    if compare_fail:
        cmd += ["--benchmark-compare=0001", f"--benchmark-compare-fail={compare_fail}"]
    env = dict(os.environ, **extra_env)
    t0 = time.time()
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    out = proc.stdout + proc.stderr
    regressed = []
    if "Performance has regressed" in out:
        block = out.split("Performance has regressed:", 1)[-1]
        regressed = [line.strip() for line in block.splitlines()[1:] if line.startswith("\t")]
        if not regressed:
            regressed = re.findall(r"^\s+(test_\S+ - .*)$", block, flags=re.M)
    passed = re.search(r"(\d+) passed", out)
    failed = re.search(r"(\d+) (failed|error)", out)
    return {
        "save": save,
        "rc": proc.returncode,
        "seconds": round(time.time() - t0, 1),
        "passed": int(passed.group(1)) if passed else 0,
        "failed_or_error": failed.group(0) if failed else None,
        "regression_flagged": bool(regressed) or "Performance has regressed" in out,
        "regressed": regressed,
        "tail": out[-3000:],
        "env": extra_env,
    }


def _saved(storage: Path, save: str) -> dict:
    files = sorted(storage.rglob(f"*_{save}.json"))
    if not files:
        return {}
    data = json.loads(files[-1].read_text())
    return {b["fullname"]: b for b in data["benchmarks"]}


def _rel(a: float, b: float) -> float:
    return (b - a) / a * 100 if a else float("nan")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--family", default="auto",
                    help="hopper, blackwell, auto (by the GPU) or model (a CPU rehearsal of the workflow)")
    ap.add_argument("--shape", default="bench3")
    ap.add_argument("--fail", default="median:5%", help="--benchmark-compare-fail expression")
    ap.add_argument("--slow", default="auto", help="NVFP4_BENCH_SLOW for the slowed run")
    ap.add_argument("--storage", default=None, help="default: .benchmarks/demo-<time>")
    ap.add_argument("--report", default=None, help="write the JSON report here (e.g. $OUT/demo.json)")
    args = ap.parse_args(argv)

    sys.path.insert(0, str(REPO))
    from profiling.benchmarks import _support as S

    family = args.family
    if family == "model":  # CPU rehearsal: the CPU model kernel, the oracle as its "peer"
        cpu = "profiling/benchmarks/bench_cpu.py"
        shape = "lbtest2"
        nodeids = [f"{cpu}::test_oracle_reference[{shape}]", f"{cpu}::test_cpu_model_kernel[{shape}]"]
        label = "model-default"
        args.shape = shape
    if family == "auto":
        from kernel.device import cuda_capability

        cap = cuda_capability()
        family = "blackwell" if cap and cap[0] == 10 else "hopper"
    if family != "model":
        module, reason = S.load_family(family)
        if module is None:
            print(f"regression demo: {reason}")
            return 2
        label = S.default_config(module).label
        bench = "profiling/benchmarks/bench_gpu.py"
        nodeids = [f"{bench}::test_peer_cublas_bf16[{args.shape}]", f"{bench}::test_kernel[{family}:{label}-{args.shape}]"]
    storage = Path(args.storage) if args.storage else REPO / ".benchmarks" / f"demo-{time.strftime('%Y%m%d-%H%M%S')}"
    storage.mkdir(parents=True, exist_ok=True)
    base_env = {"NVFP4_BENCH_SHAPES": args.shape, "NVFP4_BENCH_FAMILIES": "" if family == "model" else family,
                "NVFP4_BENCH_CEILINGS": "facts", "NVFP4_BENCH_SLOW": ""}

    runs = []
    print(f"regression demo: {family}:{label} and the peer on {args.shape}; storage {storage}", flush=True)
    runs.append(_pytest(nodeids, storage, "baseline", base_env, None))
    print(f"  baseline: rc={runs[-1]['rc']} passed={runs[-1]['passed']} ({runs[-1]['seconds']} s)", flush=True)
    if runs[-1]["passed"] != len(nodeids):
        print(runs[-1]["tail"])
        return 1
    runs.append(_pytest(nodeids, storage, "rerun", base_env, args.fail))
    print(f"  rerun unchanged: flagged={runs[-1]['regression_flagged']} rc={runs[-1]['rc']} ({runs[-1]['seconds']} s)", flush=True)
    slow_specs = [args.slow] + (["repeat:2"] if args.slow != "repeat:2" else [])
    slowed_flagged = False
    for spec in slow_specs:
        r = _pytest(nodeids, storage, f"slowed-{spec.replace(':', '')}", dict(base_env, NVFP4_BENCH_SLOW=spec), args.fail)
        runs.append(r)
        kernel_flagged = any(re.search(r"test_(kernel|cpu_model_kernel)\b", x) for x in r["regressed"])
        peer_flagged = any(re.search(r"test_(peer|oracle)", x) for x in r["regressed"])
        print(f"  slowed ({spec}): kernel flagged={kernel_flagged} peer flagged={peer_flagged} rc={r['rc']} "
              f"errors={r['failed_or_error']} ({r['seconds']} s)", flush=True)
        for line in r["regressed"]:
            print(f"      {line}")
        if kernel_flagged:
            slowed_flagged = True
            break

    base, rerun = _saved(storage, "baseline"), _saved(storage, "rerun")
    spread = []
    for name, b in base.items():
        if name not in rerun:
            continue
        n = rerun[name]
        bi, ni = b.get("extra_info", {}), n.get("extra_info", {})
        row = {
            "name": name.split("::")[-1],
            "replay_median_us": [b["stats"]["median"] * 1e6, n["stats"]["median"] * 1e6],
            "replay_median_change_pct": _rel(b["stats"]["median"], n["stats"]["median"]),
            "device_median_us": [bi.get("device_median_us"), ni.get("device_median_us")],
            "device_median_change_pct": _rel(bi.get("device_median_us") or 0, ni.get("device_median_us") or 0),
            "within_run_rel_iqr_pct": [100 * (bi.get("device_rel_iqr") or float("nan")),
                                       100 * (ni.get("device_rel_iqr") or float("nan"))],
            "time_over_peer": [bi.get("time_over_peer"), ni.get("time_over_peer")],
        }
        spread.append(row)
    for spec_run in runs[2:]:
        slowed = _saved(storage, spec_run["save"])
        for row in spread:
            full = next((k for k in slowed if k.endswith(row["name"])), None)
            if full:
                row[f"{spec_run['save']}_change_pct"] = _rel(base[next(k for k in base if k.endswith(row['name']))]["stats"]["median"],
                                                             slowed[full]["stats"]["median"])

    print("\nrun-to-run (baseline -> unchanged rerun), pytest-benchmark replay median and device median:")
    for row in spread:
        extra = " ".join(f"{k}={v:+.1f}%" for k, v in row.items() if k.startswith("slowed") and isinstance(v, float))
        print(f"  {row['name']:70s} replay {row['replay_median_change_pct']:+.2f}%  device {row['device_median_change_pct']:+.2f}%  "
              f"within-run IQR {row['within_run_rel_iqr_pct'][0]:.2f}%/{row['within_run_rel_iqr_pct'][1]:.2f}%  {extra}")
    rerun_ok = not runs[1]["regression_flagged"] and runs[1]["rc"] == 0
    ok = rerun_ok and slowed_flagged
    print(f"\nunchanged rerun passed compare ({args.fail}): {rerun_ok}; slowed run flagged: {slowed_flagged}; DEMO {'OK' if ok else 'FAILED'}")
    report = {"family": family, "variant": label, "shape": args.shape, "compare_fail": args.fail, "storage": str(storage),
              "runs": runs, "spread": spread, "rerun_passed": rerun_ok, "slowed_flagged": slowed_flagged, "ok": ok}
    if args.report:
        Path(args.report).parent.mkdir(parents=True, exist_ok=True)
        Path(args.report).write_text(json.dumps(report, indent=1, default=str))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
