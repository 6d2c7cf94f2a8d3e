#!/usr/bin/env bash
# One H200 device call for the block-scaled FP8 kernel (issue 21) after A's scales became M-major
# (973a16b, [ceil(K/128), M]: the layout cuBLASLt was already handed): first `croq tune` of the two
# block-scaled goal shapes from the family's default (3 rounds) with the FP8 GPU tests
# (bench/gpu/fp8_evidence.sh: the runner's scaled-operator test, which checks the new layout against
# cuBLASLt's, and the family's FP8 sample on odd shapes); then the default, its neighbours and the
# SCALE_STAGE=1 (the scales staged in shared memory) by hand (bench/gpu/gemm_configs_fp8bs17.txt).
#   bash bench/gpu/fp8_bs_layout_call.sh build   here: renders and compiles the list into .carry/bs17
#                                                (then pack: bench/gpu/pack_device.sh build && --bundle)
#   bash bench/gpu/fp8_bs_layout_call.sh run     there (.carry/bundle.tar.xz and .carry/bs17 carried,
#                                                unbundled): writes to $OUT fp8-h200.md, fp8bs17.md and
#                                                call-logs.tgz (every log and raw file)
# Knobs: BS17_TUNE_BUDGET_S (230), BS17_CONFIG_BUDGET_S (250).
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
if [ "${1:-run}" = build ]; then
  GEMM_CONFIGS=bench/gpu/gemm_configs_fp8bs17.txt CONFIG_DIR=$REPO/.carry/bs17 bash bench/gpu/gemm_configs.sh build
  exit $?
fi
FINAL=${OUT:-$REPO/docs/results}
W=$(mktemp -d /tmp/croq-bs17-XXXXXX)
mkdir -p "$W/configs" "$W/fp8" "$FINAL"
START=$SECONDS
echo "[bs17] croq tune of the block-scaled keys, FP8 GPU tests"
OUT=$W/fp8 FP8_SHAPES=' ' FP8_ROUNDS=3 FP8_BUDGET_S=${BS17_TUNE_BUDGET_S:-230} bash bench/gpu/fp8_evidence.sh run \
  > "$W/fp8.log" 2>&1
echo "[bs17] $((SECONDS - START)) s: configurations by hand"
OUT=$W/configs CONFIG_DIR=$REPO/.carry/bs17 GEMM_CONFIGS=bench/gpu/gemm_configs_fp8bs17.txt CONFIG_REPORT=fp8bs17 \
  CONFIG_REPEATS=2 CONFIG_BUDGET_S=${BS17_CONFIG_BUDGET_S:-250} bash bench/gpu/gemm_configs.sh run \
  > "$W/configs.log" 2>&1
echo "[bs17] $((SECONDS - START)) s: done"
cp "$W/fp8/fp8-h200.md" "$W/configs/fp8bs17.md" "$FINAL/" 2>/dev/null
tar czf "$FINAL/call-logs.tgz" -C "$W" .
