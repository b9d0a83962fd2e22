"""Print a short table of a pytest-benchmark JSON (``--benchmark-json`` or a saved run).

    python3 -m profiling.benchmarks.summary $OUT/bench_gpu.json
"""

import json
import sys


def rows(data: dict) -> list[str]:
    out = [f"{'benchmark':64} {'dev med us':>10} {'IQR%':>6} {'TFLOP/s':>8} {'GB/s':>7} {'/floor':>7} {'/peer':>6} method"]
    for b in sorted(data["benchmarks"], key=lambda b: (b.get("group") or "", b["name"])):
        e = b.get("extra_info", {})
        if "device_median_us" not in e:
            out.append(f"{b['name'][:64]:64} host median {b['stats']['median'] * 1e3:.3f} ms")
            continue
        peer = e.get("time_over_peer")
        out.append(
            f"{b['name'][:64]:64} {e['device_median_us']:10.2f} {100 * e['device_rel_iqr']:6.2f} {e['tflops']:8.1f} "
            f"{e['gbps']:7.0f} {e['time_over_floor']:7.2f} {peer if peer is None else f'{peer:6.2f}'!s:>6} "
            f"{e['device_method']}{' SLOWED' if e.get('slowed') else ''}"
        )
    m = data.get("machine_info", {}).get("nvfp4", {})
    out.append(f"machine: {m.get('gpu_name')} cc {m.get('gpu_compute_capability')} driver {m.get('driver')} "
               f"torch {m.get('torch')} cuda {m.get('torch_cuda')} cutlass-dsl {m.get('nvidia_cutlass_dsl')} "
               f"ceilings {m.get('ceilings')}")
    return out


def main(argv=None) -> int:
    for path in argv or sys.argv[1:]:
        with open(path) as f:
            print("\n".join(rows(json.load(f))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
