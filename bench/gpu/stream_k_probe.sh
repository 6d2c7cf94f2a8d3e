#!/usr/bin/env bash
# Why stream-K loses where its tail says it should gain. At 12288x8192x12288 the 128x256 kernel has
# 3072 tiles, 23.3 waves on 132 SMs: spreading the last partial wave over every SM predicts about
# +3 %, and the partial sums (17 MB written and read once) cost about 0.2 %; the tunes measured
# -2.6 % (docs/results/gemm-run7). This measures the kernel with and without STREAM_K (`croq measure`,
# PROBE_REPEATS times alternating) and profiles each once with `croq profile --preset full`, so the
# two kernels' instruction counts, memory traffic and stalls can be compared (`croq classify` of the
# CSVs, here or on the GPU machine). Writes $OUT/stream-k-probe.md and $OUT/stream-k-probe-raw.tar.gz.
#   bash bench/gpu/stream_k_probe.sh build   renders and compiles the two kernels into .carry/skprobe/
#   bash bench/gpu/stream_k_probe.sh run     measures and profiles them (on the GPU machine)
# Environment: PROBE_SHAPE (default matmul_f16fp32_12288x8192x12288), PROBE_REPEATS (2).
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
source bench/gpu/common.sh
KDIR=$REPO/.carry/skprobe
KEY=${PROBE_SHAPE:-matmul_f16fp32_12288x8192x12288}
if [ "${1:-run}" = build ]; then
  rm -rf "$KDIR" && mkdir -p "$KDIR"
  python3 - "$KDIR" "$REPO" "$KEY" <<'PY'
import os, sys
kdir, repo, key = sys.argv[1:4]
sys.path.insert(0, os.path.join(repo, "bench/gpu"))
from render_hopper import HAND_BASE, render
for name, sk in (("iter001_dp", "0"), ("iter002_sk", "1")):
    p = dict(HAND_BASE, EPILOGUE="1", STREAM_K=sk)
    open(os.path.join(kdir, name + ".cu"), "w").write(render(repo, p, key, f"{name} for {key}, bench/gpu/stream_k_probe.sh"))
PY
  build_hopper_sources "$KDIR"
  exit 0
fi
croq_executables
DEST=${OUT:-$REPO/docs/results}
REPEATS=${PROBE_REPEATS:-2}
WS=$(mktemp -d /tmp/croq-skprobe-XXXXXX)
RAW=$WS/raw
mkdir -p "$RAW" "$DEST"
GPU=$(croq gpu key | python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')
BINDIR=$WS/tuning/$GPU/cuda/bin/$KEY/skprobe
mkdir -p "$BINDIR" && cp "$KDIR"/*.so "$BINDIR/"
for rep in $(seq 1 "$REPEATS"); do
  croq --root "$WS" baseline --dsl cuda --shape-key "$KEY" --model skprobe --task-uid skprobe --force > "$RAW/baseline_$rep.json" 2>> "$RAW/log.txt"
  for k in iter001_dp iter002_sk; do
    croq --root "$WS" measure --dsl cuda --shape-key "$KEY" --model skprobe --candidate "$BINDIR/$k.so" \
      --out "$RAW/measure_${k}_$rep.json" > /dev/null 2>> "$RAW/log.txt"
  done
done
round=1
for k in iter001_dp iter002_sk; do
  croq --root "$WS" profile --dsl cuda --shape-key "$KEY" --model skprobe --iter "$k" --preset full --round "$round" \
    > "$RAW/profile_$k.json" 2>> "$RAW/log.txt"
  round=$((round + 1))
done
cp "$WS/tuning/$GPU/cuda/perf/$KEY/skprobe/"ncu_*.csv "$RAW/" 2>/dev/null
for csv in "$RAW"/ncu_*.csv; do
  croq classify --csv "$csv" --shape-key "$KEY" > "${csv%.csv}.classify.json" 2>> "$RAW/log.txt"
done
python3 - "$RAW" "$DEST/stream-k-probe.md" "$KEY" "$(croq --version 2>&1)" <<'PY'
import csv, datetime, glob, json, os, statistics, sys
raw, dest, key, version = sys.argv[1:5]
def tf(path):
    try:
        d = json.load(open(path))
        return d["tflops"] if d.get("verdict") == "PASS" else None
    except Exception:
        return None
def base(path):
    try:
        return json.load(open(path))["result"]["tflops"]
    except Exception:
        return None
reps = sorted({p.rsplit("_", 1)[1].split(".")[0] for p in glob.glob(f"{raw}/measure_*_*.json")})
cub = [base(f"{raw}/baseline_{r}.json") for r in reps]
out = [f"# Stream-K against the same kernel without it, {key} (H200)", "",
       f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; croq: {version}; script: `bench/gpu/stream_k_probe.sh`",
       "- kernels: 128x256, two consumers, 4 stages, TMA-store epilogue, persistent, STREAM_K 0 (dp) and 1 (sk)", "",
       "| kernel | TFLOPS (repeats) | ratio to cuBLAS (median) |", "|---|---|---|",
       f"| cuBLAS | {' / '.join('-' if x is None else f'{x:.1f}' for x in cub)} | 1 |"]
cm = statistics.median([x for x in cub if x]) if any(cub) else None
for k in ("iter001_dp", "iter002_sk"):
    v = [tf(f"{raw}/measure_{k}_{r}.json") for r in reps]
    ok = [x for x in v if x]
    ratio = f"{statistics.median(ok) / cm:.3f}" if ok and cm else "-"
    out.append(f"| {k} | {' / '.join('-' if x is None else f'{x:.1f}' for x in v)} | {ratio} |")
# A few metrics side by side from the ncu captures (raw CSV: names, units, values; the CSVs hold
# every metric). The .min / .max across SMs of the tensor pipe's share show how unevenly the SMs
# were kept busy, which is what the stream-K tail changes.
want = ["gpu__time_duration.sum", "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
        "sm__pipe_tensor_cycles_active.min.pct_of_peak_sustained_elapsed",
        "sm__pipe_tensor_cycles_active.max.pct_of_peak_sustained_elapsed", "sm__cycles_active.avg", "sm__cycles_active.min",
        "sm__cycles_active.max", "smsp__inst_executed.sum", "lts__t_sectors.sum", "lts__t_sector_hit_rate.pct",
        "dram__bytes_read.sum", "dram__bytes.sum.per_second",
        "launch__registers_per_thread", "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
        "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"]
cols = {}
for k in ("iter001_dp", "iter002_sk"):
    files = glob.glob(f"{raw}/ncu_{k}_round*.csv")
    vals = {}
    if files:
        rows = list(csv.reader(open(files[0])))
        if len(rows) >= 3:
            for name, unit, value in zip(rows[0], rows[1], rows[2]):
                vals[name] = f"{value} {unit}".strip()
        try:
            c = json.load(open(files[0].replace(".csv", ".classify.json")))
            km = c["evidence"]["key_metrics"]
            vals["verdict"] = f"{c['bottleneck']}: {km.get('top_stall')} {km.get('top_stall_pct')} %"
        except Exception:
            pass
    cols[k] = vals
out += ["", "| metric | dp | sk |", "|---|---|---|"]
for m in ["verdict"] + want:
    out.append(f"| {m} | {cols['iter001_dp'].get(m, '-')} | {cols['iter002_sk'].get(m, '-')} |")
open(dest, "w").write("\n".join(out) + "\n")
print("\n".join(out))
PY
tar czf "$DEST/stream-k-probe-raw.tar.gz" -C "$WS" raw
