#!/usr/bin/env bash
# Issue 14, session 11, second device call (~4 min):
#   source .device/env.sh && bash ci/h200_session11b.sh      (logs under $OUT, or ./out)
# profiling.k_slope on bench4's M and N: what of the prepass build's fixed cost is phase 1's decode
# (~no_prepass: the completion barrier stays, nothing decoded), what phase 1 alone takes
# (~phase1_only), and the fixed costs of the lean exit and the background (flags) phase 1.
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
label() { python3 -c "import kernel.hopper.config as c; print(c.$1.label)"; }
SW=$(label SPLIT_WARP_CONFIG); LEAN=$(label LEAN_EXIT_CONFIG); BG=$(label BACKGROUND_CONFIG)
timeout ${T_SLOPE:-400} python3 -m profiling.k_slope --variant "$SW~no_prepass" --variant "$SW~phase1_only" \
  --variant "$LEAN" --variant "$BG" --shape bench4 --ks 512,1536,6144 --samples 9 2>&1 | tail -8 | tee "$OUT/k_slope_b.md"
