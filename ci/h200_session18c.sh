#!/usr/bin/env bash
# Issue 14, session 18, third device call (only if 18a passed and 18b showed stream-K faster on
# bench1; ~9 min):
#   source .device/env.sh && bash ci/h200_session18c.sh      (logs under $OUT, or ./out)
# What the issue asks of a new default before the dispatch takes it: 1. each input distribution
# and the gpu-long run (500 examples) on the stream-K build; 2. its mutants: the protocol's sync
# mutant (plain, perturbed and compute-sanitizer verdicts) and the stream-K mutants of the GPU
# test (take removed, word not reset, partial ignored).
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
source "$(dirname "$0")/h200_gates.sh"  # label, stamp
SK=$(label STREAM_K_CONFIG)
stamp long
T_DIST=80 T_LONG=110 bash "$(dirname "$0")/h200_long.sh" "$SK"
stamp mutants
timeout 320 python3 -m ci.mutation_runner --subject hopper --mutant 'hopper_sync_*__sk' --mutant 'hopper_streamk_*' \
  --baseline --jobs 4 --timeout 250 --max-examples 25 --deadline 300 2>&1 | tail -12 | tee -a "$OUT/log.txt"
stamp done
