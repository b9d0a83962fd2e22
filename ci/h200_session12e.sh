#!/usr/bin/env bash
# Issue 14, session 12, fifth device call (~3 min):
#   source .device/env.sh && bash ci/h200_session12e.sh      (logs under $OUT, or ./out)
# The timeline build (profiling.timeline): its GPU test, then where bench4's and bench3's
# microseconds go in the prepass build, the background builds and the bench4 build.
# (Since the end of session 12 the background-local build and the prepass build's pdl twin are
# measured but not declared: the tools that take declared labels no longer find them; see
# kernel/hopper/NOTES.md, session 12.)
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
label() { python3 -c "import kernel.hopper.config as c; print(c.$1.label)"; }
SW=$(label SPLIT_WARP_CONFIG); BG=$(label BACKGROUND_CONFIG); BL=$(label BACKGROUND_LOCAL_CONFIG)
RSES=$(label FASTEST_STAGED_CONFIG); RSESP=$(label FASTEST_STAGED_PDL_CONFIG)
timeout ${T_TEST:-90} python3 -m pytest kernel/tests/test_gpu_timeline.py -p no:cacheprovider -q -rs 2>&1 | tail -3 \
  | tee "$OUT/timeline_test.txt"
timeout ${T_B4:-150} python3 -m profiling.timeline --variant "$SW" --variant "$BG" --variant "$BL" --variant "$RSESP" \
  --variant "$RSES" --shape bench4 --launches 20 2>&1 | tee "$OUT/timeline_bench4.md" | grep -v "^  "
timeout ${T_B3:-90} python3 -m profiling.timeline --variant "$SW" --variant "$RSESP" --shape bench3 --launches 20 2>&1 \
  | tee "$OUT/timeline_bench3.md" | grep -v "^  "
