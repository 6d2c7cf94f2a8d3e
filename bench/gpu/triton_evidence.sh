#!/usr/bin/env bash
# H200 evidence for the triton dsl (issue 22), one self-contained call of under 500 s:
#   1. the Triton GPU tests (croq_gpu_tests --gtest_filter='TritonGpu*': every configuration the
#      triton_gemm family starts from is compiled by Triton and verified; the runner's autotune report
#      and profile mode);
#   2. per shape (4096^3 and 8192^3 first, then as many typical shapes as the budget allows, f16 in,
#      f32 out): cuBLAS (croq baseline: croq-gpu-runner), a plain @triton.autotune GEMM over 10 common
#      configurations (bench/gpu/triton/autotune_gemm.py, measured by croq measure through croq's
#      Python runner: its tuning runs at the first call and is reported), and
#      croq tune --dsl triton from the triton_gemm family's default for TRITON_ROUNDS rounds;
#   3. $OUT/triton-h200.md: per shape cuBLAS, plain autotune, croq's best, the ratios, configurations,
#      rounds and measurements; $OUT/triton-ws.tgz (the workspace without reports) and the logs.
#   With TRITON_BRUTE_KEY (a shape key), before the tunes: a brute-force autotune of the family's space
#   for that shape (bench/gpu/triton/brute_force.py over `croq tune --list-space`: a seeded random
#   sample of TRITON_BRUTE_SAMPLE configurations, default 400, within TRITON_BRUTE_S seconds, default
#   180), its 3 fastest measured again by croq measure; the report then says after how many
#   measurements the tune of that shape came within 2 % of the brute force's best
#   ($OUT/triton-brute-force.tsv and .json).
#
# Needs croq's executables packed by bench/gpu/pack_device.sh into .carry/croq (else $CROQ_BIN_DIR or
# build/bin), python3 with torch (CUDA) and triton, ncu. Environment: TRITON_SHAPES (shape keys),
# TRITON_ROUNDS (default 8), TRITON_JOBS (2), TRITON_BUDGET_S (total, default 470), TRITON_WS
# (/tmp/croq-triton-ws), TRITON_PRESET (quick), TRITON_SKIP_TESTS=1, TRITON_TEST_FILTER (gtest filter, default TritonGpu*),
# TRITON_ONE_TUNE=1 (one croq tune over all shapes, --jobs JOBS, the plain autotunes beside it), TRITON_BRUTE_KEY, TRITON_BRUTE_SAMPLE,
# TRITON_BRUTE_S, TRITON_BRUTE_FROM (an earlier call's triton-brute-force.json: its 3 fastest are measured
# again by croq measure, and nothing is sampled).
# Usage: bash bench/gpu/triton_evidence.sh --pack [build-folder]   (here: builds croq, the runners and
#          croq_gpu_tests with -j2, then packs them into .carry/croq with bench/gpu/pack_device.sh)
#        OUT=<folder> bash bench/gpu/triton_evidence.sh           (there, with .carry carried)
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
if [ "${1:-}" = "--pack" ]; then
  build=${2:-build}
  cmake --build "$build" -j2 --target croq croq-gpu-runner croq-cpu-runner croq_gpu_tests || exit 1
  bash bench/gpu/pack_device.sh "$build" || exit 1
  du -sh .carry
  exit 0
fi
source bench/gpu/common.sh
croq_executables
BUDGET=${TRITON_BUDGET_S:-470}
ROUNDS=${TRITON_ROUNDS:-8}
JOBS=${TRITON_JOBS:-2}
PRESET=${TRITON_PRESET:-quick}
WS=${TRITON_WS:-/tmp/croq-triton-ws}
DEST=${OUT:-$REPO/docs/results}
FIRST="matmul_f16fp32_4096x4096x4096 matmul_f16fp32_8192x8192x8192"
TYPICAL="4096x8192x512 4096x1024x8192 1024x8192x1024 768x768x768 4096x1024x1024 1024x1024x4096 512x8192x8192
12288x4096x4096 4096x8192x32768 12288x12288x4096 16384x8192x8192 4096x32768x8192 12288x8192x12288 12288x12288x12288"
REST=""; for s in $TYPICAL; do REST="$REST matmul_f16fp32_$s"; done
SHAPES=${TRITON_SHAPES:-$FIRST$REST}
mkdir -p "$DEST" "$WS/tuning"
LOG=$DEST/triton-evidence.log
exec > >(tee -a "$LOG") 2>&1
start=$SECONDS
say() { echo "[triton-evidence $((SECONDS - start))s] $*"; }
left() { echo $((BUDGET - (SECONDS - start))); }
croq() { "$BIN/croq" "$@"; }

python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__, "cuda", torch.cuda.is_available())' \
  || { say "FATAL: python3 cannot import torch and triton"; exit 1; }
GPU=$(croq gpu key 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])' 2>/dev/null)
say "croq $(croq --version 2>/dev/null), device ${GPU:-?}, budget ${BUDGET}s, rounds $ROUNDS, jobs $JOBS"

# ---- 1. the GPU tests --------------------------------------------------------------------------------
if [ -n "${TRITON_SKIP_TESTS:-}" ]; then
  say "GPU tests skipped (TRITON_SKIP_TESTS)"
elif [ -x "$BIN/croq_gpu_tests" ]; then
  say "GPU tests: TritonGpu*"
  CROQ_TEST_BIN_DIR=$BIN timeout 150 "$BIN/croq_gpu_tests" --gtest_filter="${TRITON_TEST_FILTER:-TritonGpu*}" > "$DEST/triton-gpu-tests.txt" 2>&1
  say "GPU tests exit $? ($(grep -E '^\[  (PASSED|FAILED)' "$DEST/triton-gpu-tests.txt" | tr '\n' ' '))"
else
  say "no croq_gpu_tests in $BIN: tests not run (build the tests, then bench/gpu/pack_device.sh)"
fi

# ---- 1b. the brute-force autotune of one shape's space -------------------------------------------------
BRUTE_KEY=${TRITON_BRUTE_KEY:-}
if [ -n "$BRUTE_KEY" ]; then
  mkdir -p "$WS/brute"
  dims=${BRUTE_KEY##*_}
  if [ -n "${TRITON_BRUTE_FROM:-}" ]; then
    say "brute force $BRUTE_KEY: the fastest of $TRITON_BRUTE_FROM (an earlier call), measured again"
    cp "$TRITON_BRUTE_FROM" "$DEST/triton-brute-force.json"
    python3 "$REPO/bench/gpu/triton/brute_force.py" --render-from "$TRITON_BRUTE_FROM" --render-top 3 --render-dir "$WS/brute"
  else
  say "brute force $BRUTE_KEY: croq tune --list-space, then ${TRITON_BRUTE_SAMPLE:-400} configurations within ${TRITON_BRUTE_S:-180}s"
  croq --root "$WS" -q tune "$BRUTE_KEY" --dsl triton --gpu "$GPU" --list-space > "$WS/brute/space.json" \
    && timeout $(( ${TRITON_BRUTE_S:-180} + 60 )) python3 "$REPO/bench/gpu/triton/brute_force.py" --space "$WS/brute/space.json" \
         --shape ${dims//x/ } --sample "${TRITON_BRUTE_SAMPLE:-400}" --seed 1 --budget-s "${TRITON_BRUTE_S:-180}" \
         --out "$DEST/triton-brute-force.tsv" --summary "$DEST/triton-brute-force.json" --render-top 3 \
         --render-dir "$WS/brute" 2>&1 | grep -v Warning | tail -5
  fi
  for i in 1 2 3; do
    [ -f "$WS/brute/bf_top$i.py" ] || continue
    timeout 120 "$BIN/croq" --root "$WS" -q measure --gpu "$GPU" --dsl triton --shape-key "$BRUTE_KEY" --model brute \
      --candidate "$WS/brute/bf_top$i.py" --out "$WS/brute/top$i.json" > /dev/null 2> "$WS/brute/top$i.err" \
      || say "brute force top $i: croq measure: $(tail -1 "$WS/brute/top$i.err" | cut -c1-160)"
  done
  say "brute force done"
fi

# ---- 2. per shape: cuBLAS and the plain autotuned GEMM -------------------------------------------------
# cuBLAS is the tune task's baseline (iter000). The plain autotune is a separate task (model plain).
measure_plain() {  # key
  local key=$1 out=$WS/plain/$1.json
  mkdir -p "$WS/plain"
  [ -s "$out" ] && return 0
  timeout 150 "$BIN/croq" --root "$WS" -q measure --gpu "$GPU" --dsl triton --shape-key "$key" --model plain \
    --candidate "$REPO/bench/gpu/triton/autotune_gemm.py" --out "$out" > /dev/null 2> "$WS/plain/$key.err" \
    || say "$key: plain autotune: $(tail -1 "$WS/plain/$key.err" | cut -c1-160)"
}

# ---- 3. croq tune --dsl triton, shapes JOBS at a time, in order, while the budget lasts ----------------
if [ -n "${TRITON_ONE_TUNE:-}" ]; then
  # One croq tune over every shape (--jobs JOBS: a shape that finishes its rounds hands its slot to the
  # next), the plain autotunes measured beside it in shape order (both wait on the GPU lease, so no two
  # timings overlap).
  ( for key in $SHAPES; do [ "$(left)" -gt 60 ] && measure_plain "$key"; done ) &
  plain_pid=$!
  per=$(( $(left) - 40 ))
  say "croq tune $SHAPES --dsl triton --rounds $ROUNDS --jobs $JOBS (at most ${per}s; plain autotunes beside it)"
  timeout --signal=TERM --kill-after=20 "$per" "$BIN/croq" --root "$WS" tune $SHAPES --dsl triton \
    --rounds "$ROUNDS" --seed 1 --jobs "$JOBS" --profile-preset "$PRESET" >> "$WS/tune-summary.jsonl" 2>> "$DEST/triton-events.jsonl"
  say "croq tune exit $?"
  wait "$plain_pid"
  set --
else
  set -- $SHAPES
fi
while [ $# -gt 0 ] && [ "$(left)" -gt 90 ]; do
  batch=()
  for _ in $(seq 1 "$JOBS"); do [ $# -gt 0 ] && { batch+=("$1"); shift; }; done
  for key in "${batch[@]}"; do measure_plain "$key"; done
  per=$(( $(left) - 40 )); [ "$per" -gt 200 ] && [ $# -gt 0 ] && per=200
  say "croq tune ${batch[*]} --dsl triton --rounds $ROUNDS (at most ${per}s)"
  timeout --signal=TERM --kill-after=20 "$per" "$BIN/croq" --root "$WS" tune "${batch[@]}" --dsl triton \
    --rounds "$ROUNDS" --seed 1 --jobs "$JOBS" --profile-preset "$PRESET" >> "$WS/tune-summary.jsonl" 2>> "$DEST/triton-events.jsonl"
  say "croq tune exit $?"
done

# ---- 4. the report --------------------------------------------------------------------------------------
tar czf "$DEST/triton-ws.tgz" --exclude="*.ncu-rep" --exclude="*.cubin" --exclude="cubin_*" -C "$WS" tuning plain 2>/dev/null
COMMIT=$(cat "$REPO/.carry/croq/commit.txt" 2>/dev/null || git -C "$REPO" rev-parse --short=12 HEAD 2>/dev/null)
python3 - "$WS" "$ROUNDS" "$COMMIT" "$SHAPES" "$DEST/triton-gpu-tests.txt" "$BRUTE_KEY" "$DEST/triton-brute-force.json" \
  > "$DEST/triton-h200.md" <<'PY'
import json, sys, glob, os, subprocess, datetime
ws, rounds, commit, shapes, tests, brute_key, brute_summary = sys.argv[1:8]
try:
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip().splitlines()[0]
except Exception:
    gpu = "?"
try:
    import torch, triton
    versions = "torch %s, triton %s" % (torch.__version__, triton.__version__)
except Exception:
    versions = "?"
def load(p):
    try:
        return json.load(open(p))
    except Exception:
        return None
def records(key):
    logs = glob.glob(os.path.join(ws, "tuning", "*", "triton", "logs", key, "croq-search", "idea-log.jsonl"))
    if not logs:
        return None, []
    out = []
    for line in open(logs[0]):
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return os.path.dirname(logs[0]), out
def fmt(x, f="%.1f"):
    return f % x if isinstance(x, (int, float)) else "-"
print("# Triton on the H200: croq tune --dsl triton against cuBLAS and a plain @triton.autotune GEMM\n")
print("%s UTC, %s, %s, croq %s; bench/gpu/triton_evidence.sh (rounds %s per shape, f16 in, f32 out).\n"
      % (datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"), gpu, versions, commit, rounds))
print("| shape | cuBLAS TFLOPS | plain autotune TFLOPS (tuning s) | croq triton best TFLOPS | best / cuBLAS | "
      "best / plain | plain / cuBLAS | found at round | rounds | measurements | best configuration |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
summary = []
for key in shapes.split():
    d, recs = records(key)
    plain = load(os.path.join(ws, "plain", key + ".json")) or {}
    p_tf = plain.get("tflops") if plain.get("verdict") == "PASS" else None
    tune = plain.get("process", {}) or {}
    at = tune.get("autotune") or []
    tuning_s = sum((a.get("tuning_ms") or 0) for a in at) / 1e3 if at else None
    if d is None and not plain:
        continue
    base = [r for r in recs if r.get("decision") == "BASELINE" and r.get("tflops")]
    cublas = base[-1]["tflops"] if base else None
    keeps = [r for r in recs if r.get("decision") == "KEEP" and r.get("tflops")]
    best = max(keeps, key=lambda r: r["tflops"]) if keeps else None
    b_tf = best["tflops"] if best else None
    measured = len([r for r in recs if r.get("decision") != "BASELINE"])
    done = load(os.path.join(d, "tune.json")) if d else None
    cfg = json.dumps((best.get("extra") or {}).get("params") or best.get("params") or {}, sort_keys=True) if best else "-"
    ratio = lambda a, b: "%.2f" % (a / b) if a and b else "-"
    print("| %s | %s | %s (%s) | %s | %s | %s | %s | %s | %s%s | %d | `%s` |" % (
        key, fmt(cublas), fmt(p_tf), fmt(tuning_s), fmt(b_tf), ratio(b_tf, cublas), ratio(b_tf, p_tf),
        ratio(p_tf, cublas), best.get("round", "-") if best else "-",
        max([r.get("round", 0) for r in recs] or [0]), "" if (done or {}).get("completed") else " (stopped)",
        measured, cfg.replace("|", "/")))
    if plain.get("verdict") and plain.get("verdict") != "PASS":
        summary.append("- %s: plain autotune %s: %s" % (key, plain.get("verdict"), plain.get("reason")))
    fails = [r for r in recs if r.get("decision") not in ("KEEP", "DISCARD", "BASELINE")]
    for r in fails[:3]:
        summary.append("- %s round %s (%s): %s %s" % (key, r.get("round"), r.get("kernel"), r.get("decision"),
                                                     (r.get("idea") or "")[:100]))
print("\nRatios are of median TFLOPS measured in the same run by the same procedure (croq-gpu-runner for "
      "cuBLAS, croq's Python runner for both Triton kernels; L2 flushed, rests between repetitions). "
      "'measurements' counts the tune's rounds (each one measurement); the plain autotune benchmarks its "
      "10 configurations at its first call, outside the timed region.\n")
if summary:
    print("Failures and notes:\n")
    print("\n".join(summary) + "\n")
if brute_key:
    bf = load(brute_summary) or {}
    tops = [load(os.path.join(ws, "brute", "top%d.json" % i)) for i in (1, 2, 3)]
    tops = [t for t in tops if t and t.get("verdict") == "PASS" and t.get("tflops")]
    ref = max((t["tflops"] for t in tops), default=None)
    print("## Brute force against the search: %s\n" % brute_key)
    print("- the family's space for this shape (`croq tune --list-space`): %s legal configurations of %s"
          % (bf.get("space_legal", "?"), bf.get("space_product", "?")))
    print("- brute force (bench/gpu/triton/brute_force.py, %s): a seeded random sample of %s, %s compiled, %s timed "
          "in %s s; its best %s TFLOPS (the family's default %s)" % (
              bf.get("procedure", "?"), bf.get("sample", "?"), bf.get("compiled", "?"), bf.get("timed", "?"),
              bf.get("seconds", "?"), (bf.get("best") or {}).get("tflops", "-"), bf.get("default_tflops", "-")))
    if bf.get("best"):
        print("- its best configuration: `%s`" % json.dumps(bf["best"]["config"], sort_keys=True))
    print("- its 3 fastest measured again by croq measure (the tune's procedure): %s; the reference is the best, %s"
          % (", ".join(fmt(t["tflops"]) for t in tops) or "none passed", fmt(ref)))
    d, recs = records(brute_key)
    if ref and recs:
        best, reached = 0.0, None
        measured = [r for r in recs if r.get("decision") != "BASELINE"]
        for i, r in enumerate(measured):
            if r.get("decision") == "KEEP" and r.get("tflops"):
                best = max(best, r["tflops"])
            if reached is None and best >= 0.98 * ref:
                reached = i + 1
        print("- croq's tune: best %s TFLOPS after %d measurements (%.3f of the reference); %s" % (
            fmt(best), len(measured), best / ref if ref else 0,
            "within 2 %% of the brute force's best after **%d** measurements, against the brute force's %s (and %s "
            "for the whole space)" % (reached, bf.get("timed", "?"), bf.get("space_legal", "?")) if reached else
            "**not** within 2 % of the brute force's best in these measurements"))
    print()
try:
    lines = [l.rstrip() for l in open(tests) if l.startswith(("[       OK", "[  FAILED", "[  SKIPPED", "[  PASSED"))]
    print("GPU tests (croq_gpu_tests --gtest_filter='TritonGpu*'):\n\n```\n" + "\n".join(lines) + "\n```")
except OSError:
    print("GPU tests: not run.")
PY
say "wrote $DEST/triton-h200.md"
cat "$DEST/triton-h200.md"
