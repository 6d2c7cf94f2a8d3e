#!/usr/bin/env bash
# Device calls for the block-scaled FP8 kernel (issue 21): does a sixth stage close the last 5-6 % to
# cuBLASLt? cuBLASLt's block-scaled kernel runs 6 stages of 128x128 (BK 128); the family's default
# has 5, as the staged scales leave no room for a sixth beside the TMA epilogue's two 8 KB chunk
# slots per consumer. One slot per consumer (the template macro CROQ_EPI_SLOTS=1) frees 16 KB, and 6
# stages fit.
#   bash bench/gpu/fp8_bs20_call.sh build    here: renders and compiles the hand-named configurations
#                                            of bench/gpu/gemm_configs_fp8bs20.txt into .carry/bs20
#                                            (then pack: bench/gpu/pack_device.sh build && --bundle)
#   bash bench/gpu/fp8_bs20_call.sh configs  there (.carry/bundle.tar.xz and .carry/bs20 carried,
#                                            unbundled): the configurations against cuBLASLt's
#                                            block-scaled GEMM, repeats alternating with the baseline
#                                            (BS20_CONFIG_BUDGET_S, 170 s); writes $OUT/fp8bs20.md
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
KDIR=$REPO/.carry/bs20
LIST=bench/gpu/gemm_configs_fp8bs20.txt
case "${1:-}" in
  build)
    GEMM_CONFIGS=$LIST CONFIG_DIR=$KDIR bash bench/gpu/gemm_configs.sh build
    ;;
  configs)
    OUT=${OUT:-$REPO/docs/results} CONFIG_DIR=$KDIR GEMM_CONFIGS=$LIST CONFIG_REPORT=fp8bs20 \
      CONFIG_REPEATS=${BS20_REPEATS:-2} CONFIG_BUDGET_S=${BS20_CONFIG_BUDGET_S:-170} bash bench/gpu/gemm_configs.sh run
    ;;
  *)
    echo "usage: bash bench/gpu/fp8_bs20_call.sh build | configs" >&2
    exit 2
    ;;
esac
