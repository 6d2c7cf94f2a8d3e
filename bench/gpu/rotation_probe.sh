#!/usr/bin/env bash
# Small kernels measure a few per cent apart from one runner process to the next (768^3: 7.4 us per
# call, one process in three timed every cuBLAS variant 0.2 us slower; docs/results/pacing-h200.md).
# Is that where the process's buffers landed? This times the library baseline of the small shapes
# in ROTATION_RUNS fresh croq-gpu-runner processes for each number of rotated input sets
# (--rotation-sets, default 2) and prints the spread of each: if more sets average the placement
# out, the spread falls with them. Writes rotation-h200.md (to $OUT when set, else docs/results/).
# Environment: ROTATION_SETS ("1 2 8"), ROTATION_RUNS (6), ROTATION_SHAPES ("768x768x768 bf16f32:768x768x768
# e4m3f16:768x768x768 4096x1024x1024").
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
source bench/gpu/common.sh
croq_executables
SETS=${ROTATION_SETS:-"1 2 8"}
RUNS=${ROTATION_RUNS:-6}
SHAPES=${ROTATION_SHAPES:-"f16f32:768x768x768 bf16f32:768x768x768 e4m3f16:768x768x768 f16f32:4096x1024x1024"}
DEST=${OUT:-$REPO/docs/results}
mkdir -p "$DEST"
RAW=$(mktemp -d /tmp/croq-rotation-XXXXXX)
for run in $(seq 1 "$RUNS"); do
  for sets in $SETS; do
    for s in $SHAPES; do
      dt=${s%%:*} shape=${s#*:}
      IFS=x read -r m n k <<< "$shape"
      "$BIN/croq-gpu-runner" --library auto --m "$m" --n "$n" --k "$k" --dtype "$dt" --b-layout auto \
        --rotation-sets "$sets" --time-budget-ms 500 --out "$RAW/${dt}_${shape}_${sets}_$run.json" > /dev/null 2> "$RAW/${dt}_${shape}_${sets}_$run.err" \
        || echo "run $run sets $sets $s failed: $(tail -1 "$RAW/${dt}_${shape}_${sets}_$run.err")"
    done
  done
done
python3 - "$RAW" "$DEST/rotation-h200.md" "$SETS" "$SHAPES" "$RUNS" "$(cat "$BIN/../commit.txt" 2>/dev/null || git rev-parse --short=12 HEAD 2>/dev/null)" <<'PY'
import json, os, statistics, sys, datetime
raw, dest, sets, shapes, runs, commit = sys.argv[1:7]
out = ["# Rotated input sets and the spread of small kernels between runner processes (H200)", "",
       f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; commit {commit}; script: `bench/gpu/rotation_probe.sh`",
       f"- each cell: {runs} fresh `croq-gpu-runner --library auto` processes (the baseline's procedure, croq's default rests), one after another, the settings alternating",
       "", "| dtype | shape | rotation sets | TFLOPS of each run | median | spread % | median in-run CV % |", "|---|---|---|---|---|---|---|"]
device = ""
for s in shapes.split():
    dt, shape = s.split(":")
    for st in sets.split():
        v, cvs = [], []
        for r in range(1, int(runs) + 1):
            try:
                d = json.load(open(os.path.join(raw, f"{dt}_{shape}_{st}_{r}.json")))
                device = device or (d.get("device") or {}).get("name", "")
                if d.get("verdict") == "PASS":
                    v.append(d["tflops"]); cvs.append(d["timing"]["cv"] * 100)
            except Exception:
                pass
        if not v:
            out.append(f"| {dt} | {shape} | {st} | - | - | - | - |"); continue
        med = statistics.median(v)
        out.append(f"| {dt} | {shape} | {st} | {' / '.join(f'{x:.1f}' for x in v)} | {med:.1f} | {(max(v) - min(v)) / med * 100:.2f} | {statistics.median(cvs):.2f} |")
out.insert(3, f"- device: {device}")
open(dest, "w").write("\n".join(out) + "\n")
print("\n".join(out))
PY
