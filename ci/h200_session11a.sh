#!/usr/bin/env bash
# Issue 14, session 11, first device call (~8 min):
#   source .device/env.sh && bash ci/h200_session11a.sh      (logs under $OUT, or ./out)
# 1. prepass smoke (with the padded workspace read back), ci property + invalid inputs on the
#    zero-padded workspace build (ZERO_PAD_CONFIG);
# 2. profiling.clock_probe --data: how much the operands' content moves power, clock and time on
#    the power-capped shapes (production build: random inputs vs A or B all zero codes), and the
#    zero-padded build on random inputs;
# 3. bench_gpu: production, zero-padded, the fastest staged tile and cuBLAS bf16 in one run;
# 4. profiling.k_slope: bench4's M and N at K = 512 .. 6144 on the production build and the
#    fastest staged tile: the fixed cost per launch against the cost per 256 K.
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
label() { python3 -c "import kernel.hopper.config as c; print(c.$1.label)"; }
SW=$(label SPLIT_WARP_CONFIG); ZP=$(label ZERO_PAD_CONFIG); RSES=$(label FASTEST_STAGED_CONFIG)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader | tee "$OUT/gpu.txt"
timeout ${T_SMOKE:-90} python3 -m ci.prepass_smoke "$ZP" 2>&1 | tail -12 | tee "$OUT/smoke.txt"
timeout ${T_PROPS:-150} python3 -m pytest -m properties --subject=hopper --variant="$ZP" --hypothesis-profile=ci \
  -k "test_subject_matches_oracle and not per_distribution or rejects" -p no:cacheprovider -q -rs -x 2>&1 \
  | tail -4 | tee "$OUT/properties.txt"
timeout ${T_CLOCK:-150} python3 -m profiling.clock_probe --variant "$SW" --shapes bench1,bench2 \
  --data random,zero_a,zero_b --seconds 3 2>&1 | tail -8 | tee "$OUT/clock_data.md"
timeout ${T_CLOCK2:-60} python3 -m profiling.clock_probe --variant "$ZP" --shapes bench1,bench2 --seconds 3 2>&1 \
  | tail -4 | tee "$OUT/clock_zp.md"
NVFP4_BENCH_FAMILIES=hopper NVFP4_BENCH_SHAPES=bench1,bench2,bench3,bench4 NVFP4_BENCH_VARIANTS="$SW,$ZP,$RSES" \
  timeout ${T_BENCH:-150} python3 -m pytest profiling/benchmarks/bench_gpu.py --benchmark-only \
  --benchmark-json="$OUT/bench_gpu.json" --benchmark-columns=median,iqr,rounds -p no:cacheprovider -q -rs 2>&1 | tail -2
python3 -m profiling.benchmarks.speed_table "$OUT/bench_gpu.json" 2>&1 | tee "$OUT/speed_table.md"
timeout ${T_SLOPE:-100} python3 -m profiling.k_slope --variant "$SW" --variant "$RSES" --shape bench4 \
  --ks 512,1536,6144 --samples 9 2>&1 | tail -8 | tee "$OUT/k_slope.md"
