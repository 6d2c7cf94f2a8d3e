#!/usr/bin/env bash
# The project's Python (the Triton runner, the family template, the bench scripts, the agents'
# tools) checked by pylint for the errors a run would only meet on a GPU machine: a call with too
# few or too many arguments, an undefined or unassigned name, a redefined function. The Python
# runner's measure mode cannot run here (no PyTorch), so without this check such a mistake surfaces
# only as RUNTIME_FAIL of every Triton candidate on the GPU.
# Usage: tests/python/lint.sh <source-dir>
set -euo pipefail
src=${1:?usage: lint.sh <source-dir>}
cd "$src"
mapfile -t files < <(find src bench kernels scripts tests -name '*.py' -not -path '*/.carry/*' | sort)
[ ${#files[@]} -gt 0 ] || { echo "lint.sh: no Python file found under $src" >&2; exit 1; }
checks=E0601,E0602,E0102,E0103,E0104,E0107,E0108,E0111,E0116,E0213,E1120,E1121,E1123,E1124
echo "pylint ($checks) over ${#files[@]} files"
pylint --disable=all --enable="$checks" --score=n --persistent=n "${files[@]}"
