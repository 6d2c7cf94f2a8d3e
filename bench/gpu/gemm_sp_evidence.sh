#!/usr/bin/env bash
# H200 evidence for 2:4 sparse GEMM (gemm_sp) found by croq's own search: bench/gpu/gemm_evidence.sh
# run on gemm_sp keys, f16 (f16 out) and e4m3 (f16 out), at 4096x8192x8192 and the 14 typical
# shapes of the from-scratch sweep. Each task's `croq baseline` measures cuSPARSELt (its algorithms
# and its own search, A compressed once off the clock) and the dense libraries on the same pruned
# inputs; iter000 is the faster. `croq tune` starts from the hopper_gemm_sp family's default. Then
# bench/gpu/gemm_sp_summary.py writes gemm-sp-h200.md: per shape and dtype, cuSPARSELt and dense
# TFLOPS, croq's best, the ratios, the configuration and round, the repeats' spread.
#
# A call lasts at most 10 minutes: the tune stops at SP_BUDGET_S and the workspace comes back as
# gemm-ws.tgz; put it at .carry/sp-ws/gemm-ws.tgz (carry .carry/sp-ws) and call again to resume.
# Needs croq's executables packed into .carry/croq (bash bench/gpu/gemm_sp_baseline.sh build).
# Environment: SP_DTYPES (f16 e4m3fp16), SP_SHAPES (keys; default all), SP_ROUNDS (50), SP_JOBS (8),
# SP_REPEATS (2), SP_BUDGET_S (500), SP_WS (/tmp/croq-sp-ws). SP_DSL=cpp checks the script without a GPU.
# Usage: bash bench/gpu/gemm_sp_evidence.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
TYPICAL="768x768x768 12288x12288x12288 512x8192x8192 16384x8192x8192 4096x1024x8192 4096x32768x8192
4096x8192x512 4096x8192x32768 1024x1024x4096 12288x12288x4096 1024x8192x1024 12288x8192x12288 4096x1024x1024
12288x4096x4096"
keys=""
for dt in ${SP_DTYPES:-f16 e4m3fp16}; do
  keys="$keys gemm_sp_${dt}_4096x8192x8192"
  for s in $TYPICAL; do keys="$keys gemm_sp_${dt}_$s"; done
done
export GEMM_SHAPES=${SP_SHAPES:-$keys}
export GEMM_ROUNDS=${SP_ROUNDS:-50} GEMM_JOBS=${SP_JOBS:-8} GEMM_REPEATS=${SP_REPEATS:-2}
export GEMM_BUDGET_S=${SP_BUDGET_S:-500} GEMM_WS=${SP_WS:-/tmp/croq-sp-ws} GEMM_DSL=${SP_DSL:-cuda}
export GEMM_CARRY=$REPO/.carry/sp-ws/gemm-ws.tgz
# cuSPARSELt: CROQ_CUSPARSELT as given, else the Python package's folder (named so the report says
# which library was measured; the runner finds the package by itself too).
if [ -z "${CROQ_CUSPARSELT:-}" ]; then
  dir=$(python3 -c "import nvidia.cusparselt as c; print(list(c.__path__)[0])" 2>/dev/null) && [ -n "$dir" ] \
    && export CROQ_CUSPARSELT=$dir
fi
echo "[gemm-sp-evidence] cuSPARSELt: ${CROQ_CUSPARSELT:-not found}"
bash bench/gpu/gemm_evidence.sh
DEST=${OUT:-$REPO/docs/results}
COMMIT=$(cat "$REPO/.carry/croq/commit.txt" 2>/dev/null || git -C "$REPO" rev-parse --short=12 HEAD 2>/dev/null)
python3 bench/gpu/gemm_sp_summary.py "$GEMM_WS" "$GEMM_DSL" "$COMMIT" $GEMM_SHAPES > "$DEST/gemm-sp-h200.md"
cat "$DEST/gemm-sp-h200.md"
