#!/usr/bin/env bash
# What bounds the production Hopper variants, in one device call (~4 min): Nsight Compute's
# speed-of-light, memory, scheduler and warp-state sections on one launch per standard shape
# (clocks not locked: --clock-control none), then one table per kernel of the figures that
# decide the bound (L2 / L1 / DRAM throughput against peak, tensor-pipe activity, issue
# activity, the largest stall reasons).
#   source .device/env.sh && bash ci/h200_ncu_bound.sh
# Variables: VARIANTS (label:shape,shape;...), OUT (folder for the raw CSVs, default ./out/ncu).
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-out/ncu}
mkdir -p "$OUT"
T64ES=h90_m128n128k256_s4_wg2_b8_swap_fp16_tma_prmt_rs_prec1xsw_t64_es  # the production prepass build
RSES=h90_m128n128k256_s4_wg2_swap_fp16_tma_prmt_rs_es
VARIANTS=${VARIANTS:-"$T64ES:bench1,bench2,bench3,bench4;$RSES:bench4,bench3"}
SECTIONS="--section SpeedOfLight --section MemoryWorkloadAnalysis --section SchedulerStats --section WarpStateStats --section ComputeWorkloadAnalysis"
IFS=';' read -ra PAIRS <<< "$VARIANTS"
for pair in "${PAIRS[@]}"; do
  label=${pair%%:*}; shapes=${pair#*:}
  name=${label//\~/_}  # file names of [A-Za-z0-9._-] only (LABEL~ablate-PART)
  echo "== ncu $label on $shapes ($(date +%T))"
  timeout "${T_NCU:-150}" ncu --profile-from-start off --clock-control none $SECTIONS --csv --page raw \
    python3 -m ci.ncu_one_launch "$label" ${shapes//,/ } > "$OUT/ncu_$name.csv" 2> "$OUT/ncu_$name.log"
  echo "rc=$? $(grep -c . "$OUT/ncu_$name.csv") lines"
  tail -2 "$OUT/ncu_$name.log"
  python3 -m profiling.ncu_bound "$OUT/ncu_$name.csv" --shapes "$shapes"
done
