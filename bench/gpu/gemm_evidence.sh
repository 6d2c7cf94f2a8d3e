#!/usr/bin/env bash
# H200 evidence for the Hopper GEMM family found by croq's own search: for each shape, runs
#   croq tune <shape> --dsl cuda --rounds $GEMM_ROUNDS
# from the family's default configuration (croq baseline measures cuBLAS in the same workspace and
# process tree), and writes gemm-h200.md: per shape and dtype, the cuBLAS TFLOPS, the best croq
# TFLOPS, the ratio, the configuration, the round at which it was found, and the CV of its
# measurement and of the baseline's.
#
# A device call lasts at most 10 minutes: the shapes run in order until GEMM_BUDGET_S (default
# 420 s) is spent; the workspace goes back as gemm-ws.tgz — put it at .carry/gemm-ws/gemm-ws.tgz and
# call again to resume unfinished shapes and run the rest (finished shapes are not repeated).
#
# Needs croq's executables packed by bench/gpu/pack_device.sh into .carry/croq, nvcc and ncu.
# Environment: GEMM_SHAPES (space-separated shape keys), GEMM_ROUNDS (default 20), GEMM_BUDGET_S.
# Usage: bash bench/gpu/gemm_evidence.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
CARRY=$REPO/.carry/croq
export PATH=$CARRY/bin:$PATH LD_LIBRARY_PATH=$CARRY/lib:${LD_LIBRARY_PATH:-} CROQ_HOME=$REPO
SHAPES=${GEMM_SHAPES:-"matmul_f16fp32_768x768x768 matmul_f16fp32_1024x1024x4096 matmul_f16fp32_8192x8192x8192 matmul_bf16fp32_4096x4096x4096 matmul_f16fp32_4096x1024x1024"}
ROUNDS=${GEMM_ROUNDS:-20}
BUDGET=${GEMM_BUDGET_S:-420}
WS=/tmp/croq-gemm-ws
DEST=${OUT:-$REPO/docs/results}
mkdir -p "$DEST" "$WS/tuning"
if [ -f "$REPO/.carry/gemm-ws/gemm-ws.tgz" ] && [ -z "$(ls -A "$WS/tuning")" ]; then
  tar xzf "$REPO/.carry/gemm-ws/gemm-ws.tgz" -C "$WS" && echo "[gemm-evidence] resumed workspace"
fi
start=$SECONDS
for key in $SHAPES; do
  left=$((BUDGET - (SECONDS - start)))
  if [ "$left" -lt 40 ]; then echo "[gemm-evidence] $key: not run (time)"; continue; fi
  echo "[gemm-evidence] $key: croq tune --rounds $ROUNDS (at most $left s)"
  timeout --signal=KILL "$left" croq --root "$WS" tune "$key" --dsl cuda --rounds "$ROUNDS" --seed 1 \
    --profile-preset quick > "$WS/summary_$key.json" 2>> "$DEST/gemm-events.jsonl"
  echo "[gemm-evidence] $key: exit $? after $((SECONDS - start)) s"
done
tar czf "$DEST/gemm-ws.tgz" --exclude="*.ncu-rep" --exclude="*.so" -C "$WS" tuning
python3 - "$WS" "$ROUNDS" "$(cat "$CARRY/commit.txt" 2>/dev/null)" > "$DEST/gemm-h200.md" <<'PY'
import json, sys, glob, os, subprocess, datetime
ws, rounds, commit = sys.argv[1:4]
gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
print("# Hopper GEMM family tuned by croq on the H200\n")
print(f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M')} UTC; device: {gpu}; commit: {commit}")
print(f"- each shape: `croq tune <shape> --dsl cuda --rounds {rounds} --seed 1 --profile-preset quick` from the hopper_gemm")
print("  family's default configuration; cuBLAS is `croq baseline` in the same workspace (same runner, same statistics);")
print("  ratio = best croq TFLOPS / cuBLAS TFLOPS (medians, L2 flushed); CV of the two measurements\n")
print("| shape | dtype | cuBLAS TFLOPS | CV % | best croq TFLOPS | CV % | ratio | found at round | rounds stored | start (iter001) ratio | configuration |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
def cv_of(rec):
    m = rec.get("measurement") or {}
    f = m.get("file")
    if not f: return None
    p = f if os.path.isabs(f) else os.path.join(ws, f)
    try:
        d = json.load(open(p))
        return (d.get("timing") or {}).get("cv")
    except Exception:
        return None
for log in sorted(glob.glob(f"{ws}/tuning/*/cuda/logs/*/croq-search/idea-log.jsonl")):
    key = log.split("/logs/")[1].split("/")[0]
    recs = [json.loads(l) for l in open(log) if l.strip()]
    base = next((r for r in recs if r.get("decision") == "BASELINE"), None)
    keeps = [r for r in recs if r.get("decision") == "KEEP" and r.get("tflops")]
    if not base or not keeps: continue
    best = max(keeps, key=lambda r: r["tflops"])
    start = next((r for r in recs if r.get("iter") == "iter001"), None)
    bt = base["tflops"]
    parts = key.split("_")
    cfg = " ".join(f"{k}={v}" for k, v in sorted((best.get("params") or {}).items()))
    cvb, cvc = cv_of(base), cv_of(best)
    f = lambda v: f"{100*v:.2f}" if isinstance(v, (int, float)) else "-"
    print(f"| {parts[2]} | {parts[1]} | {bt:.1f} | {f(cvb)} | {best['tflops']:.1f} | {f(cvc)} | {best['tflops']/bt:.3f} | {best.get('round')} | {max(r.get('round',0) for r in recs)} | {start['tflops']/bt if start and start.get('tflops') else float('nan'):.3f} | {cfg} |")
PY
cat "$DEST/gemm-h200.md"
