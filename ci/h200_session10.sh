#!/usr/bin/env bash
# Issue 14, session 10, one device call (~8 min):
#   source .device/env.sh && bash ci/h200_session10.sh      (logs under $OUT, or ./out)
# Phase 1 in the background (prepass_decoders, BACKGROUND_CONFIG and its b7 twin):
# 1. ci property + invalid inputs on the b8 build (stops at the first failure; a hang is
#    reported by the isolation watchdog), then on the b7 build;
# 2. compute-sanitizer synccheck and racecheck on the b8 build;
# 3. bench_gpu: split-warp (barrier phase 1), both background builds, the fastest staged tile
#    and cuBLAS bf16 in one run;
# 4. the checked perturbed property on the b8 build (T_PERTURB, 0 skips it).
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
label() { python3 -c "import kernel.hopper.config as c; print(c.$1.label)"; }
SW=$(label SPLIT_WARP_CONFIG); BG=$(label BACKGROUND_CONFIG); BG7=$(label BACKGROUND_B7_CONFIG)
RSES=$(label FASTEST_STAGED_CONFIG)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
for v in "$BG" "$BG7"; do
  echo "== $v" | tee -a "$OUT/properties.txt"
  timeout ${T_PROPS:-120} python3 -m pytest -m properties --subject=hopper --variant="$v" --hypothesis-profile=ci \
    -k "test_subject_matches_oracle and not per_distribution or rejects" -p no:cacheprovider -q -rs -x 2>&1 \
    | tail -6 | tee -a "$OUT/properties.txt"
done
timeout ${T_SAN:-100} python3 -m ci.sanitize --subject=hopper --variant="$BG" --require --jobs=2 --timeout=90 \
  --tool=synccheck --tool=racecheck --case=ragged --case=empty_group 2>&1 | tail -6 | tee "$OUT/sanitize.txt"
NVFP4_BENCH_FAMILIES=hopper NVFP4_BENCH_SHAPES=bench1,bench2,bench3,bench4 NVFP4_BENCH_VARIANTS="$SW,$BG,$BG7,$RSES" \
  timeout ${T_BENCH:-220} python3 -m pytest profiling/benchmarks/bench_gpu.py --benchmark-only \
  --benchmark-json="$OUT/bench_gpu.json" --benchmark-columns=median,iqr,rounds -p no:cacheprovider -q -rs 2>&1 | tail -2
python3 -m profiling.benchmarks.speed_table "$OUT/bench_gpu.json" 2>&1 | tee "$OUT/speed_table.md"
if [ "${T_PERTURB:-90}" != 0 ]; then
  timeout ${T_PERTURB:-90} python3 -m pytest properties/test_perturbed_properties.py --subject=hopper --variant="$BG" \
    --perturb=only --hypothesis-profile=ci -p no:cacheprovider -q -rs 2>&1 | tail -3 | tee "$OUT/perturbed.txt"
fi
