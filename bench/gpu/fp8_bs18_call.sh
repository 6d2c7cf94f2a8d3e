#!/usr/bin/env bash
# One H200 device call for the block-scaled FP8 kernel (issue 21) after its scales were staged in
# shared memory by default (SCALE_STAGE=1): the default's neighbours by hand against cuBLASLt
# (bench/gpu/gemm_configs_fp8bs18.txt), then Nsight Compute's full set with SASS stall samples of the
# default and of cuBLASLt's kernel at 8192^3 (bench/gpu/fp8_bs_profile.sh), to see what is left.
#   bash bench/gpu/fp8_bs18_call.sh build   here: renders and compiles the list into .carry/bs18
#                                           (then pack: bench/gpu/pack_device.sh build && --bundle)
#   bash bench/gpu/fp8_bs18_call.sh run     there (.carry/bundle.tar.xz and .carry/bs18 carried,
#                                           unbundled): writes to $OUT fp8bs18.md, fp8-bs-profile.txt,
#                                           sass-loops.txt and call-logs.tgz
# Knobs: BS18_CONFIG_BUDGET_S (220).
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
echo "[bs18] configurations by hand"
OUT=$W/configs CONFIG_DIR=$REPO/.carry/bs18 GEMM_CONFIGS=bench/gpu/gemm_configs_fp8bs18.txt CONFIG_REPORT=fp8bs18 \
  CONFIG_REPEATS=2 CONFIG_BUDGET_S=${BS18_CONFIG_BUDGET_S:-220} bash bench/gpu/gemm_configs.sh run \
  > "$W/configs.log" 2>&1
echo "[bs18] $((SECONDS - START)) s: profiles"
OUT=$W/profile CONFIG_DIR=$REPO/.carry/bs18 BSPROF_ONLY=ss bash bench/gpu/fp8_bs_profile.sh > "$W/profile.log" 2>&1
echo "[bs18] $((SECONDS - START)) s: SASS loops"
for csv in /tmp/croq-bsprof-*/*-sass.csv; do
  [ -f "$csv" ] && python3 bench/gpu/sass_loop.py "$csv" >> "$W/sass-loops.txt" 2>&1
done
echo "[bs18] $((SECONDS - START)) s: done"
cp "$W/configs/fp8bs18.md" "$W/profile/fp8-bs-profile.txt" "$W/sass-loops.txt" "$FINAL/" 2>/dev/null
tar czf "$FINAL/call-logs.tgz" -C "$W" .  # profile/fp8-bs-profile.tgz: the CSV pages of both kernels
