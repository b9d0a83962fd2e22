#!/usr/bin/env bash
# Issue 14, session 11, third device call (~6 min):
#   source .device/env.sh && bash ci/h200_session11c.sh      (logs under $OUT, or ./out)
# The first-K-tile-local build (FIRST_LOCAL_CONFIG, prepass_first_local):
# 1. prepass smoke (bit-identical to the fastest tile; repeated, alternating, two streams);
# 2. ci property + invalid inputs;
# 3. compute-sanitizer synccheck and racecheck (ragged, empty group);
# 4. profiling.k_slope on bench4's M and N against the production build;
# 5. bench_gpu: production, first-local, the fastest staged tile and cuBLAS bf16 in one run.
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
label() { python3 -c "import kernel.hopper.config as c; print(c.$1.label)"; }
SW=$(label SPLIT_WARP_CONFIG); FL=$(label FIRST_LOCAL_CONFIG); RSES=$(label FASTEST_STAGED_CONFIG)
timeout ${T_SMOKE:-90} python3 -m ci.prepass_smoke "$FL" 2>&1 | tail -4 | tee "$OUT/smoke.txt"
timeout ${T_PROPS:-120} python3 -m pytest -m properties --subject=hopper --variant="$FL" --hypothesis-profile=ci \
  -k "test_subject_matches_oracle and not per_distribution or rejects" -p no:cacheprovider -q -rs -x 2>&1 \
  | tail -3 | tee "$OUT/properties.txt"
timeout ${T_SAN:-100} python3 -m ci.sanitize --subject=hopper --variant="$FL" --require --jobs=2 --timeout=90 \
  --tool=synccheck --tool=racecheck --case=ragged --case=empty_group 2>&1 | tail -6 | tee "$OUT/sanitize.txt"
timeout ${T_SLOPE:-90} python3 -m profiling.k_slope --variant "$FL" --variant "$SW" --shape bench4 \
  --ks 512,1536,6144 --samples 9 2>&1 | tail -4 | tee "$OUT/k_slope.md"
NVFP4_BENCH_FAMILIES=hopper NVFP4_BENCH_SHAPES=bench1,bench2,bench3,bench4 NVFP4_BENCH_VARIANTS="$SW,$FL,$RSES" \
  timeout ${T_BENCH:-150} python3 -m pytest profiling/benchmarks/bench_gpu.py --benchmark-only \
  --benchmark-json="$OUT/bench_gpu.json" --benchmark-columns=median,iqr,rounds -p no:cacheprovider -q -rs 2>&1 | tail -2
python3 -m profiling.benchmarks.speed_table "$OUT/bench_gpu.json" 2>&1 | head -7 | tee "$OUT/speed_table.md"
