#!/usr/bin/env bash
# One device call (issue 18): does a co-resident tensor-pipe stressor (properties/tensor_stress.py)
# make the backlog races fire? (1) the stressor beside two production variants: slowdown and
# whether it ran beside them (the default variant: the fastest leaves no registers for it);
# (2) the default variant's two backlog mutants, plain and perturbed (the perturbed property
# launches one seed in two beside the stressor), baselines first.
#   source .device/env.sh && bash ci/h200_stress.sh        (logs under $OUT)
set -u
cd "$(dirname "$0")/.."
export OUT=${OUT:-out}; mkdir -p "$OUT"
export CUTE_DSL_ARCH=sm_90a
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
{ echo "[$(el) s] stressor beside production variants"
  timeout 60 python3 -m properties.tensor_stress --torch-subjects --reps 3 --carveout 85 --carveout 100 2>&1 | tail -4
  timeout 90 python3 -m properties.tensor_stress --measure --shape bench3 --reps 10 \
      --variant h90_m128n128k256_s3_wg1_fp16 2>&1 | tail -3
  ok=${PIPESTATUS[0]}
  timeout 60 python3 -m properties.tensor_stress --measure --shape bench1 --reps 5 \
      --variant h90_m128n128k256_s3_wg1_fp16 2>&1 | tail -2
  timeout 40 python3 -m properties.tensor_stress --measure --shape bench4 --reps 3 \
      --variant h90_m128n128k256_s4_wg2_swap_fp16_tma_prmt_rs 2>&1 | tail -1   # predicted: no room
  echo "[$(el) s] stressor beside the subjects: exit $ok"; exit "$ok"; } > "$OUT/stress.txt" 2>&1 \
  || { echo "the stressor did not run beside the subjects: mutants not run" >> "$OUT/stress.txt"; exit 1; }
timeout 350 python3 -m ci.mutation_runner --subject=hopper --baseline \
    --mutant hopper_sync_wgmma_wait_lax__default --mutant hopper_sync_no_reuse_barrier__default \
    --modes "${MODES:-plain,perturbed}" --jobs 7 --timeout 240 --deadline "${BUDGET:-300}" \
    --max-examples "${EXAMPLES:-50}" --json "$OUT/mutants.json" > "$OUT/mutants.txt" 2>&1
echo "[$(el) s] done (runner exit $?)" >> "$OUT/stress.txt"
grep -E "caught|SURVIVED|passed|FAILED|error" "$OUT/mutants.txt" | tail -20 >> "$OUT/stress.txt"
