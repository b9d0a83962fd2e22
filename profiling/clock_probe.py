"""What the GPU's clock does while a Hopper variant runs back to back, and why.

A kernel time ratio is only half the story on a GPU whose SM clock moves: the H200 ran the prepass
variants at 1.68-1.82 GHz (ncu, unlocked clocks, 2026-12-01) against 1.98 GHz idle, and ablations
that skip work also draw less power. This script replays one variant on one standard shape for ``--seconds``
(CUDA-graph replay, inputs rotated past L2, as the benchmarks) while ``nvidia-smi`` samples the
SM clock, the power draw against its limit, the temperature and the active clock-event reasons
(power cap, thermal, ...) every 100 ms, and prints one row per (variant, shape, data): the time
per launch over ``BURST_REPLAYS`` replays after an idle second (what a short benchmark round sees)
and over the sustained replay, the median clock and power, and how often each reason was active.

    python -m profiling.clock_probe --variant LABEL [--variant LABEL2] --shapes bench1,bench4 --seconds 6
    python -m profiling.clock_probe --variant LABEL --shapes bench1 --data random,zero_a,zero_b

``--data`` rewrites the inputs' FP4 codes before timing (results are not checked: this measures
how much the operands' content moves power and clock, i.e. whether a change that zeroes work, such
as padding rows, can pay on a power-capped shape): ``random`` leaves the benchmark inputs as they
are, ``zero_a`` / ``zero_b`` set every code of each group's A / B to 0.

Needs a CUDA GPU and ``nvidia-smi`` on PATH; its figures belong in the results table
(docs/results.md) with the run's command.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Sequence

from profiling.preflight import missing_hopper_gpu

# nvidia-smi's clocks_event_reasons bit mask (nvml.h, nvmlClocksEventReason*)
REASONS = {
    0x1: "idle",
    0x2: "app_clocks",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal",
    0x40: "hw_thermal",
    0x80: "hw_power_brake",
    0x100: "display_clocks",
}
BURST_REPLAYS = 10  # replays timed right after an idle second ("burst" column)
DATA_KINDS = ("random", "zero_a", "zero_b")
QUERY = "clocks.sm,power.draw,power.limit,temperature.gpu,clocks_event_reasons.active"


def decode_reasons(mask: int) -> list[str]:
    """The names of the bits set in an nvidia-smi clocks_event_reasons mask (unknown bits in hex)."""
    names = [name for bit, name in REASONS.items() if mask & bit]
    rest = mask & ~sum(REASONS)
    if rest:
        names.append(hex(rest))
    return names


def parse_samples(lines: Sequence[str]) -> list[dict]:
    """nvidia-smi ``--format=csv,noheader,nounits`` lines of QUERY -> dicts (lines that do not parse
    are skipped: a sample cut by the sampler's stop)."""
    out = []
    for line in lines:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 5:
            continue
        try:
            out.append({"clock_mhz": float(parts[0]), "power_w": float(parts[1]), "limit_w": float(parts[2]),
                        "temp_c": float(parts[3]), "reasons": int(parts[4], 16)})
        except ValueError:
            continue
    return out


def summarize(samples: Sequence[dict]) -> dict:
    """Median clock, power, limit and temperature, and each reason's share of the samples."""
    if not samples:
        return {"samples": 0}
    share: dict[str, float] = {}
    for s in samples:
        for name in decode_reasons(s["reasons"]):
            share[name] = share.get(name, 0.0) + 1.0 / len(samples)
    return {
        "samples": len(samples),
        "clock_mhz": statistics.median(s["clock_mhz"] for s in samples),
        "power_w": statistics.median(s["power_w"] for s in samples),
        "limit_w": statistics.median(s["limit_w"] for s in samples),
        "temp_c": max(s["temp_c"] for s in samples),
        "reasons": dict(sorted(share.items(), key=lambda kv: -kv[1])),
    }


def with_codes(datas: list, kind: str) -> list:
    """``datas`` with their FP4 codes rewritten as ``kind`` says (fresh copies; ``random``: as given)."""
    if kind == "random":
        return datas
    from oracle.datautil import clone_data

    import torch

    which = {"zero_a": 0, "zero_b": 1}[kind]
    out = []
    for d in datas:
        d = clone_data(d)
        for group in d[0]:
            group[which].view(dtype=torch.uint8).zero_()
        out.append(d)
    return out


def probe_row(hopper, timing, config, datas, per_replay: int, seconds: float, shape_name: str, kind: str) -> str:
    """One table row: ``config`` on ``datas`` (one launch per input copy), burst then sustained."""
    prepared = [hopper.prepare(d, config) for d in datas]
    r = timing.Replayer([lambda q=q: hopper.launch(q) for q in prepared], launches_per_replay=per_replay)
    r.prepare()
    r.warmup(20)
    time.sleep(1.0)  # idle: the clock recovers, as between the benchmarks' rounds
    burst = [r.replay() for _ in range(BURST_REPLAYS)]
    r.samples_us.clear()
    with tempfile.TemporaryFile("w+") as log:
        sampler = subprocess.Popen(["nvidia-smi", f"--query-gpu={QUERY}", "--format=csv,noheader,nounits", "-lms", "100"],
                                   stdout=log, stderr=subprocess.DEVNULL, text=True)
        try:
            end = time.time() + seconds
            while time.time() < end:
                r.replay()
        finally:
            sampler.terminate()
            sampler.wait(timeout=10)
        log.seek(0)
        stats = summarize(parse_samples(log.read().splitlines()))
    t = r.timing()
    reasons = ", ".join(f"{k} {v:.0%}" for k, v in stats.get("reasons", {}).items()) or "none"
    nan = float("nan")
    return (f"| `{config.label}` | {shape_name} | {kind} | {statistics.median(burst):.1f} | {t.median_us:.1f} | "
            f"{stats.get('clock_mhz', nan):.0f} | {stats.get('power_w', nan):.0f} / {stats.get('limit_w', nan):.0f} | "
            f"{stats.get('temp_c', nan):.0f} | {reasons} |")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m profiling.clock_probe", description=__doc__.split("\n\n")[0])
    p.add_argument("--variant", action="append", required=True, help="a declared Hopper label (repeatable)")
    p.add_argument("--shapes", default="bench1,bench4")
    p.add_argument("--seconds", type=float, default=6.0, help="sustained replay per (variant, shape)")
    p.add_argument("--data", default="random", help=f"comma-separated, of {', '.join(DATA_KINDS)}")
    args = p.parse_args(argv)

    from kernel import hopper
    from kernel.hopper.variants import DECLARED_VARIANTS
    from profiling import floors, timing
    from profiling.benchmarks import _support as S

    configs = {c.label: c for c in DECLARED_VARIANTS}
    kinds = args.data.split(",")
    for kind in kinds:
        if kind not in DATA_KINDS:
            p.error(f"--data {kind!r}: use {', '.join(DATA_KINDS)}")
    if (line := missing_hopper_gpu("profiling.clock_probe")):
        print(line, file=sys.stderr)
        return 2
    print("| variant | shape | data | us per launch (burst) | us per launch (sustained) | SM MHz (median) | power W (median / limit) | max temp C | clock-event reasons (share of samples) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for shape_name in args.shapes.split(","):
        shape = floors.get_shape(shape_name)
        copies = timing.copies_for(floors.shape_bytes(shape, padded_scales=True), l2_bytes=S.l2_bytes())
        per_replay = timing.launches_for(floors.floor_us(shape), copies)
        for kind in kinds:
            datas = with_codes(S.device_copies(shape, copies), kind)  # once per kind, for every variant
            for label in args.variant:
                print(probe_row(hopper, timing, configs[label], datas, per_replay, args.seconds, shape_name, kind),
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
