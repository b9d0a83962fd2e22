#!/usr/bin/env bash
# Issue 14, session 17, first device call (~7 min):
#   source .device/env.sh && bash ci/h200_session17a.sh      (logs under $OUT, or ./out)
# Session 16's pending call (h200_session16d.sh: the own-launch phase-1 build at 4 raw stages,
# with 2 / 3 phase-1 warps or a 7-box Y ring, against production at 4 and 3 stages), with the
# bench4 production build (_w2) timed in the same ablation run.
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
W2=$(python3 -c "import kernel.hopper.config as c; print(c.IN_FLIGHT_CONFIG.label)")
T_ABL=${T_ABL:-300} EXTRA_ABL="--variant $W2" bash "$(dirname "$0")/h200_session16d.sh"
