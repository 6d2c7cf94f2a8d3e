#!/usr/bin/env bash
# croq's GPU tests (tests/gpu, croq_gpu_tests) on a GPU machine from the pack of
# bench/gpu/pack_device.sh (.carry/croq with bin/croq_gpu_tests and test-kernels/), one gtest filter
# after another so that no two of them wait on the device's lease at once, each under its own time
# limit. Writes $OUT/gpu-tests/<n>.log per filter and $OUT/gpu-tests.md: per filter, the tests
# passed, failed and skipped, the seconds it took and the exit status (124: its time limit).
# Environment: GPU_TESTS (filters, space-separated; default below), GPU_TEST_LIMIT_S (per filter,
# default 150), GPU_TESTS_BUDGET_S (the whole run; filters that would start past it are left out
# and listed as such; default 330).
# Usage: OUT=... bash bench/gpu/gpu_tests_call.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
export CROQ_HOME=$REPO PATH=$REPO/.carry/croq/bin:$PATH LD_LIBRARY_PATH=$REPO/.carry/croq/lib:${LD_LIBRARY_PATH:-}
export CROQ_TEST_BIN_DIR=$REPO/.carry/croq/bin
OUT=${OUT:-$REPO/docs/results}
FILTERS=${GPU_TESTS:-"HopperGemmOnGpu.Differently* GpuRunner.Cheating* HopperGemmSpOnGpu.Promotion* GpuRunner.ScaledFp8* TritonGpu.* Fp8Gpu.*"}
LIMIT=${GPU_TEST_LIMIT_S:-150}
BUDGET=${GPU_TESTS_BUDGET_S:-330}
mkdir -p "$OUT/gpu-tests"
bin=.carry/croq/bin/croq_gpu_tests
[ -x "$bin" ] || { echo "gpu_tests_call: no $bin: run bench/gpu/pack_device.sh in a build with the GPU tests" >&2; exit 2; }
{
  echo "# GPU tests, $(date -u +%Y-%m-%dT%H:%MZ), croq $(cat .carry/croq/commit.txt 2>/dev/null)"
  echo
  echo "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"
  echo
  echo "| filter | passed | failed | skipped | seconds | exit |"
  echo "|---|---|---|---|---|---|"
} >"$OUT/gpu-tests.md"
linebuf=(stdbuf -oL -eL)
command -v stdbuf >/dev/null || linebuf=()
n=0
start=$SECONDS
for f in $FILTERS; do
  n=$((n + 1))
  if [ $((SECONDS - start)) -ge "$BUDGET" ]; then
    echo "| \`$f\` | not run: the call's budget (${BUDGET} s) was spent | | | | |" >>"$OUT/gpu-tests.md"
    continue
  fi
  left=$((BUDGET - (SECONDS - start)))
  limit=$((left < LIMIT ? left : LIMIT))
  t0=$SECONDS
  # Line-buffered, so that a test stopped by its limit leaves what it printed (stdbuf where present).
  timeout "$limit" "${linebuf[@]}" "$bin" --gtest_filter="$f" >"$OUT/gpu-tests/$n.log" 2>&1
  rc=$?
  passed=$(grep -c '^\[       OK \]' "$OUT/gpu-tests/$n.log")
  failed=$(grep -c '^\[  FAILED  \].*ms)$' "$OUT/gpu-tests/$n.log")
  skipped=$(grep -c '^\[  SKIPPED \].*ms)$' "$OUT/gpu-tests/$n.log")
  echo "| \`$f\` | $passed | $failed | $skipped | $((SECONDS - t0)) | $rc |" >>"$OUT/gpu-tests.md"
  echo "[gpu-tests] $f: passed $passed, failed $failed, skipped $skipped, $((SECONDS - t0)) s, exit $rc"
done
cat "$OUT/gpu-tests.md"
