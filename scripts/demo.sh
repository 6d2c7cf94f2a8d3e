#!/usr/bin/env bash
# A real croq session on a sample workspace (no GPU needed): creates a task, stores a baseline,
# a starting kernel and two tuning rounds through the same verbs an agent uses, then prints the
# resume state. Usage: scripts/demo.sh [workspace-folder]   (default: /tmp/croq-demo)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
croq="$here/build/bin/croq"
ws="${1:-/tmp/croq-demo}"
rm -rf "$ws" && mkdir -p "$ws/tuning"
export CROQ_ROOT="$ws"
task=(--dsl cpp --shape-key matmul_f32_512x512x512 --model demo)
"$croq" task init "${task[@]}" --task-uid demo0001 >/dev/null
"$croq" store-round "${task[@]}" --iter iter000 --kernel iter000_openblas --tflops 0.21 --decision BASELINE >/dev/null
"$croq" next-iter "${task[@]}" --tag naive >/dev/null
"$croq" store-round "${task[@]}" --iter iter001 --kernel iter001_naive --tflops 0.01 --decision KEEP --round 0 >/dev/null
"$croq" checkpoint write "${task[@]}" --iter iter002 --bottleneck memory_bound --idea "block the loops 64x64 for cache reuse" --levers BM,BN >/dev/null
"$croq" next-iter "${task[@]}" --tag blocked64 >/dev/null
"$croq" store-round "${task[@]}" --iter iter002 --kernel iter002_blocked64 --tflops 0.05 --decision KEEP \
  --bottleneck memory_bound --idea "block the loops 64x64 for cache reuse" --category tiling >/dev/null
"$croq" reinforce "${task[@]}" >/dev/null
"$croq" --pretty resume "${task[@]}"
echo "workspace: $ws (ledger in $ws/tuning/*/cpp/logs/)" >&2
