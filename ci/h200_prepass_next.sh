#!/usr/bin/env bash
# Issue 14q, one device call (typically ~4-5 min; every step under its own timeout, worst case
# ~9 min, under the 10-minute command limit):
#   source .device/env.sh && bash ci/h200_prepass_next.sh      (carry .device; logs under $OUT)
# 1. smoke (ci/prepass_smoke.py) of the new prepass variants: small problems bit-identical to the
#    fastest variant, repeated launches, two streams at once (a broken grid barrier hangs: timeout);
# 2. the ci-profile kernel-vs-oracle property (+ corners, invalid inputs) on _prec1x and the
#    192x128 _prec1x, each under its own timeout (_prec1 shares their phase 1; the ablation
#    below still checks it against the oracle on the 4 standard shapes before timing it);
# 3. ONE profiling.ablation run: the new variants, _pre and _rs; --build-timeout bounds each
#    (build, shape): a hang writes what was measured and ends the run, it cannot eat the call;
# 4. ncu on bench1: L2 / DRAM / tensor-pipe counters of _pre (then _rs, then _prec1x, as time allows).
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
P=h90_m128n128k256_s4_wg2_b8_swap_fp16_tma_prmt_rs
PRE=${P}_pre
Q1X=${P}_prec1x
Q1=${P}_prec1
W3=h90_m128n192k256_s3_wg3_b8_swap_fp16_tma_prmt_rs_prec1x
RS=h90_m128n128k256_s4_wg2_swap_fp16_tma_prmt_rs
NEW="$Q1X $Q1 $W3"
t_start=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t_start )) s] $*" | tee -a "$OUT/steps.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"

stamp "smoke"
timeout ${T_SMOKE:-75} python3 -m ci.prepass_smoke $NEW 2>&1 | tail -40 | tee "$OUT/smoke.txt"
stamp "smoke rc=${PIPESTATUS[0]}"

for L in $Q1X $W3; do
  stamp "property $L"
  timeout ${T_PROPS:-75} python3 -m pytest properties/test_subject_vs_oracle.py --subject=hopper --variant="$L" \
    --hypothesis-profile=ci -k "test_subject_matches_oracle and not per_distribution or rejects" \
    -p no:cacheprovider -q -x 2>&1 | tail -15 | tee "$OUT/properties_$L.txt"
  stamp "property $L rc=${PIPESTATUS[0]}"
done

stamp "ablation"
timeout ${T_ABLATION:-210} python3 -m profiling.ablation --variant "$Q1X" --variant "$Q1" --variant "$W3" \
  --variant "$PRE" --variant "$RS" --samples 9 --build-timeout ${T_BUILD:-45} \
  --json "$OUT/ablation.json" 2>&1 | tail -40 | tee "$OUT/ablation.txt"
stamp "ablation rc=${PIPESTATUS[0]}"

M=lts__t_bytes.sum.per_second,lts__t_sectors_srcunit_tex_op_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,dram__bytes_write.sum
for L in $PRE $RS $Q1X; do
  left=$(( ${T_TOTAL:-540} - ($(date +%s) - t_start) ))
  [ "$left" -lt 25 ] && { stamp "ncu $L skipped (${left} s left)"; continue; }
  stamp "ncu $L bench1"
  timeout $(( left < ${T_NCU:-60} ? left : ${T_NCU:-60} )) ncu --profile-from-start off --metrics "$M" --csv --page raw \
    python3 -m ci.ncu_one_launch "$L" bench1 > "$OUT/ncu_$L.csv" 2> "$OUT/ncu_$L.log"
  stamp "ncu $L rc=$?"
  tail -3 "$OUT/ncu_$L.csv" | cut -c1-600
done
stamp "done"
