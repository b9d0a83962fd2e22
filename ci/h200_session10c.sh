#!/usr/bin/env bash
# Issue 14, session 10, third device call (~5 min): where y_tail16's time goes. The same build
# with the wgmma N step 16 (eight branches per sub-block), 32, 64 and 128 (one branch: every tile
# at N = 128, only the snake schedule differs from the production tile), against the t64 build
# it derives from (PHASE1_STAGED_CONFIG), one profiling.ablation run (each checked against the
# oracle on the shape before it is timed):
#   source .device/env.sh && bash ci/h200_session10c.sh      (logs under $OUT, or ./out)
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
label() { python3 -c "import kernel.hopper.config as c; print(c.$1.label)"; }
cfg() { python3 -c "
import dataclasses, json, kernel.hopper.config as C
c = dataclasses.replace(C.TAIL16_CONFIG, y_tail16_step=$1)
print(json.dumps({f.name: getattr(c, f.name) for f in dataclasses.fields(c) if getattr(c, f.name) != f.default}))"; }
timeout ${T_ABL:-330} python3 -m profiling.ablation --variant "$(label PHASE1_STAGED_CONFIG)" --variant "$(label TAIL16_CONFIG)" \
  --config "$(cfg 32)" --config "$(cfg 64)" --config "$(cfg 128)" --shapes bench1,bench2,bench3,bench4 --samples 7 \
  --build-timeout 150 --json "$OUT/ablation.json" 2>&1 | tail -12 | tee "$OUT/ablation.md"
