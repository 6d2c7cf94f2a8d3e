#!/usr/bin/env bash
# One H200 device call for the block-scaled FP8 kernel (issue 21), 2026-12-04: the drained kernel
# with one FFMA per sum and its B scales picked at compile time, against the overlapped default, by
# hand (bench/gpu/gemm_configs_fp8bs8.txt, with the dense e4m3 tiles as the pipeline's ceiling);
# then `croq tune` of the two block-scaled goal shapes from the family's default (3 rounds: the
# default, drained 128x192, no cluster) with the FP8 GPU tests; then the Hopper GPU test samples.
#   bash bench/gpu/fp8_bs_drained_call.sh build   here: renders and compiles the list into .carry/bs8
#                                                 (then pack: bench/gpu/pack_device.sh build && --bundle)
#   bash bench/gpu/fp8_bs_drained_call.sh run     there (.carry/bundle.tar.xz and .carry/bs8 carried,
#                                                 unbundled): writes to $OUT fp8bs8.md, fp8-h200.md,
#                                                 gpu-tests.md and call-logs.tgz (every log and raw file)
# Knobs: BS8_CONFIG_BUDGET_S (150), BS8_TUNE_BUDGET_S (230), BS8_TESTS_BUDGET_S (120).
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
if [ "${1:-run}" = build ]; then
  GEMM_CONFIGS=bench/gpu/gemm_configs_fp8bs8.txt CONFIG_DIR=$REPO/.carry/bs8 bash bench/gpu/gemm_configs.sh build
  exit $?
fi
FINAL=${OUT:-$REPO/docs/results}
W=$(mktemp -d /tmp/croq-bs8-XXXXXX)
mkdir -p "$W/configs" "$W/fp8" "$W/tests" "$FINAL"
START=$SECONDS
echo "[bs8] configurations by hand"
OUT=$W/configs CONFIG_DIR=$REPO/.carry/bs8 GEMM_CONFIGS=bench/gpu/gemm_configs_fp8bs8.txt CONFIG_REPORT=fp8bs8 \
  CONFIG_REPEATS=2 CONFIG_BUDGET_S=${BS8_CONFIG_BUDGET_S:-150} bash bench/gpu/gemm_configs.sh run > "$W/configs.log" 2>&1
echo "[bs8] $((SECONDS - START)) s: croq tune of the block-scaled keys"
OUT=$W/fp8 FP8_SHAPES=' ' FP8_ROUNDS=3 FP8_BUDGET_S=${BS8_TUNE_BUDGET_S:-230} bash bench/gpu/fp8_evidence.sh run > "$W/fp8.log" 2>&1
echo "[bs8] $((SECONDS - START)) s: GPU test samples"
OUT=$W/tests GPU_TESTS='HopperGemmOnGpu.Sampled* HopperGemmOnGpu.Differently*' GPU_TEST_LIMIT_S=110 \
  GPU_TESTS_BUDGET_S=${BS8_TESTS_BUDGET_S:-120} bash bench/gpu/gpu_tests_call.sh > "$W/tests.log" 2>&1
echo "[bs8] $((SECONDS - START)) s: done"
cp "$W/configs/fp8bs8.md" "$W/fp8/fp8-h200.md" "$W/tests/gpu-tests.md" "$FINAL/" 2>/dev/null
tar czf "$FINAL/call-logs.tgz" -C "$W" .
