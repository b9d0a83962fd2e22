#!/usr/bin/env bash
# Issue 14, session 16, first device call (~9 min):
#   source .device/env.sh && bash ci/h200_session16a.sh      (logs under $OUT, or ./out)
# The production prepass build with phase 1 in a launch of its own (prepass_kernel_warps, label
# letter "k"): the GEMM's CTAs run their prologue and first X stages beside phase 1's.
# 1. ci.schedule_smoke: bit-identical to the production build (phase 1 inside the launch);
# 2. the chained-launch test (launch 2 reads launch 1's C as its A, then as its B) on it and on
#    bench4's pdl build; 3. profiling.k_slope on bench4's M and N: production, _w2, the new build;
# 4. profiling.ablation: production and the new build with 4 / 2 / 1 phase-1 warps per CTA;
# 5. the ci property on it; 6. bench_gpu: production, _w2, the new build, cuBLAS.
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
label() { python3 -c "import kernel.hopper.config as c; print(c.$1.label)"; }
SW=$(label SPLIT_WARP_CONFIG); W2=$(label IN_FLIGHT_CONFIG); PK=$(label PHASE1_KERNEL_CONFIG)
fields() { python3 -c "
import dataclasses as d, json, kernel.hopper.config as c
b = c.HopperConfig(); x = d.replace(c.PHASE1_KERNEL_CONFIG, $1)
print(json.dumps({f.name: getattr(x, f.name) for f in d.fields(x) if getattr(x, f.name) != getattr(b, f.name)}))"; }
PK2=$(fields prepass_kernel_warps=2); PK1=$(fields prepass_kernel_warps=1)
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$OUT/log.txt"; }
source "$(dirname "$0")/h200_gates.sh"
smoke_gate ci.schedule_smoke "$PK" || exit 1
stamp chained
timeout ${T_CHAIN:-120} python3 -m pytest kernel/tests/test_gpu_pdl.py -k "prec1xwk4 or w2_es_pdl" -p no:cacheprovider \
  -q -rs 2>&1 | tail -4 | tee -a "$OUT/log.txt"
stamp slope
timeout ${T_SLOPE:-120} python3 -m profiling.k_slope --variant "$SW" --variant "$W2" --variant "$PK" \
  --shape bench4 --ks 512,1536,6144 --samples 9 2>&1 | tail -6 | tee "$OUT/k_slope.md"
stamp ablation
timeout ${T_ABL:-200} python3 -m profiling.ablation --variant "$SW" --variant "$PK" --config "$PK2" --config "$PK1" \
  --shapes bench1,bench2,bench3,bench4 --samples 9 --build-timeout 90 2>&1 | tail -7 | tee "$OUT/ablation.md"
stamp properties
ci_property "$PK"
stamp bench
bench_with_cublas "$SW,$W2,$PK"
stamp done
