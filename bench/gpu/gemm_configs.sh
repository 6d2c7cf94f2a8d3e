#!/usr/bin/env bash
# Hopper GEMM configurations named by hand (bench/gpu/gemm_configs.txt, or GEMM_CONFIGS=FILE) measured
# against the library (cuBLAS; cuBLASLt FP8 or block-scaled for e4m3 and blockscaled_ keys; cuSPARSELt
# for gemm_sp_ keys, hopper_gemm_sp configurations from its own base in render_hopper.py) with croq's
# own verbs: leads for the family's search, not results of it. Per shape:
# `croq baseline`, then `croq measure` of every configuration, CONFIG_REPEATS times (default 2),
# alternating, shape after shape in the list's order, until CONFIG_BUDGET_S seconds (default: no
# limit) are spent. Writes $CONFIG_REPORT.md and $CONFIG_REPORT-raw.tar.gz (default
# gemm-configs-h200; to $OUT when set, else docs/results/).
#   bash bench/gpu/gemm_configs.sh build   renders and compiles the configurations into .carry/configs/
#                                          (a change @template=COMMIT renders that one configuration
#                                          with the template of COMMIT, to compare with in one run;
#                                          CROQ_<MACRO>=V adds a template macro the family does not set)
#   bash bench/gpu/gemm_configs.sh run     measures them (on the GPU machine, .carry carried)
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
source bench/gpu/common.sh
KDIR=${CONFIG_DIR:-$REPO/.carry/configs}  # CONFIG_DIR: configurations built elsewhere (bench/gpu/spill_sass.sh)
LIST=${GEMM_CONFIGS:-$REPO/bench/gpu/gemm_configs.txt}
if [ "${1:-run}" = build ]; then
  rm -rf "$KDIR" && mkdir -p "$KDIR"
  python3 - "$LIST" "$KDIR" "$REPO" <<'PY'
import os, subprocess, sys
lst, kdir, repo = sys.argv[1:4]
sys.path.insert(0, os.path.join(repo, "bench/gpu"))
from render_hopper import HAND_BASE, RECORDED_DEFAULTS, describe, describe_sp, render, render_sp, sp_base
base = {**RECORDED_DEFAULTS, **HAND_BASE}
rows = []
for line in open(lst):
    line = line.split("#")[0].split()
    if not line:
        continue
    key, name, changes = line[0], line[1], line[2:]
    sparse = key.startswith("gemm_sp_")  # the hopper_gemm_sp family, from its own base
    p = sp_base(key) if sparse else dict(base)
    template = None
    defines = {}
    for ch in changes:
        k, v = ch.split("=")
        if k.startswith("CROQ_"):  # a template macro the family does not set (a trial before it does)
            defines[k] = v
            continue
        if k == "@template":  # the template of an earlier commit, to compare with in the same run
            template = os.path.join(kdir, f"template-{'sp-' if sparse else ''}{v}.cu")
            if not os.path.exists(template):
                path = "kernels/cuda/gemm_sp/hopper/gemm_sp_sm90.cu" if sparse else "kernels/cuda/matmul/hopper/gemm_sm90.cu"
                src = subprocess.run(["git", "-C", repo, "show", f"{v}:{path}"],
                                     check=True, capture_output=True, text=True).stdout
                open(template, "w").write(src)
            continue
        assert k in p, k
        p[k] = v
    family = "hopper_gemm_sp" if sparse else "hopper_gemm"
    text = (render_sp if sparse else render)(repo, p, key, f"{family} {name} for {key}, rendered by bench/gpu/gemm_configs.sh",
                                             template, defines)
    open(os.path.join(kdir, f"{key}__{name}.cu"), "w").write(text)
    params = (describe_sp if sparse else describe)(p) + "".join(f" {k}={v}" for k, v in defines.items())
    if template:
        params += f" template={os.path.basename(template)[9:-3].removeprefix('sp-')}"
    rows.append(f"{key}\t{name}\t{params}")
open(os.path.join(kdir, "configs.tsv"), "w").write("\n".join(rows) + "\n")
print(f"rendered {len(rows)} configurations")
PY
  rm -f "$KDIR"/template-*.cu
  build_hopper_sources "$KDIR"
  exit 0
fi
croq_executables
REPEATS=${CONFIG_REPEATS:-2}
BUDGET_S=${CONFIG_BUDGET_S:-0}  # seconds of measuring, then the report (0: no limit)
START=$SECONDS
over() { [ "$BUDGET_S" -gt 0 ] && [ $((SECONDS - START)) -ge "$BUDGET_S" ]; }
REPORT=${CONFIG_REPORT:-gemm-configs-h200}
DEST=${OUT:-$REPO/docs/results}
WS=$(mktemp -d /tmp/croq-configs-XXXXXX)
RAW=$WS/raw
mkdir -p "$RAW" "$WS/tuning" "$DEST"
[ -f "$KDIR/configs.tsv" ] || { echo "no configurations in $KDIR: run 'bash bench/gpu/gemm_configs.sh build' first"; exit 2; }
# Shape by shape (the list's order: most important first), each shape's repeats alternating its
# baseline and its configurations, so that a budget cut leaves whole shapes measured.
for key in $(cut -f1 "$KDIR/configs.tsv" | uniq); do
  for rep in $(seq 1 "$REPEATS"); do
    if over; then echo "budget of ${BUDGET_S}s spent: $key rep $rep and after not measured"; break 2; fi
    croq --root "$WS" baseline --dsl cuda --shape-key "$key" --model "r$rep" --task-uid "configs-$rep" --force \
      > "$RAW/baseline_${rep}_$key.json" 2> "$RAW/baseline_${rep}_$key.err"
    echo "rep $rep $key: $(tail -1 "$RAW/baseline_${rep}_$key.err")"
    grep -P "^$key\t" "$KDIR/configs.tsv" | cut -f2 | while read -r name; do
      if [ ! -f "$KDIR/${key}__$name.so" ] || over; then continue; fi
      croq --root "$WS" measure --dsl cuda --shape-key "$key" --model "r$rep" --candidate "$KDIR/${key}__$name.so" \
        --out "$RAW/measure_${rep}_${key}__$name.json" > /dev/null 2> "$RAW/measure_${rep}_${key}__$name.err"
      echo "  $name: $(tail -1 "$RAW/measure_${rep}_${key}__$name.err")"
    done
  done
done
cp "$KDIR/configs.tsv" "$RAW/"
python3 - "$RAW" "$DEST/$REPORT.md" "$REPEATS" "$(cat "$BIN/../commit.txt" 2>/dev/null || git rev-parse --short=12 HEAD)" <<'PY'
import json, os, statistics, sys, datetime
raw, dest, reps, commit = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(raw, "configs.tsv")) if l.strip()]
def tf(path):
    try:
        d = json.load(open(path))
    except Exception:
        return None, ""
    d = d.get("result", d)
    return (d.get("tflops") if d.get("verdict", "PASS") == "PASS" else None), d.get("verdict", "")
import subprocess
try:  # the device that ran them (the lent machine may be an H100 or an H200)
    device = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                            capture_output=True, text=True).stdout.strip().splitlines()[0]
except (OSError, IndexError):
    device = "unknown (nvidia-smi did not answer)"
out = ["# Hand-named Hopper GEMM configurations against the library", "",
       f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; device: {device}; binaries of commit {commit}; script: `bench/gpu/gemm_configs.sh`",
       f"- each configuration: `croq measure` (croq's default method: rests, short kernels in three processes), {reps} repeats alternating with `croq baseline --force`",
       "- leads for the family's search, not results of `croq tune`", "",
       "| shape | configuration | library TFLOPS | croq TFLOPS | ratio | parameters |", "|---|---|---|---|---|---|"]
cut = 0
for key, name, params in rows:
    b = [tf(os.path.join(raw, f"baseline_{r}_{key}.json"))[0] for r in range(1, reps + 1)]
    c = [tf(os.path.join(raw, f"measure_{r}_{key}__{name}.json")) for r in range(1, reps + 1)]
    bv = [x for x in b if x]; cv = [x for x, _ in c if x]
    ratio = statistics.median(cv) / statistics.median(bv) if bv and cv else None
    fmt = lambda v: " / ".join("-" if x is None else f"{x:.1f}" for x in v)
    seen = [v for _, v in c if v]  # the verdicts of those measured; none: the budget ran out first
    verdicts = "" if cv else " (" + ", ".join(seen) + ")" if seen else " (not measured: CONFIG_BUDGET_S spent)"
    cut += 0 if seen else 1
    out.append(f"| {key} | {name} | {fmt(b)} | {fmt([x for x, _ in c])}{verdicts} | {'-' if ratio is None else f'{ratio:.3f}'} | {params} |")
if cut:
    out.append(f"\n{cut} of {len(rows)} configurations not measured: CONFIG_BUDGET_S was spent before their shapes.")
open(dest, "w").write("\n".join(out) + "\n")
print("\n".join(out))
PY
tar czf "$DEST/$REPORT-raw.tar.gz" -C "$WS" raw
