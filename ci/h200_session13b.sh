#!/usr/bin/env bash
# Issue 14, session 13, second device call (~5 min):
#   source .device/env.sh && bash ci/h200_session13b.sh      (logs under $OUT, or ./out)
# The table copy rewritten (every load before any store: one round trip instead of three):
# 1. the copy's GPU test; ci property on the two _st builds;
# 2. bench_gpu: both builds with and without _st, and cuBLAS bf16, in one run;
# 3. profiling.k_slope and profiling.timeline on bench4, the same four builds.
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
label() { python3 -c "import kernel.hopper.config as c; print(c.$1.label)"; }
SW=$(label SPLIT_WARP_CONFIG); SWS=$(label SPLIT_WARP_ST_CONFIG)
RP=$(label FASTEST_STAGED_PDL_CONFIG); RPS=$(label FASTEST_STAGED_PDL_ST_CONFIG)
timeout ${T_TEST:-100} python3 -m pytest kernel/tests/test_hopper_smem_tables.py kernel/tests/test_gpu_pdl.py \
  -k "copy or _st" -p no:cacheprovider -q -rs 2>&1 | tail -2 | tee "$OUT/tests.txt"
for V in "$SWS" "$RPS"; do
  timeout ${T_PROPS:-110} python3 -m pytest -m properties --subject=hopper --variant="$V" --hypothesis-profile=ci \
    -k "test_subject_matches_oracle and not per_distribution or rejects" -p no:cacheprovider -q -rs -x 2>&1 \
    | tail -1 | tee -a "$OUT/properties.txt"
done
NVFP4_BENCH_FAMILIES=hopper NVFP4_BENCH_SHAPES=bench1,bench2,bench3,bench4 NVFP4_BENCH_VARIANTS="$SW,$SWS,$RP,$RPS" \
  timeout ${T_BENCH:-170} python3 -m pytest profiling/benchmarks/bench_gpu.py --benchmark-only \
  --benchmark-json="$OUT/bench_gpu.json" --benchmark-columns=median,iqr,rounds -p no:cacheprovider -q -rs 2>&1 | tail -1
python3 -m profiling.benchmarks.speed_table "$OUT/bench_gpu.json" 2>&1 | head -8 | tee "$OUT/speed_table.md"
timeout ${T_SLOPE:-100} python3 -m profiling.k_slope --variant "$SW" --variant "$SWS" --variant "$RP" --variant "$RPS" \
  --shape bench4 --ks 512,1536,6144 --samples 9 2>&1 | tail -6 | tee "$OUT/k_slope.md"
timeout ${T_TL:-100} python3 -m profiling.timeline --variant "$RP" --variant "$RPS" --variant "$SW" --variant "$SWS" \
  --shape bench4 --launches 20 2>&1 > "$OUT/timeline_bench4.md"
grep -E "^\`|producer_first|phase1_done|last_end" "$OUT/timeline_bench4.md"
