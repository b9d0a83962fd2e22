#!/usr/bin/env bash
# Issue 14, session 17, eighth device call (~3 min):
#   source .device/env.sh && bash ci/h200_session17h.sh      (logs under $OUT, or ./out)
# ci.prepass_smoke (bit-identical to the smem-decode build; repeated launches; two problems of one
# geometry alternately on one workspace; two streams) on the in-launch flags builds, whose
# publish is now shared with the own launch's (flag_cell_span: their SASS changed in order), and
# on the own-launch builds (barrier, both flags forms' current one).
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
labels=$(python3 -c "
import kernel.hopper.config as c
print(' '.join(x.label for x in c.DECLARED_VARIANTS if x.prepass_sync == 'flags' and x.mma_m == 128 and x.fp16_buffers == 8)
      + ' ' + ' '.join(x.label for x in (c.PHASE1_KERNEL_EXIT_CONFIG, c.PHASE1_FLAGS_CONFIG, c.PHASE1_FLAGS_STAGED_CONFIG)))")
echo "$labels" | tee "$OUT/log.txt"
timeout ${T_SMOKE:-240} python3 -m ci.prepass_smoke $labels 2>&1 | grep -v "bit-identical$\|fast_path" | tail -20 | tee -a "$OUT/log.txt"
echo "rc=${PIPESTATUS[0]}" | tee -a "$OUT/log.txt"
