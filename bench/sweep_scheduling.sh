#!/usr/bin/env bash
# Scheduling overhead of `croq sweep` with 8 workers on the cpp backend (issue 19's goal: the
# GPU-equivalent resource is never idle while a ready candidate waits). No GPU needed.
#
# Each worker's driver is croq_sweep_driver (tests/helpers): per round a "build" (BUILD_MS of CPU
# work, no lease) then a "measurement" holding a device lease for HOLD_MS, then the round stored
# through the ledger. Two configurations, 8 workers each (CROQ_SWEEP_FAKE_DEVICES=8):
#   pinned   every worker on its own fake device (cpu0..cpu7, the sweep's normal case);
#   shared   all 8 drivers measuring on one lease (a single GPU shared by 8 builders, what
#            `croq tune -j 8` does), where a candidate often waits for the device.
# From the lease histories (acquire with waited_ms, release with held_ms) it reports, per
# configuration: the device's busy time, the time candidates spent waiting, and the time the device
# was idle while at least one candidate waited (the handoff overhead), with its largest gap; and from
# tuning/sweep-log.jsonl the sweep's dispatch gap (a worker's driver exit to its next launch).
# Usage: bench/sweep_scheduling.sh [build-folder]     (writes docs/results/sweep-scheduling.md)
# Environment: SHAPES (16), ROUNDS (8), HOLD_MS (40), BUILD_MS (60).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
CROQ=$BUILD/bin/croq
DRIVER=$(ls "$BUILD"/tests/croq_sweep_driver 2>/dev/null || true)
[ -x "$CROQ" ] && [ -x "$DRIVER" ] || { echo "build croq and croq_sweep_driver first (cmake --build $BUILD --target croq croq_sweep_driver)" >&2; exit 1; }
SHAPES=${SHAPES:-16} ROUNDS=${ROUNDS:-8} HOLD_MS=${HOLD_MS:-40} BUILD_MS=${BUILD_MS:-60}
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
python3 - "$SHAPES" > "$TMP/manifest.json" <<'PY'
import json, sys
n = int(sys.argv[1])
print(json.dumps({"schema": "croq-sweep-manifest-v1", "operator": "matmul", "dtypes": ["f32"],
                  "shapes": [[64 + 8 * i, 64, 64] for i in range(n)]}))
PY
run() {  # $1: configuration name, $2: lease override ("" = pinned)
  local ws=$TMP/$1; mkdir -p "$ws/tuning"
  local start=$(date +%s.%N)
  CROQ_SWEEP_FAKE_DEVICES=8 CROQ_LEASE_DIR=$TMP/leases-$1 CROQ_SWEEP_DRIVER_LEASE=$2 \
    "$CROQ" --root "$ws" -q sweep run --manifest "$TMP/manifest.json" --dsl cpp --gpu cpu_bench --rounds "$ROUNDS" \
    --driver command --command "$DRIVER {root} {gpu} {dsl} {model} {key} {target} $HOLD_MS $BUILD_MS" > "$TMP/$1.json"
  echo "$1 $(python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 2))" "$start" "$(date +%s.%N)")" >> "$TMP/walls"
}
run pinned ""
run shared shared
python3 - "$TMP" "$SHAPES" "$ROUNDS" "$HOLD_MS" "$BUILD_MS" "$(git rev-parse --short=12 HEAD)" <<'PY' | tee docs/results/sweep-scheduling.md
import json, sys, os, glob, datetime, platform, subprocess
tmp, shapes, rounds, hold, build, commit = sys.argv[1:7]
walls = dict(l.split() for l in open(f"{tmp}/walls"))
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
print("# croq sweep: scheduling overhead with 8 workers (cpp backend, fake devices)\n")
print(f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M')} UTC")
print(f"- machine: {cpu}, {os.cpu_count()} cores (shared with other work)")
print(f"- commit: {commit}")
print(f"- command: `bench/sweep_scheduling.sh` ({shapes} shapes x {rounds} rounds, 8 workers; per round {build} ms of CPU "
      f"'build' then a {hold} ms 'measurement' under the device lease; croq_sweep_driver)\n")
print("| configuration | wall s | measurements | device busy s | candidates waiting s | device idle while a candidate waited s | largest such gap ms | dispatch gap median / max ms |")
print("|---|---|---|---|---|---|---|---|")
for conf in ("pinned", "shared"):
    spans, waits = [], []
    for f in glob.glob(f"{tmp}/leases-{conf}/*.history"):
        dev = os.path.basename(f)
        opened = {}
        for l in open(f):
            e = json.loads(l)
            if e["event"] == "acquire":
                opened[e["pid"]] = e["t_ms"]
                if e.get("waited_ms", 0) > 0: waits.append((dev, e["t_ms"] - e["waited_ms"], e["t_ms"]))
            elif e["event"] == "release" and e["pid"] in opened:
                spans.append((dev, opened.pop(e["pid"]), e["t_ms"]))
    busy = sum(b - a for _, a, b in spans) / 1000
    waiting = sum(b - a for _, a, b in waits) / 1000
    # Idle while a candidate waited: per device, the union of the wait intervals minus the union of
    # the holdings (time in which someone waited and no one held the device).
    idle, worst = 0.0, 0.0
    for dev in {d for d, _, _ in waits}:
        ws = sorted((a, b) for d, a, b in waits if d == dev)
        merged = []
        for a, b in ws:
            if merged and a <= merged[-1][1]: merged[-1][1] = max(merged[-1][1], b)
            else: merged.append([a, b])
        hs = sorted((a, b) for d, a, b in spans if d == dev)
        for a, b in merged:
            cur = a
            for s, t in hs:
                if t <= cur or s >= b: continue
                if s > cur: idle += s - cur; worst = max(worst, s - cur)
                cur = max(cur, t)
                if cur >= b: break
            if b > cur: idle += b - cur; worst = max(worst, b - cur)
    idle /= 1000
    gaps, last_exit = [], {}
    for l in open(f"{tmp}/{conf}/tuning/sweep-log.jsonl"):
        e = json.loads(l)
        if e["event"] == "exit": last_exit[e["device"]] = e["t_ms"]
        elif e["event"] == "launch" and e["device"] in last_exit: gaps.append(e["t_ms"] - last_exit.pop(e["device"]))
    gaps.sort()
    g = f"{gaps[len(gaps)//2]:.1f} / {gaps[-1]:.1f}" if gaps else "-"
    print(f"| {conf} | {walls[conf]} | {len(spans)} | {busy:.2f} | {waiting:.2f} | {idle:.3f} | {worst:.1f} | {g} |")
print("\npinned: every worker measures on its own device, so a candidate never waits for another's; shared: the 8 "
      "workers' candidates queue for one device, and the column 'device idle while a candidate waited' is the "
      "lease's handoff overhead (the time between one holder's release and the next waiter's acquisition, summed). "
      "The dispatch gap is the sweep's own time between a worker's driver ending and its next driver starting "
      "(state.json written, the next shape taken, its health checked).")
PY
