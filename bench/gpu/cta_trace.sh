#!/usr/bin/env bash
# How unevenly the CTAs of the block-scaled FP8 kernel finish: runs each CROQ_TRACE=1 build of CONFIG_DIR for
# KEY (a list such as bench/gpu/gemm_configs_fp8bs46.txt, built with bench/gpu/gemm_configs.sh build) through
# croq's runner (TRACE_WARMUP warm-up launches, 30 by default so that the clocks have risen, then one launch),
# keeps the lines the kernel prints, and digests them with bench/gpu/cta_trace.py.
#   OUT=... CONFIG_DIR=.carry/bs46 bash bench/gpu/cta_trace.sh     (on the GPU machine)
# Writes $OUT/cta-trace.txt (the digest) and $OUT/cta-trace-raw.tar.gz (the lines).
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
source bench/gpu/common.sh
croq_executables
KDIR=${CONFIG_DIR:?CONFIG_DIR: the folder of built configurations}
DEST=${OUT:-$REPO/docs/results}
W=$(mktemp -d /tmp/croq-trace-XXXXXX)
mkdir -p "$DEST"
for so in "$KDIR"/*.so; do
  [ -f "$so" ] || continue
  n=$(basename "$so" .so)
  key=${n%%__*}
  case $key in
    blockscaled_e4m3bf16_*) ;;
    *) echo "[trace] $n: skipped (only blockscaled_e4m3bf16_ keys are run by this script)"; continue ;;
  esac
  shape=${key##*_}
  m=${shape%%x*}; r=${shape#*x}; nn=${r%%x*}; k=${r#*x}
  timeout 120 croq-gpu-runner --op blockscaled --m "$m" --n "$nn" --k "$k" --dtype e4m3bf16 --b-layout col \
    --mode profile --warmup "${TRACE_WARMUP:-30}" --seed 3 --candidate "$so" > "$W/$n.txt" 2>&1
  echo "[trace] $n: exit $? ($(grep -c croq-trace "$W/$n.txt") lines)"
done
python3 bench/gpu/cta_trace.py "$W"/*.txt > "$DEST/cta-trace.txt"
tar czf "$DEST/cta-trace-raw.tar.gz" -C "$W" .
cat "$DEST/cta-trace.txt"
