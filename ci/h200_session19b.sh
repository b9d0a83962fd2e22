#!/usr/bin/env bash
# Issue 14, session 19, second device call (after ci/h200_session18a.sh, stream-K's correctness;
# ~7 min):   source .device/env.sh && bash ci/h200_session19b.sh      (logs under $OUT, or ./out)
# 1. Is the two-CTA build correct, and does the GPU give it two CTAs per SM?
#    kernel/tests/test_gpu_two_cta.py (the same bits as production; every CTA of bench1's grid of
#    264 starts in the first fifth of the launch), ci.prepass_smoke (repeated launches,
#    alternating problems, two streams), the ci property.
# 2. Speed: bench_gpu with cuBLAS bf16 in the same run on production, stream-K (SKIP_SK=1 leaves
#    it out, when 18a failed), the two-CTA build (left out when step 1 failed) and bench4's build.
# Then ci/h200_session19c.sh (where the time goes) and, for a variant that pays, its gates
# (ci/h200_session18c.sh for stream-K).
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
source "$(dirname "$0")/h200_gates.sh"  # label, stamp, ci_property, bench_with_cublas
SW=$(label SPLIT_WARP_CONFIG); W2=$(label IN_FLIGHT_CONFIG); SK=$(label STREAM_K_CONFIG); C2=$(label TWO_CTA_CONFIG)
stamp gpu_test_two_cta
timeout ${T_GPU:-150} python3 -m pytest kernel/tests/test_gpu_two_cta.py -p no:cacheprovider -q -rs 2>&1 | tail -6 \
  | tee -a "$OUT/log.txt"
ok=${PIPESTATUS[0]}
if [ "$ok" = 0 ]; then
  stamp prepass_smoke
  timeout ${T_SMOKE:-120} python3 -m ci.prepass_smoke "$C2" 2>&1 | grep -v "bit-identical$\|fast_path" | tail -8 \
    | tee -a "$OUT/log.txt"
  stamp properties
  ci_property "$C2"
fi
variants="$SW"
[ "${SKIP_SK:-0}" = 1 ] || variants="$variants,$SK"
[ "$ok" = 0 ] && variants="$variants,$C2"
variants="$variants,$W2"
stamp "bench $variants"
T_BENCH=${T_BENCH:-230} bench_with_cublas "$variants"
stamp done
