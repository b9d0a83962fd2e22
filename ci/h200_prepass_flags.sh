#!/usr/bin/env bash
# Issue 14 (session 4), prepass_sync="flags", one device call (typically ~5 min; every step under
# its own timeout, worst case ~8.5 min, under the 10-minute command limit):
#   source .device/env.sh && bash ci/h200_prepass_flags.sh      (carry .device; logs under $OUT)
# 1. smoke (ci/prepass_smoke.py) of the two flags variants: small problems bit-identical to the
#    fastest variant, repeated launches, two problems of one geometry alternating on one
#    workspace (a flag of the previous launch read as ready shows here), two streams at once
#    (a flag never published hangs: timeout);
# 2. the ci-profile kernel-vs-oracle property (+ corners, invalid inputs) on the 128-row _prec1xf;
# 3. ONE profiling.ablation run (bench1..4): the two flags variants, their two barrier twins
#    (_prec1x) and the non-prepass fastest _rs; --build-timeout bounds each (build, shape): a
#    hang records what was measured and ends the run, it cannot eat the call.
# Five files under $OUT: steps.txt (GPU, timings, return codes), smoke.txt, properties.txt,
# ablation.txt, ablation.json.
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
P=h90_m128n128k256_s4_wg2_b8_swap_fp16_tma_prmt_rs
F128=${P}_prec1xf                                            # flags, 128-row Y tile, 8 Y buffers
B128=${P}_prec1x                                             # its barrier twin
F64=h90_m64n128k256_s4_wg2_b16_swap_fp16_tma_prmt_rs_prec1xf # flags, 64-row Y tile, 16 Y buffers
B64=h90_m64n128k256_s4_wg2_b16_swap_fp16_tma_prmt_rs_prec1x  # its barrier twin
RS=h90_m128n128k256_s4_wg2_swap_fp16_tma_prmt_rs             # the non-prepass fastest
t_start=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t_start )) s] $*" | tee -a "$OUT/steps.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee -a "$OUT/steps.txt"
{ git log --oneline -1 2>/dev/null || echo "(no git)"; } | tee -a "$OUT/steps.txt"

stamp "smoke $F128 $F64"
timeout ${T_SMOKE:-100} python3 -m ci.prepass_smoke "$F128" "$F64" 2>&1 | tail -60 | tee "$OUT/smoke.txt"
stamp "smoke rc=${PIPESTATUS[0]}"

stamp "property $F128"
timeout ${T_PROPS:-90} python3 -m pytest properties/test_subject_vs_oracle.py --subject=hopper --variant="$F128" \
  --hypothesis-profile=ci -k "test_subject_matches_oracle and not per_distribution or rejects" \
  -p no:cacheprovider -q -x 2>&1 | tail -15 | tee "$OUT/properties.txt"
stamp "property rc=${PIPESTATUS[0]}"

left=$(( ${T_TOTAL:-510} - ($(date +%s) - t_start) ))
stamp "ablation (${left} s left)"
timeout $(( left < ${T_ABLATION:-280} ? left : ${T_ABLATION:-280} )) python3 -m profiling.ablation \
  --variant "$F128" --variant "$F64" --variant "$B128" --variant "$B64" --variant "$RS" \
  --samples 9 --build-timeout ${T_BUILD:-45} --json "$OUT/ablation.json" 2>&1 | tail -40 | tee "$OUT/ablation.txt"
stamp "ablation rc=${PIPESTATUS[0]}"
stamp "done"
