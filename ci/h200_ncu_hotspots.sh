#!/usr/bin/env bash
# Where the warps of one kernel wait, by SASS instruction (Nsight Compute's warp-state samples,
# SourceCounters section), for one variant on one standard shape, in one device call (~1 min):
#   source .device/env.sh && LABEL=<label>[~ablate-PART] SHAPE=bench1 bash ci/h200_ncu_hotspots.sh
# Writes $OUT/hot_<shape>.csv (ncu's source page: one row per SASS instruction) and prints the
# instructions with the most samples (profiling.ncu_hotspots).
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-out/ncu}; mkdir -p "$OUT"
: "${LABEL:?variant label}"
SHAPE=${SHAPE:-bench1}
REP="$OUT/hot_$SHAPE"
timeout "${T_NCU:-150}" ncu --profile-from-start off --clock-control none --section SourceCounters \
  --section WarpStateStats -f -o "$REP" python3 -m ci.ncu_one_launch "$LABEL" "$SHAPE" > "$OUT/hot_$SHAPE.log" 2>&1
echo "ncu rc=$?"; tail -2 "$OUT/hot_$SHAPE.log"
ncu --import "$REP.ncu-rep" --page source --csv --print-source sass > "$OUT/hot_$SHAPE.csv" 2>"$OUT/hot_${SHAPE}_import.log"
echo "import rc=$? $(wc -l < "$OUT/hot_$SHAPE.csv") lines"; head -c 600 "$OUT/hot_${SHAPE}_import.log"
rm -f "$REP.ncu-rep"
python3 -m profiling.ncu_hotspots "$OUT/hot_$SHAPE.csv" --top ${TOP:-40}
