#!/usr/bin/env bash
# Issue 14, which of the lean exit's changes costs bench1/bench2 (one device call, ~7 min):
#   source .device/env.sh && bash ci/h200_exit_bisect.sh      (logs under $OUT, or ./out)
# 1. the ci property and invalid inputs on the three one-change builds (COUNT_AFTER, MAP_EARLY,
#    CLAIM_FIRST: each SPLIT_WARP_CONFIG plus one of the lean exit's other changes);
# 2. bench_gpu in one run: production, split-warp, the three, lean, the fastest staged tile and
#    cuBLAS bf16. Then `python3 -m ci.sanitize --tool=synccheck --tool=racecheck` on the winner.
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
label() { python3 -c "import kernel.hopper.config as c; print(c.$1.label)"; }
PROD=$(label PHASE1_STAGED_CONFIG); SW=$(label SPLIT_WARP_CONFIG); LEAN=$(label LEAN_EXIT_CONFIG)
T=$(label COUNT_AFTER_CONFIG); M=$(label MAP_EARLY_CONFIG); Q=$(label CLAIM_FIRST_CONFIG)
RSES=$(label FASTEST_STAGED_CONFIG)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
timeout ${T_PROPS:-200} python3 -m pytest -m properties --subject=hopper --variant="$T" --variant="$M" --variant="$Q" \
  --hypothesis-profile=ci -k "test_subject_matches_oracle and not per_distribution or rejects" \
  -p no:cacheprovider -q -rs -x 2>&1 | tail -4 | tee "$OUT/properties.txt"
NVFP4_BENCH_FAMILIES=hopper NVFP4_BENCH_SHAPES=bench1,bench2,bench3,bench4 \
  NVFP4_BENCH_VARIANTS="$PROD,$SW,$T,$M,$Q,$LEAN,$RSES" \
  timeout ${T_BENCH:-260} python3 -m pytest profiling/benchmarks/bench_gpu.py --benchmark-only \
  --benchmark-json="$OUT/bench_gpu.json" --benchmark-columns=median,iqr,rounds -p no:cacheprovider -q -rs 2>&1 | tail -2
python3 -m profiling.benchmarks.speed_table "$OUT/bench_gpu.json" 2>&1 | tee "$OUT/speed_table.md"
