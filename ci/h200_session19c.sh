#!/usr/bin/env bash
# Issue 14, session 19, third device call (~7 min, at most ~8.7):
#   source .device/env.sh && bash ci/h200_session19c.sh      (logs under $OUT, or ./out)
# Where the time goes, for production, stream-K and the two-CTA build (SKIP_SK=1 / SKIP_C2=1
# leave one out):
# 1. profiling.ablation on bench1-4 (each build's time with parts of it removed);
# 2. per-CTA timelines on bench1 (graph replay): stream-K's last round and what its partial's
#    publish and load cost; the two-CTA build's CTA starts (both CTAs of an SM at once?) and
#    its epilogues;
# 3. the same timelines on bench4 (one tile per CTA: the prologue and phase 1);
# 4. the two-CTA GPU mutant (half the carveout: one CTA per SM, results still right): is it
#    caught by the residency test?
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
source "$(dirname "$0")/h200_gates.sh"  # label, stamp
SW=$(label SPLIT_WARP_CONFIG); SK=$(label STREAM_K_CONFIG); C2=$(label TWO_CTA_CONFIG)
args=(--variant "$SW")
[ "${SKIP_SK:-0}" = 1 ] || args+=(--variant "$SK")
[ "${SKIP_C2:-0}" = 1 ] || args+=(--variant "$C2")
stamp ablation
timeout ${T_ABL:-220} python3 -m profiling.ablation "${args[@]}" \
  --shapes bench1,bench2,bench3,bench4 --samples 9 --build-timeout 90 2>&1 | tail -6 | tee "$OUT/ablation.md"
for shape in bench1 bench4; do
  stamp "timeline $shape"
  timeout ${T_TL:-90} python3 -m profiling.timeline "${args[@]}" --shape $shape --launches 20 --graph \
    2>&1 | grep -v "fast_path" | grep "|\|rror" | tee "$OUT/timeline_$shape.md"
done
if [ "${SKIP_C2:-0}" != 1 ]; then
  stamp mutants
  timeout ${T_MUT:-120} python3 -m ci.mutation_runner --subject hopper --mutant 'hopper_two_cta_*' --baseline \
    --jobs 2 --timeout 100 2>&1 | tail -5 | tee -a "$OUT/log.txt"
fi
stamp done
