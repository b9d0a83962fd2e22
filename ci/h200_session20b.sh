#!/usr/bin/env bash
# Issue 14, session 20, second device call (~3 min): which CTAs end late, against the work the
# host plan gave them (profiling.timeline --per-cta; drawn afterwards, anywhere, by
# python -m profiling.timeline_plot "$OUT"/timeline_bench1_*.csv -o timeline_bench1.png):
# production and stream-K on bench1 and bench3 (stream-K's largest end was 17 us past its median
# on bench1 in session 20's first call), the two-CTA build on bench1.
#   source .device/env.sh && bash ci/h200_session20b.sh      (logs and CSVs under $OUT, or ./out)
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
source "$(dirname "$0")/h200_gates.sh"  # label, stamp
SW=$(label SPLIT_WARP_CONFIG); SK=$(label STREAM_K_CONFIG); C2=$(label TWO_CTA_CONFIG)
for shape in bench1 bench3; do
  args=(--variant "$SW" --variant "$SK")
  [ $shape = bench1 ] && args+=(--variant "$C2")
  stamp "timeline $shape"
  timeout ${T_TL:-120} python3 -m profiling.timeline "${args[@]}" --shape $shape --launches 20 --graph \
    --per-cta "$OUT" 2>&1 | grep -v "fast_path" | grep "|\|rror\|per-CTA" | tee "$OUT/timeline_$shape.md"
done
stamp done
