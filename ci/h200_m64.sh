#!/usr/bin/env bash
# Issue 14, session 4: the 64-row-Y prepass variants in one device call (~4-5 min):
#   source .device/env.sh && bash ci/h200_m64.sh      (logs under $OUT, 4 files)
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
A=h90_m64n128k256_s4_wg2_b16_swap_fp16_tma_prmt_rs_prec1x
B=h90_m64n128k256_s4_wg2_b8_swap_fp16_tma_prmt_rs_prec1x
Q=h90_m128n128k256_s4_wg2_b8_swap_fp16_tma_prmt_rs_prec1x
RS=h90_m128n128k256_s4_wg2_swap_fp16_tma_prmt_rs
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$OUT/log.txt"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$OUT/log.txt"
stamp smoke
timeout 100 python3 -m ci.prepass_smoke $A $B 2>&1 | tail -30 >> "$OUT/log.txt"; stamp "smoke rc=$?"
stamp "property $A"
timeout 110 python3 -m pytest properties/test_subject_vs_oracle.py --subject=hopper --variant="$A" \
  --hypothesis-profile=ci -k "test_subject_matches_oracle and not per_distribution or rejects" \
  -p no:cacheprovider -q -x 2>&1 | tail -15 >> "$OUT/log.txt"; stamp "property rc=$?"
stamp ablation
timeout 200 python3 -m profiling.ablation --variant $A --variant $B --variant $Q --variant $RS --samples 9 \
  --build-timeout 45 --json "$OUT/ablation.json" 2>&1 | tail -12 >> "$OUT/log.txt"; stamp "ablation rc=$?"
