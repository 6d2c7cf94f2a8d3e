#!/usr/bin/env bash
# Why the split tail of hopper_gemm_sp is slow (docs/results/gemm-sp-tail-h200.md): the f16 default at
# 4096x8192x8192 against its 5- and 8-slice tails, timed by the standalone driver (outside croq's
# runner: L2 flushed before each launch, median) and profiled by Nsight Compute (speed of light, warp
# stall reasons, memory workload, active cycles per SM, DRAM bytes), one launch each after two.
#   bash bench/gpu/gemm_sp_tail.sh build     (GEMM_CONFIGS=bench/gpu/gemm_configs_sptail.txt, the default)
#   bash bench/gpu/gemm_sp_tail_profile.sh   (on the GPU machine, .carry/configs carried)
# Writes driver-times.jsonl and ncu-<name>.csv to $OUT (else docs/results/).
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
KDIR=$REPO/.carry/configs
DEST=${OUT:-$REPO/docs/results}
KEY=${TAIL_KEY:-gemm_sp_f16_4096x8192x8192}
SHAPE=${KEY##*_}
mkdir -p "$DEST"
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for n in ${TAIL_NAMES:-default tail5 tail8}; do
  timeout 60 "$KDIR/gemm_sp_driver" "$KDIR/${KEY}__$n.so" f16 "$SHAPE" --seed 11 --label "$n" --time-ms 300 >> "$DEST/driver-times.jsonl"
done
for n in ${TAIL_PROFILE:-default tail5}; do
  timeout 120 "$NCU" --clock-control none --kernel-name regex:gemm_sp_kernel --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section LaunchStats \
    --metrics sm__cycles_active.min,sm__cycles_active.max,sm__cycles_active.avg,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,smsp__inst_executed.sum \
    --csv --page details "$KDIR/gemm_sp_driver" "$KDIR/${KEY}__$n.so" f16 "$SHAPE" --seed 11 --no-time \
    > "$DEST/ncu-$n.csv" 2> "$DEST/ncu-$n.err"
  echo "[tail-profile] $n: ncu exit $?"
done
cat "$DEST/driver-times.jsonl"
