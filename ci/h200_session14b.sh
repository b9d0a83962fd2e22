#!/usr/bin/env bash
# Issue 14, the cluster-shared Y decode (y_cluster_decode, label _c2d, built in session 13 and
# not yet run on a GPU), one device call (~6 min):
#   source .device/env.sh && bash ci/h200_session14b.sh      (logs under $OUT, or ./out)
# 1. smoke: bit-identical to the production bench4 build on protocol-reaching problems (a wrong
#    barrier phase hangs: killed by its timeout, and the rest is skipped);
# 2. the ci property on the build; 3. bench_gpu: the build, the production bench4 build and
#    cuBLAS on the four shapes; 4. k_slope on bench4 (fixed cost and cost per 256 K).
# Prediction (kernel/hopper/NOTES.md, session 13): bench4 15.5-16.0 us against 16.9.
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
label() { python3 -c "import kernel.hopper.config as c; print(c.$1.label)"; }
CY=$(label CLUSTER_Y_CONFIG); RP=$(label FASTEST_STAGED_PDL_CONFIG)
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$OUT/log.txt"; }
source "$(dirname "$0")/h200_cluster_y_checks.sh"
cluster_y_checks "$CY" || exit 1
NVFP4_BENCH_FAMILIES=hopper NVFP4_BENCH_SHAPES=bench1,bench2,bench3,bench4 NVFP4_BENCH_VARIANTS="$RP,$CY" \
  timeout ${T_BENCH:-150} python3 -m pytest profiling/benchmarks/bench_gpu.py --benchmark-only \
  --benchmark-json="$OUT/bench_gpu.json" --benchmark-columns=median,iqr,rounds -p no:cacheprovider -q -rs 2>&1 | tail -1
python3 -m profiling.benchmarks.speed_table "$OUT/bench_gpu.json" 2>&1 | head -6 | tee "$OUT/speed_table.md"
timeout ${T_SLOPE:-90} python3 -m profiling.k_slope --variant "$RP" --variant "$CY" \
  --shape bench4 --ks 512,1536,6144 --samples 9 2>&1 | tail -4 | tee "$OUT/k_slope.md"
