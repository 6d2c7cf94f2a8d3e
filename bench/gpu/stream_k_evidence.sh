#!/usr/bin/env bash
# One device call on stream-K and the accumulator limits (about 7 minutes of device time):
#  1. the head-first stream-K kernels on the one-wave shapes against their tuned kernels and cuBLAS
#     (bench/gpu/gemm_configs_sk_onewave.txt; report gemm-configs-sk-onewave-h200);
#  2. the head-first stream-K kernel against the data-parallel one under ncu (bench/gpu/stream_k_probe.sh);
#  3. where the spills past the accumulator limits land (bench/gpu/spill_sass.sh);
#  4. those builds of 256x192 with split-K / stream-K timed against cuBLAS at 12288x8192x12288
#     (report gemm-configs-unchecked-h200).
# Built here first: bench/gpu/pack_device.sh build; GEMM_CONFIGS=bench/gpu/gemm_configs_sk_onewave.txt
# bash bench/gpu/gemm_configs.sh build; bash bench/gpu/stream_k_probe.sh build; bash bench/gpu/spill_sass.sh build.
# On the GPU machine, carry .carry/croq .carry/configs .carry/skprobe .carry/spills. Everything goes to
# $OUT/stream-k-evidence.tgz (the device returns at most 8 files); the reports are printed.
set -uo pipefail
cd "$(dirname "$0")/../.."
R=$(mktemp -d /tmp/croq-skev-XXXXXX)
OUT_FINAL=${OUT:-$(pwd)/docs/results}
mkdir -p "$OUT_FINAL"
OUT=$R EVIDENCE_PARTS=configs EVIDENCE_CALL_S=${SKEV_CONFIGS_S:-200} CONFIG_REPORT=gemm-configs-sk-onewave-h200 \
  bash bench/gpu/evidence_call.sh > "$R/evidence-call.log" 2>&1
OUT=$R timeout "${SKEV_PROBE_S:-200}" bash bench/gpu/stream_k_probe.sh run > "$R/stream-k-probe.log" 2>&1
OUT=$R timeout 60 bash bench/gpu/spill_sass.sh run > "$R/spill-sass.log" 2>&1
OUT=$R CONFIG_DIR=.carry/spills CONFIG_REPORT=gemm-configs-unchecked-h200 CONFIG_BUDGET_S=${SKEV_UNCHECKED_S:-150} \
  bash bench/gpu/gemm_configs.sh run > "$R/gemm-configs-unchecked-h200.log" 2>&1
tar czf "$OUT_FINAL/stream-k-evidence.tgz" -C "$R" .
for f in "$R"/*.md; do echo "== $(basename "$f")"; cut -c1-160 "$f"; done
