#!/usr/bin/env bash
# H200 evidence for the Hopper GEMM family found by croq's own search. For every shape:
#   croq tune <shapes...> --dsl cuda --rounds $GEMM_ROUNDS --jobs $GEMM_JOBS
# from the family's default configuration (each shape's `croq baseline` measures cuBLAS in the same
# workspace with the same runner), then the best kernel and the baseline measured again
# $GEMM_REPEATS more times, alternating, in a separate task of the same workspace (model `repeat`),
# so the table gives the spread between repeated measurements and the ratio of their medians. Writes
# gemm-h200.md: per shape and dtype, cuBLAS TFLOPS, the best croq TFLOPS, the ratio, the
# configuration, the round at which it was found, the repeats and their spread.
#
# Shapes run GEMM_JOBS at a time (`croq tune --jobs`): their nvcc builds overlap while the GPU lease
# keeps measurements and profiles one at a time. A device call lasts at most 10 minutes, so the tune
# stops at GEMM_BUDGET_S (SIGTERM; every stored round is kept) and the workspace goes back as
# gemm-ws.tgz: put it at .carry/gemm-ws/gemm-ws.tgz and call again to resume (finished shapes are not
# repeated; the repeats of a shape are taken once its tune has completed).
#
# Needs croq's executables packed by bench/gpu/pack_device.sh into .carry/croq (else $CROQ_BIN_DIR or
# build/bin), nvcc and ncu. GEMM_DSL=cpp runs the same script against the cpp family on a machine
# without a GPU (a check of the script itself).
# Environment: GEMM_SHAPES, GEMM_ROUNDS (default 20), GEMM_JOBS (4), GEMM_REPEATS (3),
# GEMM_BUDGET_S (480), GEMM_PRESET (quick), GEMM_WS (/tmp/croq-gemm-ws), GEMM_CARRY (the workspace of an
# earlier call, default .carry/gemm-ws/gemm-ws.tgz).
# Usage: bash bench/gpu/gemm_evidence.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
source bench/gpu/common.sh
croq_executables
DSL=${GEMM_DSL:-cuda}
TYPICAL="768x768x768 12288x12288x12288 512x8192x8192 16384x8192x8192 4096x1024x8192 4096x32768x8192
4096x8192x512 4096x8192x32768 1024x1024x4096 12288x12288x4096 1024x8192x1024 12288x8192x12288 4096x1024x1024
12288x4096x4096"
DEFAULT_SHAPES="matmul_f16fp32_4096x4096x4096 matmul_bf16fp32_4096x4096x4096 matmul_f16fp32_8192x8192x8192 matmul_bf16fp32_8192x8192x8192"
for s in $TYPICAL; do DEFAULT_SHAPES="$DEFAULT_SHAPES matmul_f16fp32_$s"; done
SHAPES=${GEMM_SHAPES:-$DEFAULT_SHAPES}
ROUNDS=${GEMM_ROUNDS:-20}
JOBS=${GEMM_JOBS:-4}
REPEATS=${GEMM_REPEATS:-3}
BUDGET=${GEMM_BUDGET_S:-480}
PRESET=${GEMM_PRESET:-quick}
WS=${GEMM_WS:-/tmp/croq-gemm-ws}
DEST=${OUT:-$REPO/docs/results}
mkdir -p "$DEST" "$WS/tuning"
LOG=$DEST/gemm-evidence.log
exec > >(tee -a "$LOG") 2>&1
start=$SECONDS
say() { echo "[gemm-evidence $((SECONDS - start))s] $*"; }
left() { echo $((BUDGET - (SECONDS - start))); }

CARRY_WS=${GEMM_CARRY:-$REPO/.carry/gemm-ws/gemm-ws.tgz}
if [ -f "$CARRY_WS" ] && [ -z "$(ls -A "$WS/tuning")" ]; then
  tar xzf "$CARRY_WS" -C "$WS" && say "resumed the workspace of an earlier call ($CARRY_WS)"
fi
GPU=$(croq gpu key 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])' 2>/dev/null)
[ "$DSL" = cpp ] && GPU=""
say "croq $(croq --version), device ${GPU:-cpu}, shapes: $(echo $SHAPES | wc -w), rounds $ROUNDS, jobs $JOBS, budget ${BUDGET}s"

# ---- 1. the tunes ----------------------------------------------------------------------------------
# Shapes whose tune has completed are left out (tune.json completed); the others start or resume.
todo=()
for key in $SHAPES; do
  done_file=$(ls "$WS"/tuning/*/"$DSL"/logs/"$key"/croq-search/tune.json 2>/dev/null | head -1)
  if [ -n "$done_file" ] && python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1])).get("completed") else 1)' "$done_file"; then
    continue
  fi
  todo+=("$key")
done
if [ ${#todo[@]} -gt 0 ] && [ "$(left)" -gt 30 ]; then
  say "croq tune ${#todo[@]} shapes, --jobs $JOBS, at most $(left) s"
  timeout --signal=TERM --kill-after=30 "$(left)" croq --root "$WS" tune "${todo[@]}" --dsl "$DSL" --rounds "$ROUNDS" \
    --seed 1 --jobs "$JOBS" --profile-preset "$PRESET" > "$WS/tune-summary.json" 2>> "$DEST/gemm-events.jsonl"
  say "croq tune exit $?"
fi

# ---- 2. repeats: the best kernel and the baseline again, alternating --------------------------------
# The best kernel of each finished shape, rebuilt by croq's own build script when the workspace came
# back without its shared objects (gemm-ws.tgz leaves them out), all at once.
builds=()
best_of() {
  python3 - "$1" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
keeps = [r for r in recs if r.get("decision") == "KEEP" and r.get("tflops")]
print(max(keeps, key=lambda r: r["tflops"])["kernel"] if keeps else "")
PY
}
for key in $SHAPES; do
  log=$(ls "$WS"/tuning/*/"$DSL"/logs/"$key"/croq-search/idea-log.jsonl 2>/dev/null | head -1)
  [ -n "$log" ] || continue
  best=$(best_of "$log")
  t=$(dirname "$(dirname "$(dirname "$(dirname "$log")")")")  # tuning/<gpu>/<dsl>
  n=${best%%_*}; n=${n#iter}
  if [ -n "$best" ] && [ ! -f "$t/bin/$key/croq-search/$best.so" ] && [ -f "$t/cmd/$key/croq-search/build_iter$n.sh" ]; then
    bash "$t/cmd/$key/croq-search/build_iter$n.sh" > /dev/null 2>&1 &
    builds+=($!)
  fi
done
for p in "${builds[@]}"; do wait "$p"; done
for key in $SHAPES; do
  log=$(ls "$WS"/tuning/*/"$DSL"/logs/"$key"/croq-search/idea-log.jsonl 2>/dev/null | head -1)
  tune=$(dirname "$log")/tune.json
  [ -n "$log" ] && [ -f "$tune" ] || continue
  python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1])).get("completed") else 1)' "$tune" || continue
  gpu=$(echo "$log" | sed -E 's|.*/tuning/([^/]+)/.*|\1|')
  best=$(best_of "$log")
  [ -n "$best" ] || continue
  so=$(ls "$WS"/tuning/"$gpu"/"$DSL"/bin/"$key"/croq-search/"$best".so 2>/dev/null | head -1)
  [ -n "$so" ] || { say "$key: no shared object for $best"; continue; }
  rep=$WS/repeats/$key
  mkdir -p "$rep"
  for r in $(seq 1 "$REPEATS"); do
    [ -f "$rep/candidate_$r.json" ] && [ -f "$rep/baseline_$r.json" ] && continue
    if [ "$(left)" -lt 15 ]; then say "$key: repeats not run (time)"; break; fi
    force=""; [ "$r" -gt 1 ] && force="--force"
    croq --root "$WS" -q baseline --gpu "$gpu" --dsl "$DSL" --shape-key "$key" --model repeat --task-uid "repeat-$key" $force \
      > "$rep/baseline_$r.json.tmp" 2> "$rep/baseline_$r.err" && mv "$rep/baseline_$r.json.tmp" "$rep/baseline_$r.json"
    croq --root "$WS" -q measure --gpu "$gpu" --dsl "$DSL" --shape-key "$key" --model repeat --candidate "$so" \
      --out "$rep/measure_$r.json" > "$rep/candidate_$r.json.tmp" 2> "$rep/candidate_$r.err" \
      && mv "$rep/candidate_$r.json.tmp" "$rep/candidate_$r.json"
  done
  say "$key: best $best, repeats in $rep"
done

# ---- 3. the workspace and the report -----------------------------------------------------------------
tar czf "$DEST/gemm-ws.tgz" --exclude="*.ncu-rep" --exclude="*.so" --exclude="*.o" -C "$WS" tuning repeats 2>/dev/null \
  || tar czf "$DEST/gemm-ws.tgz" --exclude="*.ncu-rep" --exclude="*.so" --exclude="*.o" -C "$WS" tuning
COMMIT=$(cat "$REPO/.carry/croq/commit.txt" 2>/dev/null || git -C "$REPO" rev-parse --short=12 HEAD 2>/dev/null)
python3 - "$WS" "$ROUNDS" "$COMMIT" "$DSL" "$SHAPES" > "$DEST/gemm-h200.md" <<'PY'
import json, sys, glob, os, subprocess, datetime, statistics
ws, rounds, commit, dsl, shapes = sys.argv[1:6]
try:
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip() or "no GPU"
except OSError:
    gpu = "no GPU (nvidia-smi not found)"
def load(p):
    try:
        return json.load(open(p))
    except Exception:
        return None
def cv_of(rec):
    f = (rec.get("measurement") or {}).get("file")
    if not f:
        return None
    d = load(f if os.path.isabs(f) else os.path.join(ws, f)) or {}
    return (d.get("timing") or {}).get("cv")
def pct(v):
    return f"{100 * v:.2f}" if isinstance(v, (int, float)) else "-"
print("# Hopper GEMM family tuned by croq on the H200\n")
print(f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M')} UTC; device: {gpu}; commit: {commit}")
print(f"- each shape: `croq tune <shapes> --dsl {dsl} --rounds {rounds} --seed 1 --jobs N --profile-preset quick` from the")
print("  family's default configuration; cuBLAS is each task's `croq baseline` (same runner, same statistics, same GPU lease);")
print("  ratio = best croq TFLOPS / cuBLAS TFLOPS (medians, L2 flushed); method: how that task's measurements were timed")
print("  (burst: croq's default; settled: --warmup-ms 200 --min-time-ms 100, the sustained power-limited state).")
print("- repeats: after the tune, `croq baseline --force` and `croq measure --candidate <best .so>` again (croq's default")
print("  method), alternating, in a second task of the same workspace: their medians, spreads (max - min) / median and")
print("  the ratio of the medians.\n")
print("| shape | dtype | method | cuBLAS TFLOPS | CV % | best croq TFLOPS | CV % | ratio | found at round | rounds | start ratio | repeats | cuBLAS repeats | croq repeats | cuBLAS spread % | croq spread % | repeat ratio | configuration |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
rows = []
for key in shapes.split():
    logs = glob.glob(f"{ws}/tuning/*/{dsl}/logs/{key}/croq-search/idea-log.jsonl")
    parts = key.split("_")
    parts = [parts[0], parts[-2], parts[-1]]  # operator, dtype, shape (gemm_sp_<dtype>_<shape> too)
    if not logs:
        print(f"| {parts[2]} | {parts[1]} | not run | | | | | | | | | | | | | | | |")
        continue
    recs = [json.loads(l) for l in open(logs[0]) if l.strip()]
    tune = load(os.path.join(os.path.dirname(logs[0]), "tune.json")) or {}
    base = next((r for r in recs if r.get("decision") == "BASELINE"), None)
    keeps = [r for r in recs if r.get("decision") == "KEEP" and r.get("tflops")]
    if not base or not keeps:
        print(f"| {parts[2]} | {parts[1]} | | {base['tflops'] if base else '-'} | | no kept kernel yet | | | | | | | | | | | | |")
        continue
    best = max(keeps, key=lambda r: r["tflops"])
    start = next((r for r in recs if r.get("iter") == "iter001"), None)
    bt, ct = base["tflops"], best["tflops"]
    bm = load(os.path.join(ws, (base.get("measurement") or {}).get("file", "-"))) or {}
    method = "settled" if ((bm.get("timing") or {}).get("warmup_ms") or 0) > 100 else "burst"
    b_runs, c_runs = [], []
    rep = os.path.join(ws, "repeats", key)
    for f in sorted(glob.glob(os.path.join(rep, "baseline_*.json"))):
        r = (load(f) or {}).get("result") or {}
        if isinstance(r.get("tflops"), (int, float)):
            b_runs.append(r["tflops"])
    for f in sorted(glob.glob(os.path.join(rep, "candidate_*.json"))):
        d = load(f) or {}
        if d.get("verdict") == "PASS" and isinstance(d.get("tflops"), (int, float)):
            c_runs.append(d["tflops"])
    spread = lambda v: (max(v) - min(v)) / statistics.median(v) if len(v) > 1 else None
    rr = statistics.median(c_runs) / statistics.median(b_runs) if b_runs and c_runs else None
    cfg = " ".join(f"{k}={v}" for k, v in sorted((best.get("params") or {}).items()))
    done = "" if tune.get("completed") else " (unfinished)"
    sr = start["tflops"] / bt if start and start.get("tflops") else float("nan")
    rows.append((key, ct / bt, rr))
    fmt_runs = lambda v: " / ".join(f"{x:.0f}" for x in v) if v else "-"
    print(f"| {parts[2]} | {parts[1]} | {method} | {bt:.1f} | {pct(cv_of(base))} | {ct:.1f} | {pct(cv_of(best))} | {ct / bt:.3f} | "
          f"{best.get('round')} | {max(r.get('round', 0) for r in recs)}{done} | {sr:.3f} | {min(len(b_runs), len(c_runs))} | "
          f"{fmt_runs(b_runs)} | {fmt_runs(c_runs)} | {pct(spread(b_runs))} | {pct(spread(c_runs))} | "
          f"{'-' if rr is None else f'{rr:.3f}'} | {cfg} |")
if rows:
    typical = [r for r in rows if "f16fp32" in r[0] and not any(s in r[0] for s in ("4096x4096x4096", "8192x8192x8192"))]
    def count(rs, lo):
        return sum(1 for r in rs if r[1] >= lo), sum(1 for r in rs if r[2] is not None and r[2] >= lo)
    print(f"\nShapes with a kept kernel: {len(rows)}. Tune ratio / repeat ratio at >= 1.00: {count(rows, 1.0)}, "
          f">= 0.90: {count(rows, 0.9)}, >= 0.80: {count(rows, 0.8)}. Typical f16->f32 shapes tuned: {len(typical)}; "
          f">= 0.80: {count(typical, 0.8)}, >= 1.00: {count(typical, 1.0)}.")
PY
cat "$DEST/gemm-h200.md"
say "done"
