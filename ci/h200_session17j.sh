#!/usr/bin/env bash
# Issue 14, session 17, tenth device call (~1 min):
#   source .device/env.sh && bash ci/h200_session17j.sh      (logs under $OUT, or ./out)
# Does PDL co-schedule at all here? profiling.pdl_probe: a primary of 128-thread CTAs that
# triggers at once and stays 20 us, a secondary of 288-thread CTAs with 0 / 100 KB / 200 KB of
# shared memory that stamps its start; one CTA per SM each; the primary's carveout unset or 100 %.
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
timeout ${T_PROBE:-120} python3 -m profiling.pdl_probe --spin-us 20 --secondary-smem 0,100000,200000,225000 --primary-carveout none,100 2>&1 \
  | grep -v fast_path | tee "$OUT/pdl_probe.md"
# and a primary that holds 4 KB of shared memory itself (carveout 100 %)
timeout ${T_PROBE:-120} python3 -m profiling.pdl_probe --spin-us 20 --secondary-smem 100000,200000 --primary-carveout 100 \
  --primary-smem 4096 2>&1 | grep -v fast_path | tail -2 | tee -a "$OUT/pdl_probe.md"
