#!/usr/bin/env bash
# The happens-before checker (kernel.perturbation Perturbation.checks) on the H200, one device
# call (issue 18):   source .device/env.sh && bash ci/h200_checker.sh
# 1. ci.mutation_runner, perturbed verdict only, on the unmutated baselines (default and _rs:
#    no false positive) and on the catalog mutants the checker is aimed at (MUTANTS below);
# 2. the perturbed property on the mixed-tile variant (_t64, the default on most shapes),
#    unmutated: its checked builds must pass too.
# Writes $OUT/{log.txt,m.json,sync.md,t64.txt}.  EXAMPLES=20 DEADLINE=300 OUT=out/checker
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-out/checker}
DEADLINE=${DEADLINE:-300}
mkdir -p "$OUT"
export CUTE_DSL_ARCH=sm_90a
MUTANTS=${MUTANTS:-"hopper_sync_wgmma_wait_lax__rs hopper_sync_wgmma_wait_lax__default hopper_sync_no_reuse_barrier__rs
hopper_sync_no_reuse_barrier__default hopper_sync_no_acc_reset_fence__default hopper_sync_no_acc_reset_fence__rs
hopper_sync_producer_tail_missing__rs hopper_sync_producer_tail_missing__default hopper_sync_tensormap_acquire_missing__rs"}
args=()
for m in $MUTANTS; do args+=(--mutant "$m"); done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
start=$(date +%s)
timeout --kill-after=10 $((DEADLINE + 40)) python3 -m ci.mutation_runner --section=sync "${args[@]}" --modes perturbed \
  --baseline --jobs 8 --timeout 200 --deadline "$DEADLINE" --max-examples "${EXAMPLES:-20}" \
  --json "$OUT/m.json" --sync-markdown "$OUT/sync.md" > "$OUT/log.txt" 2>&1
echo "runner exit $? after $(( $(date +%s) - start )) s" | tee -a "$OUT/log.txt"
grep -E "^\[mutation\]" "$OUT/log.txt" | tail -n 30
cat "$OUT/sync.md" 2>/dev/null
T64=h90_m128n128k256_s4_wg2_b8_swap_fp16_tma_prmt_rs_prec1x_t64
timeout 200 python3 -m pytest properties/test_perturbed_properties.py --subject=hopper --variant=$T64 \
  --perturb=only --hypothesis-profile=ci -q -x -p no:cacheprovider > "$OUT/t64.txt" 2>&1
echo "t64 checked property exit $?" | tee -a "$OUT/t64.txt"
tail -n 25 "$OUT/t64.txt"
