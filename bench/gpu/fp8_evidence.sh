#!/usr/bin/env bash
# H200 evidence for FP8 GEMM (issue 21), one self-contained call of at most ~9 minutes:
#   1. the GPU tests of the scaled operators through the runner (croq_gpu_tests GpuRunner.ScaledFp8*:
#      the naive kernel and the baselines pass with per-tensor and block scales on odd shapes);
#   2. `croq tune` with the hopper_gemm family of the block-scaled keys (promotion per 128-deep k
#      block) and of dense e4m3->bf16 (per-tensor scales) at 4096^3, 8192^3 and as many of the 14
#      typical shapes as the time allows, all in one tune (--jobs: builds overlap, measurements take
#      turns on the GPU); each task's baseline is its `croq baseline` (dense: cuBLASLt FP8 with the
#      scales, best of its heuristic's algorithms; block-scaled: cuBLASLt's block-scaled modes,
#      VEC128_32F for A and BLK128x128_32F for B, each algorithm in the four layouts of the scale
#      tensors (the ones cuBLASLt does not read fail their check), or croq's reference marked not
#      library-grade where cuBLASLt offers none on sm_90);
#   3. a sample of the hopper_gemm e4m3 and block-scaled configurations built with nvcc and
#      verified (croq_gpu_tests Fp8Gpu.*), in the time left;
# then writes $OUT/fp8-h200.md (per shape: anchor TFLOPS and library, croq's best, ratio,
# configuration, round, CV) and $OUT/fp8-raw.tgz (every result, measurement, idea log and log).
#
# Two modes:
#   bash bench/gpu/fp8_evidence.sh build   here (CUDA toolkit, no GPU): builds croq, the GPU runner,
#                                          croq_gpu_tests and the test kernels, packs them into
#                                          .carry/croq (bench/gpu/pack_device.sh)
#   bash bench/gpu/fp8_evidence.sh [run]   on the GPU machine, with .carry/croq carried
# Knobs: FP8_BUDGET_S (default 500), FP8_ROUNDS (3), FP8_JOBS (8), FP8_SHAPES (dense keys),
# FP8_BLOCK_SHAPES (block-scaled keys), FP8_TESTS (1; 0 skips the GPU tests of steps 1 and 3 and
# gives their time to the tune).
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
MODE=${1:-run}

if [ "$MODE" = build ]; then
  set -e
  BUILD=${CROQ_BUILD:-build}
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
  cmake --build "$BUILD" -j"${JOBS:-2}" --target croq croq-gpu-runner croq_gpu_tests croq_test_kernel_set
  bash bench/gpu/pack_device.sh "$BUILD"
  exit 0
fi

source bench/gpu/common.sh
croq_executables
START=$(date +%s)
BUDGET_S=${FP8_BUDGET_S:-500}
DEST=${OUT:-$REPO/docs/results/fp8-run}
mkdir -p "$DEST"
WORK=$(mktemp -d /tmp/croq-fp8-XXXXXX)
RAW=$WORK/raw
mkdir -p "$RAW"
exec > >(tee "$RAW/fp8-evidence.log") 2>&1
say() { echo "[fp8 $(($(date +%s) - START))s] $*"; }
left() { echo $((BUDGET_S - ($(date +%s) - START))); }
COMMIT=$(cat "$REPO/.carry/croq/commit.txt" 2>/dev/null || git rev-parse --short=12 HEAD 2>/dev/null)
say "croq: $(croq --version 2>&1) from $BIN (commit $COMMIT)"
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,memory.used,utilization.gpu --format=csv 2>&1 | tee "$RAW/nvidia-smi.csv"
WS=$WORK/ws
mkdir -p "$WS/tuning"
export CROQ_LEASE_DIR=$WORK/leases
mkdir -p "$CROQ_LEASE_DIR"

BLOCK=${FP8_BLOCK_SHAPES:-"blockscaled_e4m3bf16_4096x7168x7168 blockscaled_e4m3bf16_8192x8192x8192"}
TYPICAL="768x768x768 12288x12288x12288 512x8192x8192 16384x8192x8192 4096x1024x8192 4096x32768x8192
4096x8192x512 4096x8192x32768 1024x1024x4096 12288x12288x4096 1024x8192x1024 12288x8192x12288 4096x1024x1024
12288x4096x4096"
DENSE=${FP8_SHAPES:-"matmul_e4m3bf16_4096x4096x4096 matmul_e4m3bf16_8192x8192x8192 $(for s in $TYPICAL; do printf 'matmul_e4m3bf16_%s ' "$s"; done)"}

# ---- 1. the scaled operators through the runner (no nvcc: seconds) ---------------------------------
run_tests() {  # filter, timeout, log
  if [ -x "$BIN/croq_gpu_tests" ]; then
    say "croq_gpu_tests --gtest_filter=$1 (at most $2 s)"
    CROQ_TEST_BIN_DIR=$BIN timeout "$2" "$BIN/croq_gpu_tests" --gtest_filter="$1" > "$RAW/$3" 2>&1
    echo "exit $?" >> "$RAW/$3"
    grep -E "^\[( +OK|  FAILED|  SKIPPED|  PASSED) |Failure|Expected|Which is|exit " "$RAW/$3" | head -40
  else
    say "croq_gpu_tests not packed: $1 not run"
  fi
}
TESTS=${FP8_TESTS:-1}
[ "$TESTS" = 0 ] && say "FP8_TESTS=0: the GPU tests are not run"
[ "$TESTS" = 0 ] || run_tests 'GpuRunner.ScaledFp8*' 90 fp8-runner-tests.log

# ---- 2. croq tune: block-scaled first, then dense e4m3 -> bf16 --------------------------------------
# Each task's `croq baseline` comes first (block-scaled: cuBLASLt's block-scaled modes or croq's
# reference marked not library-grade; dense: cuBLASLt FP8 with the per-tensor scales).
RESERVE=$([ "$TESTS" = 0 ] && echo 20 || echo 130)  # seconds kept for step 3 and the summary
if [ "$(left)" -gt $((RESERVE + 20)) ]; then
  T=$(( $(left) - RESERVE ))
  say "croq tune $(echo $BLOCK $DENSE | wc -w) shapes, --rounds ${FP8_ROUNDS:-3} --jobs ${FP8_JOBS:-8}, at most $T s"
  timeout --signal=TERM --kill-after=20 "$T" croq --root "$WS" tune $BLOCK $DENSE --dsl cuda \
    --rounds "${FP8_ROUNDS:-3}" --seed 1 --jobs "${FP8_JOBS:-8}" --profile-preset quick \
    > "$RAW/tune-summary.json" 2> "$RAW/tune-events.jsonl"
  say "croq tune exit $?"
fi

# ---- 3. a sample of the family's e4m3 configurations built and verified (nvcc) ---------------------
if [ "$TESTS" != 0 ] && [ "$(left)" -gt 40 ]; then run_tests 'Fp8Gpu.*' $(( $(left) - 25 )) fp8-family-tests.log; fi

# ---- the summary ---------------------------------------------------------------------------------
python3 - "$WS" "$RAW" "$COMMIT" "$BLOCK" "$DENSE" > "$DEST/fp8-h200.md" <<'PY'
import json, sys, glob, os, subprocess, datetime
ws, raw, commit, block, dense = sys.argv[1:6]
def load(p):
    try:
        return json.load(open(p))
    except Exception:
        return None
try:
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip() or "no GPU"
except OSError:
    gpu = "no GPU (nvidia-smi not found)"
def measurement(rec):
    f = (rec.get("measurement") or {}).get("file") if isinstance(rec.get("measurement"), dict) else rec.get("measurement")
    return load(os.path.join(ws, f)) if f else None
def cv(m):
    return ("%.2f" % (100 * m["timing"]["cv"])) if m and (m.get("timing") or {}).get("cv") is not None else "-"
print("# FP8 GEMM (issue 21)\n")
print(f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M')} UTC; device: {gpu}; commit: {commit}")
print("- TFLOPS count 2·M·N·K; medians, L2 flushed, croq's default timing; the anchor is each task's `croq baseline`.\n")
print("## Block-scaled (A per 1x128, B per 128x128, f32 scales, bf16 out)\n")
print("| shape | anchor library | anchor TFLOPS | CV % | library-grade | cuBLASLt variants passed / tried | scale layout that passed | croq best TFLOPS | ratio | round | configuration | note |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for key in block.split():
    shape = key.split("_")[-1]
    logs = glob.glob(f"{ws}/tuning/*/cuda/logs/{key}/croq-search/idea-log.jsonl")
    recs = [json.loads(l) for l in open(logs[0]) if l.strip()] if logs else []
    base = next((r for r in recs if r.get("decision") == "BASELINE"), None)
    m = measurement(base) if base else None
    if not m:
        print(f"| {shape} | no baseline ({'not run' if not logs else 'failed'}) | | | | | | | | | | |")
        continue
    lib = (m or {}).get("library") or {}
    res = {"library": (lib.get("algo") or {}).get("library"), "tflops": m.get("tflops"), "algo": lib.get("algo") or {}}
    scr = lib.get("screened") or []
    lt = [s for s in scr if (s.get("algo") or {}).get("library") == "cublasLt"]
    ok = [s for s in lt if s.get("tflops")]
    layouts = sorted({(s.get("algo") or {}).get("scale_layout") for s in ok})
    algo = res.get("algo") or {}
    grade = "no (croq reference)" if algo.get("not_library_grade") else "yes"
    errs = sorted({str(s.get("error"))[:80] for s in lt if s.get("error")})
    best, rnd, cfg = None, "", ""
    if recs:
        keeps = [r for r in recs if r.get("decision") == "KEEP" and r.get("tflops")]
        if keeps:
            b = max(keeps, key=lambda r: r["tflops"])
            best, rnd = b["tflops"], b.get("round")
            cfg = " ".join(f"{k}={v}" for k, v in sorted((b.get("params") or {}).items()))
    anchor = res.get("tflops") or 0
    print(f"| {shape} | {res.get('library')} | {anchor:.1f} | {cv(m)} | {grade} | {len(ok)}/{len(lt)} | "
          f"{layouts} | {'-' if best is None else f'{best:.1f}'} | {'-' if best is None or not anchor else f'{best / anchor:.3f}'} | "
          f"{rnd} | {cfg} | {'; '.join(errs)[:200].replace('|', '/')} |")
print("\n## Dense e4m3 -> bf16 with per-tensor scales (hopper_gemm family, `croq tune`)\n")
print("| shape | cuBLASLt TFLOPS | CV % | best croq TFLOPS | CV % | ratio | found at round | rounds | configuration |")
print("|---|---|---|---|---|---|---|---|---|")
ratios = []
for key in dense.split():
    shape = key.split("_")[-1]
    logs = glob.glob(f"{ws}/tuning/*/cuda/logs/{key}/croq-search/idea-log.jsonl")
    if not logs:
        print(f"| {shape} | not run (time) | | | | | | | |")
        continue
    recs = [json.loads(l) for l in open(logs[0]) if l.strip()]
    base = next((r for r in recs if r.get("decision") == "BASELINE"), None)
    keeps = [r for r in recs if r.get("decision") == "KEEP" and r.get("tflops")]
    rounds = max((r.get("round", 0) for r in recs), default=0)
    if not base:
        print(f"| {shape} | no baseline | | | | | | {rounds} | |")
        continue
    bt = base["tflops"]
    if not keeps:
        fails = sorted({str(r.get("verdict") or r.get("decision")) for r in recs if r is not base})
        print(f"| {shape} | {bt:.1f} | {cv(measurement(base))} | no kept kernel ({', '.join(fails)}) | | | | {rounds} | |")
        continue
    best = max(keeps, key=lambda r: r["tflops"])
    ratios.append(best["tflops"] / bt)
    cfg = " ".join(f"{k}={v}" for k, v in sorted((best.get("params") or {}).items()))
    print(f"| {shape} | {bt:.1f} | {cv(measurement(base))} | {best['tflops']:.1f} | {cv(measurement(best))} | "
          f"{best['tflops'] / bt:.3f} | {best.get('round')} | {rounds} | {cfg} |")
if ratios:
    print(f"\nShapes with a kept kernel: {len(ratios)}; ratio >= 1.0: {sum(r >= 1 for r in ratios)}, >= 0.95: "
          f"{sum(r >= 0.95 for r in ratios)}, >= 0.85: {sum(r >= 0.85 for r in ratios)}.")
print("\n## GPU tests (croq_gpu_tests GpuRunner.ScaledFp8*, then Fp8Gpu.*)\n")
for log in ("fp8-runner-tests.log", "fp8-family-tests.log"):
    try:
        lines = [l.rstrip() for l in open(os.path.join(raw, log))
                 if l.startswith(("[       OK", "[  FAILED", "[  SKIPPED", "[  PASSED", "exit ")) or "Failure" in l]
        print(f"{log}:\n```\n" + "\n".join(lines[:40]) + "\n```")
    except OSError:
        print(f"{log}: not run")
PY
(cd "$WS" && find tuning -name "*.json" -o -name "*.jsonl" -o -name "*.tsv" | tar czf "$RAW/workspace.tgz" -T -) 2>/dev/null
tar czf "$DEST/fp8-raw.tgz" -C "$RAW" .
say "wrote $DEST/fp8-h200.md and fp8-raw.tgz"
cat "$DEST/fp8-h200.md"
