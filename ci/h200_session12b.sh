#!/usr/bin/env bash
# Issue 14, session 12, second device call (~6 min):
#   source .device/env.sh && bash ci/h200_session12b.sh      (logs under $OUT, or ./out)
# Programmatic dependent launch (HopperConfig.pdl, label suffix "_pdl") on the two builds of the
# default dispatch:
# 1. the chained-launch test (launch 2 reads launch 1's output as its A, no sync between);
# 2. ci property + invalid inputs on the prepass build with pdl;
# 3. bench_gpu: both builds with and without pdl, and cuBLAS bf16, in one run;
# 4. profiling.k_slope on bench4's M and N, the same four builds.
# (Since the end of session 12 the background-local build and the prepass build's pdl twin are
# measured but not declared: the tools that take declared labels no longer find them; see
# kernel/hopper/NOTES.md, session 12.)
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
label() { python3 -c "import kernel.hopper.config as c; print(c.$1.label)"; }
SW=$(label SPLIT_WARP_CONFIG); SWP=$(label SPLIT_WARP_PDL_CONFIG)
RSES=$(label FASTEST_STAGED_CONFIG); RSESP=$(label FASTEST_STAGED_PDL_CONFIG)
timeout ${T_CHAIN:-150} python3 -m pytest kernel/tests/test_gpu_pdl.py -p no:cacheprovider -q -rs 2>&1 | tail -4 \
  | tee "$OUT/chained.txt"
timeout ${T_PROPS:-120} python3 -m pytest -m properties --subject=hopper --variant="$SWP" --hypothesis-profile=ci \
  -k "test_subject_matches_oracle and not per_distribution or rejects" -p no:cacheprovider -q -rs -x 2>&1 \
  | tail -3 | tee "$OUT/properties.txt"
NVFP4_BENCH_FAMILIES=hopper NVFP4_BENCH_SHAPES=bench1,bench2,bench3,bench4 NVFP4_BENCH_VARIANTS="$SW,$SWP,$RSES,$RSESP" \
  timeout ${T_BENCH:-170} python3 -m pytest profiling/benchmarks/bench_gpu.py --benchmark-only \
  --benchmark-json="$OUT/bench_gpu.json" --benchmark-columns=median,iqr,rounds -p no:cacheprovider -q -rs 2>&1 | tail -2
python3 -m profiling.benchmarks.speed_table "$OUT/bench_gpu.json" 2>&1 | head -8 | tee "$OUT/speed_table.md"
grep -o '"device_method": "[a-z]*"' "$OUT/bench_gpu.json" | sort | uniq -c
timeout ${T_SLOPE:-120} python3 -m profiling.k_slope --variant "$SW" --variant "$SWP" --variant "$RSES" --variant "$RSESP" \
  --shape bench4 --ks 512,1536,6144 --samples 9 2>&1 | tail -6 | tee "$OUT/k_slope.md"
