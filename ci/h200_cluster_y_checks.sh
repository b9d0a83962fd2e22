#!/usr/bin/env bash
# The correctness gate of a cluster-decode build (y_cluster_decode) before it is timed, sourced by
# the session scripts that measure one (ci/h200_session14b.sh, 14e.sh):
#   cluster_y_checks LABEL      (needs OUT and stamp(); returns 1 if the smoke fails or hangs)
# 1. ci.cluster_y_smoke: bit-identical to the production bench4 build (a wrong barrier phase hangs:
#    killed by its timeout); 2. the ci property on the build.
cluster_y_checks() {
  stamp "smoke $1"
  timeout ${T_SMOKE:-120} python3 -m ci.cluster_y_smoke "$1" 2>&1 | tail -8 | tee -a "$OUT/log.txt"
  local rc=${PIPESTATUS[0]}; stamp "smoke rc=$rc"
  if [ "$rc" != 0 ]; then stamp "smoke failed (124: hung): the rest skipped"; return 1; fi
  timeout ${T_PROPS:-110} python3 -m pytest -m properties --subject=hopper --variant="$1" --hypothesis-profile=ci \
    -k "test_subject_matches_oracle and not per_distribution or rejects" -p no:cacheprovider -q -rs -x 2>&1 \
    | tail -2 | tee -a "$OUT/log.txt"
}
