#!/usr/bin/env bash
# Issue 14, session 16, fourth device call (~5 min):
#   source .device/env.sh && bash ci/h200_session16d.sh      (logs under $OUT, or ./out)
# Where the staged own-launch build's K slope goes (1.51 us per 256 K against production's 1.32):
# its 3 raw stages, or phase 1's launch on 4 warps? profiling.k_slope on bench4's M and N and
# profiling.ablation on the four shapes: production at 4 and at 3 raw stages; the own-launch
# build (staged, next launch at completion) at 3 stages with 4 phase-1 warps, and at 4 stages with
# 2 warps (C staged 32 rows at a time), 3 warps (16 rows), or 4 warps with a 7-box Y ring.
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
fields() { python3 -c "
import dataclasses as d, json, kernel.hopper.config as c
b = c.HopperConfig(); x = d.replace(c.$1, $2)
print(json.dumps({f.name: getattr(x, f.name) for f in d.fields(x) if getattr(x, f.name) != getattr(b, f.name)}))"; }
SW=$(fields SPLIT_WARP_CONFIG "num_ab_stages=4"); SW3=$(fields SPLIT_WARP_CONFIG "num_ab_stages=3")
P43=$(fields PHASE1_KERNEL_STAGED_EXIT_CONFIG "num_ab_stages=3")
P24=$(fields PHASE1_KERNEL_STAGED_EXIT_CONFIG "num_ab_stages=4, prepass_kernel_warps=2")
P34=$(fields PHASE1_KERNEL_STAGED_EXIT_CONFIG "num_ab_stages=4, prepass_kernel_warps=3")
P4B7=$(fields PHASE1_KERNEL_STAGED_EXIT_CONFIG "num_ab_stages=4, fp16_buffers=7")
t0=$(date +%s); stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$OUT/log.txt"; }
stamp slope
timeout ${T_SLOPE:-240} python3 -m profiling.k_slope --variant "$SW" --variant "$SW3" --variant "$P43" --variant "$P24" \
  --variant "$P34" --variant "$P4B7" --shape bench4 --ks 512,1536,6144 --samples 9 2>&1 | grep -v "^ \|fast_path" \
  | tail -8 | tee "$OUT/k_slope.md"
stamp ablation
timeout ${T_ABL:-240} python3 -m profiling.ablation ${EXTRA_ABL:-} --config "$SW" --config "$SW3" --config "$P43" --config "$P24" \
  --config "$P34" --config "$P4B7" --shapes bench1,bench2,bench3,bench4 --samples 9 --build-timeout 90 2>&1 \
  | tail -8 | tee "$OUT/ablation.md"
stamp done
