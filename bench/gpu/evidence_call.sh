#!/usr/bin/env bash
# One device call of GPU evidence, its parts side by side: the library baselines of the measurement
# evidence (bench/gpu/measure_evidence.sh, baselines only), the GEMM family's tunes
# (bench/gpu/gemm_evidence.sh, which resumes from .carry/gemm-ws/gemm-ws.tgz), the Hopper family's
# GPU test (croq_gpu_tests HopperGemmOnGpu.*) and hand-named configurations against cuBLAS
# (bench/gpu/gemm_configs.sh: GEMM_CONFIGS names the list; built on the device unless .carry/configs
# is carried; reported as $CONFIG_REPORT). Every GPU step of every part takes the device's lease,
# so the parts share the CPU (builds) while the GPU measures one thing at a time.
#
# Needs bench/gpu/pack_device.sh run first (executables in .carry/croq). Files go to $OUT: at most 8
# (measure-h200.md, measure-raw.tar.gz, measure-evidence.log, gemm-h200.md, gemm-ws.tgz,
# gemm-events.jsonl, gemm-evidence.log, gpu-test.log).
# Environment: EVIDENCE_PARTS (default "measure gemm"; any of measure gemm gputest configs),
# EVIDENCE_CALL_S (default 560: the whole call's budget in seconds; the parts stop before it).
# Usage: bash bench/gpu/evidence_call.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
PARTS=${EVIDENCE_PARTS:-"measure gemm"}
CALL_S=${EVIDENCE_CALL_S:-560}
export CROQ_HOME=$REPO PATH=$REPO/.carry/croq/bin:$PATH LD_LIBRARY_PATH=$REPO/.carry/croq/lib:${LD_LIBRARY_PATH:-}
export OUT=${OUT:-$REPO/docs/results}
has() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
echo "[evidence-call] parts: $PARTS; budget ${CALL_S}s; $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.limit --format=csv,noheader 2>&1)"
pids=()
if has measure; then
  EVIDENCE_BASELINE_ONLY=1 EVIDENCE_BUDGET_S=$((CALL_S - 30)) bash bench/gpu/measure_evidence.sh .carry/croq > /dev/null 2>&1 &
  pids+=($!)
fi
if has gputest; then
  CROQ_TEST_BIN_DIR=$REPO/.carry/croq/bin timeout $((CALL_S - 10)) .carry/croq/bin/croq_gpu_tests \
    --gtest_filter='HopperGemmOnGpu.*' > "$OUT/gpu-test.log" 2>&1 &
  pids+=($!)
fi
if has configs; then
  # Built on the device when not carried (nvcc is there; 22 configurations take about 15 s on its
  # cores), which keeps 1 MB per kernel out of the carry.
  ( [ -f .carry/configs/configs.tsv ] || bash bench/gpu/gemm_configs.sh build
    CONFIG_BUDGET_S=${CONFIG_BUDGET_S:-$((CALL_S - 60))} bash bench/gpu/gemm_configs.sh run ) > "$OUT/${CONFIG_REPORT:-gemm-configs-h200}.log" 2>&1 &
  pids+=($!)
fi
if has gemm; then
  GEMM_BUDGET_S=$((CALL_S - 60)) bash bench/gpu/gemm_evidence.sh
fi
for p in "${pids[@]}"; do wait "$p"; done
has measure && tail -40 "$OUT/measure-h200.md"
has gputest && tail -15 "$OUT/gpu-test.log"
has configs && tail -25 "$OUT/${CONFIG_REPORT:-gemm-configs-h200}.log"
echo "[evidence-call] done"
