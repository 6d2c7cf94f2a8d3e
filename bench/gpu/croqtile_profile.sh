#!/usr/bin/env bash
# Why the CroqTile dense kernel stays at 0.82 x cuBLAS at 4096^3 (0.90 at 8192^3) where the CUDA family's
# same 128x256 tile reaches 0.985 (docs/results/croqtile-h200.md), in one device call:
#   1. the CUDA family's 128x256 persistent tile with its TMA epilogue and with its register epilogue
#      against cuBLAS (bench/gpu/gemm_configs_ctprof.txt, bench/gpu/gemm_configs.sh);
#   2. the CroqTile family's best configuration (PERSISTENT 1, REGCTRL 1, the rest its default) measured
#      by croq's runner at 4096^3 and 8192^3, each after cuBLAS in the same process order;
#   3. Nsight Compute's full set with SASS stall samples of one launch of the CroqTile kernel and of the
#      CUDA family's hp2 at 4096^3; bench/gpu/sass_loop.py digests each one's hot loop.
#   bash bench/gpu/croqtile_profile.sh build    (here: choreo installed, croq built; writes .carry/ctprof)
#   bash bench/gpu/croqtile_profile.sh run      (the GPU machine, .carry/bundle.tar.xz unbundled, .carry/ctprof carried)
#   bash bench/gpu/croqtile_profile.sh ksweep   (the same machine: both kernels and cuBLAS at 4096x4096xK, K in CT_KS;
#                                                CT_EXTRA="NAME ...": CroqTile kernels in .carry/ctprof/NAME.so too)
# Writes $OUT/ctprof.md (or docs/results/), ctprof-configs.md and the digests.
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
KDIR=$REPO/.carry/ctprof
if [ "${1:-run}" = build ]; then
  GEMM_CONFIGS=bench/gpu/gemm_configs_ctprof.txt CONFIG_DIR=$KDIR bash bench/gpu/gemm_configs.sh build || exit 1
  W=$(mktemp -d /tmp/croq-ctprof-XXXXXX)
  # The croqtile_gemm family's rendering of its best 4096^3 configuration (croqtile-h200.md, iter009).
  printf '%s\n' '// croq-kernel: {"dtypes": ["f16f32"], "family": "croqtile_gemm"}' '#define CROQ_IN_T f16' \
    '#define CROQ_OUT_T f32' '#define CROQ_WARP_M 64' '#define CROQ_WARP_N 256' '#define CROQ_CONSUMERS 2' \
    '#define CROQ_TILE_K 64' '#define CROQ_STAGES 4' '#define CROQ_SWIZ 128' '#define CROQ_MMA_DEPTH 1' \
    '#define CROQ_MMA_RUN 2' '#define CROQ_REGCTRL 1' '#define CROQ_PERSISTENT 1' '#define CROQ_GROUP 8' \
    '#define CROQ_EPILOGUE 0' '#define CROQ_PRODUCER_REGS 40' '#define CROQ_CONSUMER_REGS 232' \
    '#define CROQ_NUM_SMS 132' > "$W/ct_p1r1.co"
  cat kernels/croqtile/matmul/family/gemm_sm90.co.in >> "$W/ct_p1r1.co"
  export CROQ_GPU=sm90_NVIDIA_H200
  t=(--dsl croqtile --shape-key matmul_f16fp32_4096x4096x4096 --model ctprof)
  build/bin/croq --root "$W" -q prepare "${t[@]}" --from "$W/ct_p1r1.co" --tag p1r1 > /dev/null || exit 1
  build/bin/croq --root "$W" -q build "${t[@]}" --iter 1 > "$W/build.json" || { cat "$W/build.json"; exit 1; }
  cp "$(find "$W/tuning/sm90_NVIDIA_H200" -name 'iter001_p1r1.so' | head -1)" "$KDIR/ct_p1r1.so"
  cp "$W/ct_p1r1.co" "$KDIR/"
  ls -la "$KDIR"
  exit 0
fi
source bench/gpu/common.sh
croq_executables
DEST=${OUT:-$REPO/docs/results}
W=$(mktemp -d /tmp/croq-ctprof-XXXXXX)
if [ "${1:-run}" = ksweep ]; then
  # Time against K at M = N = 4096 for both kernels (and cuBLAS): the slope is the main loop's cost per
  # K step, the intercept what a tile costs besides (prologue, drains at its end, epilogue).
  for k in ${CT_KS:-1024 2048 4096 8192 16384}; do
    for rep in 1 2; do
      # CT_EXTRA: more CroqTile kernels built into $KDIR as NAME.so (B "row.col")
      for who in cublas ct_p1r1 hp2 ${CT_EXTRA:-}; do
        case $who in
          cublas) args=(--library cublas --b-layout col) ;;
          hp2) args=(--candidate "$KDIR/matmul_f16fp32_4096x4096x4096__hp2.so" --b-layout row) ;;
          *) args=(--candidate "$KDIR/$who.so" --b-layout col) ;;
        esac
        croq-gpu-runner --op matmul --m 4096 --n 4096 --k "$k" --dtype f16f32 --seed 3 --out "$W/$who-$k-$rep.json" \
          "${args[@]}" > /dev/null 2> "$W/$who-$k-$rep.err"
        python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[2], d.get("verdict"), d.get("tflops"), (d.get("timing") or {}).get("median_ms"))' \
          "$W/$who-$k-$rep.json" "$who $k $rep" 2>/dev/null || echo "$who $k $rep: no measurement ($(tail -1 "$W/$who-$k-$rep.err"))"
      done
    done
  done | tee "$DEST/ctprof-ksweep.txt"
  tar czf "$DEST/ctprof-ksweep-raw.tgz" -C "$W" .
  exit 0
fi
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
# 1.
CONFIG_DIR=$KDIR GEMM_CONFIGS=bench/gpu/gemm_configs_ctprof.txt CONFIG_REPORT=ctprof-configs CONFIG_REPEATS=2 \
  bash bench/gpu/gemm_configs.sh run > "$W/configs.log" 2>&1
tail -8 "$W/configs.log"
# 2.
run() {  # name, n, runner arguments...
  local name=$1 n=$2; shift 2
  croq-gpu-runner --op matmul --m "$n" --n "$n" --k "$n" --dtype f16f32 --b-layout col --seed 3 \
    --out "$W/$name-$n.json" "$@" > /dev/null 2> "$W/$name-$n.err"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[2], d.get("verdict"), d.get("tflops"))' \
    "$W/$name-$n.json" "$name $n" 2>/dev/null || echo "$name $n: no measurement ($(tail -1 "$W/$name-$n.err"))"
}
{
  for n in 4096 8192; do
    for rep in 1 2; do
      run cublas "$n" --library cublas
      run ct_p1r1 "$n" --candidate "$KDIR/ct_p1r1.so"
    done
  done
} | tee "$W/runner.txt"
# 3.
profile() {  # name, runner arguments...
  local name=$1; shift
  timeout 200 "$NCU" --nvtx --nvtx-include croq_candidate/ --clock-control none --set full --import-source yes \
    --launch-count 1 --target-processes all --export "$W/$name" --force-overwrite \
    croq-gpu-runner --op matmul --m 4096 --n 4096 --k 4096 --dtype f16f32 --mode profile --seed 3 "$@" > "$W/$name-ncu.log" 2>&1
  echo "[ctprof] $name: ncu exit $?"
  "$NCU" --import "$W/$name.ncu-rep" --page details --csv > "$W/$name-details.csv" 2>> "$W/$name-ncu.log"
  "$NCU" --import "$W/$name.ncu-rep" --page source --csv --print-source sass > "$W/$name-sass.csv" 2>> "$W/$name-ncu.log"
  python3 bench/gpu/sass_loop.py "$W/$name-sass.csv" > "$DEST/ctprof-$name-loop.txt" 2>&1
}
profile ct_p1r1 --candidate "$KDIR/ct_p1r1.so" --b-layout col
profile hp2 --candidate "$KDIR/matmul_f16fp32_4096x4096x4096__hp2.so" --b-layout row
python3 - "$W" > "$DEST/ctprof-details.txt" <<'PY'
import csv, os, sys
w = sys.argv[1]
want = ["Duration", "Elapsed Cycles", "SM Frequency", "Compute (SM) Throughput", "Memory Throughput", "L1/TEX Cache Throughput",
        "L2 Cache Throughput", "DRAM Throughput", "Issue Slots Busy", "No Eligible", "Executed Instructions",
        "Registers Per Thread", "Warp Cycles Per Issued Instruction"]
for name in ("ct_p1r1", "hp2"):
    try:
        rows = list(csv.DictReader(open(os.path.join(w, f"{name}-details.csv"))))
    except Exception as e:
        print(f"== {name}: unreadable ({e})"); continue
    print(f"== {name}: {rows[0].get('Kernel Name', '')[:100] if rows else ''}")
    seen = set()
    for r in rows:
        m = r.get("Metric Name", "")
        if (m in want or m.startswith("Stall")) and m not in seen:
            seen.add(m); print(f"  {m[:50]:50} {r.get('Metric Value', '')} {r.get('Metric Unit', '')}")
PY
cp "$W/runner.txt" "$W/configs.log" "$DEST/" 2>/dev/null
tar czf "$DEST/ctprof-raw.tgz" -C "$W" --exclude='*.ncu-rep' --exclude='*-sass.csv' .
cat "$DEST/ctprof-details.txt"
