#!/usr/bin/env bash
# Issue 14, session 17, fourth device call (~6 min):
#   source .device/env.sh && bash ci/h200_session17d.sh      (logs under $OUT, or ./out)
# Phase 1 in its own launch with flags, second form: every phase-1 warp claims and decodes chunks
# of its own (64 items, K-chunk-major) and adds them to counters that only grow (one release add
# per touched cell, no round trip), so the first level is ready after one warp-sized chunk and the
# rest streams behind the K loop. 1. ci.schedule_smoke; 2. the chained-launch test; 3. k_slope on
# bench4's M and N; 4. profiling.ablation on the four shapes (each build checked against the
# exact oracle first).
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
label() { python3 -c "import kernel.hopper.config as c; print(c.$1.label)"; }
SW=$(label SPLIT_WARP_CONFIG); W2=$(label IN_FLIGHT_CONFIG); PKE=$(label PHASE1_KERNEL_EXIT_CONFIG)
PF=$(label PHASE1_FLAGS_CONFIG); PFS=$(label PHASE1_FLAGS_STAGED_CONFIG)
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$OUT/log.txt"; }
source "$(dirname "$0")/h200_gates.sh"
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
stamp done
