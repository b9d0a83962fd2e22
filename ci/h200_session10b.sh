#!/usr/bin/env bash
# Issue 14, session 10, second device call (~5 min):
#   source .device/env.sh && bash ci/h200_session10b.sh      (logs under $OUT, or ./out)
# 1. ci property + invalid inputs on the y_tail16 build (TAIL16_CONFIG, snake schedule);
# 2. bench_gpu: the production prepass build (split-warp), y_tail16, the fastest staged tile and
#    cuBLAS bf16 in one run;
# 3. profiling.clock_probe: SM clock, power and clock-event reasons while the production build
#    replays back to back on bench1 and bench4 (T_CLOCK=0 skips it).
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
label() { python3 -c "import kernel.hopper.config as c; print(c.$1.label)"; }
SW=$(label SPLIT_WARP_CONFIG); T16=$(label TAIL16_CONFIG); RSES=$(label FASTEST_STAGED_CONFIG)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
timeout ${T_PROPS:-120} python3 -m pytest -m properties --subject=hopper --variant="$T16" --hypothesis-profile=ci \
  -k "test_subject_matches_oracle and not per_distribution or rejects" -p no:cacheprovider -q -rs -x 2>&1 \
  | tail -6 | tee "$OUT/properties.txt"
NVFP4_BENCH_FAMILIES=hopper NVFP4_BENCH_SHAPES=bench1,bench2,bench3,bench4 NVFP4_BENCH_VARIANTS="$SW,$T16,$RSES" \
  timeout ${T_BENCH:-200} python3 -m pytest profiling/benchmarks/bench_gpu.py --benchmark-only \
  --benchmark-json="$OUT/bench_gpu.json" --benchmark-columns=median,iqr,rounds -p no:cacheprovider -q -rs 2>&1 | tail -2
python3 -m profiling.benchmarks.speed_table "$OUT/bench_gpu.json" 2>&1 | tee "$OUT/speed_table.md"
if [ "${T_CLOCK:-60}" != 0 ]; then
  timeout ${T_CLOCK:-60} python3 -m profiling.clock_probe --variant "$SW" --shapes bench1,bench4 --seconds 5 2>&1 \
    | tail -6 | tee "$OUT/clock.md"
fi
