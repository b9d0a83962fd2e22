#!/usr/bin/env bash
# Issue 14, session 8: phase 1's completion barrier as one instruction for every thread (it was
# bar.sync = barrier.sync.aligned at two sites, one per warp role: undefined in PTX, and
# compute-sanitizer synccheck aborted the launch). One device call (~4 min):
#   source .device/env.sh && bash ci/h200_barrier_fix.sh    (logs under $OUT, or ./out)
# 1. compute-sanitizer synccheck (then racecheck) on the production prepass variant;
# 2. its ci property and checked perturbed property;
# 3. bench_gpu: it, the bench4 production variant and cuBLAS bf16 in the same run.
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
label() { python3 -c "import kernel.hopper.config as c; print(c.$1.label)"; }
PROD=$(label PHASE1_STAGED_CONFIG); RSES=$(label FASTEST_STAGED_CONFIG)
for tool in ${TOOLS:-synccheck}; do
  timeout 120 python3 -m ci.sanitize --subject=hopper --variant="$PROD" --require --jobs=1 --timeout=100 \
    --tool="$tool" --case=ragged --case=empty_group 2>&1 | tail -5 | tee -a "$OUT/sanitize.txt"
done
timeout ${T_PROPS:-150} python3 -m pytest -m properties --subject=hopper --variant="$PROD" --hypothesis-profile=ci \
  -k "test_subject_matches_oracle and not per_distribution or rejects" -p no:cacheprovider -q -rs -x 2>&1 \
  | tail -4 | tee "$OUT/properties.txt"
timeout ${T_PERTURB:-80} python3 -m pytest properties/test_perturbed_properties.py --subject=hopper --variant="$PROD" \
  --perturb=only --hypothesis-profile=ci -p no:cacheprovider -q -rs 2>&1 | tail -2 | tee "$OUT/perturbed.txt"
NVFP4_BENCH_FAMILIES=hopper NVFP4_BENCH_SHAPES=bench1,bench2,bench3,bench4 NVFP4_BENCH_VARIANTS="$PROD,$RSES" \
  timeout ${T_BENCH:-120} python3 -m pytest profiling/benchmarks/bench_gpu.py --benchmark-only \
  --benchmark-json="$OUT/bench_gpu.json" --benchmark-columns=median,iqr,rounds -p no:cacheprovider -q -rs 2>&1 | tail -2
python3 -m profiling.benchmarks.speed_table "$OUT/bench_gpu.json" 2>&1 | tee "$OUT/speed_table.md"
