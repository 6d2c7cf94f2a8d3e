#!/usr/bin/env bash
# The seeds' sass_compare.sh dump-baseline|dump-custom|compare --dsl --shape-key --model [...]:
# SASS of the library baseline (cached), of a candidate, and their comparison ranked by severity.
# Calls `croq profile --baseline` + `croq sass dump`, and `croq sass compare`. Needs a GPU or the
# CUDA binary tools (exit 7 without).
source "$(dirname "${BASH_SOURCE[0]}")/croq_shim.sh"
action="${1:-}"
shift || true
task=() iter=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dsl|--shape-key|--model|--gpu) task+=("$1" "$2"); shift 2 ;;
    --iter) iter="$2"; shift 2 ;;
    --dtype|--m|--n|--k) shift 2 ;;  # the shape key already says these
    *) echo "sass_compare: unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$action" in
  dump-baseline)
    require_gpu sass_compare
    prof="$(croq profile "${task[@]}" --baseline)" || exit $?
    rep="$(printf '%s' "$prof" | json_field report)"
    croq sass dump "${task[@]}" --baseline --report "$rep" ;;
  dump-custom)
    croq sass dump "${task[@]}" --iter "$iter" ;;
  compare)
    croq sass compare "${task[@]}" --iter "$iter" ;;
  *)
    echo "sass_compare: first argument must be dump-baseline, dump-custom or compare" >&2
    exit 2 ;;
esac
