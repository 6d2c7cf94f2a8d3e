#!/usr/bin/env bash
# Captures the profile fixtures of the classifier on a GPU machine (an H200), and times one
# `ncu --set full` of a 4096^3 candidate.
#
# What it does, each step printed and each independent of the others' success:
#  1. builds the standalone programs of bench/gpu/profile_kernels/ with nvcc (sm_90a, ~20 s with
#     16 cores; `--build-only` does just this, e.g. on a machine without a GPU, into
#     build/profile_kernels/, which the GPU run then uses when it has no nvcc);
#  2. profiles each with `ncu --nvtx --nvtx-include croq_candidate/ --clock-control none --set full`
#     (each program opens that NVTX range around its profiled launch only, as croq-gpu-runner
#     --mode profile does) and exports the raw page (`--page raw --csv`) and the long per-section
#     form of every section (`--page details --csv`);
#       memory_copy       streaming float4 copy, 1 GiB              expected memory_bound
#       latency_chase     dependent loads, 2 warps/SM               expected latency_bound
#       launch_tiny       2 CTAs x 64 threads                       expected launch_bound
#       compute_fma       FFMA chains in registers                  expected compute_bound
#       compute_mma       WMMA mma_sync loop in registers           expected compute_bound
#       mixed_fma_stream  5 kernels, K = 64..384 FMA per float4     one or more expected mixed
#       gemm_naive 4096   the ABI example's naive GEMM (4096^3)     recorded as measured
#       gemm_wmma 4096    tiled WMMA GEMM                           recorded as measured
#       gemm_cublas 4096  cublasGemmEx f16->f32, the baseline       expected compute_bound
#     The wall time of the gemm_naive and gemm_wmma profiles is the `ncu --set full` time of a
#     4096^3 candidate; when build/bin/croq and build/bin/croq-gpu-runner exist and the runner has
#     --mode profile, `croq profile` itself is timed on the naive ABI candidate as well.
#  3. SASS: cuobjdump -sass / -res-usage of gemm_naive, gemm_wmma and compute_mma, and the cuBLAS
#     kernel's SASS from its report (`ncu --page source --print-source sass --csv`);
#  4. classifies every CSV with build/bin/croq (when built) and writes a summary.
#
# Output ($OUT when set, else docs/results/profile_fixtures/): profile_fixtures.md (date, device,
# commit, timings, classes), ncu_csv.tgz (all CSVs), sass.tgz, classify.tgz (croq's JSON), log.txt.
# Budget: under 6 minutes on an H200 (each ncu run has a 150 s limit).
#
# Usage: bench/gpu/profile_fixtures.sh [--build-only]
set -u
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
SRC=$ROOT/bench/gpu/profile_kernels
OUT=${OUT:-$ROOT/docs/results/profile_fixtures}
WORK=${WORK:-/tmp/croq-profile-fixtures}
BIN=$WORK/bin
mkdir -p "$OUT" "$WORK/csv" "$WORK/rep" "$WORK/sass" "$WORK/classify" "$BIN"
LOG=$OUT/log.txt
: > "$LOG"
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
NCU=${NCU:-$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)}
CUOBJDUMP=${CUOBJDUMP:-$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)}
CROQ=${CROQ_BIN_DIR:-$ROOT/build/bin}/croq
START=$(date +%s)

say() { echo "[profile_fixtures $(($(date +%s) - START))s] $*" | tee -a "$LOG"; }
run_logged() {  # run_logged <seconds> <cmd...>: output to the log, status returned
  local limit=$1; shift
  echo "\$ $*" >> "$LOG"
  timeout "$limit" "$@" >> "$LOG" 2>&1
}

PROGRAMS="memory_copy latency_chase launch_tiny compute_fma compute_mma mixed_fma_stream gemm_naive gemm_wmma gemm_cublas"

# ---- 1. build -------------------------------------------------------------------------------
build_all() {
  local dest=$1
  mkdir -p "$dest"
  if [ ! -x "$NVCC" ]; then
    say "nvcc not found ($NVCC): cannot build"
    return 1
  fi
  say "building with $NVCC into $dest"
  local pids=()
  for p in $PROGRAMS; do
    local extra=""
    [ "$p" = gemm_cublas ] && extra="-lcublas"
    ( "$NVCC" -O3 -std=c++17 -lineinfo -gencode=arch=compute_90a,code=sm_90a -o "$dest/$p" "$SRC/$p.cu" $extra \
        > "$dest/$p.build.log" 2>&1 && echo "  built $p" || echo "  FAILED to build $p (see $dest/$p.build.log)" ) &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
  # The naive kernel as an ABI candidate (.so), for timing `croq profile` end to end.
  cat > "$dest/naive_abi.cu" <<'EOF'
#include <croq/kernel_abi.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
__global__ void naive(const __half* a, const __half* b, float* c, int64_t m, int64_t n, int64_t k) {
  int64_t i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m || j >= n) return;
  float acc = 0.f;
  for (int64_t p = 0; p < k; ++p) acc += __half2float(a[i * k + p]) * __half2float(b[p * n + j]);
  c[i * n + j] = acc;
}
CROQ_EXPORT croq_status croq_matmul(const croq_matmul_problem* p, const void* a, const void* b, void* c,
                                    void* workspace, size_t workspace_bytes, void* stream) {
  if (p->a_type != CROQ_F16 || p->c_type != CROQ_F32 || p->b_layout != CROQ_ROW_MAJOR) return CROQ_UNSUPPORTED;
  dim3 block(16, 16), grid((p->n + 15) / 16, (p->m + 15) / 16);
  naive<<<grid, block, 0, (cudaStream_t)stream>>>((const __half*)a, (const __half*)b, (float*)c, p->m, p->n, p->k);
  return cudaGetLastError() == cudaSuccess ? CROQ_OK : CROQ_LAUNCH_FAILED;
}
EOF
  "$NVCC" -O3 -std=c++17 -shared -Xcompiler -fPIC -I"$ROOT/include" -gencode=arch=compute_90a,code=sm_90a \
    -o "$dest/iter001_naive.so" "$dest/naive_abi.cu" > "$dest/naive_abi.build.log" 2>&1 \
    && echo "  built iter001_naive.so" || echo "  FAILED to build iter001_naive.so"
}

if [ "${1:-}" = "--build-only" ]; then
  build_all "$ROOT/build/profile_kernels" 2>&1 | tee -a "$LOG"
  exit 0
fi

say "date $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
DEVICE=$(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>/dev/null | head -1)
say "device: ${DEVICE:-unknown (nvidia-smi failed)}"
say "ncu: ${NCU:-not found} $( [ -n "$NCU" ] && "$NCU" --version 2>/dev/null | tail -1 )"
say "nvcc: $NVCC $( [ -x "$NVCC" ] && "$NVCC" --version 2>/dev/null | tail -1 )"

build_all "$BIN" 2>&1 | tee -a "$LOG"
for p in $PROGRAMS iter001_naive.so; do
  if [ ! -e "$BIN/$p" ] && [ -e "$ROOT/build/profile_kernels/$p" ]; then
    cp "$ROOT/build/profile_kernels/$p" "$BIN/$p" && say "using the prebuilt $p from build/profile_kernels"
  fi
done

# ---- 2. profiles ----------------------------------------------------------------------------
TIMES=$WORK/times.tsv
: > "$TIMES"
profile() {  # profile <name> <launch-count> <program> [args...]
  local name=$1 count=$2; shift 2
  local prog=$1; shift
  if [ ! -x "$BIN/$prog" ]; then
    say "skip $name: $prog was not built"
    return
  fi
  if [ -z "$NCU" ]; then
    say "skip $name: no ncu"
    return
  fi
  say "profile $name: ncu --set full on $prog $*"
  local t0=$(date +%s.%N)
  if run_logged 150 "$NCU" --nvtx --nvtx-include "croq_candidate/" --clock-control none --set full \
      --launch-count "$count" --target-processes all --export "$WORK/rep/$name.ncu-rep" --force-overwrite \
      "$BIN/$prog" "$@"; then
    local t1=$(date +%s.%N)
    local secs=$(awk "BEGIN{printf \"%.1f\", $t1 - $t0}")
    echo -e "$name\tncu --set full\t$secs" >> "$TIMES"
    say "  done in ${secs} s"
    LC_ALL=C "$NCU" --import "$WORK/rep/$name.ncu-rep" --page raw --csv > "$WORK/csv/${name}_raw.csv" 2>> "$LOG" \
      || say "  raw export FAILED"
    LC_ALL=C "$NCU" --import "$WORK/rep/$name.ncu-rep" --page details --csv > "$WORK/csv/${name}_details.csv" 2>> "$LOG" \
      || say "  details export FAILED"
    say "  exported $(wc -c < "$WORK/csv/${name}_raw.csv") + $(wc -c < "$WORK/csv/${name}_details.csv") bytes; kernels: $(cut -d, -f5 "$WORK/csv/${name}_raw.csv" | sed -n '3,$p' | tr '\n' ' ' | cut -c1-200)"
  else
    say "  ncu FAILED or timed out (rc=$?); see log.txt"
  fi
}

profile memory_copy 1 memory_copy 1024
profile latency_chase 1 latency_chase 2000
profile launch_tiny 1 launch_tiny
profile compute_fma 1 compute_fma 4096
profile compute_mma 1 compute_mma 8192
profile mixed_fma_stream 5 mixed_fma_stream 512
profile gemm_cublas 1 gemm_cublas 4096
profile gemm_wmma_4096 1 gemm_wmma 4096
profile gemm_naive_4096 1 gemm_naive 4096

# croq profile end to end, when the runner with --mode profile is there.
RUNNER=${CROQ_BIN_DIR:-$ROOT/build/bin}/croq-gpu-runner
if [ -x "$CROQ" ] && [ -x "$RUNNER" ] && [ -e "$BIN/iter001_naive.so" ] && [ -n "$NCU" ]; then
  WS=$WORK/ws
  KEY=matmul_f16fp32_4096x4096x4096
  mkdir -p "$WS/tuning/sm90_NVIDIA_H200/cuda/bin/$KEY/m1"
  cp "$BIN/iter001_naive.so" "$WS/tuning/sm90_NVIDIA_H200/cuda/bin/$KEY/m1/"
  say "croq profile (full set) of iter001_naive at 4096^3 through croq-gpu-runner"
  t0=$(date +%s.%N)
  if run_logged 200 "$CROQ" --root "$WS" --pretty profile --gpu sm90_NVIDIA_H200 --dsl cuda --shape-key $KEY --model m1 \
      --iter iter001_naive --round 1 --ncu "$NCU"; then
    t1=$(date +%s.%N)
    secs=$(awk "BEGIN{printf \"%.1f\", $t1 - $t0}")
    echo -e "croq_profile_naive_4096\tcroq profile --preset full\t$secs" >> "$TIMES"
    say "  croq profile done in ${secs} s"
    cp "$WS/tuning/sm90_NVIDIA_H200/cuda/perf/$KEY/m1/"*.csv "$WORK/csv/" 2>/dev/null
  else
    say "  croq profile FAILED (see log.txt): the runner may not have --mode profile yet"
  fi
else
  say "croq profile end to end skipped (need build/bin/croq, build/bin/croq-gpu-runner, iter001_naive.so, ncu); the ncu --set full times above stand for it"
fi

# ---- 3. SASS --------------------------------------------------------------------------------
if [ -x "$CUOBJDUMP" ]; then
  for p in gemm_naive gemm_wmma compute_mma iter001_naive.so; do
    [ -e "$BIN/$p" ] || continue
    say "cuobjdump -sass $p"
    "$CUOBJDUMP" -sass "$BIN/$p" > "$WORK/sass/${p%.so}.sass" 2>> "$LOG" || say "  FAILED"
    "$CUOBJDUMP" -res-usage "$BIN/$p" > "$WORK/sass/${p%.so}.res-usage.txt" 2>> "$LOG" || say "  -res-usage FAILED"
  done
else
  say "no cuobjdump: candidate SASS skipped"
fi
if [ -e "$WORK/rep/gemm_cublas.ncu-rep" ] && [ -n "$NCU" ]; then
  say "cuBLAS kernel SASS from its report (ncu source page)"
  LC_ALL=C timeout 120 "$NCU" --import "$WORK/rep/gemm_cublas.ncu-rep" --page source --print-source sass --csv \
    > "$WORK/sass/cublas_source_sass.csv" 2>> "$LOG" || say "  FAILED"
  say "  $(wc -l < "$WORK/sass/cublas_source_sass.csv") lines; head: $(head -c 300 "$WORK/sass/cublas_source_sass.csv" | tr '\n' ' ')"
fi

# ---- 4. classify ----------------------------------------------------------------------------
SUMMARY=$WORK/classes.tsv
: > "$SUMMARY"
if [ -x "$CROQ" ]; then
  for f in "$WORK"/csv/*_raw.csv "$WORK"/csv/ncu_*.csv; do
    [ -s "$f" ] || continue
    n=$(basename "$f" .csv)
    extra=""
    case "$n" in gemm_*|ncu_*) extra="--shape-key matmul_f16fp32_4096x4096x4096" ;; esac
    "$CROQ" --pretty classify --csv "$f" $extra > "$WORK/classify/$n.json" 2>> "$LOG"
    echo -e "$n\t$(python3 -c "import json,sys; d=json.load(open('$WORK/classify/$n.json')); print(d.get('kernel','')[:60], d.get('bottleneck'), d.get('confidence'), d.get('reason','')[:160], sep='\t')" 2>/dev/null)" >> "$SUMMARY"
    # Several kernels (the mixed sweep): classify each row.
    if [ "$n" = mixed_fma_stream_raw ]; then
      for k in 64 128 192 256 384; do
        "$CROQ" --pretty classify --csv "$f" --kernel "fma_stream<$k>" > "$WORK/classify/${n}_$k.json" 2>> "$LOG"
        echo -e "${n} K=$k\t$(python3 -c "import json; d=json.load(open('$WORK/classify/${n}_$k.json')); print(d.get('kernel','')[:60], d.get('bottleneck'), d.get('confidence'), d.get('reason','')[:160], sep='\t')" 2>/dev/null)" >> "$SUMMARY"
      done
    fi
  done
else
  say "build/bin/croq not built: classification skipped (the CSVs are classified when committed)"
fi

# ---- results --------------------------------------------------------------------------------
{
  echo "# Profile fixtures on $(echo "${DEVICE:-unknown}" | cut -d, -f1)"
  echo
  echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "- device: ${DEVICE:-unknown}"
  echo "- commit: $(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
  echo "- ncu: $( [ -n "$NCU" ] && "$NCU" --version 2>/dev/null | tail -1 )"
  echo "- capture: ncu --nvtx --nvtx-include croq_candidate/ --clock-control none --set full --target-processes all"
  echo
  echo "## Wall time of one full-set profile"
  echo
  echo "| capture | command | seconds |"
  echo "|---|---|---|"
  while IFS=$'\t' read -r a b c; do echo "| $a | $b | $c |"; done < "$TIMES"
  echo
  echo "## Classes"
  echo
  echo "| csv | kernel | bottleneck | confidence | reason |"
  echo "|---|---|---|---|---|"
  while IFS=$'\t' read -r a b c d e; do echo "| $a | \`$b\` | $c | $d | $e |"; done < "$SUMMARY"
} > "$OUT/profile_fixtures.md"
cat "$OUT/profile_fixtures.md"

tar -C "$WORK" -czf "$OUT/ncu_csv.tgz" csv 2>> "$LOG" && say "packed $(du -h "$OUT/ncu_csv.tgz" | cut -f1) of CSVs"
tar -C "$WORK" -czf "$OUT/sass.tgz" sass 2>> "$LOG" && say "packed SASS"
tar -C "$WORK" -czf "$OUT/classify.tgz" classify 2>> "$LOG"
say "finished in $(($(date +%s) - START)) s; results in $OUT"
exit 0
