#!/usr/bin/env bash
# One H200 device call for the block-scaled FP8 kernel (issue 21) after its scales were staged in
# shared memory by default (SCALE_STAGE=1), and the first on the runner that compares the inputs
# with its own copy and refreshes all of B before each launch: GPU tests of the runner first
# (bench/gpu/gpu_tests_call.sh: the cheats, the scaled FP8 operators, the sparse promotion); then the
# default's neighbours by hand against cuBLASLt
# (bench/gpu/gemm_configs_fp8bs18.txt), then Nsight Compute's full set with SASS stall samples of the
# default and of cuBLASLt's kernel at 8192^3 (bench/gpu/fp8_bs_profile.sh), to see what is left.
#   bash bench/gpu/fp8_bs18_call.sh build   here: renders and compiles the list into .carry/bs18
#                                           (then pack: bench/gpu/pack_device.sh build && --bundle)
#   bash bench/gpu/fp8_bs18_call.sh run     there (.carry/bundle.tar.xz and .carry/bs18 carried,
#                                           unbundled): writes to $OUT gpu-tests.md, fp8bs18.md,
#                                           fp8-bs-profile.txt, sass-loops.txt and call-logs.tgz
# Knobs: BS18_GPU_TESTS (the filters; ' ' for none), BS18_TESTS_BUDGET_S (170), BS18_CONFIG_BUDGET_S (220),
# BS18_PROFILE (1; 0 leaves the profiles out).
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
if [ "${1:-run}" = build ]; then
  GEMM_CONFIGS=bench/gpu/gemm_configs_fp8bs18.txt CONFIG_DIR=$REPO/.carry/bs18 bash bench/gpu/gemm_configs.sh build
  exit $?
fi
FINAL=${OUT:-$REPO/docs/results}
W=$(mktemp -d /tmp/croq-bs18-XXXXXX)
mkdir -p "$W/configs" "$W/profile" "$FINAL"
START=$SECONDS
if [ -n "${BS18_GPU_TESTS:-GpuRunner.Cheating* GpuRunner.ScaledFp8* HopperGemmSpOnGpu.Promotion*}" ] && \
   [ "${BS18_GPU_TESTS:-x}" != " " ]; then
  echo "[bs18] GPU tests of the runner"
  OUT=$W GPU_TESTS="${BS18_GPU_TESTS:-GpuRunner.Cheating* GpuRunner.ScaledFp8* HopperGemmSpOnGpu.Promotion*}" \
    GPU_TEST_LIMIT_S=120 GPU_TESTS_BUDGET_S=${BS18_TESTS_BUDGET_S:-170} bash bench/gpu/gpu_tests_call.sh \
    > "$W/gpu-tests.log" 2>&1
  cp "$W/gpu-tests.md" "$FINAL/" 2>/dev/null
fi
echo "[bs18] $((SECONDS - START)) s: configurations by hand"
OUT=$W/configs CONFIG_DIR=$REPO/.carry/bs18 GEMM_CONFIGS=bench/gpu/gemm_configs_fp8bs18.txt CONFIG_REPORT=fp8bs18 \
  CONFIG_REPEATS=2 CONFIG_BUDGET_S=${BS18_CONFIG_BUDGET_S:-220} bash bench/gpu/gemm_configs.sh run \
  > "$W/configs.log" 2>&1
if [ "${BS18_PROFILE:-1}" = 1 ]; then
  echo "[bs18] $((SECONDS - START)) s: profiles"
  OUT=$W/profile CONFIG_DIR=$REPO/.carry/bs18 BSPROF_ONLY=ss bash bench/gpu/fp8_bs_profile.sh > "$W/profile.log" 2>&1
fi
echo "[bs18] $((SECONDS - START)) s: SASS loops"
for csv in /tmp/croq-bsprof-*/*-sass.csv; do
  [ -f "$csv" ] && python3 bench/gpu/sass_loop.py "$csv" >> "$W/sass-loops.txt" 2>&1
done
echo "[bs18] $((SECONDS - START)) s: done"
cp "$W/configs/fp8bs18.md" "$W/profile/fp8-bs-profile.txt" "$W/sass-loops.txt" "$FINAL/" 2>/dev/null
tar czf "$FINAL/call-logs.tgz" -C "$W" .  # profile/fp8-bs-profile.tgz: the CSV pages of both kernels
