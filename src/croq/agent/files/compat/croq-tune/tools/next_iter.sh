#!/usr/bin/env bash
# The seeds' next_iter.sh --dsl --shape-key --model --tag <tag> [--attempt]: prints the canonical
# name to use for files, iter<NNN>_<tag> (or attempt<AAAA>_<tag>), reserved atomically.
# Calls `croq next-iter`.
source "$(dirname "${BASH_SOURCE[0]}")/croq_shim.sh"
out="$(croq next-iter "$@")"
rc=$?
[ $rc -eq 0 ] || exit $rc
printf '%s\n' "$(printf '%s' "$out" | json_field kernel)"
