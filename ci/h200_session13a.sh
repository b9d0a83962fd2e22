#!/usr/bin/env bash
# Issue 14, session 13, first device call (~9 min):
#   source .device/env.sh && bash ci/h200_session13a.sh      (logs under $OUT, or ./out)
# The device tables in shared memory (HopperConfig.smem_tables, label suffix "_st") on the default
# dispatch's two builds:
# 1. the table copy with its guard rows (a one-CTA kernel), the chained pdl test on the _st build;
# 2. ci property + invalid inputs on both _st builds;
# 3. bench_gpu: both builds with and without _st, and cuBLAS bf16, in one run;
# 4. profiling.k_slope on bench4's M and N, the same four builds.
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
label() { python3 -c "import kernel.hopper.config as c; print(c.$1.label)"; }
SW=$(label SPLIT_WARP_CONFIG); SWS=$(label SPLIT_WARP_ST_CONFIG)
RP=$(label FASTEST_STAGED_PDL_CONFIG); RPS=$(label FASTEST_STAGED_PDL_ST_CONFIG)
timeout ${T_TEST:-100} python3 -m pytest kernel/tests/test_hopper_smem_tables.py kernel/tests/test_gpu_pdl.py \
  -k "copy or _st" -p no:cacheprovider -q -rs 2>&1 | tail -4 | tee "$OUT/tests.txt"
for V in "$SWS" "$RPS"; do
  timeout ${T_PROPS:-110} python3 -m pytest -m properties --subject=hopper --variant="$V" --hypothesis-profile=ci \
    -k "test_subject_matches_oracle and not per_distribution or rejects" -p no:cacheprovider -q -rs -x 2>&1 \
    | tail -3 | tee -a "$OUT/properties.txt"
done
NVFP4_BENCH_FAMILIES=hopper NVFP4_BENCH_SHAPES=bench1,bench2,bench3,bench4 NVFP4_BENCH_VARIANTS="$SW,$SWS,$RP,$RPS" \
  timeout ${T_BENCH:-170} python3 -m pytest profiling/benchmarks/bench_gpu.py --benchmark-only \
  --benchmark-json="$OUT/bench_gpu.json" --benchmark-columns=median,iqr,rounds -p no:cacheprovider -q -rs 2>&1 | tail -2
python3 -m profiling.benchmarks.speed_table "$OUT/bench_gpu.json" 2>&1 | head -8 | tee "$OUT/speed_table.md"
timeout ${T_SLOPE:-100} python3 -m profiling.k_slope --variant "$SW" --variant "$SWS" --variant "$RP" --variant "$RPS" \
  --shape bench4 --ks 512,1536,6144 --samples 9 2>&1 | tail -6 | tee "$OUT/k_slope.md"
