#!/usr/bin/env bash
# Steps the H200 session scripts share, sourced by them (each needs OUT; scripts from session 18
# on take label() and stamp() from here too, older ones define their own first):
#   label NAME                     the label of kernel.hopper.config's NAME
#   stamp TEXT                     TEXT after the seconds since this file was sourced, into $OUT/log.txt
#   smoke_gate MODULE [ARGS ...]   a bit-identity smoke (ci.cluster_y_smoke, ci.schedule_smoke)
#                                  under a timeout; returns 1 if it fails or hangs (124)
#   ci_property LABEL              the ci property and the invalid-input rejections on one build
#   bench_with_cublas LABELS       bench_gpu on the four standard shapes with cuBLAS bf16 in the
#                                  same run, then its speed table ($OUT/bench_gpu.json, speed_table.md)
if ! declare -F label > /dev/null; then
  label() { python3 -c "import kernel.hopper.config as c; print(c.$1.label)"; }
fi
if ! declare -F stamp > /dev/null; then
  t0=$(date +%s)
  stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$OUT/log.txt"; }
fi
smoke_gate() {
  local module=$1; shift
  stamp "smoke $module $*"
  timeout ${T_SMOKE:-150} python3 -m "$module" "$@" 2>&1 | grep -v "bit-identical$" | tail -12 | tee -a "$OUT/log.txt"
  local rc=${PIPESTATUS[0]}; stamp "smoke rc=$rc"
  if [ "$rc" != 0 ]; then stamp "smoke failed (124: hung): the rest skipped"; return 1; fi
}
ci_property() {
  timeout ${T_PROPS:-110} python3 -m pytest -m properties --subject=hopper --variant="$1" --hypothesis-profile=ci \
    -k "test_subject_matches_oracle and not per_distribution or rejects" -p no:cacheprovider -q -rs -x 2>&1 \
    | tail -2 | tee -a "$OUT/log.txt"
}
bench_with_cublas() {
  NVFP4_BENCH_FAMILIES=hopper NVFP4_BENCH_SHAPES=bench1,bench2,bench3,bench4 NVFP4_BENCH_VARIANTS="$1" \
    timeout ${T_BENCH:-170} python3 -m pytest profiling/benchmarks/bench_gpu.py --benchmark-only \
    --benchmark-json="$OUT/bench_gpu.json" --benchmark-columns=median,iqr,rounds -p no:cacheprovider -q -rs 2>&1 | tail -1
  python3 -m profiling.benchmarks.speed_table "$OUT/bench_gpu.json" 2>&1 | head -8 | tee "$OUT/speed_table.md"
}
