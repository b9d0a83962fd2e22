#!/usr/bin/env bash
# One device call (session 4, last): #13 host first call again + the staging cost alone;
# #18 the two hanging mutants that timed out in the catalog run, with the map-rewrite skip fix.
#   source .device/env.sh && bash ci/h200_session4_c.sh        (logs under $OUT)
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
{ timeout 60 python3 kernel/native_probe.py --build 2>&1 | tail -1
  echo "[$(el) s] staging cost"
  timeout 40 python3 -m profiling.staging_cost --groups 8 2>&1 | tail -1
  timeout 40 python3 -m profiling.staging_cost --groups 2 2>&1 | tail -1
  echo "[$(el) s] host overhead"
  timeout 100 python3 -m profiling.host_overhead --shapes bench1,bench4 --json "$OUT/host.json" 2>&1 | tail -4
  echo "[$(el) s] host done"; } > "$OUT/host.txt" 2>&1
( cd "$(dirname "$0")/.." && CUTE_DSL_ARCH=sm_90a timeout 260 python3 -m ci.mutation_runner --subject=hopper \
    --mutant hopper_sync_producer_ring_short__rs --mutant hopper_sync_tx_count_short__rs \
    --modes plain,perturbed --jobs 2 --timeout 240 --deadline 200 --max-examples 25 \
    --json "$OUT/mutants.json" > "$OUT/mutants.txt" 2>&1 )
echo "[$(el) s] mutants done" >> "$OUT/host.txt"
tail -12 "$OUT/mutants.txt" >> "$OUT/host.txt"
