# The shared header of the GPU workflow scripts (ci/gpu_*.sh); sourced, never run:
#   source "$(dirname "${BASH_SOURCE[0]}")/gpu_env.sh"
#   gpu_init "$@"          # --help, misuse, GPU check; leaves the other arguments in ARGS
#   step NAME CMD...       # one timed step; full output in $OUT/NAME.log
#   gpu_finish             # the summary table; exits 1 when a step failed
# What sourcing it does: cd to the repository root; source .device/env.sh when present (a folder
# .device/ with env.sh, if you installed from an offline bundle); export PYTHONUNBUFFERED=1 and
# OUT (default ./gpu-out, made absolute; created by gpu_init and step). Exit statuses of the scripts: 0 every step
# passed, 1 a step failed, 2 misuse (the usage line on stderr), 3 no sm_90 / sm_100 GPU here.
# Variables: OUT (the log folder), STEP_TAIL (lines of each step's output echoed, default 30;
# 0: all of it), NVIDIA_SMI (default nvidia-smi from PATH).

GPU_SCRIPT=${GPU_SCRIPT:-$(cd "$(dirname "$0")" && pwd)/$(basename "$0")}
OUT=${OUT:-$PWD/gpu-out}
case "$OUT" in /*) ;; *) OUT=$PWD/$OUT ;; esac
export OUT
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
# shellcheck disable=SC1091
[ -f .device/env.sh ] && source .device/env.sh
export PYTHONUNBUFFERED=1
NVIDIA_SMI=${NVIDIA_SMI:-nvidia-smi}
set -u -o pipefail

STEP_NAMES=(); STEP_SECONDS=(); STEP_RCS=()
GPU_T0=$SECONDS

# The script's header comment (from its second line to the first line that is not a comment).
gpu_help() {
  awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$GPU_SCRIPT"
}

gpu_usage_line() {
  gpu_help | grep -m1 -i '^usage:'
}

gpu_usage_error() {  # gpu_usage_error MESSAGE: the message and the usage line on stderr, exit 2
  echo "$(basename "$GPU_SCRIPT"): $*" >&2
  gpu_usage_line >&2
  exit 2
}

# gpu_init "$@": -h/--help prints the header and exits 0; any other -option is misuse (exit 2);
# the rest is left in ARGS. Then the GPU check: nvidia-smi's name and driver line (also in
# $OUT/gpu.txt), torch's compute capability, which must be sm_90 (H100, H200) or sm_100; sets
# FAMILY (the kernel family the GPU runs: the --subject value), GPU_SM, and CUTE_DSL_ARCH.
gpu_init() {
  ARGS=()
  local a
  for a in "$@"; do
    case "$a" in
      -h|--help) gpu_help; exit 0 ;;
      -*) gpu_usage_error "unknown option $a" ;;
      *) ARGS+=("$a") ;;
    esac
  done
  mkdir -p "$OUT" || exit 2
  if ! command -v "$NVIDIA_SMI" > /dev/null 2>&1; then
    echo "$(basename "$GPU_SCRIPT"): no $NVIDIA_SMI: needs an NVIDIA sm_90 (H100/H200) or sm_100 GPU" >&2
    exit 3
  fi
  "$NVIDIA_SMI" --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
  git rev-parse HEAD > "$OUT/commit.txt" 2> /dev/null
  local found
  found=$(python3 - <<'PY'
import sys
try:
    import torch
except Exception as exc:  # noqa: BLE001 - any import failure means no usable GPU stack
    sys.exit(f"torch does not import: {exc}")
if not torch.cuda.is_available():
    sys.exit("torch sees no CUDA device")
major, minor = torch.cuda.get_device_capability(0)
from kernel.family import family_for_capability
family = family_for_capability((major, minor))
if (major, minor) not in ((9, 0), (10, 0)) or family is None:
    sys.exit(f"{torch.cuda.get_device_name(0)} is sm_{major}{minor}: these workflows need sm_90 (H100/H200) or sm_100")
print(family.name, family.arch, f"sm_{major}{minor}")
PY
  ) || { echo "$(basename "$GPU_SCRIPT"): no sm_90 / sm_100 GPU usable here" >&2; exit 3; }
  read -r FAMILY GPU_ARCH GPU_SM <<< "$found"
  export FAMILY GPU_SM CUTE_DSL_ARCH=${CUTE_DSL_ARCH:-$GPU_ARCH}
  echo "family=$FAMILY $GPU_SM out=$OUT"
}

# gpu_production_labels: the family's production variant labels, comma-separated.
gpu_production_labels() {
  python3 -c "from kernel.family import get_family
print(','.join(c.label for c in get_family('$FAMILY').production_variants))"
}

# gpu_default_label: the family's default variant label.
gpu_default_label() {
  python3 -c "from kernel.family import get_family; print(get_family('$FAMILY').default_config.label)"
}

# gpu_check_labels LABEL...: misuse (exit 2) when a plain label is not declared by the family.
# LABEL~PART (perturbed or ablated builds) and {json fields} are left to the tools that take them.
gpu_check_labels() {
  [ "$#" -gt 0 ] || return 0
  python3 - "$FAMILY" "$@" <<'PY' || gpu_usage_error "unknown variant label (python3 -m pytest --list-variants lists them)"
import sys
from kernel.family import get_family
family = get_family(sys.argv[1])
declared = {c.label for c in family.declared_variants}
unknown = [x for x in sys.argv[2:] if "~" not in x and not x.startswith("{") and x not in declared]
if unknown:
    sys.exit(f"not declared by {family.name}: {', '.join(unknown)}")
PY
}

# step NAME CMD...: runs CMD (put `timeout SECONDS` in it), its output into $OUT/NAME.log and
# the last STEP_TAIL lines on stdout; records the seconds and exit status; returns the status.
step() {
  local name=$1; shift
  local start=$SECONDS rc
  mkdir -p "$OUT"
  echo "== [$(( SECONDS - GPU_T0 )) s] $name: $*"
  if [ "${STEP_TAIL:-30}" = 0 ]; then
    "$@" 2>&1 | tee "$OUT/$name.log"
  else
    "$@" 2>&1 | tee "$OUT/$name.log" | tail -n "${STEP_TAIL:-30}"
  fi
  rc=${PIPESTATUS[0]}
  STEP_NAMES+=("$name"); STEP_SECONDS+=($(( SECONDS - start ))); STEP_RCS+=("$rc")
  echo "== $name: exit $rc after $(( SECONDS - start )) s"
  return "$rc"
}

# gpu_summary: one row per step (seconds, exit status, verdict), also into $OUT/summary.md;
# returns 1 when a step failed.
gpu_summary() {
  local i failed=0
  local -a verdicts=()
  for i in "${!STEP_NAMES[@]}"; do
    case "${STEP_RCS[$i]}" in
      0) verdicts+=(ok) ;;
      124|137) verdicts+=(TIMEOUT); failed=1 ;;
      *) verdicts+=(FAIL); failed=1 ;;
    esac
  done
  {
    printf '| step | seconds | exit | verdict |\n|---|---:|---:|---|\n'
    for i in "${!STEP_NAMES[@]}"; do
      printf '| %s | %s | %s | %s |\n' "${STEP_NAMES[$i]}" "${STEP_SECONDS[$i]}" "${STEP_RCS[$i]}" "${verdicts[$i]}"
    done
    printf '\nsteps: %s, %s s in all, %s\n' "${#STEP_NAMES[@]}" "$(( SECONDS - GPU_T0 ))" \
      "$([ "$failed" = 0 ] && echo 'all passed' || echo 'FAILED')"
  } | tee "$OUT/summary.md"
  return "$failed"
}

# gpu_finish: the summary, then exit 0 (every step passed) or 1.
gpu_finish() {
  echo
  gpu_summary
  exit $?
}
