#!/usr/bin/env bash
# Issue 14, session 5: mixed 128/64-row Y tiles (y_tail64) with the cost-balanced schedule, one
# device call (<= 6 min: every step under its own timeout, 75 + 100 + 175 s):
#   source .device/env.sh && bash ci/h200_mixed.sh      (logs under $OUT: log.txt, ablation.json)
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
T=h90_m128n128k256_s4_wg2_b8_swap_fp16_tma_prmt_rs_prec1x_t64
Q=h90_m128n128k256_s4_wg2_b8_swap_fp16_tma_prmt_rs_prec1x
RS=h90_m128n128k256_s4_wg2_swap_fp16_tma_prmt_rs
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$OUT/log.txt"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$OUT/log.txt"
# bit-identical to _rs on small problems with 64-row tails (M = 40, 130, 7) and full tiles,
# repeated launches, two problems alternating on one workspace, two streams
stamp smoke
timeout 75 python3 -m ci.prepass_smoke $T 2>&1 | tail -30 >> "$OUT/log.txt"; stamp "smoke rc=${PIPESTATUS[0]}"
stamp "property $T"
timeout 100 python3 -m pytest properties/test_subject_vs_oracle.py --subject=hopper --variant="$T" \
  --hypothesis-profile=ci -k "test_subject_matches_oracle and not per_distribution or rejects" \
  -p no:cacheprovider -q -x 2>&1 | tail -15 >> "$OUT/log.txt"; stamp "property rc=${PIPESTATUS[0]}"
stamp ablation
timeout 175 python3 -m profiling.ablation --variant $T --variant $Q --variant $RS --samples 9 \
  --build-timeout 45 --json "$OUT/ablation.json" 2>&1 | tail -12 >> "$OUT/log.txt"; stamp "ablation rc=${PIPESTATUS[0]}"
