#!/usr/bin/env bash
# Usage: bash ci/gpu_long.sh [main|long|nightly|sanitize|stress ...] [LABEL...]
# The long GPU runs, on the family the GPU runs. The words pick them (default: main long):
#   main      the README's main command (python3 -m pytest -m properties --subject=auto
#             --hypothesis-profile=ci: the production variants), its wall time against
#             MAIN_LIMIT_S (300 s), then the main property alone on the family's FASTEST_CONFIG
#             (its default variant when it declares none) with the per-stage split (inputs,
#             transfers, oracle, subject, checks) and examples/s after compiles
#   long      each input distribution on its own (ci profile), then the gpu-long profile (500
#             examples) of the main property, on each LABEL (default: the default variant)
#   nightly   every property, plain and perturbed (--perturb=on), under the nightly profile
#             (1000 examples, not derandomized) on each LABEL (default: the default variant)
#   sanitize  compute-sanitizer (ci.sanitize's default tools and cases) on the LABELs (default:
#             the production variants)
#   stress    the co-resident tensor-pipe stressor (properties.tensor_stress) beside torch's
#             kernels and beside each LABEL (default: the default variant) on bench3: whether it
#             runs beside them and how much it slows them. (The backlog mutants that need it:
#             MODES=plain,perturbed bash ci/gpu_mutants.sh 'hopper_sync_wgmma_wait_lax__default'
#             'hopper_sync_no_reuse_barrier__default'.)
# Variables: MAIN_LIMIT_S (300), T_MAIN (MAIN_LIMIT_S + 60), T_FASTEST (200), T_DIST (90),
# T_LONG (150), T_NIGHTLY (3000), T_SANITIZE (300), T_STRESS (120), OUT (./gpu-out).
# Run time on one H100/H200: main about 5 min on an H200 (the main command 224 s, 2026-12-04);
# long at most 4 min per LABEL (T_DIST + T_LONG); sanitize at most T_SANITIZE; stress at most
# 4 min; nightly not measured.
# Exit status: 0 every step passed, 1 a step failed (or the main command took over MAIN_LIMIT_S),
# 2 misuse, 3 no sm_90 / sm_100 GPU.
source "$(dirname "${BASH_SOURCE[0]}")/gpu_env.sh"
gpu_init "$@"
RUNS=(); LABELS=()
for a in "${ARGS[@]}"; do
  case "$a" in
    main|long|nightly|sanitize|stress) RUNS+=("$a") ;;
    *) LABELS+=("$a") ;;
  esac
done
[ "${#RUNS[@]}" -gt 0 ] || RUNS=(main long)
gpu_check_labels "${LABELS[@]}"
ONE=("${LABELS[@]}")
[ "${#ONE[@]}" -gt 0 ] || ONE=("$(gpu_default_label)")
PYTEST=(python3 -m pytest -p no:cacheprovider -q -rs)
MAIN_LIMIT_S=${MAIN_LIMIT_S:-300}
echo "runs: ${RUNS[*]}; variants: ${LABELS[*]:-(defaults)}"

for run in "${RUNS[@]}"; do
  case "$run" in
    main)
      step main timeout --kill-after=10 "${T_MAIN:-$(( MAIN_LIMIT_S + 60 ))}" "${PYTEST[@]}" -m properties \
        --subject=auto --hypothesis-profile=ci --junitxml="$OUT/main.xml"
      main_s=${STEP_SECONDS[-1]}
      echo "the main command took $main_s s (limit $MAIN_LIMIT_S s)"
      step main_within_limit test "$main_s" -le "$MAIN_LIMIT_S"
      fastest=$(python3 -c "from kernel.family import get_family
f = get_family('$FAMILY')
print(getattr(f.module, 'FASTEST_CONFIG', f.default_config).label)")
      step fastest timeout --kill-after=10 "${T_FASTEST:-200}" "${PYTEST[@]}" \
        properties/test_subject_vs_oracle.py::test_subject_matches_oracle --subject=auto --variant="$fastest" \
        --hypothesis-profile=ci
      ;;
    long)
      for i in "${!ONE[@]}"; do
        step "distributions_$i" timeout --kill-after=10 "${T_DIST:-90}" "${PYTEST[@]}" -m properties \
          --subject="$FAMILY" --variant="${ONE[$i]}" --hypothesis-profile=ci -k per_distribution
        step "gpu_long_$i" timeout --kill-after=10 "${T_LONG:-150}" "${PYTEST[@]}" -m properties \
          --subject="$FAMILY" --variant="${ONE[$i]}" --hypothesis-profile=gpu-long \
          -k "test_subject_matches_oracle and not per_distribution" --hypothesis-show-statistics
      done
      ;;
    nightly)
      for i in "${!ONE[@]}"; do
        step "nightly_$i" timeout --kill-after=10 "${T_NIGHTLY:-3000}" "${PYTEST[@]}" -m properties \
          --subject="$FAMILY" --variant="${ONE[$i]}" --hypothesis-profile=nightly --perturb=on
      done
      ;;
    sanitize)
      sargs=(); for v in "${LABELS[@]}"; do sargs+=(--variant "$v"); done
      step sanitize timeout --kill-after=10 "${T_SANITIZE:-300}" python3 -m ci.sanitize --subject="$FAMILY" \
        "${sargs[@]}" --max-variants=3 --require --jobs=6 --timeout=240
      ;;
    stress)
      step stress_torch timeout --kill-after=10 "${T_STRESS:-120}" python3 -m properties.tensor_stress \
        --torch-subjects --reps 3 --carveout 85 --carveout 100
      for i in "${!ONE[@]}"; do
        step "stress_$i" timeout --kill-after=10 "${T_STRESS:-120}" python3 -m properties.tensor_stress --measure \
          --shape bench3 --reps 10 --variant "${ONE[$i]}"
      done
      ;;
  esac
done
gpu_finish
