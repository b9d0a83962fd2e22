#!/usr/bin/env bash
# The property suite on the H200 (issue 4's acceptance run), in one device call:
#   source .device/env.sh && bash ci/h200_properties.sh   (logs under $OUT, or ./out)
# With 20 declared variants the ci step alone takes about 7 minutes (2026-11-29: 13 variants'
# main property took ~240 s): within one 10-minute device call, pass VARIANT_ARGS to split the
# variants over calls, e.g. VARIANT_ARGS="--variant=L1 --variant=L2" (default: every variant).
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
DEFAULT=$(python3 -c "import kernel.hopper as h; print(h.DEFAULT_CONFIG.label)")
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 60 python3 -m oracle.speed --device cuda 2>&1 | tee "$OUT/oracle_speed.txt"
# every declared variant: the main kernel-vs-oracle property and the invalid-problem property
# shellcheck disable=SC2086
timeout ${T_CI:-270} python3 -m pytest -m properties --subject=hopper ${VARIANT_ARGS:-} --hypothesis-profile=ci \
  -k "test_subject_matches_oracle and not per_distribution or rejects" -p no:cacheprovider -q -rs \
  --junitxml="$OUT/properties_ci.xml" 2>&1 | tail -25 | tee "$OUT/properties_ci.txt"
# the default variant: each distribution on its own, then the long run (500 examples)
bash "$(dirname "$0")/h200_long.sh" "$DEFAULT"
