#!/usr/bin/env bash
# Usage: bash ci/gpu_speed.sh [bench|ablation|slope|timeline|clock|host|regression ...] [LABEL...]
# Times kernel variants on the GPU with the repository's timing tools (profiling/timing.py:
# warm-up, inputs rotated past L2, CUDA-graph replay, CUDA events). LABELs: declared variant
# labels (LABEL~PART for an ablated build where the tool takes one; {"field": value, ...} for
# HopperConfig fields where it takes --config); none: the production variants. The words pick
# the tools (default: bench):
#   bench       profiling/benchmarks/bench_gpu.py on SHAPES with the cuBLAS bf16 peer in the same
#               run, then the table (profiling.benchmarks.speed_table): $OUT/bench_gpu.json,
#               $OUT/speed_table.md; a LABEL the run left untimed (it crashed) is timed again alone
#   ablation    profiling.ablation: each build checked against the oracle, then timed without parts
#               (ABLATE_PARTS=p1,p2: also the ablated twins, e.g. no_epilogue)
#   slope       profiling.k_slope on SLOPE_SHAPE's M and N at K = SLOPE_KS: fixed cost per launch
#               against the cost per 256 K
#   timeline    profiling.timeline on each of SHAPES (graph replay; PER_CTA=1: per-CTA CSVs)
#   clock       profiling.clock_probe: SM clock, power and clock-event reasons during replay
#   host        profiling.host_overhead: host time per call of the fastest production variant
#   regression  profiling.benchmarks.regression_demo: a slowed default must fail the comparison
# Variables: BASELINES (comma-separated labels timed beside LABELs), SHAPES (default
# bench1,bench2,bench3,bench4), SAMPLES (9), SLOPE_SHAPE (bench4), SLOPE_KS (512,1536,6144),
# T_BENCH T_ABLATION T_SLOPE T_TIMELINE T_CLOCK T_HOST T_REGRESSION (seconds), OUT (./gpu-out).
# Run time on one H100/H200: not measured in this form; each step is bounded by its T_ variable
# (T_BENCH 300 s; a bench run of three to seven variants on the four standard shapes, cuBLAS
# included, has been given 150-260 s).
# Exit status: 0 every step passed, 1 a step failed, 2 misuse, 3 no sm_90 / sm_100 GPU.
source "$(dirname "${BASH_SOURCE[0]}")/gpu_env.sh"
gpu_init "$@"
TOOLS=(); LABELS=()
for a in "${ARGS[@]}"; do
  case "$a" in
    bench|ablation|slope|timeline|clock|host|regression) TOOLS+=("$a") ;;
    *) LABELS+=("$a") ;;
  esac
done
[ "${#TOOLS[@]}" -gt 0 ] || TOOLS=(bench)
gpu_check_labels "${LABELS[@]}"
if [ "${#LABELS[@]}" = 0 ]; then IFS=',' read -r -a LABELS <<< "$(gpu_production_labels)"; fi
if [ -n "${BASELINES:-}" ]; then IFS=',' read -r -a base <<< "$BASELINES"; gpu_check_labels "${base[@]}"; LABELS+=("${base[@]}"); fi
SHAPES=${SHAPES:-bench1,bench2,bench3,bench4}
SAMPLES=${SAMPLES:-9}
VARIANTS=(); for v in "${LABELS[@]}"; do VARIANTS+=(--variant "$v"); done
echo "tools: ${TOOLS[*]}; variants: ${LABELS[*]}; shapes: $SHAPES"

bench_gpu() {  # bench_gpu STEP JSON LABELS: one bench_gpu.py run, its cuBLAS peer included
  step "$1" timeout --kill-after=10 "${T_BENCH:-300}" env NVFP4_BENCH_FAMILIES="$FAMILY" NVFP4_BENCH_SHAPES="$SHAPES" \
    NVFP4_BENCH_VARIANTS="$3" python3 -m pytest profiling/benchmarks/bench_gpu.py --benchmark-only \
    --benchmark-json="$2" --benchmark-columns=median,iqr,rounds -p no:cacheprovider -q -rs
}

timed_count() {  # timed_count JSON LABEL: how many shapes of LABEL the JSON holds
  python3 - "$1" "$2" <<'PY'
import json, sys
try:
    benchmarks = json.load(open(sys.argv[1]))["benchmarks"]
except (OSError, ValueError, KeyError):
    benchmarks = []
print(sum(1 for b in benchmarks if f"{sys.argv[2]}-bench" in b["name"]))
PY
}

for tool in "${TOOLS[@]}"; do
  case "$tool" in
    bench)
      plain=(); for v in "${LABELS[@]}"; do case "$v" in *'~'*|'{'*) ;; *) plain+=("$v") ;; esac; done
      [ "${#plain[@]}" -gt 0 ] || gpu_usage_error "bench times declared labels only"
      bench_gpu bench "$OUT/bench_gpu.json" "$(IFS=','; echo "${plain[*]}")"
      jsons=("$OUT/bench_gpu.json")
      n_shapes=$(tr ',' '\n' <<< "$SHAPES" | grep -c .)
      for i in "${!plain[@]}"; do  # a variant the run left untimed (it crashed) is timed alone
        [ -s "$OUT/bench_gpu.json" ] || break  # no JSON: the run itself died (see bench.log)
        [ "$(timed_count "$OUT/bench_gpu.json" "${plain[$i]}")" = "$n_shapes" ] && continue
        bench_gpu "bench_alone_$i" "$OUT/bench_alone_$i.json" "${plain[$i]}"
        jsons+=("$OUT/bench_alone_$i.json")
      done
      existing=(); for j in "${jsons[@]}"; do [ -s "$j" ] && existing+=("$j"); done
      if [ "${#existing[@]}" -gt 0 ]; then
        step speed_table python3 -m profiling.benchmarks.speed_table "${existing[@]}" --markdown "$OUT/speed_table.md"
      fi
      ;;
    ablation)
      aargs=()
      for v in "${LABELS[@]}"; do
        case "$v" in '{'*) aargs+=(--config "$v") ;; *) aargs+=(--variant "$v") ;; esac
      done
      [ -n "${ABLATE_PARTS:-}" ] && aargs+=(--ablate --parts "$ABLATE_PARTS")
      step ablation timeout --kill-after=10 "${T_ABLATION:-300}" python3 -m profiling.ablation "${aargs[@]}" \
        --shapes "$SHAPES" --samples "$SAMPLES" --build-timeout 90 --json "$OUT/ablation.json"
      ;;
    slope)
      step slope timeout --kill-after=10 "${T_SLOPE:-240}" python3 -m profiling.k_slope "${VARIANTS[@]}" \
        --shape "${SLOPE_SHAPE:-bench4}" --ks "${SLOPE_KS:-512,1536,6144}" --samples "$SAMPLES"
      ;;
    timeline)
      for shape in ${SHAPES//,/ }; do
        step "timeline_$shape" timeout --kill-after=10 "${T_TIMELINE:-150}" python3 -m profiling.timeline \
          "${VARIANTS[@]}" --shape "$shape" --launches 20 --graph \
          ${PER_CTA:+--per-cta "$OUT/per_cta_$shape"}
      done
      ;;
    clock)
      step clock timeout --kill-after=10 "${T_CLOCK:-240}" python3 -m profiling.clock_probe "${VARIANTS[@]}" \
        --shapes "$SHAPES" --seconds 3
      ;;
    host)
      step host timeout --kill-after=10 "${T_HOST:-150}" python3 -m profiling.host_overhead --family "$FAMILY" \
        --shapes "$SHAPES" --json "$OUT/host.json"
      ;;
    regression)
      step regression timeout --kill-after=10 "${T_REGRESSION:-150}" python3 -m profiling.benchmarks.regression_demo \
        --family "$FAMILY" --report "$OUT/regression_demo.json"
      ;;
  esac
done
gpu_finish
