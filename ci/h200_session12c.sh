#!/usr/bin/env bash
# Issue 14, session 12, third device call (~8 min):
#   source .device/env.sh && bash ci/h200_session12c.sh      (logs under $OUT, or ./out)
# The two pdl builds before they become the default dispatch:
# 1. bench_gpu twice more, the variants in the opposite order each time (session 12b's one run had
#    the pdl prepass build 6.6 % slower on bench2 alone);
# 2. each input distribution and the gpu-long run (ci/h200_long.sh) on both pdl builds.
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
label() { python3 -c "import kernel.hopper.config as c; print(c.$1.label)"; }
SW=$(label SPLIT_WARP_CONFIG); SWP=$(label SPLIT_WARP_PDL_CONFIG)
RSES=$(label FASTEST_STAGED_CONFIG); RSESP=$(label FASTEST_STAGED_PDL_CONFIG)
run=0
for order in "$SWP,$SW,$RSESP,$RSES" "$SW,$SWP,$RSES,$RSESP"; do
  run=$((run + 1))
  NVFP4_BENCH_FAMILIES=hopper NVFP4_BENCH_SHAPES=bench1,bench2,bench3,bench4 NVFP4_BENCH_VARIANTS="$order" \
    timeout ${T_BENCH:-170} python3 -m pytest profiling/benchmarks/bench_gpu.py --benchmark-only \
    --benchmark-json="$OUT/bench_gpu_$run.json" --benchmark-columns=median,iqr,rounds -p no:cacheprovider -q -rs 2>&1 \
    | tail -1
  python3 -m profiling.benchmarks.speed_table "$OUT/bench_gpu_$run.json" 2>&1 | head -8 | tee "$OUT/speed_table_$run.md"
done
for v in "$SWP" "$RSESP"; do
  echo "== $v"
  OUT="$OUT/long_${v: -12}" T_DIST=${T_DIST:-90} T_LONG=${T_LONG:-130} bash ci/h200_long.sh "$v"
done
