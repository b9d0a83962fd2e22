#!/usr/bin/env bash
# GPU check of the y_source="prepass" Hopper variant (issue 14p), one device call, < 4 min:
#   bash ci/h200_prepass.sh            (from the repository root; logs under $OUT or ./out)
# 1. smoke (ci/prepass_smoke.py): small problems bit-identical to the fastest variant, repeated
#    launches, two streams at once; under a timeout (a broken grid barrier hangs, never errs);
# 2. the ci-profile kernel-vs-oracle property and the invalid-problem property on the variant;
# 3. profiling.ablation: exactness on the 4 standard shapes, then the timing against the fastest.
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
LABEL=${LABEL:-h90_m128n128k256_s4_wg2_b8_swap_fp16_tma_prmt_rs_pre}
BASE=h90_m128n128k256_s4_wg2_swap_fp16_tma_prmt_rs
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
timeout ${T_SMOKE:-45} python3 -m ci.prepass_smoke "$LABEL" 2>&1 | tail -20 | tee "$OUT/smoke.txt"
echo "smoke rc=${PIPESTATUS[0]}" | tee -a "$OUT/smoke.txt"
timeout ${T_PROPS:-100} python3 -m pytest properties/test_subject_vs_oracle.py --subject=hopper --variant="$LABEL" \
  --hypothesis-profile=ci -k "test_subject_matches_oracle and not per_distribution or rejects" \
  -p no:cacheprovider -q -x 2>&1 | tail -30 | tee "$OUT/properties.txt"
echo "properties rc=${PIPESTATUS[0]}" | tee -a "$OUT/properties.txt"
timeout ${T_ABLATION:-85} python3 -m profiling.ablation --variant "$LABEL" --variant "$BASE" --samples 9 \
  --json "$OUT/ablation.json" 2>&1 | tail -30 | tee "$OUT/ablation.txt"
echo "ablation rc=${PIPESTATUS[0]}" | tee -a "$OUT/ablation.txt"
