#!/usr/bin/env bash
# Issue 14, session 6: C staged through shared memory (epilogue="smem", labels "_es"). Two device
# calls (each step under its own timeout; logs under $OUT: log.txt, ablation.json):
#   source .device/env.sh && bash ci/h200_epilogue.sh check   (<= 5 min: 90 + 2 x 100 s)
#   source .device/env.sh && bash ci/h200_epilogue.sh time    (<= 9 min: 500 s)
# check: 1. bit-identical to the direct twins (ci.epilogue_smoke: ragged M and N, n % 8 != 0,
#           light tiles, several tiles per CTA); 2. the ci property of each staged variant.
# time:  the two staged variants, their direct twins, and each one's no_epilogue ablation (no C
#        written: what the epilogue costs), one run, CUDA-graph replay (profiling.ablation).
set -u
PHASE=${1:-check}
export OUT=${OUT:-out}; mkdir -p "$OUT"
RS=h90_m128n128k256_s4_wg2_swap_fp16_tma_prmt_rs
T=h90_m128n128k256_s4_wg2_b8_swap_fp16_tma_prmt_rs_prec1x_t64
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$OUT/log.txt"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$OUT/log.txt"
if [ "$PHASE" = check ]; then
  stamp smoke
  timeout 90 python3 -m ci.epilogue_smoke 2>&1 | tail -30 >> "$OUT/log.txt"; stamp "smoke rc=${PIPESTATUS[0]}"
  for V in ${RS}_es ${T}_es; do
    stamp "property $V"
    timeout 100 python3 -m pytest properties/test_subject_vs_oracle.py --subject=hopper --variant="$V" \
      --hypothesis-profile=ci -k "test_subject_matches_oracle and not per_distribution or rejects" \
      -p no:cacheprovider -q -x 2>&1 | tail -15 >> "$OUT/log.txt"; stamp "property rc=${PIPESTATUS[0]}"
  done
elif [ "$PHASE" = time ]; then
  stamp ablation
  timeout 500 python3 -m profiling.ablation --variant $RS --variant ${RS}_es --variant $T --variant ${T}_es \
    --ablate --parts no_epilogue --samples 9 --build-timeout 45 --json "$OUT/ablation.json" 2>&1 | tail -14 \
    >> "$OUT/log.txt"; stamp "ablation rc=${PIPESTATUS[0]}"
else
  echo "usage: bash ci/h200_epilogue.sh check|time" >&2; exit 2
fi
