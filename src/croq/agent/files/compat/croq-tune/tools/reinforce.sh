#!/usr/bin/env bash
# The seeds' reinforce.sh --dsl --shape-key --model: the one-line progress summary, and the
# mandate to re-read the skill files before the next round. Calls `croq reinforce`.
source "$(dirname "${BASH_SOURCE[0]}")/croq_shim.sh"
out="$(croq reinforce "$@")"
rc=$?
[ $rc -eq 0 ] || exit $rc
printf '%s\n' "$(printf '%s' "$out" | json_field line)"
