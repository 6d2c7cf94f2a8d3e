#!/usr/bin/env bash
# GPU evidence for issue 25's points 1, 7 and 8 (one device call, about 6 minutes):
#  (a) contention: a foreign PyTorch f16 matmul loop runs on the GPU while `croq measure` and
#      `croq baseline` time; both must come back contended (exit 6), the baseline unstored, the
#      measurement refused by store-round (exit 5) -- before this work they returned PASS at 595
#      TFLOPS (727 alone) and 619 (737 alone). Then the loop stops, and a measurement started while
#      a short foreign job runs waits for it and passes uncontended.
#  (b) cheating candidates (tests/gpu/kernels/cheats.cu, one shared object each) measured in an
#      enforced task: the output-sniffing cheat must measure at the honest speed, the call-counting
#      and timing-gap cheats must fail verification, the host-sniffing and synchronising ones must
#      be refused before they run -- before this work the conditional-work cheat got PASS at 821
#      TFLOPS at 8192^3 against 735 honest. Then the GPU tests of the cheats
#      (croq_gpu_tests GpuRunner.CheatingCandidates*, SynchronisingLaunch*, BrokenKernels*).
#  (c) one lease: `croq profile` (Nsight Compute) and `croq measure` started at the same moment on
#      the same GPU, both orders, with a GPU test beside them; the lease history must show that
#      no two ever held the GPU at once, the second of each pair having waited for the first.
# Writes $OUT/hardening-gpu.md (the summary), $OUT/hardening-gpu.json (the figures),
# $OUT/hardening-raw.tar.gz (every document) and $OUT/hardening-evidence.log; without $OUT,
# docs/results/hardening-run/.
#
#   bash bench/gpu/hardening_evidence.sh build   here (CUDA toolkit, no GPU): builds croq, the GPU
#                                                runner, croq_gpu_tests and the test kernels, packs
#                                                them into .carry/croq (bench/gpu/pack_device.sh),
#                                                and compiles the hopper kernel and the cheats into
#                                                .carry/hardening
#   bash bench/gpu/hardening_evidence.sh [run]   on the GPU machine, carrying .carry/croq and
#                                                .carry/hardening (PyTorch for the foreign job; without
#                                                it a second croq-gpu-runner stands in)
# Environment: HARDENING_BUDGET_S (default 480): parts that no longer fit are reported as not run;
# HARDENING_PARTS (default "a b c"): the parts to run (the others are reported as not run);
# CROQ_BUILD (default build) and JOBS (default 2) for the build step.
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
source bench/gpu/common.sh
KDIR=$REPO/.carry/hardening
KEY_A=matmul_f16fp32_8192x8192x8192
KEY_B=matmul_f16fp32_4096x4096x4096
CHEATS="honest sniff_output count_calls timing_gap host_sniff sync_inside"   # CHEAT_MODE 0..5

if [ "${1:-run}" = build ]; then
  set -e
  BUILD=${CROQ_BUILD:-build}
  [ -f "$BUILD/CMakeCache.txt" ] || cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
  cmake --build "$BUILD" -j"${JOBS:-2}" --target croq croq-gpu-runner croq_gpu_tests croq_test_kernel_set
  bash bench/gpu/pack_device.sh "$BUILD"
  set +e
  rm -rf "$KDIR" && mkdir -p "$KDIR"
  # The hopper family's base configuration (cooperative 128x256, 4 stages, persistent) for f16 -> f32.
  python3 - "$KDIR" "$REPO" "$KEY_A" <<'PY'
import os, sys
kdir, repo, key = sys.argv[1:4]
sys.path.insert(0, os.path.join(repo, "bench/gpu"))
from render_hopper import HAND_BASE, render
open(os.path.join(kdir, "hopper.cu"), "w").write(render(repo, dict(HAND_BASE), key, "hardening evidence: an honest fast kernel"))
PY
  build_hopper_sources "$KDIR"
  mode=0
  for name in $CHEATS; do
    /usr/local/cuda/bin/nvcc -O3 -std=c++17 --shared -Xcompiler -fPIC -I"$REPO/include" \
      -gencode=arch=compute_90a,code=sm_90a -DCHEAT_MODE=$mode tests/gpu/kernels/cheats.cu -o "$KDIR/cheat_$name.so" \
      && echo "built cheat_$name" || echo "FAILED cheat_$name"
    mode=$((mode + 1))
  done
  ls -la "$KDIR"
  exit 0
fi

croq_executables
DEST=${OUT:-$REPO/docs/results/hardening-run}
mkdir -p "$DEST"
W=$(mktemp -d /tmp/croq-hardening-XXXXXX)
RAW=$W/raw
mkdir -p "$RAW"
exec > >(tee "$DEST/hardening-evidence.log") 2>&1
START=$(date +%s)
BUDGET_S=${HARDENING_BUDGET_S:-480}
PARTS=${HARDENING_PARTS:-"a b c"}
has_part() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
say() { echo "[hardening $(($(date +%s) - START))s] $*"; }
left() { echo $((BUDGET_S - ($(date +%s) - START))); }
# A lease folder of this run's own: its history is this run's alone (the lease still excludes
# every croq process of this run from each other).
export CROQ_LEASE_DIR=$W/leases
mkdir -p "$CROQ_LEASE_DIR"
: > "$W/steps.tsv"
step() {  # step NAME RC SECONDS: one line of the record
  printf '%s\t%s\t%s\n' "$1" "$2" "$3" >> "$W/steps.tsv"
}
run_step() {  # run_step NAME OUTFILE CMD...: runs, records exit code and time
  local name=$1 out=$2
  shift 2
  local t0 t1 rc
  t0=$(date +%s.%N)
  "$@" > "$out" 2> "$RAW/$name.err"
  rc=$?
  t1=$(date +%s.%N)
  step "$name" "$rc" "$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')"
  say "$name: exit $rc; $(tail -1 "$RAW/$name.err" | cut -c1-200)"
  return $rc
}

say "croq: $(croq --version 2>&1 | tr -d '\n')"
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,utilization.gpu --format=csv 2>&1
croq gpu key > "$RAW/gpu_key.json" 2>&1
HONEST=$KDIR/hopper.so
[ -f "$HONEST" ] || { say "no $HONEST (run the build step here first); the WMMA kernel stands in"; HONEST=$KDIR/cheat_honest.so; }

# A foreign GPU job: a PyTorch f16 matmul loop for $1 seconds (another user's training, say). Without
# PyTorch, a croq-gpu-runner timing the honest kernel for that long stands in (also a process croq
# did not start for this measurement).
cat > "$W/foreign.py" <<'PY'
import sys, time
import torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
b = torch.randn_like(a)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    for _ in range(10):
        c = a @ b
    torch.cuda.synchronize()
PY
start_foreign() {  # start_foreign SECONDS: sets FPID, waits until nvidia-smi lists a compute process
  if python3 -c 'import torch; assert torch.cuda.is_available()' 2> /dev/null; then
    python3 "$W/foreign.py" "$1" > "$RAW/foreign.log" 2>&1 &
    FOREIGN_KIND=pytorch
  else
    croq-gpu-runner --candidate "$HONEST" --op matmul --m 8192 --n 8192 --k 8192 --dtype f16f32 \
      --min-reps 1000000 --max-reps 1000000 --time-budget-ms $(($1 * 1000)) --rest-ratio 0 --cv-target 0 \
      > "$RAW/foreign.log" 2>&1 &
    FOREIGN_KIND=croq-gpu-runner
  fi
  FPID=$!
  for _ in $(seq 1 120); do
    if [ -n "$(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null | tr -d ' ')" ]; then break; fi
    sleep 0.5
  done
  sleep 2  # past its start-up: computing
  say "foreign job ($FOREIGN_KIND) pid $FPID: $(nvidia-smi --query-compute-apps=pid,process_name,used_gpu_memory --format=csv,noheader 2>&1 | tr '\n' ';')"
}
stop_foreign() {
  kill "$FPID" 2> /dev/null
  wait "$FPID" 2> /dev/null
  for _ in $(seq 1 60); do
    [ -z "$(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null | tr -d ' ')" ] && break
    sleep 0.5
  done
}

GPU=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["key"])' "$RAW/gpu_key.json" 2>/dev/null || echo sm90_NVIDIA_H200)

if has_part a; then
# ---- (a) contention ------------------------------------------------------------------------------
# The honest kernel is the task's own binary (bin/<key>/<model>/iter001_hopper.so), measured by
# --iter as a tuning round would be: the contended measurement is refused for being contended, not
# for being a stranger's file.
WS=$W/ws-a
mkdir -p "$WS/tuning/$GPU/cuda/bin/$KEY_A/hardening"
cp "$HONEST" "$WS/tuning/$GPU/cuda/bin/$KEY_A/hardening/iter001_hopper.so"
TA=(--dsl cuda --shape-key "$KEY_A" --model hardening)
croq --root "$WS" task init "${TA[@]}" --task-uid hardening > "$RAW/a_task.json" 2>&1
say "(a) $KEY_A alone"
run_step a_measure_alone "$RAW/a_measure_alone.json" croq --root "$WS" measure "${TA[@]}" --iter iter001_hopper \
  --out "$RAW/a_measure_alone_file.json"
start_foreign 300
croq gpu contention > "$RAW/a_gpu_contention.json" 2> /dev/null
say "(a) $KEY_A with the foreign job running"
run_step a_measure_shared "$RAW/a_measure_shared.json" croq --root "$WS" measure "${TA[@]}" --iter iter001_hopper \
  --idle-timeout 5 --out "$RAW/a_measure_shared_file.json"
run_step a_decide_shared "$RAW/a_decide_shared.json" croq --root "$WS" decide "${TA[@]}" \
  --measurement "$RAW/a_measure_shared_file.json" --kernel iter001_hopper
run_step a_baseline_shared "$RAW/a_baseline_shared.json" croq --root "$WS" baseline "${TA[@]}" --task-uid hardening \
  --idle-timeout 5
run_step a_store_shared "$RAW/a_store_shared.json" croq --root "$WS" store-round "${TA[@]}" --iter iter001 \
  --kernel iter001_hopper --decision KEEP --bottleneck compute_bound --idea "a contended figure" \
  --measurement "$RAW/a_measure_shared_file.json"
ls "$WS"/tuning/*/cuda/baseline/"$KEY_A"/hardening/ > "$RAW/a_baseline_files.txt" 2>&1
stop_foreign
say "(a) the foreign job has stopped"
run_step a_baseline_alone "$RAW/a_baseline_alone.json" croq --root "$WS" baseline "${TA[@]}" --task-uid hardening
start_foreign 12
say "(a) a measurement started while a 12 s foreign job runs: it waits"
run_step a_measure_waits "$RAW/a_measure_waits.json" croq --root "$WS" measure "${TA[@]}" --iter iter001_hopper \
  --idle-timeout 120 --out "$RAW/a_measure_waits_file.json"
stop_foreign

fi

if has_part b; then
# ---- (b) cheating candidates ---------------------------------------------------------------------
WS=$W/ws-b
mkdir -p "$WS/tuning"
TB=(--dsl cuda --shape-key "$KEY_B" --model cheats)
croq --root "$WS" task init "${TB[@]}" --task-uid cheats > "$RAW/b_task.json" 2>&1
croq --root "$WS" protocol begin "${TB[@]}" --mode enforced --rounds 1 > "$RAW/b_protocol.json" 2>&1
# Each cheat is one of the task's own binaries (bin/<key>/cheats/iter00<n>_<mode>.so), as a round's would be.
mkdir -p "$WS/tuning/$GPU/cuda/bin/$KEY_B/cheats"
n=0
for name in $CHEATS; do
  n=$((n + 1))
  cp "$KDIR/cheat_$name.so" "$WS/tuning/$GPU/cuda/bin/$KEY_B/cheats/iter00${n}_$name.so"
  if [ "$(left)" -lt 60 ]; then step "b_$name" skipped 0; continue; fi
  say "(b) cheat $name (enforced task, $KEY_B)"
  run_step "b_$name" "$RAW/b_$name.json" croq --root "$WS" measure "${TB[@]}" --iter "iter00${n}_$name" \
    --out "$RAW/b_${name}_file.json"
done
# The synchronising cheat without croq's refusal: the runner itself sees the launch wait for the
# stream it holds (flag launch_waits).
run_step b_sync_inside_runner "$RAW/b_sync_inside_runner.json" croq-gpu-runner --candidate "$KDIR/cheat_sync_inside.so" \
  --op matmul --m 4096 --n 4096 --k 4096 --dtype f16f32 --out "$RAW/b_sync_inside_runner_file.json"

# The GPU tests of the cheats (kernels/cheats.cu as built with the tests), from the pack.
# (Skipped when the pack has no cheat kernels: a device call carries at most 64 MiB with the tree.)
if [ -x "$BIN/croq_gpu_tests" ] && [ -f "$BIN/../test-kernels/cheat_honest.so" ] && [ "$(left)" -gt 60 ]; then
  say "(b) croq_gpu_tests: the cheats and the broken kernels"
  t0=$(date +%s)
  CROQ_TEST_BIN_DIR=$BIN timeout 150 "$BIN/croq_gpu_tests" \
    --gtest_filter='GpuRunner.CheatingCandidates*:GpuRunner.SynchronisingLaunch*:GpuRunner.BrokenKernels*' \
    > "$RAW/b_gpu_tests.log" 2>&1
  step b_gpu_tests $? $(($(date +%s) - t0))
  grep -E '^\[ +(OK|FAILED|SKIPPED) +\]' "$RAW/b_gpu_tests.log" | sort -u > "$RAW/b_gpu_tests.txt"
  cat "$RAW/b_gpu_tests.txt"
else
  step b_gpu_tests skipped 0
fi

fi

if has_part c; then
# ---- (c) one lease: a profile and a measurement at once ------------------------------------------
WS=$W/ws-c
TC=(--dsl cuda --shape-key "$KEY_B" --model lease)
mkdir -p "$WS/tuning/$GPU/cuda/bin/$KEY_B/lease"
cp "$KDIR/cheat_honest.so" "$WS/tuning/$GPU/cuda/bin/$KEY_B/lease/iter001_honest.so"
for order in profile_first measure_first; do
  if [ "$(left)" -lt 40 ]; then step "c_$order" skipped 0; continue; fi
  say "(c) profile and measure at once ($order)"
  p_cmd=(croq --root "$WS" profile "${TC[@]}" --iter iter001_honest --preset quick)
  m_cmd=(croq --root "$WS" measure "${TC[@]}" --iter iter001_honest --out "$RAW/c_${order}_measure_file.json")
  if [ "$order" = profile_first ]; then
    "${p_cmd[@]}" > "$RAW/c_${order}_profile.json" 2> "$RAW/c_${order}_profile.err" & P1=$!
    sleep 0.2
    "${m_cmd[@]}" > "$RAW/c_${order}_measure.json" 2> "$RAW/c_${order}_measure.err" & P2=$!
  else
    "${m_cmd[@]}" > "$RAW/c_${order}_measure.json" 2> "$RAW/c_${order}_measure.err" & P2=$!
    sleep 0.2
    "${p_cmd[@]}" > "$RAW/c_${order}_profile.json" 2> "$RAW/c_${order}_profile.err" & P1=$!
  fi
  # A GPU test beside them (it takes the same lease).
  if [ -x "$BIN/croq_gpu_tests" ]; then
    CROQ_TEST_BIN_DIR=$BIN "$BIN/croq_gpu_tests" --gtest_filter='GpuRunner.NaiveKernelPassesShapesThatAreNotMultiplesOfATile' \
      > "$RAW/c_${order}_gputest.log" 2>&1 & P3=$!
  else
    P3=
  fi
  wait $P1; rc1=$?
  wait $P2; rc2=$?
  [ -n "$P3" ] && { wait $P3; rc3=$?; } || rc3=none
  step "c_${order}_profile" "$rc1" 0
  step "c_${order}_measure" "$rc2" 0
  step "c_${order}_gputest" "$rc3" 0
  say "(c) $order: profile exit $rc1, measure exit $rc2, GPU test exit $rc3"
done
fi
croq gpu lease --history > "$RAW/c_lease_history.json" 2> "$RAW/c_lease_history.err"

# ---- report ----------------------------------------------------------------------------------------
say "writing the report"
python3 - "$W" "$RAW" "$DEST" "$(croq --version 2>&1 | tr -d '\n')" "$HONEST" <<'PY'
import datetime, json, os, sys
work, raw, dest, version, honest = sys.argv[1:6]

def load(name):
    try:
        with open(os.path.join(raw, name)) as f:
            return json.load(f)
    except Exception:
        return None

steps = {}
for line in open(os.path.join(work, "steps.tsv")):
    name, rc, secs = line.rstrip("\n").split("\t")
    steps[name] = {"rc": rc, "s": secs}

def rc(name):
    return steps.get(name, {}).get("rc", "not run")

def tf(doc):
    v = (doc or {}).get("tflops")
    return f"{v:.1f}" if isinstance(v, (int, float)) else "n/a"

def reasons(doc):
    c = (doc or {}).get("contention") or {}
    return "; ".join(c.get("reasons") or []) or "none"

key = load("gpu_key.json") or {}
figures = {"device": key.get("name"), "uuid": key.get("uuid"), "croq": version}
out = ["# Hardening on the H200: one lease, contention, cheating candidates\n",
       f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
       f"- device: {key.get('name', '?')} ({key.get('uuid', '?')}), driver {key.get('driver', '?')}",
       f"- croq: {version}",
       f"- script: `bench/gpu/hardening_evidence.sh run`; honest kernel `{os.path.basename(honest)}`\n"]

# (a)
def baseline_doc(doc):
    # croq baseline prints {result, record, ...} when it stored one, else the measurement itself.
    if doc and isinstance(doc.get("result"), dict):
        return {"verdict": "PASS", "tflops": doc["result"].get("tflops"), "contended": False}
    return doc

alone = load("a_measure_alone_file.json")
shared = load("a_measure_shared_file.json")
bshared = baseline_doc(load("a_baseline_shared.json"))
balone = load("a_baseline_alone.json")
waits = load("a_measure_waits_file.json")
store = load("a_store_shared.json") or {}
cont = load("a_gpu_contention.json") or {}
files = open(os.path.join(raw, "a_baseline_files.txt")).read().split() if os.path.exists(os.path.join(raw, "a_baseline_files.txt")) else []
out.append("## (a) A foreign job on the GPU\n")
out.append(f"Foreign processes seen by `croq gpu contention`: "
           + ", ".join(f"pid {p.get('pid')} {p.get('name')} ({p.get('why')})" for p in cont.get("processes", [])) + "\n")
out.append("| step | exit | verdict | TFLOPS | contended | reasons |")
out.append("|---|---|---|---|---|---|")
def row(label, name, doc):
    d = doc or {}
    out.append(f"| {label} | {rc(name)} | {d.get('verdict', 'n/a')} | {tf(d)} | {d.get('contended', (d.get('contention') or {}).get('contended', 'n/a'))} | {reasons(d)[:300]} |")
row("`croq measure`, GPU alone", "a_measure_alone", alone)
row("`croq measure`, foreign job running (`--idle-timeout 5`)", "a_measure_shared", shared)
row("`croq baseline`, foreign job running", "a_baseline_shared", bshared)
row("`croq baseline`, alone again", "a_baseline_alone", baseline_doc(balone))
row("`croq measure` started during a 12 s foreign job (`--idle-timeout 120`)", "a_measure_waits", waits)
err = (store.get("error") or {}).get("message", "")
out.append(f"\n- `store-round --decision KEEP --measurement <the contended file>`: exit {rc('a_store_shared')}: {err}")
derr = ((load("a_decide_shared.json") or {}).get("error") or {}).get("message", "")
out.append(f"- `croq decide --measurement <the contended file>`: exit {rc('a_decide_shared')}: {derr}")
out.append(f"- files in the baseline folder after the contended baseline: {', '.join(files) or 'none'} "
           "(no cublas_result.json: nothing was stored)")
out.append(f"- the measurement that waited: waited {((waits or {}).get('contention') or {}).get('waited_ms', 'n/a')} ms for the GPU, then contended = {(waits or {}).get('contention', {}).get('contended', 'n/a')}\n")
figures["a"] = {"alone_tflops": (alone or {}).get("tflops"), "shared_tflops": (shared or {}).get("tflops"),
                "shared_exit": rc("a_measure_shared"), "decide_shared_exit": rc("a_decide_shared"), "shared_contended": (shared or {}).get("contention", {}).get("contended"),
                "baseline_shared_exit": rc("a_baseline_shared"), "store_shared_exit": rc("a_store_shared"),
                "baseline_alone_tflops": ((balone or {}).get("result") or {}).get("tflops"),
                "waited_ms": ((waits or {}).get("contention") or {}).get("waited_ms"),
                "waited_contended": ((waits or {}).get("contention") or {}).get("contended")}

# (b)
out.append("## (b) Cheating candidates (enforced task, " + "4096^3 f16->f32)\n")
out.append("| candidate | exit | verdict | reason | TFLOPS | detail |")
out.append("|---|---|---|---|---|---|")
figures["b"] = {}
for name in "honest sniff_output count_calls timing_gap host_sniff sync_inside".split():
    d = load(f"b_{name}_file.json") or load(f"b_{name}.json") or {}
    out.append(f"| {name} | {rc('b_' + name)} | {d.get('verdict', 'n/a')} | {d.get('reason', '')} | {tf(d)} | {(d.get('detail') or '')[:160]} |")
    figures["b"][name] = {"exit": rc("b_" + name), "verdict": d.get("verdict"), "reason": d.get("reason"), "tflops": d.get("tflops")}
r = load("b_sync_inside_runner_file.json") or {}
out.append(f"\nThe synchronising cheat run by the runner alone (no croq refusal): verdict {r.get('verdict')}, flags {r.get('flags')}, "
           f"stream held {((r.get('timing') or {}).get('stream_held'))}.\n")
figures["b"]["sync_inside_runner_flags"] = r.get("flags")
gt = os.path.join(raw, "b_gpu_tests.txt")
lines = open(gt).read().split("\n") if os.path.exists(gt) else []
out.append(f"The GPU tests of the cheats (`croq_gpu_tests`, exit {rc('b_gpu_tests')}):\n")
out.extend(f"- `{l.strip()}`" for l in lines if l.strip())
out.append("")
figures["b"]["gpu_tests"] = {"exit": rc("b_gpu_tests"), "lines": [l for l in lines if l.strip()]}

# (c)
hist = (load("c_lease_history.json") or {}).get("history", [])
spans, open_ = [], {}
for e in hist:
    if e.get("event") == "acquire":
        open_[e["pid"]] = e
    elif e.get("event") == "release" and e["pid"] in open_:
        a = open_.pop(e["pid"])
        spans.append((a["t_ms"], e["t_ms"], a.get("purpose", ""), a.get("waited_ms", 0)))
spans.sort()
overlaps = sum(1 for x, y in zip(spans, spans[1:]) if y[0] < x[1])
t0 = spans[0][0] if spans else 0
out.append("## (c) One lease: profile, measurement and a GPU test at once\n")
out.append("| order | profile exit | measure exit | GPU test exit |")
out.append("|---|---|---|---|")
for order in ("profile_first", "measure_first"):
    out.append(f"| {order} | {rc('c_' + order + '_profile')} | {rc('c_' + order + '_measure')} | {rc('c_' + order + '_gputest')} |")
out.append("\nThe lease history (`croq gpu lease --history`), every holding of the GPU in time order:\n")
out.append("| from (ms) | to (ms) | held ms | waited ms | purpose |")
out.append("|---|---|---|---|---|")
for a, b, purpose, waited in spans:
    out.append(f"| {a - t0:.0f} | {b - t0:.0f} | {b - a:.0f} | {waited} | {purpose[:90]} |")
out.append(f"\n**{len(spans)} holdings, {overlaps} overlapping.**\n")
figures["c"] = {"holdings": len(spans), "overlaps": overlaps,
                "purposes": [p for _, _, p, _ in spans]}
open(os.path.join(dest, "hardening-gpu.md"), "w").write("\n".join(out) + "\n")
json.dump(figures, open(os.path.join(dest, "hardening-gpu.json"), "w"), indent=1)
print("\n".join(out))
PY
tar czf "$DEST/hardening-raw.tar.gz" -C "$W" raw steps.tsv 2>/dev/null
say "done: $DEST/hardening-gpu.md"
