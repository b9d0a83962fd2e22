#!/usr/bin/env bash
# Issue 14, session 17, fifth device call (~3 min):
#   source .device/env.sh && bash ci/h200_session17e.sh      (logs under $OUT, or ./out)
# Where the own-launch build's K-dependent cost goes: per-CTA timelines (graph replay) of the
# production prepass build and the own-launch build (direct stores, next launch at completion) on
# bench4 and bench3: do the GEMM's CTAs start late on some SMs (phase-1 CTAs packed there), or
# does the producer's first stage / the epilogue come late everywhere?
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
label() { python3 -c "import kernel.hopper.config as c; print(c.$1.label)"; }
SW=$(label SPLIT_WARP_CONFIG); PKE=$(label PHASE1_KERNEL_EXIT_CONFIG)
for shape in bench4 bench3; do
  echo "== $shape" | tee -a "$OUT/timeline.md"
  timeout ${T_TL:-150} python3 -m profiling.timeline --variant "$SW" --variant "$PKE" --shape $shape --launches 20 --graph \
    2>&1 | grep -v "fast_path" | grep "|\|rror" | tee -a "$OUT/timeline.md"
done
