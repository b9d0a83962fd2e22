#!/usr/bin/env bash
# Issue 14, session 14: the cluster decode with the peer's copy by one cp.async.bulk per sub-block
# (y_cluster_copy="bulk", label _c2db) after ci/h200_session14d.sh showed the st.async build's
# fences waiting for every thread's remote stores. One device call (~7 min):
#   source .device/env.sh && bash ci/h200_session14e.sh      (logs under $OUT, or ./out)
# 1. smoke (bit-identical to the production bench4 build; stops on a hang or a difference);
# 2. the ci property; 3. bench_gpu: _c2db, _rs_es_pdl, the prepass default and cuBLAS on the four
#    shapes; 4. k_slope on bench4; 5. where _c2db's warps wait (ncu samples, one bench4 launch).
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
label() { python3 -c "import kernel.hopper.config as c; print(c.$1.label)"; }
CB=$(label CLUSTER_Y_BULK_CONFIG); RP=$(label FASTEST_STAGED_PDL_CONFIG); SW=$(label SPLIT_WARP_CONFIG)
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$OUT/log.txt"; }
source "$(dirname "$0")/h200_cluster_y_checks.sh"
cluster_y_checks "$CB" || exit 1
stamp bench
NVFP4_BENCH_FAMILIES=hopper NVFP4_BENCH_SHAPES=bench1,bench2,bench3,bench4 NVFP4_BENCH_VARIANTS="$SW,$RP,$CB" \
  timeout ${T_BENCH:-170} python3 -m pytest profiling/benchmarks/bench_gpu.py --benchmark-only \
  --benchmark-json="$OUT/bench_gpu.json" --benchmark-columns=median,iqr,rounds -p no:cacheprovider -q -rs 2>&1 | tail -1
python3 -m profiling.benchmarks.speed_table "$OUT/bench_gpu.json" 2>&1 | head -7 | tee "$OUT/speed_table.md"
stamp slope
timeout ${T_SLOPE:-90} python3 -m profiling.k_slope --variant "$RP" --variant "$CB" \
  --shape bench4 --ks 512,1536,6144 --samples 9 2>&1 | tail -4 | tee "$OUT/k_slope.md"
stamp hotspots
OUT="$OUT/ncu_c2db" LABEL="$CB" SHAPE=bench4 TOP=${TOP:-16} T_NCU=90 bash ci/h200_ncu_hotspots.sh 2>&1 | tail -20
stamp done
