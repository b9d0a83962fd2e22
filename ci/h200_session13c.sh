#!/usr/bin/env bash
# Issue 14, session 13, the second call's tail (~5 min): each input distribution and the
# gpu-long run on the two _st builds (what a build needs before it can become the default, with
# the README main command and the Hopper mutants):
#   source .device/env.sh && bash ci/h200_session13c.sh      (logs under $OUT, or ./out)
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
label() { python3 -c "import kernel.hopper.config as c; print(c.$1.label)"; }
for NAME in SPLIT_WARP_ST_CONFIG FASTEST_STAGED_PDL_ST_CONFIG; do
  V=$(label $NAME); mkdir -p "$OUT/$NAME"
  echo "== $V"
  OUT="$OUT/$NAME" T_DIST=${T_DIST:-60} T_LONG=${T_LONG:-90} bash ci/h200_long.sh "$V"
done
