#!/usr/bin/env bash
# The seeds' cublas_baseline.sh --dtype --m --n --k [--warmup --iters]: measures cuBLAS for the
# shape and prints {"tflops": ..., ...}. Needs a GPU (exit 7 without). The measurement is kept as
# a task of model "cublas-probe" (croq times the library with the candidates' harness).
source "$(dirname "${BASH_SOURCE[0]}")/croq_shim.sh"
dtype="" m="" n="" k="" extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --dtype) dtype="$2"; shift 2 ;;
    --m) m="$2"; shift 2 ;;
    --n) n="$2"; shift 2 ;;
    --k) k="$2"; shift 2 ;;
    --warmup|--iters) extra+=("$1" "$2"); shift 2 ;;
    *) echo "cublas_baseline: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -z "$dtype" ] || [ -z "$m" ] || [ -z "$n" ] || [ -z "$k" ]; then
  echo "cublas_baseline: needs --dtype --m --n --k" >&2
  exit 2
fi
require_gpu cublas_baseline
croq gpu contention --kill >/dev/null 2>&1 || true
croq baseline --dsl cuda --shape-key "matmul_${dtype}_${m}x${n}x${k}" --model cublas-probe \
  --task-uid "cublas-probe-${dtype}-${m}x${n}x${k}" --dtype "$dtype" --m "$m" --n "$n" --k "$k" "${extra[@]}"
