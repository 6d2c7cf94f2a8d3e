#!/usr/bin/env bash
# The split tail of the hopper_gemm_sp family (SPLIT_TAIL=1: only the partly filled last wave's tiles
# split in k) on the GPU, in one device call:
#   1. correctness: bench/gpu/gemm_sp_driver.cu checks the tail kernels of
#      bench/gpu/gemm_configs_sptail.txt on shapes that are not multiples of any tile, where the
#      tail really splits (2552x7673x1032: 300 units of 2x1 clusters of 128x256 on 66 clusters, the
#      last 36 split; 4096x4100x520: 272 units, the last 8) and where every tile is split
#      (1000x3000x2048: 48 units, under a wave); two NaN-poisoned launches, every element;
#   2. speed: bench/gpu/gemm_configs.sh run over the same list (croq measure of each configuration
#      against croq baseline, i.e. cuSPARSELt, in the same run, CONFIG_REPEATS times alternating).
# Writes gemm-sp-tail-h200.md, gemm-sp-tail-checks.jsonl and the raw archive to $OUT (else
# docs/results/). Another list: GEMM_CONFIGS=FILE, CONFIG_REPORT=NAME, and the configurations the
# driver checks SP_CHECK_NAMES (a glob on the names, default tail*) on SP_CHECK_SHAPES (MxNxK,...).
#   bash bench/gpu/gemm_sp_tail.sh build    renders and compiles the list and the driver into .carry/configs
#   bash bench/gpu/gemm_sp_tail.sh          (on the GPU machine, .carry carried) checks, then measures
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
export GEMM_CONFIGS=${GEMM_CONFIGS:-$REPO/bench/gpu/gemm_configs_sptail.txt}
KDIR=$REPO/.carry/configs
DEST=${OUT:-$REPO/docs/results}
if [ "${1:-run}" = build ]; then
  bash bench/gpu/gemm_configs.sh build || exit 1
  /usr/local/cuda/bin/nvcc -O2 -std=c++17 -I"$REPO/include" -gencode=arch=compute_90a,code=sm_90a \
    bench/gpu/gemm_sp_driver.cu -o "$KDIR/gemm_sp_driver" -ldl || exit 1
  exit 0
fi
mkdir -p "$DEST"
REPORT=${CONFIG_REPORT:-gemm-sp-tail-h200}
checks=$DEST/${REPORT%-h200}-checks.jsonl
: > "$checks"
for so in "$KDIR"/*__${SP_CHECK_NAMES:-tail*}.so; do
  [ -f "$so" ] || continue
  name=$(basename "$so" .so)
  case $name in gemm_sp_e4m3fp16_*) dt=e4m3; shapes=${SP_CHECK_SHAPES:-4096x4100x520,2552x7673x1032,1000x3000x2048} ;;
    gemm_sp_f16_*) dt=f16; shapes=${SP_CHECK_SHAPES:-2552x7673x1032,1000x3000x2048,4096x4100x520} ;; *) continue ;; esac
  timeout 120 "$KDIR/gemm_sp_driver" "$so" "$dt" "$shapes" --no-time --seed 11 --label "$name" >> "$checks" 2>> "${checks%.jsonl}.err"
  echo "[sp-tail] $name: exit $? $(grep -c '"status":"PASS"' "$checks") PASS so far"
done
CONFIG_REPORT=$REPORT bash bench/gpu/gemm_configs.sh run
