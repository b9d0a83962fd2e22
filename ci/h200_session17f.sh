#!/usr/bin/env bash
# Issue 14, session 17, sixth device call (~4 min):
#   source .device/env.sh && bash ci/h200_session17f.sh      (logs under $OUT, or ./out)
# 17e's timelines showed the own-launch GEMM's CTAs starting 2.4 us (bench4) / 4.4 us (bench3)
# after phase 1's, later the more phase 1 decodes: as if they started only once the phase-1 CTA on
# their SM exited. At 56 registers the two fill the fullest sub-partition exactly (3 x 152 + 56 per
# thread); at 48 or 40 there is room to spare. 1. timelines (graph replay) on bench3 / bench4 of the
# own launch at 56 and 48 registers; 2. k_slope on bench4's M and N at 56 / 48 / 40 and
# production; 3. profiling.ablation on the four shapes.
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
source "$(dirname "$0")/h200_gates.sh"  # label, stamp
SW=$(label SPLIT_WARP_CONFIG); W2=$(label IN_FLIGHT_CONFIG); PKE=$(label PHASE1_KERNEL_EXIT_CONFIG)
R48=$(label PHASE1_KERNEL_R48_CONFIG); R40=$(label PHASE1_KERNEL_R40_CONFIG)
for shape in bench3 bench4; do
  stamp "timeline $shape"
  timeout ${T_TL:-120} python3 -m profiling.timeline --variant "$PKE" --variant "$R48" --shape $shape --launches 20 --graph \
    2>&1 | grep "start\|first_commit\|epilogue_last_end\|period\|rror" | tee -a "$OUT/timeline.md"
done
stamp slope
timeout ${T_SLOPE:-150} python3 -m profiling.k_slope --variant "$SW" --variant "$PKE" --variant "$R48" --variant "$R40" \
  --shape bench4 --ks 512,1536,6144 --samples 9 2>&1 | grep -v "^ \|fast_path" | tail -6 | tee "$OUT/k_slope.md"
stamp ablation
timeout ${T_ABL:-150} python3 -m profiling.ablation --variant "$W2" --variant "$SW" --variant "$R48" \
  --shapes bench1,bench2,bench3,bench4 --samples 9 --build-timeout 90 2>&1 | tail -5 | tee "$OUT/ablation.md"
stamp done
