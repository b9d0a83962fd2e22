#!/usr/bin/env bash
# Issue 14, session 15, fourth device call (~9 min): bench4's new default build (IN_FLIGHT_CONFIG,
# "..._rs_w2_es_pdl") through what the old one passed:
#   source .device/env.sh && bash ci/h200_session15d.sh      (logs under $OUT, or ./out)
# 1. the chained-launch test (pdl) on it; 2. each input distribution and gpu-long on it;
# 3. the README main command on the new production set, wall time (limit 300 s).
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
W2=$(python3 -c "import kernel.hopper.config as c; print(c.IN_FLIGHT_CONFIG.label)")
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$OUT/log.txt"; }
stamp chained
timeout ${T_CHAIN:-90} python3 -m pytest kernel/tests/test_gpu_pdl.py -k "w2_es_pdl" -p no:cacheprovider -q -rs 2>&1 \
  | tail -3 | tee -a "$OUT/log.txt"
stamp long
T_DIST=${T_DIST:-80} T_LONG=${T_LONG:-110} bash ci/h200_long.sh "$W2" 2>&1 | tail -14
stamp main
OUT="$OUT/main" MAIN_ONLY=1 bash ci/h200_main_job.sh 2>&1 | tail -6
stamp done
