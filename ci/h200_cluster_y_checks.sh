#!/usr/bin/env bash
# The correctness gate of a cluster-decode build (y_cluster_decode) before it is timed, sourced by
# the session scripts that measure one (ci/h200_session14b.sh, 14e.sh):
#   cluster_y_checks LABEL      (needs OUT and stamp(); returns 1 if the smoke fails or hangs)
# 1. ci.cluster_y_smoke: bit-identical to the production bench4 build (a wrong barrier phase hangs:
#    killed by its timeout); 2. the ci property on the build.
source "$(dirname "${BASH_SOURCE[0]}")/h200_gates.sh"
cluster_y_checks() {
  T_SMOKE=${T_SMOKE:-120} smoke_gate ci.cluster_y_smoke "$1" || return 1
  ci_property "$1"
}
