#!/usr/bin/env bash
# Issue 14, session 16, third device call (~5 min):
#   source .device/env.sh && bash ci/h200_session16c.sh      (logs under $OUT, or ./out)
# The declared build with phase 1 in a launch of its own (staged stores, the next launch let in at
# the GEMM's completion: PHASE1_KERNEL_STAGED_EXIT_CONFIG, "..._prec1xswk4e_..."):
# 1. the chained-launch test (launch 2 reads launch 1's C as its A, then as its B) on it and on
#    the first build of 16a; 2. the ci property on it; 3. bench_gpu: production, _w2, it, cuBLAS.
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
label() { python3 -c "import kernel.hopper.config as c; print(c.$1.label)"; }
SW=$(label SPLIT_WARP_CONFIG); W2=$(label IN_FLIGHT_CONFIG); PSE=$(label PHASE1_KERNEL_STAGED_EXIT_CONFIG)
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$OUT/log.txt"; }
source "$(dirname "$0")/h200_gates.sh"
stamp chained
timeout ${T_CHAIN:-120} python3 -m pytest kernel/tests/test_gpu_pdl.py -k "prec1xswk4e or prec1xwk4l" \
  -p no:cacheprovider -q -rs 2>&1 | tail -4 | tee -a "$OUT/log.txt"
stamp properties
ci_property "$PSE"
stamp bench
bench_with_cublas "$SW,$W2,$PSE"
stamp done
