#!/usr/bin/env bash
# Usage: bash ci/gpu_profile.sh [bound|hotspots|sweep ...] [LABEL...]
# Nsight Compute metrics of Hopper variants (LABEL, or LABEL~ablate-PART for an ablated build;
# none: the production variants), one launch per shape profiled (clocks not locked). The words
# pick the views (default: bound):
#   bound     ncu's speed-of-light, memory, compute, scheduler and warp-state sections on one
#             launch per shape of SHAPES (ci.ncu_one_launch), then one table per kernel of what
#             decides the bound (profiling.ncu_bound: L2 / L1 / DRAM throughput against peak,
#             tensor-pipe and issue activity, the largest stall reasons): $OUT/ncu_LABEL.csv
#   hotspots  where the warps wait, by SASS instruction (warp-state samples, SourceCounters) on
#             each of SHAPES (profiling.ncu_hotspots, TOP rows): $OUT/hot_LABEL_SHAPE.csv
#   sweep     profiling.ncu_sweep (nsight-python, falling back to ncu) of the LABELs over SHAPES:
#             ncu_metrics.csv, summary.md and panels under $OUT/sweep
# Variables: SHAPES (default bench1,bench2,bench3,bench4), TOP (40), T_NCU (seconds per ncu run,
# default 200), T_SWEEP (480), OUT (./gpu-out).
# Run time on one H100/H200 (the figures of the scripts this replaces, H200, 2026-12-01): bound
# about 4 min for two variants and six launches; hotspots about 1 min per variant and shape;
# sweep not measured (T_SWEEP bounds it).
# Exit status: 0 every step passed, 1 a step failed, 2 misuse, 3 no sm_90 / sm_100 GPU or no ncu.
source "$(dirname "${BASH_SOURCE[0]}")/gpu_env.sh"
gpu_init "$@"
VIEWS=(); LABELS=()
for a in "${ARGS[@]}"; do
  case "$a" in
    bound|hotspots|sweep) VIEWS+=("$a") ;;
    *) LABELS+=("$a") ;;
  esac
done
[ "${#VIEWS[@]}" -gt 0 ] || VIEWS=(bound)
[ "$FAMILY" = hopper ] || { echo "ci.ncu_one_launch profiles Hopper variants; this GPU runs $FAMILY" >&2; exit 3; }
command -v ncu > /dev/null || { echo "no ncu (Nsight Compute) on PATH" >&2; exit 3; }
gpu_check_labels "${LABELS[@]}"
if [ "${#LABELS[@]}" = 0 ]; then IFS=',' read -r -a LABELS <<< "$(gpu_production_labels)"; fi
SHAPES=${SHAPES:-bench1,bench2,bench3,bench4}
read -r -a SHAPE_LIST <<< "${SHAPES//,/ }"
echo "views: ${VIEWS[*]}; variants: ${LABELS[*]}; shapes: $SHAPES; $(ncu --version | tail -1)"

ncu_bound() {  # ncu_bound LABEL NAME: the sections as a raw CSV, then the bound table
  timeout --kill-after=10 "${T_NCU:-200}" ncu --profile-from-start off --clock-control none \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section SchedulerStats \
    --section WarpStateStats --section ComputeWorkloadAnalysis --csv --page raw \
    python3 -m ci.ncu_one_launch "$1" "${SHAPE_LIST[@]}" > "$OUT/ncu_$2.csv" || return
  python3 -m profiling.ncu_bound "$OUT/ncu_$2.csv" --shapes "$SHAPES"
}

ncu_hotspots() {  # ncu_hotspots LABEL SHAPE NAME: warp samples per SASS instruction, the top rows
  local rep="$OUT/hot_$3"
  timeout --kill-after=10 "${T_NCU:-200}" ncu --profile-from-start off --clock-control none \
    --section SourceCounters --section WarpStateStats -f -o "$rep" \
    python3 -m ci.ncu_one_launch "$1" "$2" || return
  ncu --import "$rep.ncu-rep" --page source --csv --print-source sass > "$OUT/hot_$3.csv" || return
  rm -f "$rep.ncu-rep"
  python3 -m profiling.ncu_hotspots "$OUT/hot_$3.csv" --top "${TOP:-40}"
}

for view in "${VIEWS[@]}"; do
  case "$view" in
    bound)
      for label in "${LABELS[@]}"; do
        name=${label//\~/_}  # file names of [A-Za-z0-9._-] only
        step "bound_$name" ncu_bound "$label" "$name"
      done
      ;;
    hotspots)
      for label in "${LABELS[@]}"; do
        for shape in "${SHAPE_LIST[@]}"; do
          name="${label//\~/_}_$shape"
          step "hotspots_$name" ncu_hotspots "$label" "$shape" "$name"
        done
      done
      ;;
    sweep)
      sargs=(); for v in "${LABELS[@]}"; do sargs+=(--variant "$v"); done
      step sweep timeout --kill-after=10 "$(( ${T_SWEEP:-480} + 30 ))" python3 -m profiling.ncu_sweep "${sargs[@]}" \
        --shapes "$SHAPES" --out "$OUT/sweep" --deadline-s "${T_SWEEP:-480}"
      ;;
  esac
done
gpu_finish
