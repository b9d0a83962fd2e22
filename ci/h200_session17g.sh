#!/usr/bin/env bash
# Issue 14, session 17, seventh device call (~2 min):
#   source .device/env.sh && bash ci/h200_session17g.sh      (logs under $OUT, or ./out)
# Why the own-launch GEMM's CTAs start only when phase 1's have gone (17e, 17f: not registers):
# timelines on bench3 of the own-launch build replayed from a CUDA graph and launched on a stream,
# and of its twin with 3 raw stages and 4 Y buffers (158 KB of shared memory instead of 225 KB).
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
PKE=$(python3 -c "import kernel.hopper.config as c; print(c.PHASE1_KERNEL_EXIT_CONFIG.label)")
SMALL=$(python3 -c "
import dataclasses as d, json, kernel.hopper.config as c
b = c.HopperConfig(); x = d.replace(c.PHASE1_KERNEL_EXIT_CONFIG, num_ab_stages=3, fp16_buffers=4)
print(json.dumps({f.name: getattr(x, f.name) for f in d.fields(x) if getattr(x, f.name) != getattr(b, f.name)}))")
for mode in --graph ""; do
  echo "== bench3 $mode" | tee -a "$OUT/timeline.md"
  timeout ${T_TL:-100} python3 -m profiling.timeline --variant "$PKE" --variant "$SMALL" --shape bench3 --launches 20 $mode \
    2>&1 | grep "^\`\|start\|first_commit\|epilogue_last_end\|period\|gap\|rror" | tee -a "$OUT/timeline.md"
done
