#!/usr/bin/env bash
# One device call: #13 native probe on the GPU host + host overhead, and #14 prepass next steps.
#   source .device/env.sh && bash ci/h200_session4_a.sh     (logs under $OUT)
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
t0=$(date +%s)
( python3 kernel/native_probe.py --build > "$OUT/native_build.txt" 2>&1; echo "rc=$?" >> "$OUT/native_build.txt" ) &
nb=$!
T_TOTAL=${T_PREPASS:-390} bash ci/h200_prepass_next.sh
wait $nb; cat "$OUT/native_build.txt" | tail -5
echo "[$(( $(date +%s) - t0 )) s] host overhead"
timeout $(( 585 - ($(date +%s) - t0) )) python3 -m profiling.host_overhead --shapes bench1,bench4,bench2,bench3 --json "$OUT/host.json" 2>&1 | tail -40 | tee "$OUT/host.txt"
echo "[$(( $(date +%s) - t0 )) s] done"
