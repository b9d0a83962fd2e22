#!/usr/bin/env bash
# Issue 14, session 16, second device call (~6 min):
#   source .device/env.sh && bash ci/h200_session16b.sh      (logs under $OUT, or ./out)
# Phase 1 in a launch of its own, its two open questions: is the GEMM's K loop slowed by the next
# launch's phase-1 CTAs waiting beside it (the GEMM lets them in at its start "s", after its last
# load "l", or at its completion "e"), and is phase 1's launch slow for want of the staged stores
# (direct stores, 4 warps; staged: 16 KB of item slots, the GEMM at 3 raw stages)?
# 1. ci.schedule_smoke on the new builds; 2. profiling.k_slope on bench4's M and N;
# 3. profiling.ablation on the four standard shapes.
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
label() { python3 -c "import kernel.hopper.config as c; print(c.$1.label)"; }
SW=$(label SPLIT_WARP_CONFIG); PKL=$(label PHASE1_KERNEL_CONFIG); PKS=$(label PHASE1_KERNEL_START_CONFIG)
PKE=$(label PHASE1_KERNEL_EXIT_CONFIG); PSL=$(label PHASE1_KERNEL_STAGED_CONFIG); PSE=$(label PHASE1_KERNEL_STAGED_EXIT_CONFIG)
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$OUT/log.txt"; }
source "$(dirname "$0")/h200_gates.sh"
smoke_gate ci.schedule_smoke "$PKL" "$PSL" "$PSE" || exit 1
stamp slope
timeout ${T_SLOPE:-200} python3 -m profiling.k_slope --variant "$SW" --variant "$PKS" --variant "$PKL" --variant "$PKE" \
  --variant "$PSL" --variant "$PSE" --shape bench4 --ks 512,1536,6144 --samples 9 2>&1 | tail -8 | tee "$OUT/k_slope.md"
stamp ablation
timeout ${T_ABL:-200} python3 -m profiling.ablation --variant "$SW" --variant "$PKL" --variant "$PKE" --variant "$PSL" \
  --variant "$PSE" --shapes bench1,bench2,bench3,bench4 --samples 9 --build-timeout 90 2>&1 | tail -7 | tee "$OUT/ablation.md"
stamp done
