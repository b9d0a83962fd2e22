#!/usr/bin/env bash
# Issue 14, session 18, first device call (~9 min):
#   source .device/env.sh && bash ci/h200_session18a.sh      (logs under $OUT, or ./out)
# Stream-K over the balanced lists (stream_k, label "..._t64_sk_es"): 1. ci.schedule_smoke (C
# bit-identical to the build without it: a split tile continues one wgmma chain from the partial),
# then kernel/tests/test_gpu_streamk.py (the same on 2- and 3-CTA grids and with every boundary
# taken, Perturbation.streamk_take); 2. ci.prepass_smoke (repeated launches, alternating problems on one workspace, two streams: the
# boundary words must be idle after every launch); 3. the ci property; 4. bench_gpu with cuBLAS
# bf16 in the same run (production, stream-K, bench4's build); 5. profiling.ablation, same builds;
# 6. per-CTA timelines of both on bench1 (is the last round balanced?).
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
source "$(dirname "$0")/h200_gates.sh"  # label, stamp, smoke_gate, ci_property, bench_with_cublas
SW=$(label SPLIT_WARP_CONFIG); W2=$(label IN_FLIGHT_CONFIG); SK=$(label STREAM_K_CONFIG)
smoke_gate ci.schedule_smoke "$SK" || exit 1
stamp gpu_test
timeout ${T_GPU:-200} python3 -m pytest kernel/tests/test_gpu_streamk.py -p no:cacheprovider -q -rs -x 2>&1 | tail -4 \
  | tee -a "$OUT/log.txt"
stamp prepass_smoke
timeout ${T_SMOKE:-150} python3 -m ci.prepass_smoke "$SK" 2>&1 | grep -v "bit-identical$\|fast_path" | tail -8 | tee -a "$OUT/log.txt"
stamp properties
ci_property "$SK"
stamp bench
bench_with_cublas "$SW,$SK,$W2"
stamp ablation
timeout ${T_ABL:-200} python3 -m profiling.ablation --variant "$SW" --variant "$SK" \
  --shapes bench1,bench2,bench3,bench4 --samples 9 --build-timeout 90 2>&1 | tail -5 | tee "$OUT/ablation.md"
stamp timeline
# per-CTA timelines on bench1 (graph replay): the spread of the CTAs' last stores is the balance
timeout ${T_TL:-150} python3 -m profiling.timeline --variant "$SW" --variant "$SK" --shape bench1 --launches 20 --graph \
  2>&1 | grep -v "fast_path" | grep "|\|rror" | tee "$OUT/timeline.md"
stamp done
