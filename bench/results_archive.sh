#!/usr/bin/env bash
# The raw archives of the GPU runs (gemm-ws.tgz, *-raw.tar.gz, *.gz) live on the `results-archive`
# branch of this repository, at the paths they have under docs/results/ (docs/results/README.md);
# docs/results/.gitignore keeps them out of the main tree.
#
#   bash bench/results_archive.sh PATH...          prints a local file with each archive's content:
#       PATH itself when it is there, else a copy taken from the branch into
#       .carry/results-archive/PATH (ignored by git; name .carry in a device call's `carry` to take
#       it along). Fails naming the path when neither holds it.
#   bash bench/results_archive.sh --store PATH...  commits the files (paths under docs/results/) to
#       the branch, creating it when there is none; the working tree and the index are not touched.
#
# Usage in a script: tgz=$(bash bench/results_archive.sh docs/results/gemm-run3/gemm-ws.tgz)
set -euo pipefail
cd "$(dirname "$0")/.."
BRANCH=${CROQ_RESULTS_BRANCH:-results-archive}

if [ "${1:-}" = "--store" ]; then
  shift
  [ $# -gt 0 ] || { echo "results_archive: --store needs the archives to store" >&2; exit 2; }
  index=$(mktemp /tmp/croq-results-index-XXXXXX)
  trap 'rm -f "$index"' EXIT
  parent=()
  if git rev-parse -q --verify "refs/heads/$BRANCH" > /dev/null; then
    GIT_INDEX_FILE=$index git read-tree "$BRANCH"
    parent=(-p "$BRANCH")
  else
    GIT_INDEX_FILE=$index git read-tree --empty
  fi
  for p in "$@"; do
    case "$p" in docs/results/*) ;; *) echo "results_archive: $p is not under docs/results/" >&2; exit 2 ;; esac
    [ -f "$p" ] || { echo "results_archive: no file $p" >&2; exit 2; }
    GIT_INDEX_FILE=$index git update-index --add --cacheinfo "100644,$(git hash-object -w "$p"),$p"
  done
  tree=$(GIT_INDEX_FILE=$index git write-tree)
  commit=$(git commit-tree "$tree" "${parent[@]}" -m "Raw archives: $*")
  git update-ref "refs/heads/$BRANCH" "$commit"
  echo "results_archive: stored $# file(s) on $BRANCH ($(git rev-parse --short "$commit"))"
  exit 0
fi

for p in "$@"; do
  if [ -f "$p" ]; then
    echo "$p"
    continue
  fi
  dest=.carry/results-archive/$p
  if [ ! -f "$dest" ]; then
    if ! git cat-file -e "$BRANCH:$p" 2>/dev/null; then
      echo "results_archive: $p is neither in the tree nor on the $BRANCH branch (git ls-tree -r --name-only $BRANCH)" >&2
      exit 2
    fi
    mkdir -p "$(dirname "$dest")"
    git show "$BRANCH:$p" > "$dest.tmp" && mv "$dest.tmp" "$dest"
  fi
  echo "$dest"
done
