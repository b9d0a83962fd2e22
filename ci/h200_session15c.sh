#!/usr/bin/env bash
# Issue 14, session 15, third device call (~6 min):
#   source .device/env.sh && bash ci/h200_session15c.sh      (logs under $OUT, or ./out)
# The production prepass build with two wgmma groups in flight (wgmma_in_flight=2, "_rs_w2_pre..."):
# 1. ci.schedule_smoke: bit-identical to the production build (a lost release hangs);
# 2. the ci property on it; 3. k_slope on bench4's M and N: production, its _w2 twin;
# 4. bench_gpu: production, its _w2 twin, bench4's two builds (_rs_es_pdl, _w2) and cuBLAS.
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
label() { python3 -c "import kernel.hopper.config as c; print(c.$1.label)"; }
SW=$(label SPLIT_WARP_CONFIG); SW2=$(label SPLIT_WARP_W2_CONFIG)
RP=$(label FASTEST_STAGED_PDL_CONFIG); W2=$(label IN_FLIGHT_CONFIG)
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$OUT/log.txt"; }
stamp smoke
timeout ${T_SMOKE:-150} python3 -m ci.schedule_smoke "$SW2" 2>&1 | grep -v "bit-identical$" | tail -12 | tee -a "$OUT/log.txt"
rc=${PIPESTATUS[0]}; stamp "smoke rc=$rc"
if [ "$rc" != 0 ]; then stamp "smoke failed (124: hung): the rest skipped"; exit 1; fi
stamp properties
timeout ${T_PROPS:-110} python3 -m pytest -m properties --subject=hopper --variant="$SW2" --hypothesis-profile=ci \
  -k "test_subject_matches_oracle and not per_distribution or rejects" -p no:cacheprovider -q -rs -x 2>&1 \
  | tail -2 | tee -a "$OUT/log.txt"
stamp slope
timeout ${T_SLOPE:-100} python3 -m profiling.k_slope --variant "$SW" --variant "$SW2" \
  --shape bench4 --ks 512,1536,6144 --samples 9 2>&1 | tail -4 | tee "$OUT/k_slope.md"
stamp bench
NVFP4_BENCH_FAMILIES=hopper NVFP4_BENCH_SHAPES=bench1,bench2,bench3,bench4 NVFP4_BENCH_VARIANTS="$SW,$SW2,$RP,$W2" \
  timeout ${T_BENCH:-170} python3 -m pytest profiling/benchmarks/bench_gpu.py --benchmark-only \
  --benchmark-json="$OUT/bench_gpu.json" --benchmark-columns=median,iqr,rounds -p no:cacheprovider -q -rs 2>&1 | tail -1
python3 -m profiling.benchmarks.speed_table "$OUT/bench_gpu.json" 2>&1 | head -8 | tee "$OUT/speed_table.md"
stamp done
