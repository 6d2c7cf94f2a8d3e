#!/usr/bin/env bash
# The seeds' checkpoint_write.sh write|read|verify --dsl --shape-key --model [...]: the IDEA
# checkpoint. `verify` exits 3 on significant drift between plan and build. Calls `croq checkpoint`.
source "$(dirname "${BASH_SOURCE[0]}")/croq_shim.sh"
action="${1:-}"
case "$action" in
  write|read|verify) shift ;;
  *) echo "checkpoint_write: first argument must be write, read or verify" >&2; exit 2 ;;
esac
croq checkpoint "$action" "$@"
