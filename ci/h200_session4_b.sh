#!/usr/bin/env bash
# One device call (session 4, second batch): #13 native seen-shape first call on the GPU host, its
# GPU properties; #14 prepass_sync="flags" (ci/h200_prepass_flags.sh); the X-decode ablation of
# the 128-row prepass variant if time is left.      source .device/env.sh && bash ci/h200_session4_b.sh
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
{ timeout 60 python3 kernel/native_probe.py --build 2>&1 | tail -2
  echo "[$(el) s] host overhead"
  timeout 120 python3 -m profiling.host_overhead --shapes bench1,bench4,bench2,bench3 --json "$OUT/host.json" 2>&1 | tail -8
  echo "[$(el) s] host GPU properties"
  timeout 150 python3 -m pytest -q -p no:cacheprovider -rs properties/test_native_seen_properties.py \
    properties/test_seen_shapes_properties.py properties/test_host_fast_path_mechanisms.py properties/test_fast_path_properties.py 2>&1 | tail -8
  echo "[$(el) s] host done"; } > "$OUT/host.txt" 2>&1
T_TOTAL=$(( 560 - $(el) - 70 )) bash ci/h200_prepass_flags.sh > /dev/null 2>&1
left=$(( 565 - $(el) ))
if [ "$left" -gt 45 ]; then
  echo "[$(el) s] ablate prec1x ($left s)" >> "$OUT/steps.txt"
  timeout $left python3 -m profiling.ablation --variant h90_m128n128k256_s4_wg2_b8_swap_fp16_tma_prmt_rs_prec1x --ablate \
    --samples 9 --build-timeout 40 2>&1 | tail -6 >> "$OUT/steps.txt"
fi
echo "[$(el) s] all done" >> "$OUT/steps.txt"
