#!/usr/bin/env bash
# One device call for the block-scaled FP8 kernel after its k blocks run in straight-line groups of
# eight (781f334): the default's neighbours by hand against cuBLASLt (bench/gpu/gemm_configs_fp8bs27.txt),
# then Nsight Compute's full set with SASS stall samples of the default and of cuBLASLt's kernel at
# 8192^3 (bench/gpu/fp8_bs_profile.sh) and the consumer loops' digest (bench/gpu/sass_loop.py).
#   bash bench/gpu/fp8_bs27_call.sh build   here: renders and compiles the list into .carry/bs27
#                                           (then pack: bench/gpu/pack_device.sh build && --bundle)
#   bash bench/gpu/fp8_bs27_call.sh run     there (.carry/bundle.tar.xz and .carry/bs27 carried,
#                                           unbundled): writes to $OUT fp8bs27.md, configs.log,
#                                           fp8-bs-profile.txt, sass-loops.txt and profile-logs.tgz
# Knobs: BS27_CONFIG_BUDGET_S (150), BS27_PROFILE (1; 0 leaves the profiles out).
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
KDIR=$REPO/.carry/bs27
if [ "${1:-run}" = build ]; then
  GEMM_CONFIGS=bench/gpu/gemm_configs_fp8bs27.txt CONFIG_DIR=$KDIR bash bench/gpu/gemm_configs.sh build
  exit $?
fi
FINAL=${OUT:-$REPO/docs/results}
W=$(mktemp -d /tmp/croq-bs27-XXXXXX)
mkdir -p "$W/configs" "$W/profile" "$FINAL"
START=$SECONDS
echo "[bs27] configurations by hand"
OUT=$W/configs CONFIG_DIR=$KDIR GEMM_CONFIGS=bench/gpu/gemm_configs_fp8bs27.txt CONFIG_REPORT=fp8bs27 \
  CONFIG_REPEATS=3 CONFIG_BUDGET_S=${BS27_CONFIG_BUDGET_S:-150} bash bench/gpu/gemm_configs.sh run \
  > "$FINAL/configs.log" 2>&1
cp "$W/configs/fp8bs27.md" "$FINAL/" 2>/dev/null
if [ "${BS27_PROFILE:-1}" = 1 ]; then
  echo "[bs27] $((SECONDS - START)) s: profiles"
  OUT=$W/profile CONFIG_DIR=$KDIR BSPROF_ONLY=ss bash bench/gpu/fp8_bs_profile.sh > "$W/profile.log" 2>&1
  for csv in /tmp/croq-bsprof-*/*-sass.csv; do
    [ -f "$csv" ] && python3 bench/gpu/sass_loop.py "$csv" >> "$FINAL/sass-loops.txt" 2>&1
  done
  cp "$W/profile/fp8-bs-profile.txt" "$FINAL/" 2>/dev/null
  tar czf "$FINAL/profile-logs.tgz" -C "$W" profile.log profile 2>/dev/null
fi
echo "[bs27] $((SECONDS - START)) s: done"
