#!/usr/bin/env bash
# The seeds' build_iter.sh --cu <srcs/.../iter<NNN>_<tag>.cu> --out <bin/.../iter<NNN>_<tag>>:
# builds the iteration (cached) and prints croq's build JSON (verdict, outputs, resources).
# Calls `croq build --iter`; the task comes from the paths. Exit 8 when the build failed.
source "$(dirname "${BASH_SOURCE[0]}")/croq_shim.sh"
src="" out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --cu|--src) src="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "build_iter: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$src" ] || { echo "build_iter: needs --cu" >&2; exit 2; }
if task_from_path "$src"; then
  name="${TASK_NAME%.*}"
elif [ -n "$out" ] && task_from_path "$out"; then
  echo "build_iter: $src is outside the task's srcs/ folder; croq builds iterations of a task: \`croq prepare --from $src\` makes it iter001, then build_iter.sh --cu tuning/.../srcs/<key>/<model>/iter001_<tag>.cu" >&2
  exit 2
else
  echo "build_iter: $src is not under tuning/<gpu>/<dsl>/srcs/<key>/<model>/" >&2
  exit 2
fi
phase=()
[ "$TASK_DSL" = "croqtile" ] && phase=(--phase 2)
croq build --gpu "$TASK_GPU" --dsl "$TASK_DSL" --shape-key "$TASK_KEY" --model "$TASK_MODEL" --iter "$name" "${phase[@]}"
