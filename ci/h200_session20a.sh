#!/usr/bin/env bash
# Issue 14, session 20, one device call (~6-8 min), after 18a / 19b / 19c measured stream-K and the
# two-CTA build correct and slower on every shape:
#   source .device/env.sh && bash ci/h200_session20a.sh      (logs under $OUT, or ./out)
# 1. the two-CTA GPU mutant that replaced the half carveout (which the driver overrides, so it
#    survived as an equivalent mutant): 16 KB more shared memory, one CTA per SM; the residency
#    test must catch it;
# 2. profiling.clock_probe, back to back on bench1-3: production, stream-K, two-CTA (is a build
#    that balances the last round paid back by a lower clock? power, clock, event reasons);
# 3. Nsight Compute's bound tables: production and stream-K on bench1 and bench3, `_w2` on bench4
#    (tensor-pipe activity, issue activity, stall reasons, L2 / DRAM against peak, SM clock).
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
source "$(dirname "$0")/h200_gates.sh"  # label, stamp
SW=$(label SPLIT_WARP_CONFIG); SK=$(label STREAM_K_CONFIG); C2=$(label TWO_CTA_CONFIG); W2=$(label IN_FLIGHT_CONFIG)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader | tee -a "$OUT/log.txt"
stamp mutants
timeout ${T_MUT:-130} python3 -m ci.mutation_runner --subject hopper --mutant 'hopper_two_cta_*' --baseline \
  --jobs 2 --timeout 110 2>&1 | tail -5 | tee -a "$OUT/log.txt"
stamp clock_probe
timeout ${T_CLOCK:-170} python3 -m profiling.clock_probe --variant "$SW" --variant "$SK" --variant "$C2" \
  --shapes bench1,bench2,bench3 --seconds 3 2>&1 | grep -v fast_path | tail -14 | tee "$OUT/clock.md"
stamp ncu
OUT=$OUT/ncu VARIANTS="$SW:bench1,bench3;$SK:bench1,bench3;$W2:bench4" T_NCU=${T_NCU:-100} \
  bash "$(dirname "$0")/h200_ncu_bound.sh" 2>&1 | grep -v fast_path | tee "$OUT/ncu_bound.md" | tail -60
stamp done
