#!/usr/bin/env bash
# Issue 14, session 15, third device call (~6 min):
#   source .device/env.sh && bash ci/h200_session15c.sh      (logs under $OUT, or ./out)
# The production prepass build with two wgmma groups in flight (wgmma_in_flight=2, "_rs_w2_pre..."):
# 1. ci.schedule_smoke: bit-identical to the production build (a lost release hangs);
# 2. the ci property on it; 3. k_slope on bench4's M and N: production, its _w2 twin;
# 4. bench_gpu: production, its _w2 twin, bench4's two builds (_rs_es_pdl, _w2) and cuBLAS.
# (Since the end of session 15 SPLIT_WARP_W2_CONFIG is measured but not declared: ci.schedule_smoke and
# profiling.ablation --config still build it; the ci property step, which takes declared
# labels, no longer finds it.)
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
label() { python3 -c "import kernel.hopper.config as c; print(c.$1.label)"; }
SW=$(label SPLIT_WARP_CONFIG); SW2=$(label SPLIT_WARP_W2_CONFIG)
RP=$(label FASTEST_STAGED_PDL_CONFIG); W2=$(label IN_FLIGHT_CONFIG)
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$OUT/log.txt"; }
source "$(dirname "$0")/h200_gates.sh"
smoke_gate ci.schedule_smoke "$SW2" || exit 1
stamp properties
ci_property "$SW2"
stamp slope
timeout ${T_SLOPE:-100} python3 -m profiling.k_slope --variant "$SW" --variant "$SW2" \
  --shape bench4 --ks 512,1536,6144 --samples 9 2>&1 | tail -4 | tee "$OUT/k_slope.md"
stamp bench
bench_with_cublas "$SW,$SW2,$RP,$W2"
stamp done
