#!/usr/bin/env bash
# The seeds' co2cu.sh --co <srcs/.../iter<NNN>_<tag>.co> --arch <sm_arch> [--flags "<choreo flags>"]:
# phase 1 of the croqtile build (choreo -gs, the .cu extracted next to the .co); prints JSON with
# the paths. Calls `croq build --phase 1`. Needs the choreo compiler (exit 7 without).
source "$(dirname "${BASH_SOURCE[0]}")/croq_shim.sh"
co="" arch="" flags=""
while [ $# -gt 0 ]; do
  case "$1" in
    --co) co="$2"; shift 2 ;;
    --arch) arch="$2"; shift 2 ;;
    --flags) flags="$2"; shift 2 ;;
    *) echo "co2cu: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$co" ] || { echo "co2cu: needs --co" >&2; exit 2; }
choreo_bin="${CHOREO_HOME:-}/build/choreo"
if [ -z "${CHOREO_HOME:-}" ] || [ ! -x "$choreo_bin" ]; then
  echo "co2cu: needs the choreo compiler: CHOREO_HOME is unset or \$CHOREO_HOME/build/choreo is missing (croq env validate --dsl croqtile says what to set)" >&2
  exit 7
fi
if ! task_from_path "$co"; then
  echo "co2cu: $co is not an iteration source under tuning/<gpu>/croqtile/srcs/<key>/<model>/; copy a starting kernel with \`croq prepare --from $co\` (iter001) and build that" >&2
  exit 2
fi
args=(build --gpu "$TASK_GPU" --dsl "$TASK_DSL" --shape-key "$TASK_KEY" --model "$TASK_MODEL" --iter "${TASK_NAME%.co}" --phase 1)
[ -n "$arch" ] && args+=(--arch "$arch")
[ -n "$flags" ] && args+=(--choreo-flags "$flags")
croq "${args[@]}"
