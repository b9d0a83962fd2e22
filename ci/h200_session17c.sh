#!/usr/bin/env bash
# Issue 14, session 17, third device call (~6 min):
#   source .device/env.sh && bash ci/h200_session17c.sh      (logs under $OUT, or ./out)
# 1. Where the own-launch build's cost per K goes: profiling.k_slope on bench4's M and N of the
#    production prepass build and the own-launch build (direct stores, next launch at
#    completion), each also without phase 1's decode (~no_prepass: the GEMM alone, on stale rows).
#    The same slope without the decode says the GEMM's own K loop is slower (its compiled
#    schedule: 147 registers against production's 157), a lower one says phase 1's grid.
# 2. bench_gpu with cuBLAS bf16 in the same run: the production set and the declared own-launch build.
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
label() { python3 -c "import kernel.hopper.config as c; print(c.$1.label)"; }
SW=$(label SPLIT_WARP_CONFIG); W2=$(label IN_FLIGHT_CONFIG); PKE=$(label PHASE1_KERNEL_EXIT_CONFIG)
PSE=$(label PHASE1_KERNEL_STAGED_EXIT_CONFIG)
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$OUT/log.txt"; }
source "$(dirname "$0")/h200_gates.sh"
stamp slope
timeout ${T_SLOPE:-200} python3 -m profiling.k_slope --variant "$SW" --variant "$SW~no_prepass" --variant "$PKE" \
  --variant "$PKE~no_prepass" --shape bench4 --ks 512,1536,6144 --samples 9 2>&1 | grep -v "^ \|fast_path" | tail -6 \
  | tee "$OUT/k_slope.md"
stamp bench
bench_with_cublas "$SW,$W2,$PSE"
stamp done
