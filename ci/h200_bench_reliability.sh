#!/usr/bin/env bash
# Benchmarks, the regression demo, the fault-isolation demo and compute-sanitizer on the H200:
#   source .device/env.sh && bash ci/h200_bench_reliability.sh   (logs under $OUT, or ./out)
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"
F=properties/faulty_subjects; I="python3 -m properties.isolation"
{
  $I --subject=$F/gpu_oob_cute.py --sizes='[[64,128,256,1]]' --sizes='[[65,128,256,1],[32,64,256,1]]' --sizes='[[128,64,256,1]]' --timeout=60 --first-example-extra=120
  $I --subject=$F/gpu_hang.py --sizes='[[64,128,256,1]]' --sizes='[[64,129,256,1]]' --sizes='[[128,64,256,1]]' --timeout=15 --first-example-extra=60
  python3 -m properties.repro --subject=$F/gpu_oob_cute.py --variant=gpu_oob_cute --sizes='[[65, 128, 256, 1], [32, 64, 256, 1]]' --seed=7 --distribution=uniform --layout=separate --isolate=always; echo "repro rc=$? (1 expected)"
  timeout 150 python3 -m ci.sanitize --subject=hopper --jobs=6 --timeout=140; echo "hopper sanitize rc=$?"
} 2>&1 | tee "$OUT/isolation_sanitize.log" | tail -40
NVFP4_BENCH_FAMILIES=hopper NVFP4_BENCH_VARIANTS=${BENCH_VARIANTS:-all} timeout ${T_BENCH:-200} python3 -m pytest profiling/benchmarks/bench_gpu.py \
  --benchmark-only --benchmark-autosave --benchmark-storage=file://./.benchmarks --benchmark-json=$OUT/bench_gpu.json \
  --benchmark-columns=median,iqr,rounds -p no:cacheprovider -q -rs 2>&1 | tail -8
python3 -m profiling.benchmarks.summary $OUT/bench_gpu.json | tee "$OUT/bench_summary.md"
timeout ${T_DEMO:-110} python3 -m profiling.benchmarks.regression_demo --report $OUT/regression_demo.json 2>&1 | tail -15
