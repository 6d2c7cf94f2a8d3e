#!/usr/bin/env bash
# H200 evidence for `croq tune` on the cuda dsl: runs
#   croq tune matmul_f16fp32_4096x4096x4096 --dsl cuda --rounds 30
# with croq's own search (the hopper_gemm family from its default configuration), and writes the
# convergence (TFLOPS per round, decision, bottleneck, % of the cuBLAS baseline measured by
# `croq baseline` in the same workspace) and the median harness time per round and step (build,
# verify, measure, profile, store, ...) to tune-h200.md.
#
# A device call is limited to 10 minutes, so the tune runs under a time limit (TUNE_LIMIT_S,
# default 480 s) and is killed with SIGKILL when it is reached; the workspace then goes back as
# tune-ws.tgz. Put that file at .carry/tune/tune-ws.tgz (carry .carry/tune) and call the script
# again: `croq tune` resumes the same invocation where it was killed (that resume is itself part of
# what this shows). The report always covers every round stored so far.
#
# Needs croq's executables packed by bench/gpu/pack_device.sh into .carry/croq (carried), nvcc and
# ncu on the GPU machine. Environment: TUNE_KEY, TUNE_ROUNDS, TUNE_LIMIT_S, TUNE_PRESET (profile
# preset, default quick), TUNE_SEED (default 1).
# Usage: bash bench/gpu/tune_evidence.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
CARRY=$REPO/.carry/croq
export PATH=$CARRY/bin:$PATH LD_LIBRARY_PATH=$CARRY/lib:${LD_LIBRARY_PATH:-} CROQ_HOME=$REPO
KEY=${TUNE_KEY:-matmul_f16fp32_4096x4096x4096}
ROUNDS=${TUNE_ROUNDS:-30}
LIMIT=${TUNE_LIMIT_S:-480}
PRESET=${TUNE_PRESET:-quick}
SEED=${TUNE_SEED:-1}
WS=/tmp/croq-tune-ws
DEST=${OUT:-$REPO/docs/results}
mkdir -p "$DEST" "$WS/tuning"
if [ -f "$REPO/.carry/tune/tune-ws.tgz" ] && [ -z "$(ls -A "$WS/tuning")" ]; then
  tar xzf "$REPO/.carry/tune/tune-ws.tgz" -C "$WS" && echo "[tune-evidence] resumed workspace from .carry/tune/tune-ws.tgz"
fi
echo "[tune-evidence] croq $(croq --version 2>&1), commit $(cat "$CARRY/commit.txt" 2>/dev/null)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
start=$SECONDS
timeout --signal=KILL "$LIMIT" croq --root "$WS" tune "$KEY" --dsl cuda --rounds "$ROUNDS" --seed "$SEED" \
  --profile-preset "$PRESET" > "$DEST/tune-summary.json" 2>> "$DEST/tune-events.jsonl"
rc=$?
echo "[tune-evidence] croq tune exit $rc after $((SECONDS - start)) s"
tail -3 "$DEST/tune-events.jsonl"
tar czf "$DEST/tune-ws.tgz" --exclude="*.ncu-rep" -C "$WS" tuning
LOGS=$(ls -d "$WS"/tuning/*/cuda/logs/"$KEY"/croq-search 2>/dev/null | head -1)
python3 - "$LOGS" "$DEST/tune-events.jsonl" "$KEY" "$rc" "$(cat "$CARRY/commit.txt" 2>/dev/null)" > "$DEST/tune-h200.md" <<'PY'
import json, sys, statistics, subprocess, datetime
sys.path.insert(0, "bench/gpu")
import tunes as tunes_lib
logs, events_path, key, rc, commit = sys.argv[1:6]
recs = [json.loads(l) for l in open(f"{logs}/idea-log.jsonl") if l.strip()] if logs else []
events = []
for l in open(events_path):
    l = l.strip()
    if l.startswith("{"):
        try: events.append(json.loads(l))
        except ValueError: pass
gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
print("# croq tune on the H200 (cuda dsl)\n")
print(f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M')} UTC")
print(f"- device: {gpu}")
print(f"- commit: {commit}")
print(f"- command: `croq tune {key} --dsl cuda --rounds 30 --seed 1 --profile-preset quick` (bench/gpu/tune_evidence.sh); last exit {rc} (137: stopped at the call's time limit, resumed by the next call)")
base, rows_k = tunes_lib.convergence(recs)
bt = base.get("tflops") if base else None
print(f"- baseline: {base.get('kernel') if base else '-'} {bt} TFLOPS (`croq baseline`, measured by croq's runner)\n")
print("| round | kernel | decision | TFLOPS | best so far | % of cuBLAS | bottleneck | idea |")
print("|---|---|---|---|---|---|---|---|")
best = None
for r, best in rows_k:
    t = r.get("tflops")
    pct = f"{100*best/bt:.1f}" if best and bt else "-"
    print(f"| {r.get('round')} | {r.get('kernel')} | {r.get('decision')} | {t if t is not None else '-'} | {best or '-'} | {pct} | {r.get('bottleneck')} | {tunes_lib.idea_cell(r, 90)} |")
rounds = [e for e in events if e.get("event") == "round"]
steps = {}
for e in rounds:
    for k, v in (e.get("harness_ms") or {}).items(): steps.setdefault(k, []).append(v)
print("\n## Harness time per round (median over rounds, ms; a step absent from a round is not counted)\n")
print("| step | rounds with it | median ms | max ms |")
print("|---|---|---|---|")
for k in sorted(steps):
    v = steps[k]
    print(f"| {k} | {len(v)} | {statistics.median(v):.0f} | {max(v):.0f} |")
resumes = sum(1 for e in events if e.get("event") == "resume")
print(f"\n{len(recs)} records stored ({len(rounds)} rounds reported in the event log of these calls); {resumes} resume(s) after a kill.")
PY
cat "$DEST/tune-h200.md" | head -60
