#!/usr/bin/env bash
# Does the duty cycle of the timing (--rest-ratio) make croq's measurements repeatable on the
# power-capped shapes, and what does it do to the ratio of the tuned kernels to cuBLAS?
#
# For every shape: the best kernel `croq tune` found (docs/results/gemm-run3: the best KEEP record
# of each task, re-rendered from its params with the family template) and the cuBLAS baseline,
# measured PACING_REPEATS times under each method of PACING_METHODS, in a fresh task per method and
# repeat: `croq baseline --force`, then `croq measure --candidate`. The methods alternate within
# each repeat, so a drift of the GPU's state falls on every method alike. Writes pacing-h200.md
# (per method and shape: the medians, their spread (max - min) / median, the lowest SM clock and
# the clock-limited samples, the ratio of the medians) and pacing-raw.tar.gz.
#
# Two stages, so that the nvcc work is done before the GPU is lent:
#   bash bench/gpu/pacing_evidence.sh build   renders and compiles the kernels into .carry/pacing/
#   bash bench/gpu/pacing_evidence.sh run     measures (on the GPU machine, .carry carried)
# Environment: PACING_METHODS (default "0 1": rest ratios; a method "R/W" sets --rest-window-ms W
# too), PACING_REPEATS (3), PACING_SHAPES (default: every shape of the sources), PACING_BUDGET_S
# (540), PACING_SOURCES (build stage: the tunes' workspaces, gemm-ws.tgz files, oldest first; each
# shape's kernel is the best KEEP of the newest one that tuned it; default
# docs/results/gemm-run3/gemm-ws.tgz), PACING_REPORT (the report's name, default pacing-h200:
# writes $PACING_REPORT.md and $PACING_REPORT-raw.tar.gz, pacing-raw.tar.gz for the default).
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
source bench/gpu/common.sh
KDIR=$REPO/.carry/pacing
STAGE=${1:-run}
say() { echo "[pacing $((SECONDS))s] $*"; }

if [ "$STAGE" = build ]; then
  mkdir -p "$KDIR"
  rm -f "$KDIR"/*.so "$KDIR"/*.log "$KDIR/kernels.tsv"
  SRC=$(mktemp -d /tmp/croq-pacing-XXXXXX)
  n=0
  for tgz in ${PACING_SOURCES:-docs/results/gemm-run3/gemm-ws.tgz}; do
    # An archived run's workspace comes from the results-archive branch (bench/results_archive.sh).
    local_tgz=$tgz
    [ -f "$tgz" ] || local_tgz=$(bash "$REPO/bench/results_archive.sh" "$tgz" 2>/dev/null) || { say "no workspace $tgz"; exit 2; }
    n=$((n + 1))
    mkdir -p "$SRC/$n" && tar xzf "$local_tgz" -C "$SRC/$n" && echo "$tgz" > "$SRC/$n/source.txt"
  done
  # The best kept kernel of each tuned task (the newest source that tuned the shape): its params,
  # rendered the way the hopper family does (src/croq/search/gemm_family_common.cpp: CROQ_<NAME>
  # macros, CROQ_DTYPES, CROQ_BLAYOUTS, the template).
  python3 - "$SRC" "$KDIR" "$REPO" "$n" <<'EOF'
import os, sys
src, kdir, repo, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
sys.path.insert(0, os.path.join(repo, "bench/gpu"))
from render_hopper import describe, render
from tunes import newest_best_keeps
roots = [os.path.join(src, str(i)) for i in range(1, n + 1)]
rows = []
for shape_key, (best, i, _) in newest_best_keeps(roots).items():
    source = open(os.path.join(roots[i], "source.txt")).read().strip()
    p = best["params"]
    text = render(repo, p, shape_key, f"hopper_gemm configuration of {best['kernel']} for {shape_key}, rendered by bench/gpu/pacing_evidence.sh")
    open(os.path.join(kdir, shape_key + ".cu"), "w").write(text)
    rows.append((shape_key, best["kernel"], best["tflops"], describe(p), source))
with open(os.path.join(kdir, "kernels.tsv"), "w") as f:
    for r in rows:
        f.write("%s\t%s\t%.1f\t%s\t%s\n" % r)
print(f"rendered {len(rows)} kernels")
EOF
  rm -rf "$SRC"
  build_hopper_sources "$KDIR"
  exit 0
fi

# ---- run ------------------------------------------------------------------------------------------
croq_executables
METHODS=${PACING_METHODS:-"0 1"}
REPEATS=${PACING_REPEATS:-3}
BUDGET=${PACING_BUDGET_S:-540}
DEST=${OUT:-$REPO/docs/results}
mkdir -p "$DEST"
WS=$(mktemp -d /tmp/croq-pacing-ws-XXXXXX)
RAW=$WS/raw
mkdir -p "$RAW" "$WS/tuning"
exec > >(tee "$DEST/pacing-evidence.log") 2>&1
[ -f "$KDIR/kernels.tsv" ] || { say "no kernels in $KDIR: run 'bash bench/gpu/pacing_evidence.sh build' first"; exit 2; }
SHAPES=${PACING_SHAPES:-$(cut -f1 "$KDIR/kernels.tsv" | tr '\n' ' ')}
say "croq $(croq --version); methods: $METHODS; repeats $REPEATS; shapes: $(echo $SHAPES | wc -w)"
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv 2>&1 || true
: > "$RAW/runs.tsv"
for rep in $(seq 1 "$REPEATS"); do
  for method in $METHODS; do
    ratio=${method%%/*}
    window=10
    [ "$method" != "$ratio" ] && window=${method#*/}
    for key in $SHAPES; do
      if [ $((SECONDS)) -gt "$BUDGET" ]; then
        printf '%s\t%s\t%s\tskipped\n' "$rep" "$method" "$key" >> "$RAW/runs.tsv"
        continue
      fi
      model="m${ratio}w${window}r$rep"
      stats="--rest-ratio $ratio --rest-window-ms $window"
      tag="${rep}_${ratio}_${window}_${key}"
      croq --root "$WS" baseline --dsl cuda --shape-key "$key" --model "$model" --task-uid "pacing-$model" --force \
        $stats --timeout 120 > "$RAW/baseline_$tag.json" 2> "$RAW/baseline_$tag.err"
      rb=$?
      bfile=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["files"]["measurement"])' \
        "$RAW/baseline_$tag.json" 2>/dev/null) && cp "$WS/$bfile" "$RAW/bmeas_$tag.json"
      croq --root "$WS" measure --dsl cuda --shape-key "$key" --model "$model" --candidate "$KDIR/$key.so" \
        $stats --timeout 120 --out "$RAW/measure_$tag.json" > /dev/null 2> "$RAW/measure_$tag.err"
      rm=$?
      printf '%s\t%s\t%s\t%s\t%s\n' "$rep" "$method" "$key" "$rb" "$rm" >> "$RAW/runs.tsv"
      say "rep $rep method $method $key: baseline rc $rb, candidate rc $rm; $(tail -1 "$RAW/measure_$tag.err")"
    done
  done
done
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader 2>&1 || true
cp "$KDIR/kernels.tsv" "$RAW/"

REPORT=${PACING_REPORT:-pacing-h200}
RAWNAME=$REPORT-raw.tar.gz
[ "$REPORT" = pacing-h200 ] && RAWNAME=pacing-raw.tar.gz
python3 - "$RAW" "$DEST" "$(croq --version 2>&1)" "$METHODS" "$REPORT" "$RAWNAME" <<'EOF'
import glob, json, os, statistics, sys, datetime
raw, dest, version, methods, report, rawname = sys.argv[1:7]
kernels = {l.split("\t")[0]: l.rstrip("\n").split("\t") for l in open(os.path.join(raw, "kernels.tsv"))}
runs = [l.rstrip("\n").split("\t") for l in open(os.path.join(raw, "runs.tsv"))]
def clocks(path, cell, clk, lim):
    try:
        dv = json.load(open(path)).get("device") or {}
    except Exception:
        dv = {}
    cell[clk].append(dv.get("min_sm_clock_mhz"))
    cell[lim].append(f'{dv.get("limited_samples", 0)}/{dv.get("clock_samples", 0)}')
    return dv
data = {}
device = {}
for rep, method, key, *rest in runs:
    if rest == ["skipped"]:
        continue
    ratio = method.split("/")[0]; window = method.split("/")[1] if "/" in method else "10"
    tag = f"{rep}_{ratio}_{window}_{key}"
    cell = data.setdefault((method, key), {"base": [], "cand": [], "bclk": [], "cclk": [], "blim": [], "clim": [], "rest": []})
    try:
        b = json.load(open(os.path.join(raw, f"baseline_{tag}.json")))
        bm = b.get("result", {})
        cell["base"].append(bm.get("tflops"))
    except Exception:
        cell["base"].append(None)
    clocks(os.path.join(raw, f"bmeas_{tag}.json"), cell, "bclk", "blim")
    dv = clocks(os.path.join(raw, f"measure_{tag}.json"), cell, "cclk", "clim")
    device = device or dv
    try:
        c = json.load(open(os.path.join(raw, f"measure_{tag}.json")))
        cell["cand"].append(c.get("tflops") if c.get("verdict") == "PASS" else None)
        t = c.get("timing") or {}
        cell["rest"].append(t.get("rest_ms"))
    except Exception:
        cell["cand"].append(None)
def spread(v):
    v = [x for x in v if x]
    return (max(v) - min(v)) / statistics.median(v) * 100 if len(v) >= 2 else None
def f(x, p=1):
    return "-" if x is None else f"{x:.{p}f}"
out = ["# Duty cycle of the timing on the H200: repeatability and the tuned kernels' ratio to cuBLAS", "",
       f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; device: {device.get('name')} ({device.get('uuid')}), driver {device.get('driver')}",
       f"- croq: {version}",
       "- script: `bench/gpu/pacing_evidence.sh` (kernels: the best KEEP of each shape's newest tune, re-rendered from its params: "
       + ", ".join(sorted({k[4] for k in kernels.values() if len(k) > 4} or {"docs/results/gemm-run3/gemm-ws.tgz"})) + ")",
       "- method: rest ratio R / window W ms: once the GPU has been busy W ms it idles R times as long (`--rest-ratio R --rest-window-ms W`); R = 0 is back to back (croq's method before)",
       "- each repeat: `croq baseline --force` then `croq measure --candidate`, both with the method's flags; the methods alternate within each repeat",
       "- spread = (max - min) / median of the repeats' medians; ratio = median croq / median cuBLAS; min MHz and limited: the lowest SM clock and the clock-limited samples of each repeat's timing",
       ""]
ms = methods.split()
summary = []
for m in ms:
    out += [f"## Method {m}", "",
            "| shape | cuBLAS TFLOPS (repeats) | spread % | croq TFLOPS (repeats) | spread % | ratio | min MHz (cuBLAS) | limited (cuBLAS) | min MHz (croq) | limited (croq) |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    sb, sc, ratios = [], [], []
    for key in kernels:
        c = data.get((m, key))
        if not c:
            continue
        bs, cs = spread(c["base"]), spread(c["cand"])
        bv = [x for x in c["base"] if x]; cv = [x for x in c["cand"] if x]
        r = statistics.median(cv) / statistics.median(bv) if bv and cv else None
        if bs is not None: sb.append(bs)
        if cs is not None: sc.append(cs)
        if r: ratios.append((key, r))
        out.append(f"| {key} | {' / '.join(f(x) for x in c['base'])} | {f(bs, 2)} | {' / '.join(f(x) for x in c['cand'])} | {f(cs, 2)} | {f(r, 3)} | "
                   f"{' / '.join(str(x) for x in c['bclk'])} | {' / '.join(c['blim'])} | "
                   f"{' / '.join(str(x) for x in c['cclk'])} | {' / '.join(c['clim'])} |")
    def count(v, lim): return sum(1 for x in v if x < lim)
    line = (f"Method {m}: cuBLAS spread under 2 % on {count(sb, 2)} of {len(sb)} shapes (median {f(statistics.median(sb), 2) if sb else '-'} %, max {f(max(sb), 2) if sb else '-'} %); "
            f"croq spread under 2 % on {count(sc, 2)} of {len(sc)} (median {f(statistics.median(sc), 2) if sc else '-'} %, max {f(max(sc), 2) if sc else '-'} %); "
            f"ratio >= 1.00 on {sum(1 for _, r in ratios if r >= 1.0)}, >= 0.90 on {sum(1 for _, r in ratios if r >= 0.9)}, >= 0.80 on {sum(1 for _, r in ratios if r >= 0.8)} of {len(ratios)}")
    summary.append(line)
    out += ["", line, ""]
out += ["## Kernels", "", "| shape | kernel | its tune's TFLOPS | configuration | tune |", "|---|---|---|---|---|"]
for key, k in kernels.items():
    out.append(f"| {key} | {k[1]} | {k[2]} | {k[3]} | {k[4] if len(k) > 4 else '-'} |")
out += ["", "## Summary", ""] + [f"- {s}" for s in summary] + ["", f"Raw documents: {rawname} beside this file."]
open(os.path.join(dest, report + ".md"), "w").write("\n".join(out) + "\n")
print("\n".join(out))
EOF
tar czf "$DEST/$RAWNAME" -C "$WS" raw
say "done: $DEST/$REPORT.md"
