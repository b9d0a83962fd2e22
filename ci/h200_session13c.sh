#!/usr/bin/env bash
# Issue 14, session 13, the second call's tail (~8 min at h200_long.sh's own limits; session 13
# ran it at 40 / 60 s, too short to finish: no evidence): each input distribution and the
# gpu-long run on the two _st builds (what a build needs before it can become the default, with
# the README main command and the Hopper mutants):
#   source .device/env.sh && bash ci/h200_session13c.sh      (logs under $OUT, or ./out)
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
label() { python3 -c "import kernel.hopper.config as c; print(c.$1.label)"; }
for NAME in SPLIT_WARP_ST_CONFIG FASTEST_STAGED_PDL_ST_CONFIG; do
  V=$(label $NAME); mkdir -p "$OUT/$NAME"
  echo "== $V"
  OUT="$OUT/$NAME" bash ci/h200_long.sh "$V"
done
