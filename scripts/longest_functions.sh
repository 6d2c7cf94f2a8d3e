#!/usr/bin/env bash
# The longest named functions under the given folders (default: src), by Universal Ctags' start and
# end lines (lambdas count towards the function that holds them). Used for the before/after figures
# of docs/architecture-changes.md.  Usage: scripts/longest_functions.sh [N] [folder...]
set -euo pipefail
n=${1:-10}
shift || true
[ $# -gt 0 ] || set -- src
command -v ctags >/dev/null || { echo "needs Universal Ctags (Debian: universal-ctags)" >&2; exit 2; }
ctags -R -x --languages=C++ --kinds-C++=f --_xformat='%N %n %{end} %F' -o - "$@" |
  awk '$1 !~ /^__anon/ && $3 != "" { printf "%5d  %s:%d  %s\n", $3 - $2 + 1, $4, $2, $1 }' |
  sort -rn | head -n "$n"
