#!/usr/bin/env bash
# Issue 14, after ci/h200_session14b.sh if the cluster-decode build (y_cluster_decode, _c2d) is
# correct and fast enough to become bench4's default (~9 min): what the default must pass first.
# Each input distribution and the gpu-long run on it (ci/h200_long.sh at its own limits), then
# its three sync mutants (plain, perturbed, sanitizer verdicts):
#   source .device/env.sh && bash ci/h200_session14c.sh      (logs under $OUT, or ./out)
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
CY=$(python3 -c "import kernel.hopper.config as c; print(c.CLUSTER_Y_CONFIG.label)")
mkdir -p "$OUT/long"
OUT="$OUT/long" bash ci/h200_long.sh "$CY"
SECTION=sync MUTANT='*__c2d' MARKER=sync-mutants-c2d BUDGET=${BUDGET:-200} OUT="$OUT/mutants" bash ci/h200_mutants.sh 2>&1 | tail -8
