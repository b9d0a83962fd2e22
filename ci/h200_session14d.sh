#!/usr/bin/env bash
# Issue 14, after ci/h200_session14b.sh measured the cluster decode (_c2d) correct but 1.9x slower
# per K than _rs_es_pdl on bench4 (3.54 against 1.89 us per 256 K): where its warps wait, by SASS
# instruction (ncu warp-state samples, one bench4 launch of each build), then the session-14a
# timelines, in one device call (~6 min):
#   source .device/env.sh && bash ci/h200_session14d.sh      (logs under $OUT, or ./out)
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
label() { python3 -c "import kernel.hopper.config as c; print(c.$1.label)"; }
CY=$(label CLUSTER_Y_CONFIG); RP=$(label FASTEST_STAGED_PDL_CONFIG)
for L in "$CY" "$RP"; do
  echo "=== hotspots $L bench4"
  OUT="$OUT/ncu_${L##*_s}" LABEL="$L" SHAPE=bench4 TOP=${TOP:-28} T_NCU=90 bash ci/h200_ncu_hotspots.sh 2>&1 | tail -45
done
bash ci/h200_session14a.sh
