#!/usr/bin/env bash
# Check and time chosen Hopper variants in one device call (issue 7's tuning loop):
#   source .device/env.sh && VARIANTS="label1,label2" BASELINES="label3" bash ci/h200_variants.sh
# BENCH_VARIANTS (optional): time these instead of VARIANTS+BASELINES.
# VARIANTS: new variants, each checked by the ci-profile kernel-vs-oracle property and the
# invalid-problem property before it is timed; BASELINES: timed in the same run for ratios.
# LONG_VARIANT (optional): also each distribution alone and the 500-example gpu-long run.
# SANITIZE=0: skip compute-sanitizer (synccheck, racecheck) on the new variants.
# Logs under $OUT (or ./out): properties*.txt, bench_gpu.json, bench_summary.md.
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
: "${VARIANTS:?comma-separated variant labels}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
VARGS=$(echo "$VARIANTS" | tr ',' '\n' | sed 's/^/--variant=/' | tr '\n' ' ')
# shellcheck disable=SC2086
timeout ${T_PROPS:-240} python3 -m pytest -m properties --subject=hopper $VARGS --hypothesis-profile=${PROFILE:-ci} \
  -k "test_subject_matches_oracle and not per_distribution or rejects" -p no:cacheprovider -q -rs -x 2>&1 \
  | tail -30 | tee "$OUT/properties.txt"
# compute-sanitizer synccheck and racecheck on each new variant (SANITIZE=0 skips, ~25 s per tool
# and variant): session 8 found the production prepass variant's completion barrier undefined in
# PTX (an aligned bar.sync at two role sites) only when the mutant runner's sanitizer baseline ran
# it; the properties had passed for two sessions
if [ "${SANITIZE:-1}" != 0 ]; then
  for v in $(echo "$VARIANTS" | tr ',' ' '); do
    timeout ${T_SAN:-150} python3 -m ci.sanitize --subject=hopper --variant="$v" --require --jobs=1 --timeout=120 \
      --tool=synccheck --tool=racecheck --case=ragged --case=empty_group 2>&1 | tail -8 | tee -a "$OUT/sanitize.txt"
  done
fi
[ -z "${LONG_VARIANT:-}" ] || bash "$(dirname "$0")/h200_long.sh" "$LONG_VARIANT"
ALL=${BENCH_VARIANTS:-$VARIANTS${BASELINES:+,$BASELINES}}
NVFP4_BENCH_FAMILIES=hopper NVFP4_BENCH_SHAPES=${SHAPES:-bench1,bench2,bench3,bench4} NVFP4_BENCH_VARIANTS=$ALL \
  timeout ${T_BENCH:-240} python3 -m pytest profiling/benchmarks/bench_gpu.py --benchmark-only \
  --benchmark-json=$OUT/bench_gpu.json --benchmark-columns=median,iqr,rounds -p no:cacheprovider -q -rs 2>&1 | tail -6
python3 -m profiling.benchmarks.summary $OUT/bench_gpu.json | tee "$OUT/bench_summary.md"
