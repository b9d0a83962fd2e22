"""Per-shape variant choice of the Hopper kernel (issue 14): a small, fixed table, no autotuning.

A problem's *shape key* is what the choice may depend on: the sorted per-group M, and the N and K
shared by every group (``None`` when groups differ in N or K). The table maps the keys of the
leaderboard's four benchmark shapes (oracle.speed.BENCHMARK_SHAPES) to a declared variant;
every other problem gets ``fallback``. Nothing is measured or searched at call time: the
choice is a dictionary look-up on the sizes.

Why a shape wants which tile (tile counts on 132 SMs; kernel/hopper/NOTES.md, issue 14):

* bench1 (8 groups, N 4096, K 7168) and bench2 (8 groups, N 7168, K 2048): 128x128 swapped
  tiles make 352 and 728 tiles = 3 and 6 rounds; 192(N)x128(M) tiles with 3 consumer
  warpgroups make 242 and 494 tiles = 2 and 4 rounds of 1.5x the work each;
* bench3 (M 192 + 320, N 3072): 120 tiles of 128x128 (1 round, M padded 640/512); 192x64 tiles:
  128 tiles (1 round) of 0.75x the work, no M padding;
* bench4 (M 128 + 384, N 4096, K 1536): 128 tiles of 128x128, one round, no padding: the
  fastest 2-warpgroup tile.

``PROPOSED_TABLE`` is that reasoning. It is not wired into the launch path (``custom_kernel``
still takes one config), and measurement says it must not be: in one H200 run on 2026-12-01
(``bash ci/gpu_speed.sh``, CUDA-graph replay, profiling/PERF_LOG.md) the 192-row variants were
slower on every shape (bench1-4: 186 / 119 / 57 / 27 us for 192x128 and 240 / 135 / 39 / 33 us
for 192x64, against 171 / 110 / 37 / 19 us for ``FASTEST_CONFIG``), so the measured winner on all
four shapes is the fallback. The table stays as the mechanism for the next variant that wins a
shape.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from kernel.hopper.config import (DECLARED_VARIANTS, FASTEST_CONFIG, FASTEST_STAGED_CONFIG, FASTEST_STAGED_PDL_CONFIG,
                                  IN_FLIGHT_CONFIG,
                                  LEAN_EXIT_CONFIG,
                                  MIXED_TAIL_STAGED_CONFIG, PHASE1_STAGED_CONFIG, SPLIT_WARP_CONFIG, HopperConfig)

ShapeKey = tuple[tuple[int, ...], int | None, int | None]

# name: (M per group, N, K), as oracle.speed.BENCHMARK_SHAPES (kept here so kernel/ does not
# import oracle/; kernel/tests/test_hopper_dispatch.py checks the two agree)
STANDARD_SHAPES: dict[str, tuple[tuple[int, ...], int, int]] = {
    "bench1": ((80, 176, 128, 72, 64, 248, 96, 160), 4096, 7168),
    "bench2": ((40, 76, 168, 72, 164, 148, 196, 160), 7168, 2048),
    "bench3": ((192, 320), 3072, 4096),
    "bench4": ((128, 384), 4096, 1536),
}


def shape_key(problem_sizes: Iterable[Sequence[int]]) -> ShapeKey:
    """(sorted M, N, K) of a list of (m, n, k[, l]) sizes; N or K is None when groups differ."""
    sizes = [tuple(int(x) for x in s) for s in problem_sizes]
    ns = {s[1] for s in sizes}
    ks = {s[2] for s in sizes}
    return (
        tuple(sorted(s[0] for s in sizes)),
        ns.pop() if len(ns) == 1 else None,
        ks.pop() if len(ks) == 1 else None,
    )


def standard_key(name: str) -> ShapeKey:
    ms, n, k = STANDARD_SHAPES[name]
    return tuple(sorted(ms)), n, k


def by_label(label: str) -> HopperConfig:
    for c in DECLARED_VARIANTS:
        if c.label == label:
            return c
    raise KeyError(f"no declared Hopper variant is labelled {label!r}")


class DispatchTable:
    """``entries``: standard-shape name -> variant label; ``fallback``: every other shape."""

    def __init__(self, entries: Mapping[str, str], fallback: HopperConfig = FASTEST_CONFIG):
        unknown = set(entries) - set(STANDARD_SHAPES)
        if unknown:
            raise KeyError(f"not standard shapes: {sorted(unknown)}")
        self.entries = dict(entries)
        self.fallback = fallback
        self._by_key = {standard_key(name): by_label(label) for name, label in entries.items()}

    def choose(self, problem_sizes: Iterable[Sequence[int]]) -> HopperConfig:
        return self._by_key.get(shape_key(problem_sizes), self.fallback)

    def configs(self) -> list[HopperConfig]:
        """Every config the table can return (fallback first), without repeats."""
        out = [self.fallback]
        for c in self._by_key.values():
            if c not in out:
                out.append(c)
        return out


WG3_128 = "h90_m128n192k256_s4_wg3_swap_fp16_tma_prmt_rs_r160"
WG3_64 = "h90_m64n192k256_s4_wg3_swap_fp16_tma_prmt_rs_r160"
SPLIT_WG3_128 = "h90_m128n192k256_s3_wg3_dq1b4_swap_fp16_tma_prmt_rs_r120"
SPLIT_DQ2 = "h90_m128n128k256_s4_wg2_dq2b4_swap_fp16_tma_prmt_rs_r152"

# Predicted, not measured (profiling/PERF_LOG.md, issue 14). Not used by the launch path.
PROPOSED_TABLE = DispatchTable(
    {"bench1": WG3_128, "bench2": WG3_128, "bench3": WG3_64, "bench4": FASTEST_CONFIG.label},
)

# The measured winner per shape after issue 14c (one H200 run, 2026-12-01, profiling.ablation,
# CUDA-graph replay; FASTEST_CONFIG 169.6 / 110.3 / 36.5 / 18.4 us in the same run): the split
# register-X variants, Y decoded by its own warpgroups: 192x128 with one dequant warpgroup on
# bench1/2 (157.1 / 103.0 us), 128x128 with two on bench3/4 (35.3 / 18.3 us). Not wired in: the
# gain is 4-7 %, and these variants have passed the ci property (14 passed each) but not yet the
# per-distribution and gpu-long runs or the mutant catalog that the default must pass.
# Later the same day: Y decoded once per call (`y_source="prepass"`) 146.1 / 96.1 / 37.1 / 23.1 us
# against 170.8 / 110.2 / 36.4 / 18.3 for FASTEST_CONFIG in one run: it wins bench1 and bench2.
# Session 4 (one H200, profiling.ablation, same run): the prepass with problem-sized
# phase-1 chunks and early X stages, 143.4 / 92.2 / 33.7 / 19.7 us, against FASTEST_CONFIG
# 168.2 / 109.0 / 36.3 / 18.3: it wins bench1-3; FASTEST_CONFIG keeps bench4 (SPLIT_DQ2 measured
# 18.3 there too, in another run). Geomean 53.4 us = 2.14x the floor. Ready-flags, 64-row Y tiles
# and 2-CTA multicast variants were slower (profiling/PERF_LOG.md).
PREPASS = "h90_m128n128k256_s4_wg2_b8_swap_fp16_tma_prmt_rs_pre"
PREPASS_CHUNKED = "h90_m128n128k256_s4_wg2_b8_swap_fp16_tma_prmt_rs_prec1x"
# Session 5 (one H200, profiling.ablation, same run): mixed 128/64-row Y tiles
# with the cost-balanced schedule, 136.8 / 82.5 / 33.4 / 19.0 us, against PREPASS_CHUNKED 143.5 /
# 92.9 / 33.8 / 19.6 and FASTEST_CONFIG 168.9 / 109.9 / 36.6 / 18.6: it wins bench1-3,
# FASTEST_CONFIG keeps bench4. Geomean 51.5 us = 2.06x the floor. It passed the ci property, each
# distribution (400 examples) and the gpu-long run (500 examples) on the H200.
MIXED_TAIL = "h90_m128n128k256_s4_wg2_b8_swap_fp16_tma_prmt_rs_prec1x_t64"
# Session 6 (one H200, bench_gpu with cuBLAS in the same run, CUDA-graph replay): the same two tiles
# with C staged through shared memory (epilogue="smem", "_es"): 133.7 / 75.9 / 32.7 / 18.0 us for
# the mixed tile, 169.7 / 107.7 / 36.4 / 17.6 for the fastest (cuBLAS bf16 179.8 / 93.0 / 31.9 /
# 16.8): the mixed tile wins bench1-3, the fastest bench4. Geomean 49.2 us = 1.97x the floor.
MIXED_TAIL_DIRECT_TABLE = DispatchTable(
    {"bench1": MIXED_TAIL, "bench2": MIXED_TAIL, "bench3": MIXED_TAIL, "bench4": FASTEST_CONFIG.label},
    fallback=by_label(MIXED_TAIL),
)
MIXED_TAIL_STAGED = MIXED_TAIL_STAGED_CONFIG.label
FASTEST_STAGED = FASTEST_STAGED_CONFIG.label
MIXED_TAIL_STAGED_TABLE = DispatchTable(
    {"bench1": MIXED_TAIL_STAGED, "bench2": MIXED_TAIL_STAGED, "bench3": MIXED_TAIL_STAGED, "bench4": FASTEST_STAGED},
    fallback=by_label(MIXED_TAIL_STAGED),
)
# Session 7 (one H200, bench_gpu with cuBLAS in the same run): the mixed tile whose phase 1
# stores whole 128-byte runs from shared memory (prepass_store="staged", "_prec1xs"): 121.8 /
# 77.8 / 33.0 / 19.2 us against 132.5 / 75.3 / 33.0 / 18.8 for MIXED_TAIL_STAGED and 170.0 /
# 108.6 / 36.2 / 17.7 for FASTEST_STAGED (cuBLAS bf16 185.7 / 93.4 / 32.1 / 16.8); in a second
# run (profiling.ablation) 121.9 / 72.6 / 31.0 / 18.9 against 131.3 / 74.5 / 32.2 / 18.6. Its
# phase 1 alone is never slower (phase1_only: 9.9 / 7.5 / 6.4 / 5.9 us against 20.1 / 9.4 / 8.6 /
# 5.9), so it takes bench1-3 and the fallback; FASTEST_STAGED keeps bench4.
PHASE1_STAGED = PHASE1_STAGED_CONFIG.label
PHASE1_STAGED_TABLE = DispatchTable(
    {"bench1": PHASE1_STAGED, "bench2": PHASE1_STAGED, "bench3": PHASE1_STAGED, "bench4": FASTEST_STAGED},
    fallback=by_label(PHASE1_STAGED),
)
# Session 8 (one H200, twice: profiling.ablation and bench_gpu with cuBLAS in each
# run): phase 1's exit trimmed (prepass_lean_exit, LEAN_EXIT) against PHASE1_STAGED, us,
# bench1 / bench2 / bench3 / bench4:
#   ablation   lean 125.1 / 74.8 / 30.4 / 17.1   PHASE1_STAGED 121.3 / 73.0 / 32.2 / 18.5
#   bench_gpu  lean 127.4 / 78.9 / 30.6 / 17.4   PHASE1_STAGED 122.9 / 74.4 / 31.3 / 18.7,
#              FASTEST_STAGED bench4 17.6, cuBLAS bf16 183.7 / 93.8 / 32.2 / 16.7
# (the first call, with an earlier build of the lean variant: bench3 30.8 / 31.0, bench4 17.6 /
# 18.1 against 31.0 / 32.0 and 18.2 / 19.1). It wins the one-round shapes and loses bench1/bench2,
# so it would take bench3 and bench4 (LEAN_TABLE). Not the default: with it PRODUCTION_VARIANTS
# held two prepass builds and the H200 main job ran past its 300 s (kernel/hopper/config.py);
# the default stays PHASE1_STAGED_TABLE until the lean exit is a run-time choice of one build.
LEAN_EXIT = LEAN_EXIT_CONFIG.label
LEAN_TABLE = DispatchTable(
    {"bench1": PHASE1_STAGED, "bench2": PHASE1_STAGED, "bench3": LEAN_EXIT, "bench4": LEAN_EXIT},
    fallback=by_label(PHASE1_STAGED),
)
# Session 9 (one H200, one bench_gpu run): the production prepass build with
# only the split's 32-lane search (prepass_split_warp, SPLIT_WARP) 121.0 / 75.1 / 30.7 / 18.3 us
# against PHASE1_STAGED 122.4 / 74.5 / 31.7 / 18.7, FASTEST_STAGED 17.6 on bench4, cuBLAS bf16
# 183.7 / 92.9 / 32.1 / 16.7: faster on bench1, bench3 and bench4, 0.8 % slower on bench2 (one
# run; PHASE1_STAGED's bench2 ranged 74.4-75.2 over sessions 8-9). It passed the ci property and synccheck / racecheck there. Session 10: it
# takes bench1-3 and the fallback in the default table (one prepass build in PRODUCTION_VARIANTS,
# in PHASE1_STAGED's place); FASTEST_STAGED keeps bench4 (17.6 us in that run, against 18.3).
# Each distribution, gpu-long and the prod sync mutants on it: kernel/hopper/NOTES.md, session 10.
SPLIT_WARP = SPLIT_WARP_CONFIG.label
SPLIT_WARP_TABLE = DispatchTable(
    {"bench1": SPLIT_WARP, "bench2": SPLIT_WARP, "bench3": SPLIT_WARP, "bench4": FASTEST_STAGED},
    fallback=by_label(SPLIT_WARP),
)
# Session 12 (one H200, three bench_gpu runs, the last two in opposite
# variant orders): programmatic dependent launch (HopperConfig.pdl) on bench4's build
# FASTEST_STAGED: 16.94 / 17.14 / 17.18 us against 17.52 / 17.76 / 17.78 without (cuBLAS bf16
# 16.57 / 16.81 / 16.80). On the prepass build it is neutral on bench1 and bench3 and costs bench2
# 4 % in every run (79.1 / 76.0 / 77.0 against 74.2 / 73.1 / 73.6; the _rs_es build +1.5-2.7 %
# there too), so only bench4 takes it. The pdl build passed the chained-launch test, each input
# distribution (400 examples) and gpu-long (500) there. SPLIT_WARP_TABLE was the default from
# session 10 to session 11, PHASE1_STAGED_TABLE from session 7 to session 9.
FASTEST_STAGED_PDL = FASTEST_STAGED_PDL_CONFIG.label
PDL_TABLE = DispatchTable(
    {"bench1": SPLIT_WARP, "bench2": SPLIT_WARP, "bench3": SPLIT_WARP, "bench4": FASTEST_STAGED_PDL},
    fallback=by_label(SPLIT_WARP),
)
# Session 15 (one H200, two bench_gpu runs): bench4's build
# with two wgmma groups in flight while the warps decode the next sub-block (IN_FLIGHT:
# wgmma_in_flight=2, 4 fp16 buffers, one barrier per sub-block, 3 raw stages) 16.56 / 16.48 us
# against FASTEST_STAGED_PDL's 17.15 / 16.90 and cuBLAS bf16's 16.67 / 16.66; on bench1-3 it
# stays behind the prepass build (164.5 / 104.3 / 35.1 against 122.0 / 73.3 / 31.0). With it
# every standard shape is faster than cuBLAS in both runs (bench3 0.96-0.97x, bench4 0.99x).
# It passed the ci property, each input distribution, gpu-long and the chained-launch test
# (kernel/hopper/NOTES.md, session 15). PDL_TABLE was the default from session 12 to session 14.
IN_FLIGHT = IN_FLIGHT_CONFIG.label
IN_FLIGHT_TABLE = DispatchTable(
    {"bench1": SPLIT_WARP, "bench2": SPLIT_WARP, "bench3": SPLIT_WARP, "bench4": IN_FLIGHT},
    fallback=by_label(SPLIT_WARP),
)
MEASURED_TABLE = IN_FLIGHT_TABLE
# What ``custom_kernel(data)`` runs when no config is given (kernel.hopper.launch.default_config):
# the measured table. Every config it can return is a production variant (the main job runs them).
DEFAULT_TABLE = MEASURED_TABLE
