#!/usr/bin/env bash
# Issue 14, session 5: the 2-CTA cluster prepass variants (each fp16 Y box loaded half by each CTA
# and multicast to both) in one device call (at most 345 s of timeouts, every step under one):
#   source .device/env.sh && bash ci/h200_mcast.sh      (logs under $OUT: log.txt, ablation.json)
# Order: smoke (a wrong cluster protocol hangs: killed by timeout, and then the later steps are
# skipped), the timing (profiling.ablation checks each config against the exact oracle before it
# times it), then the oracle property on the b8 cluster variant.
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
C=h90_m128n128k256_s4_wg2_b8_swap_fp16_tma_prmt_rs_prec1x_c2
C9=h90_m128n128k256_s4_wg2_b9_swap_fp16_tma_prmt_rs_prec1x_c2
Q=h90_m128n128k256_s4_wg2_b8_swap_fp16_tma_prmt_rs_prec1x
RS=h90_m128n128k256_s4_wg2_swap_fp16_tma_prmt_rs
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$OUT/log.txt"; }
timeout 10 nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | tee -a "$OUT/log.txt"
stamp smoke
timeout 80 python3 -m ci.prepass_smoke $C $C9 2>&1 | tail -40 >> "$OUT/log.txt"; rc=${PIPESTATUS[0]}; stamp "smoke rc=$rc"
if [ "$rc" != 0 ]; then stamp "smoke failed (124: hung): ablation and property skipped"; exit 1; fi
stamp ablation
timeout 175 python3 -m profiling.ablation --variant $C --variant $C9 --variant $Q --variant $RS --samples 9 \
  --build-timeout 45 --json "$OUT/ablation.json" 2>&1 | tail -24 >> "$OUT/log.txt"; stamp "ablation rc=${PIPESTATUS[0]}"
stamp "property $C"
timeout 80 python3 -m pytest properties/test_subject_vs_oracle.py --subject=hopper --variant="$C" \
  --hypothesis-profile=ci -k "test_subject_matches_oracle and not per_distribution or rejects" \
  -p no:cacheprovider -q -x 2>&1 | tail -15 >> "$OUT/log.txt"; stamp "property rc=${PIPESTATUS[0]}"
