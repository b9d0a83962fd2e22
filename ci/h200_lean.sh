#!/usr/bin/env bash
# Issue 14, session 8: phase 1's exit trimmed (prepass_lean_exit, and prepass_x_before) against
# the production prepass variant, in one device call (~6 min):
#   source .device/env.sh && bash ci/h200_lean.sh        (logs under $OUT, or ./out)
# 1. each new variant's ci property (kernel vs oracle, invalid inputs) and its checked perturbed
#    property (seeded delays at every sync site, the happens-before checker);
# 2. profiling.ablation: production and the new variants, the new ones also phase1_only;
# 3. bench_gpu: all, the bench4 production variant and cuBLAS bf16 in the same run.
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
label() { python3 -c "import kernel.hopper.config as c; print(c.$1.label)"; }
PROD=$(label PHASE1_STAGED_CONFIG); LEAN=$(label LEAN_EXIT_CONFIG); XB=$(label X_BEFORE_CONFIG)
RSES=$(label FASTEST_STAGED_CONFIG)
NEW=${NEW:-$LEAN,$XB}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
VARGS=$(echo "$NEW" | tr ',' '\n' | sed 's/^/--variant=/' | tr '\n' ' ')
# shellcheck disable=SC2086
timeout ${T_PROPS:-200} python3 -m pytest -m properties --subject=hopper $VARGS --hypothesis-profile=ci \
  -k "test_subject_matches_oracle and not per_distribution or rejects" -p no:cacheprovider -q -rs -x 2>&1 \
  | tail -8 | tee "$OUT/properties.txt"
for v in $(echo "$NEW" | tr ',' ' '); do
  timeout ${T_PERTURB:-150} python3 -m pytest properties/test_perturbed_properties.py --subject=hopper --variant="$v" \
    --perturb=only --hypothesis-profile=ci -p no:cacheprovider -q -rs 2>&1 | tail -3 | tee -a "$OUT/perturbed.txt"
done
AARGS=$(echo "$PROD,$NEW" | tr ',' '\n' | sed 's/^/--variant=/' | tr '\n' ' ')
# shellcheck disable=SC2086
timeout ${T_ABL:-200} python3 -m profiling.ablation $AARGS --ablate --parts ${PARTS:-phase1_only} \
  --samples ${SAMPLES:-9} --json "$OUT/ablation.json" 2>&1 | grep -v "^\[ablation\]" | tail -12 | tee "$OUT/ablation.txt"
NVFP4_BENCH_FAMILIES=hopper NVFP4_BENCH_SHAPES=bench1,bench2,bench3,bench4 NVFP4_BENCH_VARIANTS="$PROD,$NEW,$RSES" \
  timeout ${T_BENCH:-200} python3 -m pytest profiling/benchmarks/bench_gpu.py --benchmark-only \
  --benchmark-json="$OUT/bench_gpu.json" --benchmark-columns=median,iqr,rounds -p no:cacheprovider -q -rs 2>&1 | tail -2
python3 -m profiling.benchmarks.speed_table "$OUT/bench_gpu.json" 2>&1 | tee "$OUT/speed_table.md"
