#!/usr/bin/env bash
# H200 goal of `croq sweep` (issue 19): the 14 typical shapes of dense matmul f16 -> f32
# (matmul_f16fp32_<M>x<N>x<K>_fs) swept from scratch to 30 rounds each with croq's own search,
#   croq sweep run --manifest typical --op matmul --dtype f16fp32 --dsl cuda --rounds 30
# resumed across device calls from the carried workspace, and the table written to
# sweep-h200.md (shapes x dtype: baseline, best, ratio, rounds, GPU hours), with the report's
# CSV/SVG/HTML beside it (croq report --sweep).
#
# A device call is limited to 10 minutes: the sweep runs under SWEEP_LIMIT_S (default 500 s), then
# `croq sweep stop --wait` (every driver stops; a SIGKILL at the limit would lose nothing either),
# and the workspace goes back as sweep-resume.tar.xz (commit it beside the call's results). Put that
# file at .carry/sweep/sweep-resume.tar.xz (carry .carry/sweep) and call the script again: the sweep
# resumes the active shape first, skips the shapes
# done at 30 rounds, and goes on. 14 shapes x 30 rounds take many calls (the large shapes spend
# most of a round in ncu; SWEEP_PRESET=quick, the default, keeps that short).
#
# The gemm_sp sweep (issue 19's second table) is the same script with SWEEP_OP=gemm_sp SWEEP_DTYPE=f16
# (or e4m3) SWEEP_CARRY=.carry/sweep-sp: each sweep resumes from its own carried folder.
# Needs croq's executables packed by bench/gpu/pack_device.sh into .carry/croq (carried), nvcc and
# ncu. Environment: SWEEP_OP (matmul), SWEEP_DTYPE (f16fp32), SWEEP_CARRY (.carry/sweep: the folder
# holding sweep-resume.tar.xz, relative to the repository), SWEEP_ROUNDS (30), SWEEP_LIMIT_S
# (500), SWEEP_PRESET (quick), SWEEP_SEED (1), SWEEP_GPUS (all), SWEEP_WORKERS (4: shapes at once on
# each GPU, their builds side by side on the machine's cores; --workers-per-device), SWEEP_SAME_RUN
# (0; 1: each shape's best kernel and its baseline measured again in this call, for a same-run table:
# the kernels built side by side, then SWEEP_SAME_RUN_REPEATS (2) baseline/measure pairs per shape; on a
# finished sweep the run itself skips every shape at once, so a call can be the same-run table alone).
# Usage: bash bench/gpu/sweep_h200.sh       (results under $OUT, else docs/results)
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
source bench/gpu/common.sh
croq_executables
OP=${SWEEP_OP:-matmul}
DTYPE=${SWEEP_DTYPE:-f16fp32}
ROUNDS=${SWEEP_ROUNDS:-30}
LIMIT=${SWEEP_LIMIT_S:-500}
PRESET=${SWEEP_PRESET:-quick}
SEED=${SWEEP_SEED:-1}
GPUS=${SWEEP_GPUS:-all}
WORKERS=${SWEEP_WORKERS:-4}
CARRY=$REPO/${SWEEP_CARRY:-.carry/sweep}
# one workspace per operator and dtype: a machine still warm from another sweep's call keeps its own
WS=/tmp/croq-sweep-ws-$OP-${DTYPE//,/-}
DEST=${OUT:-$REPO/docs/results}
mkdir -p "$DEST" "$WS/tuning"
# (.tar.xz through python3's tarfile: the GPU machine may lack the xz program; .tgz from older calls)
for carried in "$CARRY/sweep-resume.tar.xz" "$CARRY/sweep-ws.tgz"; do
  if [ -f "$carried" ] && [ -z "$(ls -A "$WS/tuning")" ]; then
    case $carried in
      *.tar.xz) python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$carried" "$WS" ;;
      *) tar xzf "$carried" -C "$WS" ;;
    esac && echo "[sweep-h200] resumed the workspace from ${carried#$REPO/}"
  fi
done
echo "[sweep-h200] croq $(croq --version 2>&1), commit $(cat "$REPO/.carry/croq/commit.txt" 2>/dev/null || git rev-parse --short=12 HEAD)"
nvidia-smi --query-gpu=index,name,driver_version,utilization.gpu,memory.used,temperature.gpu --format=csv,noheader
croq --root "$WS" sweep run --manifest typical --op "$OP" --dtype "$DTYPE" --dsl cuda --rounds "$ROUNDS" \
  --seed "$SEED" --profile-preset "$PRESET" --gpus "$GPUS" --workers-per-device "$WORKERS" > "$DEST/sweep-summary.json" 2>> "$DEST/sweep-events.log" &
pid=$!
start=$SECONDS
while kill -0 "$pid" 2>/dev/null && [ $((SECONDS - start)) -lt "$LIMIT" ]; do sleep 2; done
if kill -0 "$pid" 2>/dev/null; then
  echo "[sweep-h200] time limit: stopping the sweep (it resumes on the next call)"
  croq --root "$WS" sweep stop --wait --timeout 60 || kill -9 "$pid"
fi
wait "$pid"; rc=$?
echo "[sweep-h200] croq sweep exit $rc after $((SECONDS - start)) s"
croq --root "$WS" sweep status > "$DEST/sweep-status.json" 2> "$DEST/sweep-status.txt"
cat "$DEST/sweep-status.txt"
croq --root "$WS" report --sweep --out "$DEST/sweep-report" > /dev/null 2>> "$DEST/sweep-events.log" || echo "[sweep-h200] croq report --sweep failed"
# On the GPU machine the report travels as one file: the device tool brings back only so many files
# from $OUT, and the five of the report were the ones left out. (`croq report --sweep` on the
# committed workspace makes the same report again here.)
if [ -n "${OUT:-}" ] && [ -d "$DEST/sweep-report" ]; then
  tar czf "$DEST/sweep-report.tgz" -C "$DEST" sweep-report && rm -rf "$DEST/sweep-report"
fi
# The workspace to resume from, without binaries and profiles (rebuilt and re-profiled on demand),
# xz-compressed (the kernels' sources share the template: 0.3 MB where gzip made 2.7): small enough
# to commit (docs/results/README.md: archives on a branch do not outlive a session).
python3 - "$DEST/sweep-resume.tar.xz" "$WS" <<'PY'
import os, sys, tarfile
out, ws = sys.argv[1:3]
skip = (".ncu-rep", ".so", ".o", ".cubin", ".fatbin")
with tarfile.open(out, "w:xz", preset=9) as t:
    t.add(os.path.join(ws, "tuning"), arcname="tuning", filter=lambda i: None if i.name.endswith(skip) else i)
PY
echo "[sweep-h200] sweep-resume.tar.xz: $(du -h "$DEST/sweep-resume.tar.xz" | cut -f1)"
python3 - "$DEST/sweep-status.json" "$(cat "$REPO/.carry/croq/commit.txt" 2>/dev/null)" "$ROUNDS" "$OP" "$DTYPE" "$WORKERS" > "$DEST/sweep-h200.md" <<'PY'
import json, sys, subprocess, datetime
st = json.load(open(sys.argv[1])); commit, rounds, op, dtype, workers = sys.argv[2:7]
gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
print(f"# croq sweep on the H200: the 14 typical shapes of {op} {dtype}, from scratch, {rounds} rounds each\n")
print(f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M')} UTC")
print(f"- device: {gpu}")
print(f"- commit: {commit}")
print(f"- command: `croq sweep run --manifest typical --op {op} --dtype {dtype} --dsl cuda --rounds {rounds} --workers-per-device {workers}` (bench/gpu/sweep_h200.sh, resumed across device calls)\n")
print("| shape | status | rounds | baseline TFLOPS | best TFLOPS | best / baseline | GPU hours |")
print("|---|---|---|---|---|---|---|")
for r in st["shapes"]:
    b, t = r.get("baseline_tflops"), r.get("best_tflops")
    ratio = f"{t/b:.3f}" if b and t else "-"
    print(f"| {r['key']} | {r['status']} | {r['current_iter']}/{r.get('target_rounds') or rounds} | {b if b is not None else '-'} | {t if t is not None else '-'} | {ratio} | {r.get('worker_seconds', 0) / 3600:.2f} |")
print(f"\nCounts: {st.get('counts')}. GPU hours: the shape's drivers' wall time (with several workers on a GPU their times overlap: the sum is more than the GPU's). Progress over time and the bottleneck mix: sweep-report/ (croq report --sweep; sweep-report.tgz from the GPU machine).")
PY
cat "$DEST/sweep-h200.md"

# SWEEP_SAME_RUN=1 (the call that finishes the sweep): each shape's best kernel measured against its
# library baseline in this call, back to back twice (`croq baseline --force`, `croq measure`), so
# the ratios do not mix calls (a resumed shape's stored baseline is from the call it started in, on
# another machine of the pool). After the workspace is packed: the carried ledgers are not touched.
if [ "${SWEEP_SAME_RUN:-0}" = 1 ]; then
  SAME=$WS/same-run
  mkdir -p "$SAME"
  python3 - "$WS" > "$SAME/best.tsv" <<'PY'
import glob, json, os, sys
ws = sys.argv[1]
for log in sorted(glob.glob(f"{ws}/tuning/*/cuda/logs/*/croq-search/idea-log.jsonl")):
    parts = log.split(os.sep)
    gpu, key = parts[-6], parts[-3]
    keeps = [json.loads(l) for l in open(log) if l.strip()]
    keeps = [r for r in keeps if r.get("decision") == "KEEP" and r.get("tflops")]
    if keeps:
        print(f"{gpu}\t{key}\t{max(keeps, key=lambda r: r['tflops'])['kernel']}")
PY
  # the kernels are built side by side first (the carried workspace has no binaries), then measured
  # one shape after another: SWEEP_SAME_RUN_REPEATS (2) back-to-back baseline/measure pairs each.
  # A kernel whose binary is still there (built by the sweep on this machine, warm from the call
  # before) is measured as it is: croq restores only a kept kernel's missing binary, and refuses
  # to build one again outside a round's plan.
  while IFS=$'\t' read -r gpu key kernel; do
    if [ -f "$WS/tuning/$gpu/cuda/bin/$key/croq-search/$kernel.so" ]; then
      echo "[sweep-h200] $key: $kernel already built in this workspace"
      continue
    fi
    croq --root "$WS" build --gpu "$gpu" --dsl cuda --shape-key "$key" --model croq-search --iter "$kernel" < /dev/null > /dev/null 2> "$SAME/build_$key.err" \
      || echo "[sweep-h200] $key: $kernel did not build ($(tail -1 "$SAME/build_$key.err"))" &
    while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do sleep 1; done
  done < "$SAME/best.tsv"
  wait
  while IFS=$'\t' read -r gpu key kernel; do
    T=(--gpu "$gpu" --dsl cuda --shape-key "$key" --model croq-search)
    for rep in $(seq 1 "${SWEEP_SAME_RUN_REPEATS:-2}"); do
      croq --root "$WS" baseline "${T[@]}" --force > "$SAME/baseline_${rep}_$key.json" 2> /dev/null
      croq --root "$WS" measure "${T[@]}" --iter "$kernel" --out "$SAME/measure_${rep}_$key.json" > /dev/null 2>&1
    done
  done < "$SAME/best.tsv"
  python3 - "$SAME" >> "$DEST/sweep-h200.md" <<'PY'
import json, os, statistics, sys
same = sys.argv[1]
def tf(path):
    try:
        d = json.load(open(path))
    except Exception:
        return None
    d = d.get("result", d)
    return d.get("tflops") if d.get("verdict", "PASS") == "PASS" else None
print("\n## Same run: each shape's best kernel against its baseline in this call (back-to-back repeats)\n")
print("| shape | best kernel | library TFLOPS | croq TFLOPS | ratio |")
print("|---|---|---|---|---|")
reps = sorted({int(f.split("_")[1]) for f in os.listdir(same) if f.startswith("baseline_")}) or [1]
for line in open(os.path.join(same, "best.tsv")):
    gpu, key, kernel = line.rstrip("\n").split("\t")
    b = [tf(os.path.join(same, f"baseline_{r}_{key}.json")) for r in reps]
    c = [tf(os.path.join(same, f"measure_{r}_{key}.json")) for r in reps]
    bv, cv = [x for x in b if x], [x for x in c if x]
    ratio = f"{statistics.median(cv) / statistics.median(bv):.3f}" if bv and cv else "-"
    show = lambda v: " / ".join("-" if x is None else f"{x:.1f}" for x in v)
    print(f"| {key} | {kernel} | {show(b)} | {show(c)} | {ratio} |")
PY
  tar czf "$DEST/sweep-same-run.tgz" -C "$WS" same-run
  sed -n '/^## Same run/,$p' "$DEST/sweep-h200.md"
fi
