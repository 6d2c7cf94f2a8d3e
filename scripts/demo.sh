#!/usr/bin/env bash
# The main job on any machine (no GPU needed): `croq tune` tunes an f32 matmul on the CPU backend
# with croq's own search — baseline (OpenBLAS), starting kernel, then profile -> idea -> build ->
# verify -> measure -> decide -> store rounds under the enforced protocol — and prints the summary.
# Usage: scripts/demo.sh [workspace-folder] [rounds]   (default: /tmp/croq-demo, 10 rounds)
# Run it again with the same folder to resume an interrupted tune (a finished one gets [rounds] more
# rounds); delete the folder to start over.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
croq="$here/build/bin/croq"
ws="${1:-/tmp/croq-demo}"
rounds="${2:-10}"
mkdir -p "$ws/tuning"
"$croq" --root "$ws" --pretty tune matmul_f32_512x512x512 --dsl cpp --rounds "$rounds"
echo "workspace: $ws — ledger: $(ls -d "$ws"/tuning/*/cpp/logs/*/*/ | head -1)results.tsv" >&2
echo "next: $croq --root $ws serve   (the dashboard), or $croq --root $ws report --all --out /tmp/croq-report" >&2
echo "      (croq is $croq: export PATH=\"$here/build/bin:\$PATH\" to call it as croq)" >&2
