#!/usr/bin/env bash
# Issue 14, session 18, second device call: does stream-K pay? (~6 min; after 18a passed)
#   source .device/env.sh && bash ci/h200_session18b.sh      (logs under $OUT, or ./out)
# 1. bench_gpu with cuBLAS bf16 in the same run: production, stream-K, bench4's build;
# 2. profiling.ablation on bench1-4, production and stream-K;
# 3. per-CTA timelines of both on bench1 (graph replay): is the last round balanced, and what do
#    the partial's publish and load cost?
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
source "$(dirname "$0")/h200_gates.sh"  # label, stamp, smoke_gate, ci_property, bench_with_cublas
SW=$(label SPLIT_WARP_CONFIG); W2=$(label IN_FLIGHT_CONFIG); SK=$(label STREAM_K_CONFIG)
stamp bench
bench_with_cublas "$SW,$SK,$W2"
stamp ablation
timeout ${T_ABL:-200} python3 -m profiling.ablation --variant "$SW" --variant "$SK" \
  --shapes bench1,bench2,bench3,bench4 --samples 9 --build-timeout 90 2>&1 | tail -5 | tee "$OUT/ablation.md"
stamp timeline
timeout ${T_TL:-120} python3 -m profiling.timeline --variant "$SW" --variant "$SK" --shape bench1 --launches 20 --graph \
  2>&1 | grep -v "fast_path" | grep "|\|rror" | tee "$OUT/timeline.md"
stamp done
