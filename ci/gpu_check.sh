#!/usr/bin/env bash
# Usage: bash ci/gpu_check.sh [LABEL...]
# Correctness of kernel variants on the GPU (the family the GPU runs: Hopper on sm_90). LABELs are
# declared variant labels (python3 -m pytest --list-variants); none: the production variants.
# Steps, each under its own timeout, logs and summary.md under $OUT (default ./gpu-out):
#   smoke       only when SMOKE=MODULE (ci.prepass_smoke, ci.schedule_smoke,
#               ci.epilogue_smoke) on the LABELs: bit-identity against the build each derives
#               from, repeated launches, two streams; a broken protocol hangs and is killed by
#               T_SMOKE, and then nothing else runs
#   properties  python3 -m pytest -m properties --subject=FAMILY --variant=LABEL... --hypothesis-profile=ci
#               (the main kernel-vs-oracle property, the corners, invalid problems, seen shapes)
#   perturbed   the perturbed property alone (--perturb=only; with the step above: --perturb=on):
#               seeded delays at every sync site and the happens-before checker
#   gpu_tests   python3 -m pytest -m gpu kernel/tests (fixed named cases, chained PDL launches, timeline stamps)
#   sanitize    compute-sanitizer synccheck and racecheck on each LABEL (ci.sanitize, ragged and
#               empty-group cases)
#   bound       only when BOUND=1: ci.bound_check, how close the kernel comes to the error bound
#   isolation   only when ISOLATION=1: the planted faulty subjects (properties/faulty_subjects: an
#               out-of-bounds store, a device hang) fail their example alone (properties.isolation)
# Variables: HYPOTHESIS_PROFILE (default ci), GPU_TESTS (paths, default kernel/tests; 0 skips),
# GPU_K (-k filter of gpu_tests), SANITIZE=0 skips sanitize, OUT; each step's limit in seconds:
# T_SMOKE 150, T_PROPS 420, T_PERTURB 300, T_GPU_TESTS 540, T_SANITIZE 300, T_BOUND 120,
# T_ISOLATION 240 (per faulty subject).
# Run time on one H100/H200: not measured as a whole; each step is bounded by its T_ variable.
# The properties step on the production variants is the README's main command (about 4 min on an
# H200: 224 s, 2026-12-04); the others are not measured in this form.
# Exit status: 0 every step passed, 1 a step failed, 2 misuse, 3 no sm_90 / sm_100 GPU.
source "$(dirname "${BASH_SOURCE[0]}")/gpu_env.sh"
gpu_init "$@"
LABELS=("${ARGS[@]}")
gpu_check_labels "${LABELS[@]}"
VARGS=()
for v in "${LABELS[@]}"; do VARGS+=("--variant=$v"); done
PROFILE=${HYPOTHESIS_PROFILE:-ci}
PYTEST=(python3 -m pytest -p no:cacheprovider -q -rs)

if [ -n "${SMOKE:-}" ]; then
  [ "${#LABELS[@]}" -gt 0 ] || gpu_usage_error "SMOKE needs LABELs"
  step smoke timeout --kill-after=10 "${T_SMOKE:-150}" python3 -m "$SMOKE" "${LABELS[@]}" \
    || { echo "smoke failed (124: hung): the other steps skipped"; gpu_finish; }
fi
step properties timeout --kill-after=10 "${T_PROPS:-420}" "${PYTEST[@]}" -m properties --subject="$FAMILY" \
  "${VARGS[@]}" --hypothesis-profile="$PROFILE" --junitxml="$OUT/properties.xml"
step perturbed timeout --kill-after=10 "${T_PERTURB:-300}" "${PYTEST[@]}" properties/test_perturbed_properties.py \
  --subject="$FAMILY" "${VARGS[@]}" --perturb=only --hypothesis-profile="$PROFILE"
if [ "${GPU_TESTS:-kernel/tests}" != 0 ]; then
  read -r -a gpu_paths <<< "${GPU_TESTS:-kernel/tests}"
  step gpu_tests timeout --kill-after=10 "${T_GPU_TESTS:-540}" "${PYTEST[@]}" -m gpu "${gpu_paths[@]}" \
    ${GPU_K:+-k "$GPU_K"}
fi
if [ "${SANITIZE:-1}" != 0 ]; then
  step sanitize timeout --kill-after=10 "${T_SANITIZE:-300}" python3 -m ci.sanitize --subject="$FAMILY" "${VARGS[@]}" \
    --max-variants=3 --require --jobs=2 --timeout=150 --tool=synccheck --tool=racecheck \
    --case=ragged --case=empty_group
fi
if [ "${BOUND:-0}" = 1 ]; then
  step bound timeout --kill-after=10 "${T_BOUND:-120}" python3 -m ci.bound_check --subject="$FAMILY"
fi
if [ "${ISOLATION:-0}" = 1 ]; then
  # three examples each, the middle one planted (odd M: an out-of-bounds store; odd N: a device
  # spin): passes only when exactly that one faults / times out and the ones around it pass
  isolated() {  # isolated KIND CMD...: CMD's summary line must read "2 pass, 1 KIND"
    local kind=$1; shift
    "$@" 2>&1 | tee "$OUT/isolation_$kind.txt"
    grep -q "3 examples of .*: 2 pass, 1 $kind;" "$OUT/isolation_$kind.txt"
  }
  F=properties/faulty_subjects
  step isolation_fault isolated fault timeout --kill-after=10 "${T_ISOLATION:-240}" python3 -m properties.isolation \
    --subject=$F/gpu_oob_cute.py --sizes='[[64,128,256,1]]' --sizes='[[65,128,256,1],[32,64,256,1]]' \
    --sizes='[[128,64,256,1]]' --timeout=60 --compile-timeout=120
  step isolation_hang isolated timeout timeout --kill-after=10 "${T_ISOLATION:-240}" python3 -m properties.isolation \
    --subject=$F/gpu_hang.py --sizes='[[64,128,256,1]]' --sizes='[[64,129,256,1]]' --sizes='[[128,64,256,1]]' \
    --timeout=15 --compile-timeout=60
fi
gpu_finish
