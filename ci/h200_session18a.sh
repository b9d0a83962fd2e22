#!/usr/bin/env bash
# Issue 14, session 18, first device call: is stream-K correct? (~6 min)
#   source .device/env.sh && bash ci/h200_session18a.sh      (logs under $OUT, or ./out)
# Stream-K over the balanced lists (stream_k, label "..._t64_sk_es"):
# 1. ci.schedule_smoke: C bit-identical to the build without it (a split tile continues one wgmma
#    chain from the partial);
# 2. kernel/tests/test_gpu_streamk.py: the same on 2- and 3-CTA grids and with every boundary
#    taken (Perturbation.streamk_take), in child processes with a time limit (a spin fails as hung);
# 3. ci.prepass_smoke: repeated launches, alternating problems on one workspace, two streams (the
#    boundary words must be idle after every launch);
# 4. the ci property on the stream-K build.
# Then ci/h200_session18b.sh (speed) and, if it pays, ci/h200_session18c.sh (the default's gates).
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
source "$(dirname "$0")/h200_gates.sh"  # label, stamp, smoke_gate, ci_property, bench_with_cublas
SK=$(label STREAM_K_CONFIG)
smoke_gate ci.schedule_smoke "$SK" || exit 1
stamp gpu_test
timeout ${T_GPU:-330} python3 -m pytest kernel/tests/test_gpu_streamk.py -p no:cacheprovider -q -rs -x 2>&1 | tail -4 \
  | tee -a "$OUT/log.txt"
stamp prepass_smoke
timeout ${T_SMOKE:-150} python3 -m ci.prepass_smoke "$SK" 2>&1 | grep -v "bit-identical$\|fast_path" | tail -8 | tee -a "$OUT/log.txt"
stamp properties
ci_property "$SK"
stamp done
