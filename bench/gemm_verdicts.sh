#!/usr/bin/env bash
# Why each tuned shape is where it is against cuBLAS: for every tuned shape, `croq classify` of the
# Nsight Compute profile of the best kept kernel of its newest tune and of cuBLAS's kernel, side by
# side with the ratio measured with rests (a bench/gpu/pacing_evidence.sh run, method 1). Needs no
# GPU (the profiles are in the archives).
# Environment: VERDICT_SOURCES (the tunes' gemm-ws.tgz, oldest first; default
# docs/results/gemm-run3/gemm-ws.tgz), VERDICT_RATIOS (that run's raw archive; default
# docs/results/pacing-run1/pacing-raw.tar.gz), VERDICT_REPORT (default docs/results/gemm-verdicts.md).
# The archives are read through bench/results_archive.sh (they live on the results-archive branch).
# Usage: bash bench/gemm_verdicts.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
CROQ=${1:-build}/bin/croq
SOURCES=${VERDICT_SOURCES:-docs/results/gemm-run3/gemm-ws.tgz}
RATIOS=${VERDICT_RATIOS:-docs/results/pacing-run1/pacing-raw.tar.gz}
REPORT=${VERDICT_REPORT:-docs/results/gemm-verdicts.md}
WS=$(mktemp -d /tmp/croq-verdicts-XXXXXX)
n=0
for tgz in $SOURCES; do
  n=$((n + 1))
  mkdir -p "$WS/src/$n" && tar xzf "$(bash bench/results_archive.sh "$tgz")" -C "$WS/src/$n"
done
mkdir -p "$WS/pacing" && tar xzf "$(bash bench/results_archive.sh "$RATIOS")" -C "$WS/pacing"
PYTHONPATH="$REPO/bench/gpu" python3 - "$WS" "$CROQ" "$REPO/$REPORT" "$n" "$SOURCES" "$RATIOS" <<'PY'
import glob, json, os, statistics, subprocess, sys
ws, croq, dest, n, sources, ratios = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6]
from tunes import newest_best_keeps  # bench/gpu/tunes.py
def classify(csv, key):
    r = subprocess.run([croq, "classify", "--csv", csv, "--shape-key", key], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    d = json.loads(r.stdout)
    k = d["evidence"]["key_metrics"]
    return {"bottleneck": d["bottleneck"], "kernel": d["kernel"], "tensor": k.get("tensor_pipe_pct"),
            "us": k.get("duration_us"), "grid": k.get("grid_ctas"), "stall": k.get("top_stall"), "stall_pct": k.get("top_stall_pct"),
            "dram": k.get("dram_throughput_pct")}
def fair_ratio(key):
    raw = os.path.join(ws, "pacing", "raw")
    b, c = [], []
    for rep in (1, 2, 3):
        try:
            b.append(json.load(open(f"{raw}/baseline_{rep}_1_10_{key}.json"))["result"]["tflops"])
            d = json.load(open(f"{raw}/measure_{rep}_1_10_{key}.json"))
            if d.get("verdict") == "PASS":
                c.append(d["tflops"])
        except Exception:
            pass
    if not b or not c:
        return None, None, None
    return statistics.median(b), statistics.median(c), statistics.median(c) / statistics.median(b)
newest = newest_best_keeps([f"{ws}/src/{i}" for i in range(1, n + 1)])
rows = []
for key in sorted(newest):
    best, _, log = newest[key]
    perf = os.path.dirname(log).replace("/logs/", "/perf/")
    mine = sorted(glob.glob(f"{perf}/ncu_{best['kernel']}_round*.csv")) if best else []
    lib = sorted(glob.glob(f"{perf}/ncu_iter000_cublas_round*.csv"))
    cm = classify(mine[-1], key) if mine else None
    cl = classify(lib[0], key) if lib else None
    cub, ours, ratio = fair_ratio(key)
    rows.append((key, best["kernel"] if best else "-", cub, ours, ratio, cm, cl))
def f(x, p=1):
    return "-" if x is None else f"{x:.{p}f}"
def prof(c):
    if not c:
        return "- | - | - | -"
    return f"{c['bottleneck']} | {f(c['tensor'])} | {f(c['us'])} µs, {int(c['grid'] or 0)} CTAs | {c['stall']} {f(c['stall_pct'])} %"
out = ["# Why the tuned kernels stand where they do against cuBLAS (H200 profiles of 2026-12-01)", "",
       f"- script: `bench/gemm_verdicts.sh` (no GPU: `croq classify` of the Nsight Compute CSVs in the tunes' workspaces, each shape from its newest: {', '.join(sources.split())})",
       f"- ratio: best croq / cuBLAS, medians of three repeats with rests ({ratios}, method 1)",
       "- profile columns, each for croq's best kept kernel then cuBLAS's: the classifier's verdict, tensor-pipe utilisation %, duration under ncu and grid, the top warp stall",
       "", "| shape | best kernel | cuBLAS TFLOPS | croq TFLOPS | ratio | croq verdict | tensor % | duration, grid | top stall | cuBLAS verdict | tensor % | duration, grid | top stall | cuBLAS kernel |",
       "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
for key, kern, cub, ours, ratio, cm, cl in rows:
    out.append(f"| {key} | {kern} | {f(cub)} | {f(ours)} | {f(ratio, 3)} | {prof(cm)} | {prof(cl)} | {(cl or {}).get('kernel', '-')[:48]} |")
open(dest, "w").write("\n".join(out) + "\n")
print("\n".join(out))
PY
rm -rf "$WS"
