#!/usr/bin/env bash
# One Hopper variant on the H200: each input distribution on its own, then the gpu-long run
# (500 examples). Used by h200_properties.sh (the default variant) and h200_variants.sh:
#   source .device/env.sh && bash ci/h200_long.sh LABEL   (logs under $OUT, or ./out)
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"
VARIANT=${1:?variant label}
timeout ${T_DIST:-90} python3 -m pytest -m properties --subject=hopper --variant="$VARIANT" --hypothesis-profile=ci \
  -k per_distribution -p no:cacheprovider -q 2>&1 | tail -8 | tee "$OUT/properties_dist.txt"
timeout ${T_LONG:-150} python3 -m pytest -m properties --subject=hopper --variant="$VARIANT" --hypothesis-profile=gpu-long \
  -k "test_subject_matches_oracle and not per_distribution" -p no:cacheprovider -q --hypothesis-show-statistics 2>&1 \
  | grep -E "passing|failing|invalid|passed|failed|Error|reproduce" | tail -12 | tee "$OUT/properties_long.txt"
