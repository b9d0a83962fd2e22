#!/usr/bin/env bash
# Issue 14 on one H200, one device call (at most ~9 min; ~5-7 min expected):
#   bash ci/h200_speed.sh            (sources .device/env.sh when present; logs under $OUT, or ./out)
# 1. each candidate, in parallel (one pytest per candidate, T_PROP s each): the ci-profile main
#    property, the fixed corners (the four standard shapes at full size included) and the
#    invalid-problem property (properties/test_subject_vs_oracle.py). A candidate that fails to
#    compile, is wrong or times out is reported and left out of the timing, nothing else stops.
# 2. one benchmark run (profiling/benchmarks/bench_gpu.py: CUDA-graph replay, inputs rotated past
#    L2) of the passing candidates + BASELINE, with the cuBLAS bf16 peer measured in the same run;
#    a variant whose timing is missing after it (a crash) is retried alone if time is left.
# 3. the table (profiling.benchmarks.speed_table), written to $OUT/speed_table.md and printed last.
# CANDIDATES / BASELINE (comma lists of labels), T_PROP, T_BENCH, BUDGET_S override the defaults.
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
[ -f .device/env.sh ] && source .device/env.sh
BUDGET_S=${BUDGET_S:-530}
T_PROP=${T_PROP:-210}
T_BENCH=${T_BENCH:-260}
# issue 14b: a Y ring per consumer warpgroup (no lock-step), without and with setmaxnreg
CANDIDATES=${CANDIDATES:-h90_m128n128k256_s4_wg2_swap_fp16_tma_prmt_rs_ywg,h90_m128n128k256_s4_wg2_swap_fp16_tma_prmt_rs_ywg_r232}
BASELINE=${BASELINE:-h90_m128n128k256_s4_wg2_swap_fp16_tma_prmt_rs}
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
git rev-parse HEAD > "$OUT/commit.txt" 2>/dev/null

# ---- 1. correctness, one pytest per candidate, in parallel
IFS=',' read -r -a CANDS <<< "$CANDIDATES"
pids=()
for v in "${CANDS[@]}"; do
  ( timeout "$T_PROP" python3 -m pytest properties/test_subject_vs_oracle.py --subject=hopper --variant="$v" \
      --hypothesis-profile=ci -k "test_subject_matches_oracle and not per_distribution or rejects" \
      -p no:cacheprovider -q -rs > "$OUT/prop_$v.txt" 2>&1
    echo $? > "$OUT/prop_$v.rc" ) &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
PASSED=()
: > "$OUT/correctness.txt"
for v in "${CANDS[@]}"; do
  rc=$(cat "$OUT/prop_$v.rc" 2>/dev/null || echo missing)
  summary=$(grep -E "passed|failed|error" "$OUT/prop_$v.txt" | tail -1)
  case "$rc" in
    0) verdict=PASS; PASSED+=("$v");;
    124|137) verdict="TIMEOUT after ${T_PROP}s";;
    *) verdict="FAIL rc=$rc";;
  esac
  echo "$verdict  $v  ($summary)" | tee -a "$OUT/correctness.txt"
  [ "$verdict" = PASS ] || grep -E "reproduce:|Error|error:|FAILED|assert" "$OUT/prop_$v.txt" | head -8 | sed 's/^/    /' | tee -a "$OUT/correctness.txt"
done
echo "correctness done at ${SECONDS}s"

# ---- 2. timing: passing candidates + baseline, cuBLAS in the same run
TIMED=$(IFS=','; echo "${PASSED[*]:+${PASSED[*]},}$BASELINE")
left=$(( BUDGET_S - SECONDS - 30 )); [ "$left" -lt "$T_BENCH" ] && T_BENCH=$left
NVFP4_BENCH_FAMILIES=hopper NVFP4_BENCH_SHAPES=bench1,bench2,bench3,bench4 NVFP4_BENCH_VARIANTS=$TIMED \
  timeout "$T_BENCH" python3 -m pytest profiling/benchmarks/bench_gpu.py --benchmark-only \
  --benchmark-json="$OUT/bench_gpu.json" --benchmark-columns=median,iqr,rounds -p no:cacheprovider -q -rs \
  > "$OUT/bench.txt" 2>&1
echo "bench rc=$? at ${SECONDS}s"; tail -4 "$OUT/bench.txt"
JSONS=()
[ -s "$OUT/bench_gpu.json" ] && JSONS+=("$OUT/bench_gpu.json")
IFS=',' read -r -a TV <<< "$TIMED"
for v in "${TV[@]}"; do
  n=$(python3 -c "import json,sys; d=json.load(open('$OUT/bench_gpu.json')); print(sum(1 for b in d['benchmarks'] if '$v-bench' in b['name']))" 2>/dev/null || echo 0)
  [ "$n" = 4 ] && continue
  left=$(( BUDGET_S - SECONDS - 10 ))
  if [ "$left" -lt 60 ]; then echo "no time left to retry $v alone ($n/4 timed)" | tee -a "$OUT/correctness.txt"; continue; fi
  echo "retrying $v alone ($n/4 timed, ${left}s left; its cuBLAS figures come from its own run)" | tee -a "$OUT/correctness.txt"
  NVFP4_BENCH_FAMILIES=hopper NVFP4_BENCH_SHAPES=bench1,bench2,bench3,bench4 NVFP4_BENCH_VARIANTS=$v \
    timeout "$left" python3 -m pytest profiling/benchmarks/bench_gpu.py --benchmark-only \
    --benchmark-json="$OUT/bench_$v.json" -p no:cacheprovider -q > "$OUT/bench_$v.txt" 2>&1
  [ -s "$OUT/bench_$v.json" ] && JSONS+=("$OUT/bench_$v.json")
done

# ---- 3. the table, last
echo
cat "$OUT/correctness.txt"
python3 -m profiling.benchmarks.summary "$OUT/bench_gpu.json" > "$OUT/bench_summary.md" 2>/dev/null
echo "total ${SECONDS}s"
if [ "${#JSONS[@]}" -gt 0 ]; then
  python3 -m profiling.benchmarks.speed_table "${JSONS[@]}" --markdown "$OUT/speed_table.md"
else
  echo "no timings (see $OUT/bench.txt)" | tee "$OUT/speed_table.md"
fi
