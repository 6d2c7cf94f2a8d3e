#!/usr/bin/env bash
# GPU evidence for croq's measurement (issue: trustworthy measurement on the GPU). Runs on a GPU
# machine with an already built tree (the build folder is carried, nothing heavy is built here):
#   1. the correct naive kernel passes; each deliberately broken kernel gets its verdict; the GPU
#      stays usable after a hang;
#   2. the end-to-end time of a full `croq measure` of a 4096^3 candidate;
#   (EVIDENCE_BASELINE_ONLY=1 skips 1 and 2; EVIDENCE_DTYPES chooses the dtypes of 3)
#   3. the library baseline (`croq baseline`) of the seeds' 14 typical shapes in f16->f32,
#      bf16->f32 and e4m3->f16, three times (each in a fresh workspace and process; the three runs
#      of a shape are minutes apart), with the median TFLOPS, the CV, the spread between the three
#      runs, the lowest SM clock and the clock-limit samples of each, and where a slow baseline's
#      time went (the measurement's phases).
# Writes measure-h200.md (to $OUT when set, else docs/results/), plus the raw JSON documents
# (measure-raw.tar.gz) and the log. Every step prints what it does; a failing step is recorded
# and the script goes on. The whole run keeps to a time budget (EVIDENCE_BUDGET_S, default 400 s):
# the baseline repeats that do not fit are reported as not run.
#
# Usage: bench/gpu/measure_evidence.sh [BUILD_DIR]      (default: build)
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT_DIR=$(pwd)
BUILD=${1:-${CROQ_BUILD:-build}}
BUILD=$(cd "$BUILD" 2>/dev/null && pwd || echo "$BUILD")
BUDGET_S=${EVIDENCE_BUDGET_S:-400}
START=$(date +%s)
if [ -n "${OUT:-}" ]; then DEST=$OUT; else DEST=$ROOT_DIR/docs/results; fi
mkdir -p "$DEST"
WORK=$(mktemp -d /tmp/croq-evidence-XXXXXX)
RAW=$WORK/raw
mkdir -p "$RAW"
LOG=$DEST/measure-evidence.log
exec > >(tee "$LOG") 2>&1

CROQ=$BUILD/bin/croq
RUNNER=$BUILD/bin/croq-gpu-runner
KERNELS=$BUILD/test-kernels
# The GPU lease is the machine's (CROQ_LEASE_DIR when set): a tune running beside this script
# (bench/gpu/gemm_evidence.sh) and these measurements then take turns on the GPU.
if [ -d "$BUILD/lib" ]; then export LD_LIBRARY_PATH=$BUILD/lib:${LD_LIBRARY_PATH:-}; fi  # a packed build

say() { echo "[evidence $(($(date +%s) - START))s] $*"; }
elapsed() { echo $(($(date +%s) - START)); }
left() { echo $((BUDGET_S - $(elapsed))); }

say "build folder: $BUILD"
for f in "$CROQ" "$RUNNER"; do
  if [ ! -x "$f" ]; then say "MISSING $f: build croq with the CUDA toolkit first (cmake --build build)"; fi
done
ls "$KERNELS" 2>/dev/null | tr '\n' ' '; echo
say "croq: $("$CROQ" --version 2>&1)"
say "runner libraries:"; ldd "$RUNNER" 2>&1 | grep -E "cublas|cudart|not found|libstdc|libcrypto" || true
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,memory.used,utilization.gpu --format=csv 2>&1 || true
"$CROQ" gpu key > "$RAW/gpu_key.json" 2> "$RAW/gpu_key.err" || say "croq gpu key failed: $(cat "$RAW/gpu_key.err")"
"$CROQ" gpu check > "$RAW/gpu_check.json" 2>&1 || say "croq gpu check: not idle (or failed)"
cat "$RAW/gpu_key.json"; echo

# ---- 1. correct and broken kernels -------------------------------------------------------------
WS_K=$WORK/ws-kernels
mkdir -p "$WS_K/tuning"
# name  candidate-file  shape-key  expected-verdict  expected-reason  timeout-s
KERNEL_RUNS=(
  "naive_2048 naive matmul_f16fp32_2048x2048x2048 PASS ok 60"
  "naive_odd naive matmul_f16fp32_1000x1030x998 PASS ok 60"
  "naive_bf16 naive matmul_bf16fp32_1024x1024x1024 PASS ok 60"
  "naive_e4m3 naive matmul_e4m3f16_1024x1024x1024 PASS ok 60"
  "wrong_values wrong_values matmul_f16fp32_2048x2048x2048 VERIFY_FAIL mismatch 60"
  "partial_write partial_write matmul_f16fp32_2048x2048x2048 VERIFY_FAIL unwritten_output 60"
  "oob_write oob_write matmul_f16fp32_2048x2048x2048 VERIFY_FAIL out_of_bounds_write 60"
  "infinite_loop infinite_loop matmul_f16fp32_2048x2048x2048 HANG timed_out 10"
  "naive_after_hang naive matmul_f16fp32_2048x2048x2048 PASS ok 60"
  "calls_cublas calls_cublas matmul_f16fp32_2048x2048x2048 LIBRARY_CALL_FORBIDDEN library_call_forbidden 60"
  "stale_output stale_output matmul_f16fp32_2048x2048x2048 IMPOSSIBLE above_peak 60"
  "stale_prepack stale_prepack matmul_f16fp32_2048x2048x2048 VERIFY_FAIL timed_mismatch 60"
  "skip_work skip_work matmul_f16fp32_2048x2048x2048 IMPOSSIBLE above_peak 60"
  "escape_stream escape_stream matmul_f16fp32_2048x2048x2048 IMPOSSIBLE above_peak 60"
  "illegal_address illegal_address matmul_f16fp32_2048x2048x2048 RUNTIME_FAIL cuda_error 60"
  "host_segfault host_segfault matmul_f16fp32_2048x2048x2048 SEGFAULT crashed 60"
  "launch_failed launch_failed matmul_f16fp32_2048x2048x2048 RUNTIME_FAIL launch_status 60"
  "unsupported unsupported matmul_f16fp32_2048x2048x2048 UNSUPPORTED candidate_unsupported 60"
  "sync_inside sync_inside matmul_f16fp32_2048x2048x2048 PASS ok 60"
)
: > "$WORK/kernels.tsv"
for row in "${KERNEL_RUNS[@]}"; do
  [ "${EVIDENCE_BASELINE_ONLY:-0}" = 1 ] && break
  read -r name file key want_v want_r tmo <<< "$row"
  say "kernel $name ($file.so, $key): expecting $want_v $want_r"
  t0=$(date +%s.%N)
  timeout $((tmo + 60)) "$CROQ" --root "$WS_K" measure --dsl cuda --shape-key "$key" --model evidence \
    --candidate "$KERNELS/$file.so" --seed 20261129 --timeout "$tmo" --warmup 3 --min-reps 10 \
    --time-budget-ms 500 --out "$RAW/kernel_$name.json" > "$RAW/kernel_${name}_stdout.json" 2> "$RAW/kernel_${name}.err"
  rc=$?
  t1=$(date +%s.%N)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$file" "$key" "$want_v" "$want_r" "$rc" "$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}')" >> "$WORK/kernels.tsv"
  tail -1 "$RAW/kernel_${name}.err"
done

# ---- 2. end-to-end time of a full croq measure at 4096^3 -----------------------------------------
: > "$WORK/e2e.tsv"
for cand in wmma naive; do
  [ "${EVIDENCE_BASELINE_ONLY:-0}" = 1 ] && break
  say "end to end: croq measure of $cand.so at 4096^3 with the default statistics"
  t0=$(date +%s.%N)
  timeout 300 "$CROQ" --root "$WS_K" measure --dsl cuda --shape-key matmul_f16fp32_4096x4096x4096 --model evidence \
    --candidate "$KERNELS/$cand.so" --out "$RAW/e2e_$cand.json" > /dev/null 2> "$RAW/e2e_$cand.err"
  rc=$?
  t1=$(date +%s.%N)
  printf '%s\t%s\t%s\n' "$cand" "$rc" "$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}')" >> "$WORK/e2e.tsv"
  tail -1 "$RAW/e2e_$cand.err"
done

# ---- 3. baselines of the 14 typical shapes, three times --------------------------------------------
SHAPES="768x768x768 12288x12288x12288 512x8192x8192 16384x8192x8192 4096x1024x8192 4096x32768x8192
4096x8192x512 4096x8192x32768 1024x1024x4096 12288x12288x4096 1024x8192x1024 12288x8192x12288
4096x1024x1024 12288x4096x4096"
DTYPES=${EVIDENCE_DTYPES:-"f16fp32 bf16fp32 e4m3f16"}
# The statistics of every baseline: croq's defaults (rests: once busy 10 ms the GPU idles as long;
# the burst method: 10 warm-up launches, 20 to
# 500 repetitions until the CV is under 1 %) with a budget of 0.5 s instead of 2 s, so that 126
# baselines fit one device call. EVIDENCE_BASELINE_STATS="--warmup-ms 200 --min-time-ms 100 ..."
# measures the sustained state instead (docs/results/measure-h200-settled.md).
BASELINE_STATS=${EVIDENCE_BASELINE_STATS:-"--warmup 10 --min-reps 20 --max-reps 500 --time-budget-ms 500"}
: > "$WORK/baselines.tsv"
for rep in 1 2 3; do
  WS=$WORK/ws-baseline-$rep
  mkdir -p "$WS/tuning"
  for dt in $DTYPES; do
    for s in $SHAPES; do
      if [ "$(left)" -lt 15 ]; then
        printf '%s\t%s\t%s\t%s\t%s\n' "$rep" "$dt" "$s" "skipped" "0" >> "$WORK/baselines.tsv"
        continue
      fi
      key="matmul_${dt}_${s}"
      say "baseline rep $rep $key"
      t0=$(date +%s.%N)
      timeout 150 "$CROQ" --root "$WS" baseline --dsl cuda --shape-key "$key" --model evidence \
        --task-uid "evidence-$rep" $BASELINE_STATS --timeout 120 \
        > "$RAW/baseline_${rep}_${key}.json" 2> "$RAW/baseline_${rep}_${key}.err"
      rc=$?
      t1=$(date +%s.%N)
      printf '%s\t%s\t%s\t%s\t%s\n' "$rep" "$dt" "$s" "$rc" "$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}')" >> "$WORK/baselines.tsv"
      tail -1 "$RAW/baseline_${rep}_${key}.err"
      cp "$WS"/tuning/*/cuda/baseline/"$key"/evidence/measure_cublas.json "$RAW/measure_${rep}_${key}.json" 2>/dev/null || true
    done
  done
done

# ---- report ------------------------------------------------------------------------------------------
say "writing the report"
nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader > "$WORK/clocks_after.txt" 2>&1 || true
BASELINE_STATS=$BASELINE_STATS python3 - "$WORK" "$RAW" "$DEST/measure-h200.md" "$CROQ" "$(elapsed)" <<'PY'
import json, os, statistics, subprocess, sys, datetime
work, raw, dest, croq, elapsed = sys.argv[1:6]

def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except Exception:
        return None

def fnum(v, fmt="{:.1f}"):
    return fmt.format(v) if isinstance(v, (int, float)) else "n/a"

key = load(os.path.join(raw, "gpu_key.json")) or {}
try:
    version = json.loads(subprocess.run([croq, "--version"], capture_output=True, text=True).stdout)
except Exception:
    version = {}
out = []
out.append("# croq measurement on the H200: evidence\n")
out.append(f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}")
out.append(f"- device: {key.get('name', '?')} ({key.get('uuid', '?')}), key `{key.get('key', '?')}`, driver {key.get('driver', '?')}, max SM clock {key.get('max_sm_clock_mhz', '?')} MHz")
out.append(f"- croq: version {version.get('croq', '?')}, commit `{version.get('git', '?')}`")
out.append(f"- script: `bench/gpu/measure_evidence.sh`, {elapsed} s in all")
try:
    out.append(f"- clocks after the run: {open(os.path.join(work, 'clocks_after.txt')).read().strip()}")
except Exception:
    pass
out.append("")

# 1. kernels
out.append("## 1. A correct kernel passes; each broken kernel gets its verdict\n")
out.append("Each row is one `croq measure --candidate <kernel>.so` (runner child process, 2048^3 f16->f32 unless the shape says otherwise). The kernels are in `tests/gpu/kernels/test_kernels.cu`.\n")
out.append("| kernel | shape key | expected | got | reason | detail | TFLOPS | wall s | ok |")
out.append("|---|---|---|---|---|---|---|---|---|")
ok_count = total = 0
try:
    rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(work, "kernels.tsv"))]
except Exception:
    rows = []
for name, file, k, want_v, want_r, rc, wall in rows:
    m = load(os.path.join(raw, f"kernel_{name}.json")) or {}
    got_v, got_r = m.get("verdict", f"(no measurement, exit {rc})"), m.get("reason", "")
    good = got_v == want_v and got_r == want_r
    total += 1
    ok_count += good
    detail = (m.get("detail") or "").replace("|", "/")[:110]
    out.append(f"| {name} | {k} | {want_v} {want_r} | {got_v} | {got_r} | {detail} | {fnum(m.get('tflops'))} | {float(wall):.1f} | {'yes' if good else '**NO**'} |")
out.append(f"\n{ok_count} of {total} as expected.\n")

# 2. e2e
out.append("## 2. End-to-end time of one `croq measure` at 4096^3 (default statistics)\n")
out.append("| candidate | verdict | TFLOPS | median ms | CV | reps | stop | runner wall ms | croq measure wall s |")
out.append("|---|---|---|---|---|---|---|---|---|")
try:
    erows = [l.rstrip("\n").split("\t") for l in open(os.path.join(work, "e2e.tsv"))]
except Exception:
    erows = []
for cand, rc, wall in erows:
    m = load(os.path.join(raw, f"e2e_{cand}.json")) or {}
    t = m.get("timing") or {}
    p = m.get("process") or {}
    out.append(f"| {cand} | {m.get('verdict', 'exit ' + rc)} | {fnum(m.get('tflops'))} | {fnum(t.get('median_ms'), '{:.4f}')} | {fnum(t.get('cv'), '{:.4f}')} | {t.get('reps', 'n/a')} | {t.get('stop_reason', 'n/a')} | {fnum(p.get('wall_ms'), '{:.0f}')} | {float(wall):.2f} |")
out.append("")

# 3. baselines
out.append("## 3. Library baseline of the 14 typical shapes, measured three times\n")
stats = os.environ.get("BASELINE_STATS", "")
out.append(f"Each run is a fresh `croq baseline` (own workspace, own processes): cuBLAS default and the cuBLASLt heuristic's top algorithms, screened, the default and the best re-measured with cold L2, `{stats}` and croq's default rests (`--rest-ratio 1 --rest-window-ms 10`: once the GPU has been busy 10 ms it idles as long) unless those flags say otherwise. The three runs of a shape are minutes apart (every shape of every dtype is measured once before the next run starts). TFLOPS from the median; CV of the first run; spread = (max - min) / median of the three runs' medians. min MHz: the lowest SM clock sampled during each run's timed repetitions; limited: samples that saw a clock limit (power cap, thermal) out of those taken. slowest phase: where run 1 spent most of its time.\n")
out.append("| dtype | shape | TFLOPS run 1 | run 2 | run 3 | median | spread % | CV % (run 1) | min MHz (runs) | limited (runs) | chosen (run 1) | default TFLOPS | best screened TFLOPS | baseline wall s | slowest phase (run 1) |")
out.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
try:
    brows = [l.rstrip("\n").split("\t") for l in open(os.path.join(work, "baselines.tsv"))]
except Exception:
    brows = []
table = {}
order = []
for rep, dt, s, rc, wall in brows:
    if (dt, s) not in table:
        table[(dt, s)] = {}
        order.append((dt, s))
    doc = load(os.path.join(raw, f"baseline_{rep}_matmul_{dt}_{s}.json")) if rc != "skipped" else None
    table[(dt, s)][rep] = (rc, wall, doc)
spreads = []
for dt, s in order:
    runs = table[(dt, s)]
    vals = []
    cells = []
    clocks, limited = [], []
    first = None
    for rep in ("1", "2", "3"):
        rc, wall, doc = runs.get(rep, ("missing", "0", None))
        res = (doc or {}).get("result") if isinstance(doc, dict) else None
        if res and isinstance(res.get("tflops"), (int, float)):
            vals.append(res["tflops"])
            cells.append(f"{res['tflops']:.1f}")
            dev = (load(os.path.join(raw, f"measure_{rep}_matmul_{dt}_{s}.json")) or {}).get("device") or {}
            clocks.append(str(dev.get("min_sm_clock_mhz", "?")))
            limited.append(f"{dev.get('limited_samples', '?')}/{dev.get('clock_samples', '?')}")
            if first is None:
                first = (res, wall, rep, dt, s)
        elif rc == "skipped":
            cells.append("not run (time)")
        else:
            err = (doc or {}).get("error", {}).get("message", "") if isinstance(doc, dict) else ""
            cells.append(f"failed ({rc}) {err[:40]}")
    med = statistics.median(vals) if vals else None
    spread = (max(vals) - min(vals)) / med * 100 if len(vals) >= 2 and med else None
    if spread is not None and len(vals) == 3:
        spreads.append(spread)
    if first:
        res, wall, rep1, dt1, s1 = first
        st = res.get("statistics", {})
        slow = "n/a"
        mfile = os.path.join(raw, f"measure_{rep1}_matmul_{dt1}_{s1}.json")
        phases = (load(mfile) or {}).get("phases") or []
        if phases:
            top = max(phases, key=lambda p: p.get("ms", 0))
            slow = f"{top.get('phase')} {top.get('ms', 0) / 1000:.1f} s of {sum(p.get('ms', 0) for p in phases) / 1000:.1f} s"
        algo = res.get("algo") or {}
        chosen = f"{res.get('library', '?')} {res.get('chosen', '')}"
        if algo.get("library") == "cublasLt":
            chosen += f" (algo {algo.get('algo_id')}, tile {algo.get('tile_id')}, stages {algo.get('stages_id')}{', fast accum' if algo.get('fast_accum') else ''})"
        d = res.get("default") or {}
        b = res.get("best_screened") or {}
        out.append(f"| {dt} | {s} | {' | '.join(cells)} | {fnum(med)} | {fnum(spread, '{:.2f}')} | {fnum(st.get('cv', None) * 100 if isinstance(st.get('cv'), (int, float)) else None, '{:.2f}')} | {' / '.join(clocks)} | {' / '.join(limited)} | {chosen} | {fnum(d.get('tflops'))} | {fnum(b.get('tflops'))} | {float(wall):.1f} | {slow} |")
    else:
        out.append(f"| {dt} | {s} | {' | '.join(cells)} | n/a | n/a | n/a | n/a | n/a | n/a | n/a | n/a | n/a | n/a |")
if spreads:
    out.append(f"\nSpread between the three runs: median {statistics.median(spreads):.2f} %, max {max(spreads):.2f} % over {len(spreads)} shapes measured three times (goal: under 2 %); under 2 % on {sum(1 for x in spreads if x < 2.0)} of {len(spreads)}.")
out.append("\nRaw documents: measure-raw.tar.gz beside this file (every measurement and baseline JSON, stderr of each run).")
with open(dest, "w") as f:
    f.write("\n".join(out) + "\n")
print("\n".join(out))
PY
tar -czf "$DEST/measure-raw.tar.gz" -C "$WORK" raw kernels.tsv e2e.tsv baselines.tsv 2>/dev/null || say "could not pack the raw documents"
say "done in $(elapsed) s; report: $DEST/measure-h200.md"
