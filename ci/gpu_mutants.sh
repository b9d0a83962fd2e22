#!/usr/bin/env bash
# Usage: bash ci/gpu_mutants.sh [PATTERN...]
# The mutant catalog (ci/mutants.py) on the GPU through ci.mutation_runner: every mutant of the
# family the GPU runs, or those matching the shell PATTERNs (e.g. 'hopper_sync_*__sk'), unmutated
# baselines first, JOBS at a time. Value mutants get the plain property's verdict; concurrency /
# memory-safety mutants up to three (MODES): the plain property (with the tensor-map rewrite
# property on TMA variants), the perturbed property (seeded delays, happens-before checker), and,
# only if neither caught it, compute-sanitizer (memcheck, racecheck, synccheck). A hung example is
# reported as "caught (hang)" by the isolation watchdog. Runs stop starting after BUDGET seconds
# (rows then read not-run); a hard timeout ends everything 50 s later.
# Writes $OUT/mutants.json, mutants.md, sync.md (the three-verdict table) and runner.log.
# Variables: SECTION=sync (only the concurrency mutants; default all), MODES (default
# plain,perturbed,sanitizer), BUDGET (510), JOBS (8: runs at once in all), JOBS_PER_GPU (runs at
# once on one GPU; default JOBS, so one GPU takes them all; the runs are spread over the visible
# GPUs, CUDA_VISIBLE_DEVICES, each run pinned to one: on G GPUs set JOBS to G x JOBS_PER_GPU),
# TIMEOUT (240 s per mutant run), EXAMPLES (at most N examples per property per run; default the
# ci profile's 50), OUT.
# Run time on one H100/H200: at most BUDGET + 60 s (9.5 min by default), by construction.
# Exit status: the runner's (0 every mutant caught and every baseline passed, 1 otherwise), 1 on
# the hard timeout, 2 misuse, 3 no sm_90 / sm_100 GPU.
source "$(dirname "${BASH_SOURCE[0]}")/gpu_env.sh"
gpu_init "$@"
PATTERNS=("${ARGS[@]}")
BUDGET=${BUDGET:-510}
MODES=${MODES:-plain,perturbed,sanitizer}
JOBS=${JOBS:-8}
args=(--jobs "$JOBS" --jobs-per-gpu "${JOBS_PER_GPU:-$JOBS}" --baseline --deadline "$BUDGET" --timeout "${TIMEOUT:-240}" --modes "$MODES"
      --json "$OUT/mutants.json" --markdown "$OUT/mutants.md" --sync-markdown "$OUT/sync.md")
[ -n "${EXAMPLES:-}" ] && args+=(--max-examples "$EXAMPLES")
case "${SECTION:-all}" in
  sync) args+=(--section=sync) ;;
  all) args+=(--subject="$FAMILY") ;;
  *) gpu_usage_error "SECTION is sync or all, not $SECTION" ;;
esac
for pat in "${PATTERNS[@]}"; do args+=(--mutant "$pat"); done
rm -f "$OUT/sync.md" "$OUT/mutants.md"
step runner timeout --kill-after=10 $(( BUDGET + 50 )) python3 -m ci.mutation_runner "${args[@]}"

echo
cat "$OUT/mutants.md" 2> /dev/null; echo
cat "$OUT/sync.md" 2> /dev/null
gpu_finish
