#!/usr/bin/env bash
# Issue 14, session 9, one device call (~9 min):
#   source .device/env.sh && bash ci/h200_session9.sh      (logs under $OUT, or ./out)
# 1. the README main command (production variants), wall time against its 300 s limit, after the
#    host state machines stopped collecting the whole heap per freeing step (343 s before);
# 2. the split-warp build (SPLIT_WARP_CONFIG): ci property + invalid inputs, compute-sanitizer
#    synccheck and racecheck;
# 3. bench_gpu: production prepass, split-warp, the fastest staged tile and cuBLAS bf16 in one run.
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
label() { python3 -c "import kernel.hopper.config as c; print(c.$1.label)"; }
PROD=$(label PHASE1_STAGED_CONFIG); NEW=$(label SPLIT_WARP_CONFIG); RSES=$(label FASTEST_STAGED_CONFIG)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
start=$(date +%s)
timeout ${T_MAIN:-310} python3 -m pytest -m properties --subject=auto --hypothesis-profile=ci \
  -p no:cacheprovider -q -rs --durations=12 2>&1 | tail -24 > "$OUT/main.txt"
main_rc=${PIPESTATUS[0]}
main_s=$(( $(date +%s) - start ))
cat "$OUT/main.txt" | cut -c1-200
printf 'main command: %s s, rc %s (limit 300 s)\n' "$main_s" "$main_rc" | tee -a "$OUT/main.txt"
timeout ${T_PROPS:-110} python3 -m pytest -m properties --subject=hopper --variant="$NEW" --hypothesis-profile=ci \
  -k "test_subject_matches_oracle and not per_distribution or rejects" -p no:cacheprovider -q -rs -x 2>&1 \
  | tail -4 | tee "$OUT/properties.txt"
timeout ${T_SAN:-90} python3 -m ci.sanitize --subject=hopper --variant="$NEW" --require --jobs=2 --timeout=80 \
  --tool=synccheck --tool=racecheck --case=ragged --case=empty_group 2>&1 | tail -6 | tee "$OUT/sanitize.txt"
NVFP4_BENCH_FAMILIES=hopper NVFP4_BENCH_SHAPES=bench1,bench2,bench3,bench4 NVFP4_BENCH_VARIANTS="$PROD,$NEW,$RSES" \
  timeout ${T_BENCH:-170} python3 -m pytest profiling/benchmarks/bench_gpu.py --benchmark-only \
  --benchmark-json="$OUT/bench_gpu.json" --benchmark-columns=median,iqr,rounds -p no:cacheprovider -q -rs 2>&1 | tail -2
python3 -m profiling.benchmarks.speed_table "$OUT/bench_gpu.json" 2>&1 | tee "$OUT/speed_table.md"
