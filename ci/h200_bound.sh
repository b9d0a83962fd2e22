#!/usr/bin/env bash
# The tight error bound against the Hopper kernel on the H200, in one device call (~3-4 min):
#   bash ci/h200_bound.sh            (NVFP4_HOPPER_VARIANT=LABEL picks the variant; default DEFAULT_CONFIG)
# 1. the kernel-vs-oracle property and the fixed corners (K up to 7168, the standard shapes)
#    against the bound for the 16-K accumulation the Hopper family declares (kernel/hopper/launch.py);
# 2. ci.bound_check: how close the kernel comes to that bound (standard shapes, K = 7168
#    truncation adversary), one table, printed last.
# Exit status: non-zero when either step fails.
set -u
cd "$(dirname "$0")/.."
SUBJECT=${SUBJECT:-hopper}
timeout "${T_PROPERTY:-170}" python3 -m pytest properties/test_subject_vs_oracle.py --subject="$SUBJECT" \
  --variant="${NVFP4_HOPPER_VARIANT:-h90_m128n128k256_s3_wg1_fp16}" \
  -k "test_subject_matches_oracle and not per_distribution" --hypothesis-profile=ci -p no:cacheprovider -q -rs 2>&1 | tail -15
property=${PIPESTATUS[0]}
timeout "${T_TABLE:-90}" python3 -m ci.bound_check --subject="$SUBJECT"
table=$?
echo "property suite exit $property, bound_check exit $table"
[ "$property" -eq 0 ] && [ "$table" -eq 0 ]
