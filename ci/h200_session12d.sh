#!/usr/bin/env bash
# Issue 14, session 12, fourth device call (~8 min):
#   source .device/env.sh && bash ci/h200_session12d.sh      (logs under $OUT, or ./out)
# 1. the README main command on the new production set (bench4's build with pdl), wall time;
# 2. the GPU mutant hopper_pdl_no_wait (the wait removed: the chained-launch test must fail) and
#    the unmutated selection;
# 3. bench4 / bench3 with the pdl bench4 build at 2, 3, 4 and 5 raw stages, and without its
#    epilogue (profiling.ablation): how much of its ~5 us fixed cost the pipeline depth and the
#    epilogue take.
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
OUT="$OUT/main" MAIN_ONLY=1 bash ci/h200_main_job.sh 2>&1 | tail -6
timeout ${T_MUT:-150} python3 -m ci.mutation_runner --subject hopper --mutant hopper_pdl_no_wait --baseline --jobs 2 \
  --timeout 120 --markdown "$OUT/pdl_mutant.md" 2>&1 | tail -4
cat "$OUT/pdl_mutant.md" 2>/dev/null | tail -4
base='"num_ab_stages": S, "consumer_warpgroups": 2, "swapped": true, "loader": "tma", "dequant": "prmt", "x_operand": "regs", "epilogue": "smem", "pdl": true'
RSESP=$(python3 -c "import kernel.hopper.config as c; print(c.FASTEST_STAGED_PDL_CONFIG.label)")
timeout ${T_STAGES:-150} python3 -m profiling.ablation --variant "$RSESP" --config "{${base/S/2}}" --config "{${base/S/3}}" \
  --config "{${base/S/5}}" --shapes bench3,bench4 --samples 9 --build-timeout 60 2>&1 | tail -8 | tee "$OUT/stages.md"
timeout ${T_EPI:-90} python3 -m profiling.ablation --variant "$RSESP" --ablate --parts no_epilogue --shapes bench4 \
  --samples 9 2>&1 | tail -4 | tee "$OUT/no_epilogue.md"
