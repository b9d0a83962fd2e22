#!/usr/bin/env bash
# Issue 14, session 15, second device call (~8 min):
#   source .device/env.sh && bash ci/h200_session15b.sh      (logs under $OUT, or ./out)
# bench4's build with two wgmma groups in flight while the warps decode the next sub-block
# (wgmma_in_flight=2, label "_w2"):
# 1. ci.schedule_smoke: bit-identical to its twin with one group in flight (a lost arrival hangs);
# 2. profiling.ablation: _rs_es_pdl, _w2 (3 raw stages) and _w2 with 4 raw stages, four shapes;
# 3. profiling.k_slope on bench4's M and N: _rs_es_pdl, _w2, and both without Y's decode;
# 4. the ci property on _w2; 5. bench_gpu: the prepass default, _rs_es_pdl, _w2, cuBLAS.
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
label() { python3 -c "import kernel.hopper.config as c; print(c.$1.label)"; }
SW=$(label SPLIT_WARP_CONFIG); RP=$(label FASTEST_STAGED_PDL_CONFIG); W2=$(label IN_FLIGHT_CONFIG)
W2S4=$(python3 -c "
import dataclasses as d, json, kernel.hopper.config as c
b = c.HopperConfig(); x = d.replace(c.IN_FLIGHT_CONFIG, num_ab_stages=4)
print(json.dumps({f.name: getattr(x, f.name) for f in d.fields(x) if getattr(x, f.name) != getattr(b, f.name)}))")
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$OUT/log.txt"; }
source "$(dirname "$0")/h200_gates.sh"
smoke_gate ci.schedule_smoke "$W2" || exit 1
stamp ablation
timeout ${T_ABL:-200} python3 -m profiling.ablation --variant "$RP" --variant "$W2" --config "$W2S4" \
  --shapes bench1,bench2,bench3,bench4 --samples 9 --build-timeout 90 2>&1 | tail -6 | tee "$OUT/w2.md"
stamp slope
timeout ${T_SLOPE:-120} python3 -m profiling.k_slope --variant "$RP" --variant "$W2" --variant "$RP~no_y_dequant" \
  --variant "$W2~no_y_dequant" --shape bench4 --ks 512,1536,6144 --samples 9 2>&1 | tail -7 | tee "$OUT/k_slope.md"
stamp properties
ci_property "$W2"
stamp bench
bench_with_cublas "$SW,$RP,$W2"
stamp done
