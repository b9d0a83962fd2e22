#!/usr/bin/env bash
# Issue 14, session 17, second device call (~8 min):
#   source .device/env.sh && bash ci/h200_session17b.sh      (logs under $OUT, or ./out)
# Phase 1 in a launch of its own with readiness flags (prepass_kernel_warps + prepass_sync="flags",
# label letters "f...k"): the GEMM's producer waits per K chunk on its Y block's flags instead of
# for phase 1's whole grid. 1. ci.schedule_smoke (bit-identical to the build with phase 1 inside
# the GEMM's launch); 2. the chained-launch test; 3. profiling.k_slope on bench4's M and N;
# 4. profiling.ablation on the four shapes; 5. the ci property on the declared flags build.
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
source "$(dirname "$0")/h200_gates.sh"  # label, stamp, smoke_gate, ci_property
SW=$(label SPLIT_WARP_CONFIG); W2=$(label IN_FLIGHT_CONFIG); PKE=$(label PHASE1_KERNEL_EXIT_CONFIG)
PF=$(label PHASE1_FLAGS_CONFIG); PFS=$(label PHASE1_FLAGS_STAGED_CONFIG)
smoke_gate ci.schedule_smoke "$PF" "$PFS" || exit 1
stamp chained
timeout ${T_CHAIN:-150} python3 -m pytest kernel/tests/test_gpu_pdl.py -k "prec1xfwk4e or prec1xfswk4e" \
  -p no:cacheprovider -q -rs 2>&1 | tail -4 | tee -a "$OUT/log.txt"
stamp slope
timeout ${T_SLOPE:-200} python3 -m profiling.k_slope --variant "$SW" --variant "$W2" --variant "$PKE" --variant "$PF" \
  --variant "$PFS" --shape bench4 --ks 512,1536,6144 --samples 9 2>&1 | grep -v "^ \|fast_path" | tail -7 \
  | tee "$OUT/k_slope.md"
stamp ablation
timeout ${T_ABL:-200} python3 -m profiling.ablation --variant "$W2" --variant "$SW" --variant "$PF" --variant "$PFS" \
  --shapes bench1,bench2,bench3,bench4 --samples 9 --build-timeout 90 2>&1 | tail -6 | tee "$OUT/ablation.md"
if [ -z "${SKIP_PROPERTY:-}" ]; then  # (17d: the same steps without it)
  stamp properties
  ci_property "$PF"
fi
stamp done
