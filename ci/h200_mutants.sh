#!/usr/bin/env bash
# The Hopper mutant catalog on the H200 in one device call (issue 18):
#   source .device/env.sh && bash ci/h200_mutants.sh
# Runs every Hopper mutant (ci/mutants.py: the value mutants, plain property; the concurrency /
# memory-safety mutants, three verdicts each: plain property, perturbed property, compute-
# sanitizer), unmutated baselines first, JOBS at a time, and stops starting runs when BUDGET
# seconds are spent (rows then say not-run); a hard `timeout` kills anything left 50 s later.
# Writes $OUT/{log.txt,mutants.json,mutants.md,sync.md} and splices sync.md into
# properties/MUTANTS.md between its "sync-mutants" markers. Exit status: the runner's (1 when a
# mutant was not caught or a baseline failed), 124 on the hard timeout.
#   SECTION=sync    only the concurrency mutants (default: all Hopper mutants)
#   MODES=plain,perturbed,sanitizer   which verdicts the concurrency mutants get
#   BUDGET=510 JOBS=8 TIMEOUT=200 OUT=out/mutants
#   EXAMPLES=N      at most N examples per property per run (default: the ci profile's 50)
# Each concurrency mutant: one pytest process for its plain and perturbed verdicts (the plain one
# includes properties/test_tensor_map_rewrite.py on TMA variants: maps rewritten in place between
# back-to-back launches, a subprocess of ~10-20 s; the perturbed
# property runs one run-time perturbed build per group count: every seed's delay table is data),
# then, only if neither property caught it, one task per sanitizer tool (memcheck, racecheck,
# synccheck over 2 fixed 3-group cases), queued ahead of the value mutants (the longest runs
# first; the mutants of ci.mutants.UNOBSERVABLE last); a hung example is reported 30 s after its compile
# (properties.isolation's watchdog) as "caught (hang)". 8 jobs, 2 CPU threads each (16 cores).
# Whole call: BUDGET 510 s of runs, hard stop at 570 s (9.5 min). Estimate: properties/MUTANTS.md.
set -u
cd "$(dirname "$0")/.."
BUDGET=${BUDGET:-510}
JOBS=${JOBS:-8}
TIMEOUT=${TIMEOUT:-240}
SECTION=${SECTION:-all}
MODES=${MODES:-plain,perturbed,sanitizer}
OUT=${OUT:-out/mutants}
mkdir -p "$OUT"
export CUTE_DSL_ARCH=sm_90a
args=(--jobs "$JOBS" --baseline --deadline "$BUDGET" --timeout "$TIMEOUT" --modes "$MODES"
      --json "$OUT/mutants.json" --markdown "$OUT/mutants.md" --sync-markdown "$OUT/sync.md")
if [ -n "${EXAMPLES:-}" ]; then args+=(--max-examples "$EXAMPLES"); fi
if [ "$SECTION" = sync ]; then args+=(--section=sync); else args+=(--subject=hopper); fi
# MUTANT='*__prod' (shell patterns, space-separated): only those mutants; their table then goes
# between the "sync-mutants-MARKER" markers of properties/MUTANTS.md (MARKER=prod by default
# when MUTANT is set), leaving the whole catalog's table alone
for pat in ${MUTANT:-}; do args+=(--mutant "$pat"); done
MARKER=${MARKER:-$([ -n "${MUTANT:-}" ] && echo "sync-mutants-prod" || echo "sync-mutants")}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
start=$(date +%s)
timeout --kill-after=10 $((BUDGET + 50)) python3 -m ci.mutation_runner "${args[@]}" > "$OUT/log.txt" 2>&1
rc=$?
echo "runner exit $rc after $(( $(date +%s) - start )) s" | tee -a "$OUT/log.txt"
if [ -s "$OUT/sync.md" ]; then
  python3 - "$OUT/sync.md" properties/MUTANTS.md "$MARKER" <<'PY'
import sys, pathlib, time
table, doc = pathlib.Path(sys.argv[1]).read_text(), pathlib.Path(sys.argv[2])
text = doc.read_text()
begin, end = f"<!-- {sys.argv[3]}:begin -->", f"<!-- {sys.argv[3]}:end -->"
head, rest = text.split(begin, 1)
_, tail = rest.split(end, 1)
stamp = f"Measured {time.strftime('%Y-%m-%d %H:%M')} (ci/h200_mutants.sh):\n\n"
doc.write_text(f"{head}{begin}\n{stamp}{table}{end}{tail}")
PY
fi
grep -E "^\[mutation\]" "$OUT/log.txt" | tail -n 5
echo
cat "$OUT/mutants.md" 2>/dev/null; echo
cat "$OUT/sync.md" 2>/dev/null || tail -n 30 "$OUT/log.txt"
exit $rc
