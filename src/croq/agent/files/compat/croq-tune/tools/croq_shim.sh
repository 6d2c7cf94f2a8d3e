# Sourced by every seed tool shim in this folder (installed by `croq init --compat`): finds croq
# and the workspace root, and offers small helpers. Each shim accepts the seeds' arguments as
# the seeds write them and calls croq; what croq refuses is refused here too, with croq's reason.
set -u
CROQ_SHIM_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# The workspace root: CROQ_ROOT, else the folder that holds .claude/ (four levels up).
if [ -z "${CROQ_ROOT:-}" ]; then
  CROQ_ROOT="$(cd "$CROQ_SHIM_DIR/../../../.." && pwd)"
fi
export CROQ_ROOT
CROQ_EXE="${CROQ_BIN:-{{croq}}}"
if [ ! -x "$CROQ_EXE" ]; then
  CROQ_EXE="$(command -v croq || true)"
fi
if [ -z "$CROQ_EXE" ]; then
  echo "croq-shim: croq not found: set CROQ_BIN or put croq on PATH (then run \`croq init --compat\` again)" >&2
  exit 127
fi

croq() { "$CROQ_EXE" --root "$CROQ_ROOT" "$@"; }

# json_field KEY: the value of a top-level string or number field of the compact JSON on stdin.
json_field() {
  sed -n "s/.*\"$1\":\"\\([^\"]*\\)\".*/\\1/p; t; s/.*\"$1\":\\([-0-9.eE+]*\\)[,}].*/\\1/p" | head -n 1
}

# task_from_path PATH: sets TASK_GPU TASK_DSL TASK_KEY TASK_MODEL TASK_NAME from a path inside
# tuning/<gpu>/<dsl>/<kind>/<shape_key>/<model>/<name>; returns 1 when PATH is not such a path.
task_from_path() {
  local p="$1" rest
  case "$p" in
    /*) p="${p#"$CROQ_ROOT"/}" ;;
  esac
  p="${p#./}"
  case "$p" in
    tuning/*) ;;
    *) return 1 ;;
  esac
  rest="${p#tuning/}"
  IFS=/ read -r TASK_GPU TASK_DSL _kind TASK_KEY TASK_MODEL TASK_NAME <<<"$rest"
  [ -n "${TASK_MODEL:-}" ] || return 1
  TASK_NAME="${TASK_NAME:-}"
  return 0
}

# The device key for GPU tools, or exit 7 with the reason (croq's no-device code).
require_gpu() {
  local out rc
  out="$(croq gpu key 2>&1 >/dev/null)"
  rc=$?
  if [ $rc -ne 0 ]; then
    echo "$1: needs a GPU; croq gpu key says: $out" >&2
    exit $rc
  fi
}
