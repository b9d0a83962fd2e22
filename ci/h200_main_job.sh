#!/usr/bin/env bash
# Issue 15's acceptance measurement on the H200, one device call (~4-5 min):
#   bash ci/h200_main_job.sh            (logs under $OUT, or ./out)
# 1. the README main command (production variants of the family the GPU runs), wall time;
# 2. the main property alone on the fastest production variant, with the per-stage split
#    (inputs, transfers, oracle, subject, checks, worker round trip) and examples/s after compiles.
# Exits non-zero when either pytest run fails or the main command takes over MAIN_LIMIT_S (300 s).
set -u
export OUT=${OUT:-out}; mkdir -p "$OUT"
MAIN_LIMIT_S=${MAIN_LIMIT_S:-300}
FAMILY=$(python3 -c "from properties.subjects import auto_subject_name; print(auto_subject_name())")
FASTEST=$(python3 -c "
from kernel.family import get_family
f = get_family('$FAMILY'); m = f.module
print(getattr(m, 'FASTEST_CONFIG', f.default_config).label)")
echo "family=$FAMILY fastest=$FASTEST"
start=$(date +%s)
timeout $((MAIN_LIMIT_S + 60)) python3 -m pytest -m properties --subject=auto --hypothesis-profile=ci \
  -p no:cacheprovider -q -rs 2>&1 | tee "$OUT/main.txt" | tail -15
main_rc=${PIPESTATUS[0]}
main_s=$(( $(date +%s) - start ))
if [ -n "${MAIN_ONLY:-}" ]; then  # MAIN_ONLY=1: the main command alone
  printf 'main command: %s s, rc %s (limit %s s)\n' "$main_s" "$main_rc" "$MAIN_LIMIT_S"
  [ "$main_rc" = 0 ] && [ "$main_s" -le "$MAIN_LIMIT_S" ]; exit $?
fi
start=$(date +%s)
timeout 200 python3 -m pytest properties/test_subject_vs_oracle.py::test_subject_matches_oracle \
  --subject=auto --variant="$FASTEST" --hypothesis-profile=ci -p no:cacheprovider -q 2>&1 \
  | tee "$OUT/fastest.txt" | tail -6
fast_rc=${PIPESTATUS[0]}
fast_s=$(( $(date +%s) - start ))
echo
printf '%-44s %6s %4s\n' "run" "wall_s" "rc"
printf '%-44s %6s %4s\n' "main command (limit ${MAIN_LIMIT_S} s)" "$main_s" "$main_rc"
printf '%-44s %6s %4s\n' "main property, $FASTEST" "$fast_s" "$fast_rc"
grep -A3 "^variant " "$OUT/fastest.txt" | head -3
[ "$main_rc" = 0 ] && [ "$fast_rc" = 0 ] && [ "$main_s" -le "$MAIN_LIMIT_S" ]
