#!/usr/bin/env bash
# The tuned Hopper kernels as one exported library (croq export), called through its dispatcher on
# the H200: correct at every tuned shape and at shapes no kernel was tuned for, from one process,
# and as fast as each kernel on its own.
#
# 1. Sources: the tunes' workspaces (EXPORT_SOURCES: gemm-ws.tgz files, oldest first; default every
#    docs/results/gemm-run*/gemm-ws.tgz in run order). Each shape's task is taken from the newest
#    tune of that shape (model croq-search) and copied into one workspace, sources, ledger and build
#    records as they were; the kernels' sources are those the tunes built (older template versions
#    included).
# 2. `croq export --all` of that workspace (nvcc on this machine) into one library, libcroq.so /
#    libcroq.a, whose entries are the ABI's own names; `croq build` of every task's best KEEP on its
#    own (the standalone kernel).
# 3. One process (bench/gpu/export_check.cu linked with libcroq.a): every tuned shape and the
#    unseen ones (EXPORT_UNSEEN), two passes, every element of C against a GPU reference.
# 4. Timing with croq's own harness: per tuned shape, `croq measure --candidate` of the standalone
#    kernel and of libcroq.so (the dispatcher), EXPORT_REPEATS times (default 3), alternating which
#    goes first; ratio = median export time / median standalone time, goal <= 1.02. Unseen shapes:
#    `croq measure` of libcroq.so (verified like any candidate).
# Writes $OUT/export-h200.md, $OUT/export-h200.json, $OUT/export-raw.tar.gz (every measurement,
# the manifest, the check's log) and $OUT/export-evidence.log. EXPORT_BUDGET_S (default 480) bounds
# the timing stage: repeats past it are left out (the report says so).
#
# Run it in two steps (the GPU machine has no git history, no Debian -dev packages, no network):
#   1. here, in a built checkout:  bash bench/gpu/export_evidence.sh --pack [build-folder]
#      packs croq's executables into .carry/croq (bench/gpu/pack_device.sh) and takes every
#      docs/results/gemm-run*/gemm-ws.tgz from the results-archive branch into
#      .carry/results-archive/ (bench/results_archive.sh); about 30 MB in all;
#   2. on the GPU machine, with `.carry` carried:  OUT=/some/folder bash bench/gpu/export_evidence.sh
#      (needs the CUDA toolkit there: croq export and the check are compiled on that machine).
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
if [ "${1:-}" = "--pack" ]; then
  set -e
  bash bench/gpu/pack_device.sh "${2:-build}" > /dev/null
  # Only what this script runs: croq and the GPU runner, and the libraries those two need.
  rm -rf .carry/croq/test-kernels .carry/croq/toolchains
  for f in .carry/croq/bin/*; do
    case $(basename "$f") in croq|croq-gpu-runner) ;; *) rm -f "$f" ;; esac
  done
  needed=$(ldd .carry/croq/bin/croq .carry/croq/bin/croq-gpu-runner | awk '/=> /{print $1}' | sort -u)
  for f in .carry/croq/lib/*; do
    [ -e "$f" ] || continue
    grep -qxF "$(basename "$f")" <<< "$needed" || rm -f "$f"
  done
  branch=${CROQ_RESULTS_BRANCH:-results-archive}
  for p in $(git ls-tree -r --name-only "$branch" | grep -E '^docs/results/gemm-run[^/]*/gemm-ws\.tgz$'); do
    bash bench/results_archive.sh "$p" > /dev/null
  done
  echo "export_evidence: packed $(du -sh .carry | cut -f1) under .carry (croq, $(ls -d .carry/results-archive/docs/results/gemm-run*/gemm-ws.tgz 2>/dev/null | wc -l) tune workspaces); carry .carry"
  exit 0
fi
source bench/gpu/common.sh
croq_executables
DEST=${OUT:-$REPO/docs/results}
mkdir -p "$DEST"
exec > >(tee "$DEST/export-evidence.log") 2>&1
say() { echo "[export $((SECONDS))s] $*"; }
REPEATS=${EXPORT_REPEATS:-3}
BUDGET=${EXPORT_BUDGET_S:-480}
UNSEEN=${EXPORT_UNSEEN:-"matmul_f16fp32_2048x2048x2048 matmul_f16fp32_6144x6144x6144 matmul_f16fp32_1000x3000x500 matmul_f16fp32_8192x4096x1024 matmul_bf16fp32_3000x5000x2000 matmul_bf16fp32_1024x1024x1024"}
# Every tune's workspace in run order (gemm-run2-settled, gemm-run3, ..., gemm-run11), from the tree or
# from the results-archive copies that --pack took into .carry/results-archive (the tree's first).
SOURCES=${EXPORT_SOURCES:-$(ls -d docs/results/gemm-run*/gemm-ws.tgz .carry/results-archive/docs/results/gemm-run*/gemm-ws.tgz 2>/dev/null \
  | awk -F/ '!seen[$(NF-1)]++ {print $(NF-1) "\t" $0}' | sort -V | cut -f2)}
[ -n "$SOURCES" ] || { echo "export_evidence: no gemm-run*/gemm-ws.tgz: run bash bench/gpu/export_evidence.sh --pack here first, and carry .carry" >&2; exit 2; }
NVCC=${CROQ_NVCC:-/usr/local/cuda/bin/nvcc}
WORK=$(mktemp -d /tmp/croq-export-XXXXXX)
WS=$WORK/ws
EXP=$WORK/export
RAW=$WORK/raw
mkdir -p "$WS/tuning" "$RAW"
say "croq $(croq --version 2>&1); $(nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader 2>&1)"

# ---- 1. the tuned tasks, each from its newest tune ----------------------------------------------
n=0
for tgz in $SOURCES; do
  [ -f "$tgz" ] || { say "no workspace $tgz"; exit 2; }
  n=$((n + 1))
  mkdir -p "$WORK/src/$n" && tar xzf "$tgz" -C "$WORK/src/$n" --exclude='tuning/.cache' && echo "$tgz" > "$WORK/src/$n/source.txt"
done
python3 - "$WORK/src" "$WS" "$n" "$REPO" > "$RAW/tasks.tsv" <<'PY'
import os, shutil, sys
src, ws, n, repo = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
sys.path.insert(0, os.path.join(repo, "bench/gpu"))
from tunes import newest_best_keeps
roots = [os.path.join(src, str(i)) for i in range(1, n + 1)]
for key, (best, i, log) in sorted(newest_best_keeps(roots).items()):
    task = os.path.dirname(log)                       # <root>/tuning/<gpu>/cuda/logs/<key>/croq-search
    model = os.path.basename(task)
    dsl_dir = os.path.dirname(os.path.dirname(os.path.dirname(task)))
    gpu = os.path.basename(os.path.dirname(dsl_dir))
    rel_dsl = os.path.relpath(dsl_dir, roots[i])
    for kind in ("srcs", "logs", "perf", "cmd", "baseline", "checkpoints"):
        s = os.path.join(dsl_dir, kind, key, model)
        if os.path.isdir(s):
            shutil.copytree(s, os.path.join(ws, rel_dsl, kind, key, model))
    source = open(os.path.join(roots[i], "source.txt")).read().strip()
    print("\t".join([key, gpu, model, best["kernel"], "%.1f" % best["tflops"], str(best.get("round", "")), source]))
PY
say "tasks: $(wc -l < "$RAW/tasks.tsv") (shape, kernel, TFLOPS of its tune, round, source):"
cat "$RAW/tasks.tsv"
GPU=$(head -1 "$RAW/tasks.tsv" | cut -f2)

# ---- 2. the export, and every kernel on its own --------------------------------------------------
say "croq export --all"
croq --root "$WS" export --all --dsl cuda --model croq-search --out "$EXP" > "$RAW/export.json" 2> "$RAW/export.err" \
  || { say "export failed: $(tail -20 "$RAW/export.err")"; exit 1; }
tail -3 "$RAW/export.err"
cp "$EXP/manifest.json" "$RAW/"
say "standalone builds"
cut -f1,4 "$RAW/tasks.tsv" | xargs -P "$(nproc)" -n 2 sh -c \
  'croq --root "$0" build --gpu "$1" --dsl cuda --shape-key "$3" --model croq-search --iter "$4" > "$2/build_$3.json" 2> "$2/build_$3.err" || echo "build of $3 failed"' \
  "$WS" "$GPU" "$RAW" 2>&1 | sed 's/^/  /'
# (sh -c gets $0..$2 = workspace, gpu, raw folder; xargs appends $3 $4 = <key> <kernel>)

# ---- 3. one process, every shape ------------------------------------------------------------------
say "one process: $(wc -l < "$RAW/tasks.tsv") tuned + $(echo $UNSEEN | wc -w) unseen shapes, two passes"
"$NVCC" -O2 -std=c++17 -I"$EXP/include" bench/gpu/export_check.cu "$EXP/lib/libcroq.a" -o "$WORK/export_check" \
  > "$RAW/check_build.log" 2>&1 || { say "export_check does not build: $(tail -20 "$RAW/check_build.log")"; }
if [ -x "$WORK/export_check" ]; then
  timeout 240 "$WORK/export_check" $(cut -f1 "$RAW/tasks.tsv") $UNSEEN > "$RAW/check.log" 2>&1
  echo "exit $?" >> "$RAW/check.log"
  tail -3 "$RAW/check.log"
fi

# ---- 4. timing: standalone kernel and the library, alternating -------------------------------------
: > "$RAW/runs.tsv"
measure() {  # key label candidate tag
  croq --root "$WS" measure --gpu "$GPU" --dsl cuda --shape-key "$1" --model timing --candidate "$3" --timeout 120 \
    --out "$RAW/measure_$4.json" > /dev/null 2> "$RAW/measure_$4.err"
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$4" "$?" >> "$RAW/runs.tsv"
}
for key in $(cut -f1 "$RAW/tasks.tsv") $UNSEEN; do
  croq --root "$WS" task init --gpu "$GPU" --dsl cuda --shape-key "$key" --model timing > /dev/null 2>&1
done
for rep in $(seq 1 "$REPEATS"); do
  while IFS=$'\t' read -r key _ _ kernel _; do
    if [ "$SECONDS" -gt "$BUDGET" ]; then printf '%s\tskipped\t%s\t-\n' "$key" "$rep" >> "$RAW/runs.tsv"; continue; fi
    so=$WS/tuning/$GPU/cuda/bin/$key/croq-search/$kernel.so
    if [ $((rep % 2)) -eq 1 ]; then
      measure "$key" standalone "$so" "${key}_standalone_$rep"; measure "$key" export "$EXP/lib/libcroq.so" "${key}_export_$rep"
    else
      measure "$key" export "$EXP/lib/libcroq.so" "${key}_export_$rep"; measure "$key" standalone "$so" "${key}_standalone_$rep"
    fi
    say "rep $rep $key: $(tail -1 "$RAW/measure_${key}_standalone_$rep.err" | cut -c1-90) | $(tail -1 "$RAW/measure_${key}_export_$rep.err" | cut -c1-90)"
  done < "$RAW/tasks.tsv"
done
for key in $UNSEEN; do
  [ "$SECONDS" -gt $((BUDGET + 60)) ] && { printf '%s\tskipped\tunseen\t-\n' "$key" >> "$RAW/runs.tsv"; continue; }
  measure "$key" unseen "$EXP/lib/libcroq.so" "${key}_unseen"
  say "unseen $key: $(tail -1 "$RAW/measure_${key}_unseen.err" | cut -c1-120)"
done

# ---- report -------------------------------------------------------------------------------------
python3 - "$RAW" "$DEST" "$EXP/lib/libcroq.so" "$(croq --version 2>&1)" "$REPEATS" "$UNSEEN" <<'PY'
import ctypes, datetime, glob, json, os, statistics, sys
raw, dest, lib_path, version, repeats, unseen = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6].split()
tasks = [l.rstrip("\n").split("\t") for l in open(os.path.join(raw, "tasks.tsv"))]
manifest = json.load(open(os.path.join(raw, "manifest.json")))

# What the dispatcher picks (croq_matmul_choice touches no GPU).
lib = ctypes.CDLL(lib_path)
class Problem(ctypes.Structure):
    _fields_ = [("abi_version", ctypes.c_uint32), ("m", ctypes.c_int64), ("n", ctypes.c_int64), ("k", ctypes.c_int64),
                ("a_type", ctypes.c_int), ("b_type", ctypes.c_int), ("c_type", ctypes.c_int), ("compute_type", ctypes.c_int),
                ("b_layout", ctypes.c_int), ("lda", ctypes.c_int64), ("ldb", ctypes.c_int64), ("ldc", ctypes.c_int64)]
lib.croq_make_problem.restype = Problem
lib.croq_make_problem.argtypes = [ctypes.c_longlong] * 3 + [ctypes.c_int] * 3
lib.croq_matmul_choice.restype = ctypes.c_char_p
lib.croq_matmul_choice_task.restype = ctypes.c_char_p
def parse(key):
    parts = key.split("_")
    m, n, k = (int(v) for v in parts[-1].split("x"))
    return parts[1], m, n, k
def choice(key):
    dt, m, n, k = parse(key)
    a = {"f16fp32": 1, "f16f32": 1, "f16": 1, "bf16fp32": 2, "bf16f32": 2, "bf16": 2}[dt]
    c = 3 if dt.endswith("32") else a
    p = lib.croq_make_problem(m, n, k, a, c, 0)
    kern = lib.croq_matmul_choice(ctypes.byref(p))
    task = lib.croq_matmul_choice_task(ctypes.byref(p))
    return (kern or b"none").decode(), (task or b"none").decode().split("/")[2] if task else "none"

def meas(tag):
    try:
        d = json.load(open(os.path.join(raw, f"measure_{tag}.json")))
    except Exception:
        return None
    t = d.get("timing") or {}
    return {"verdict": d.get("verdict"), "tflops": d.get("tflops"), "median_ms": t.get("median_ms"), "cv": t.get("robust_cv")}

check = {}
if os.path.exists(os.path.join(raw, "check.log")):
    for line in open(os.path.join(raw, "check.log")):
        w = line.split()
        if len(w) > 3 and w[0] in ("ok", "FAIL"):
            f = dict(x.split("=", 1) for x in w[3:] if "=" in x)
            check.setdefault(w[2], []).append((w[0], f))

rows, doc = [], {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "croq": version, "tuned": [], "unseen": []}
within = 0
for key, gpu, model, kernel, tune_tflops, rnd, source in tasks:
    s = [meas(f"{key}_standalone_{r}") for r in range(1, repeats + 1)]
    e = [meas(f"{key}_export_{r}") for r in range(1, repeats + 1)]
    s_ok = [x for x in s if x and x["verdict"] == "PASS"]
    e_ok = [x for x in e if x and x["verdict"] == "PASS"]
    ratio = None
    if s_ok and e_ok:
        ratio = statistics.median(x["median_ms"] for x in e_ok) / statistics.median(x["median_ms"] for x in s_ok)
        within += ratio <= 1.02
    ch = check.get(key, [])
    kern_choice, task_choice = choice(key)
    entry = {"shape": key, "kernel": kernel, "round": rnd, "source": source, "tune_tflops": float(tune_tflops),
             "dispatch": kern_choice, "dispatch_task_shape": task_choice,
             "standalone": s, "export": e, "ratio_time": ratio,
             "one_process": [c[0] for c in ch], "one_process_tflops": [c[1].get("tflops") for c in ch]}
    doc["tuned"].append(entry)
    fmt = lambda xs: " / ".join("%.1f" % x["tflops"] if x and x["tflops"] else ("-" if not x else x["verdict"]) for x in xs)
    rows.append(f"| {key} | {kernel} (round {rnd}) | {kern_choice}{'' if task_choice == key else ' (from ' + task_choice + ')'} | "
                f"{fmt(s)} | {fmt(e)} | {'%.4f' % ratio if ratio else '-'} | {'yes' if ratio and ratio <= 1.02 else 'no'} | "
                f"{' '.join(c[0] for c in ch) or '-'} |")
urows = []
for key in unseen:
    u = meas(f"{key}_unseen")
    ch = check.get(key, [])
    kern_choice, task_choice = choice(key)
    doc["unseen"].append({"shape": key, "dispatch": kern_choice, "dispatch_task_shape": task_choice, "measure": u,
                          "one_process": [c[0] for c in ch], "one_process_tflops": [c[1].get("tflops") for c in ch]})
    urows.append(f"| {key} | {kern_choice} (tuned at {task_choice}) | {u['verdict'] if u else '-'} | "
                 f"{'%.1f' % u['tflops'] if u and u['tflops'] else '-'} | {' '.join(c[0] for c in ch) or '-'} |")
all_ok = all(c[0] == "ok" for v in check.values() for c in v) and bool(check)
doc["one_process_all_ok"] = all_ok
doc["within_2pct"] = within
json.dump(doc, open(os.path.join(dest, "export-h200.json"), "w"), indent=1)
md = f"""# The tuned Hopper kernels as one exported library (croq export) on the H200

- date: {doc['date']}; croq: {version}; script: `bench/gpu/export_evidence.sh`
- kernels: the best KEEP of each shape's newest tune (`croq-search` tasks of the gemm-run*/gemm-ws.tgz workspaces),
  exported with `croq export --all` into libcroq.so / libcroq.a ({len(manifest['kernels'])} kernels; the manifest is in the raw archive)
- one process: `bench/gpu/export_check.cu` linked with libcroq.a calls `croq_matmul` at every shape below, two passes, every
  element of C against an f32 GPU reference: **{'all correct' if all_ok else 'NOT all correct: see check.log'}**
- timing: `croq measure --candidate` (croq's harness: verified, L2 flushed, CUDA events) of the kernel on its own and of
  libcroq.so (through the dispatcher), {repeats} repeats alternating which goes first; ratio = median time through the library /
  median time of the kernel alone. Within 2 %: **{within} of {len(tasks)}** tuned shapes.

| shape | kernel (tune) | dispatched to | alone TFLOPS (repeats) | through the library TFLOPS | time ratio | within 2 % | one process |
|---|---|---|---|---|---|---|---|
""" + "\n".join(rows) + """

## Shapes no kernel was tuned for

| shape | dispatched to | croq measure verdict | TFLOPS | one process |
|---|---|---|---|---|
""" + "\n".join(urows) + "\n"
open(os.path.join(dest, "export-h200.md"), "w").write(md)
print(md)
PY
tar czf "$DEST/export-raw.tar.gz" -C "$WORK" raw
say "done: $DEST/export-h200.md, export-h200.json, export-raw.tar.gz"
