#!/usr/bin/env bash
# Issue 14, session 15, first device call (~8 min):
#   source .device/env.sh && bash ci/h200_session15a.sh      (logs under $OUT, or ./out)
# The prepass build's consumer warpgroups kept out of step (consumer_stagger, label "_lag<L>"):
# 1. ci.schedule_smoke (then named ci.stagger_smoke): lags 1..4 bit-identical to the lockstep build
#    (a lost arrival hangs);
# 2. profiling.ablation: production, its no_epilogue twin (what the epilogue costs per shape) and
#    lags 1..4, each checked against the oracle first, on the four standard shapes;
# 3. the ci property on the declared _lag2 build.
# (Since the end of session 15 STAGGER_CONFIG is measured but not declared: ci.schedule_smoke and
# profiling.ablation --config still build it; the ci property step, which takes declared
# labels, no longer finds it.)
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
label() { python3 -c "import kernel.hopper.config as c; print(c.$1.label)"; }
SW=$(label SPLIT_WARP_CONFIG); LAG=$(label STAGGER_CONFIG)
fields() { python3 -c "
import dataclasses as d, json, kernel.hopper.config as c
b = c.HopperConfig(); x = d.replace(c.SPLIT_WARP_CONFIG, consumer_stagger=$1)
print(json.dumps({f.name: getattr(x, f.name) for f in d.fields(x) if getattr(x, f.name) != getattr(b, f.name)}))"; }
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$OUT/log.txt"; }
source "$(dirname "$0")/h200_gates.sh"
smoke_gate ci.schedule_smoke --lags 1,2,3,4 "$LAG" || exit 1
stamp ablation
timeout ${T_ABL:-240} python3 -m profiling.ablation --variant "$SW" --variant "$LAG" --config "$(fields 1)" \
  --config "$(fields 3)" --config "$(fields 4)" --shapes bench1,bench2,bench3,bench4 --samples 9 --build-timeout 90 \
  2>&1 | tail -8 | tee "$OUT/lags.md"
timeout ${T_EPI:-120} python3 -m profiling.ablation --variant "$SW" --ablate --parts no_epilogue \
  --shapes bench1,bench2,bench3,bench4 --samples 9 2>&1 | tail -4 | tee "$OUT/no_epilogue.md"
stamp properties
ci_property "$LAG"
stamp done
