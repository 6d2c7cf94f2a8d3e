#!/usr/bin/env bash
# The 2:4 sparse GEMM baselines on a GPU (issue 17): `croq baseline` of gemm_sp tasks, which
# measures cuSPARSELt (every algorithm id plus its own search's plan, screened with croq's timing,
# A compressed once off the clock) and the dense libraries (cuBLAS, cuBLASLt) on the same pruned
# inputs, for f16 (f16 out) and e4m3 (f16 out) at 4096x8192x8192 and some of the typical shapes;
# then the GPU-labelled sparse verification tests (croq_gpu_tests SparseGpu.*: correct sparse
# candidates pass in every dtype, layout and odd shape; metadata ignored, A read densely, a wrong
# or guessed pattern, a compression made once fail).
#
# Two modes:
#   bash bench/gpu/gemm_sp_baseline.sh build   here (CUDA toolkit, no GPU): builds croq, the GPU
#                                              runner, croq_gpu_tests and the test kernels, and packs
#                                              them into .carry/croq (bench/gpu/pack_device.sh)
#   bash bench/gpu/gemm_sp_baseline.sh [run]   on the GPU machine, with .carry/croq carried
# cuSPARSELt is found through the nvidia-cusparselt Python package (PyTorch's environment); set
# CROQ_CUSPARSELT=<libcusparseLt.so.0 or its folder> to use another. Knobs: SPB_BUDGET_S (default
# 480: baselines that do not fit are reported as not run), SPB_SHAPES (M,N,K list), SPB_DTYPES.
# Writes $OUT/gemm-sp-baseline.md (the summary) and $OUT/gemm-sp-baseline-raw.tgz (every result,
# measurement and log); without $OUT, docs/results/gemm-sp-baseline-run/.
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
MODE=${1:-run}

if [ "$MODE" = build ]; then
  set -e
  BUILD=${CROQ_BUILD:-build}
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
  cmake --build "$BUILD" -j"${JOBS:-2}" --target croq croq-gpu-runner croq_gpu_tests croq_test_kernel_set
  bash bench/gpu/pack_device.sh "$BUILD"
  exit 0
fi

source bench/gpu/common.sh
croq_executables
START=$(date +%s)
BUDGET_S=${SPB_BUDGET_S:-480}
DEST=${OUT:-$REPO/docs/results/gemm-sp-baseline-run}
mkdir -p "$DEST"
WORK=$(mktemp -d /tmp/croq-spb-XXXXXX)
RAW=$WORK/raw
mkdir -p "$RAW"
exec > >(tee "$RAW/gemm-sp-baseline.log") 2>&1
say() { echo "[gemm_sp $(($(date +%s) - START))s] $*"; }
left() { echo $((BUDGET_S - ($(date +%s) - START))); }

say "croq: $(croq --version 2>&1) from $BIN (commit $(cat "$REPO/.carry/croq/commit.txt" 2>/dev/null || git rev-parse --short=12 HEAD 2>/dev/null))"
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,memory.used,utilization.gpu --format=csv 2>&1 | tee "$RAW/nvidia-smi.csv"

# cuSPARSELt: CROQ_CUSPARSELT as given, else the Python package's folder (the runner would find it
# by itself too; named here so the summary says which library was measured).
if [ -z "${CROQ_CUSPARSELT:-}" ]; then
  for py in python3 python; do
    dir=$($py -c "import nvidia.cusparselt as c; print(list(c.__path__)[0])" 2>/dev/null) && [ -n "$dir" ] && break
  done
  if [ -n "${dir:-}" ]; then export CROQ_CUSPARSELT=$dir; fi
fi
say "cuSPARSELt: ${CROQ_CUSPARSELT:-not found (the sparse baselines will say so)}"
ls -l "${CROQ_CUSPARSELT:-/nonexistent}" "${CROQ_CUSPARSELT:-/nonexistent}/lib" 2>/dev/null | head -20
pip show nvidia-cusparselt-cu13 nvidia-cusparselt-cu12 2>/dev/null | grep -E "^(Name|Version)" || true

# ---- 1. the baselines ------------------------------------------------------------------------
SHAPES=${SPB_SHAPES:-"4096,8192,8192 768,768,768 1024,1024,4096 4096,8192,512 512,8192,8192 4096,1024,1024 12288,12288,12288"}
DTYPES=${SPB_DTYPES:-"f16 e4m3fp16"}
WS=$WORK/ws
mkdir -p "$WS/tuning"
export CROQ_LEASE_DIR=$WORK/leases
mkdir -p "$CROQ_LEASE_DIR"
ROWS=$WORK/rows.jsonl
: > "$ROWS"
for shape in $SHAPES; do
  IFS=, read -r M N K <<< "$shape"
  for dt in $DTYPES; do
    key="gemm_sp_${dt}_${M}x${N}x${K}"
    if [ "$(left)" -lt 40 ]; then
      say "NOT RUN (time budget): $key"
      echo "{\"key\": \"$key\", \"not_run\": true}" >> "$ROWS"
      continue
    fi
    say "croq baseline $key"
    t0=$(date +%s)
    timeout $(( $(left) > 300 ? 300 : $(left) )) croq --root "$WS" baseline --dsl cuda --shape-key "$key" \
      --model spb --task-uid "spb-$key" --timeout 280 > "$RAW/$key.json" 2> "$RAW/$key.err"
    rc=$?
    say "  exit $rc in $(( $(date +%s) - t0 )) s; $(tail -1 "$RAW/$key.err")"
    python3 - "$RAW/$key.json" "$key" "$rc" "$WS" >> "$ROWS" <<'PY'
import json, os, sys
path, key, rc, ws = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
row = {"key": key, "rc": rc}
try:
    doc = json.load(open(path))
except Exception as e:  # noqa: BLE001
    row["error"] = "no JSON output: %s" % e
    print(json.dumps(row)); sys.exit(0)
res = doc.get("result") or {}
row["library"] = res.get("library")
row["tflops"] = res.get("tflops")
row["time_ms"] = res.get("time_ms")
row["libraries"] = res.get("libraries")
row["library_status"] = res.get("library_status")
row["algo"] = res.get("algo")
if not res:
    row["verdict"] = doc.get("verdict"); row["detail"] = doc.get("detail") or doc.get("error") or doc.get("message")
m = res.get("measurement")
if m and os.path.exists(os.path.join(ws, m)):
    mdoc = json.load(open(os.path.join(ws, m)))
    t = mdoc.get("timing") or {}
    row["cv"] = t.get("cv"); row["robust_cv"] = t.get("robust_cv"); row["reps"] = t.get("reps")
    row["sm_clock_mhz"] = (mdoc.get("device") or {}).get("sm_clock_mhz")
    lib = mdoc.get("library") or {}
    row["screened"] = [{"library": (s.get("algo") or {}).get("library"), "alg_id": (s.get("algo") or {}).get("alg_id"),
                        "searched": (s.get("algo") or {}).get("searched"), "tflops": s.get("tflops"),
                        "error": s.get("error")} for s in lib.get("screened", [])]
print(json.dumps(row))
PY
  done
done

# ---- 2. the GPU-labelled sparse tests ---------------------------------------------------------
if [ -x "$BIN/croq_gpu_tests" ] && [ "$(left)" -gt 30 ]; then
  say "croq_gpu_tests --gtest_filter=SparseGpu.*"
  CROQ_TEST_BIN_DIR=$BIN timeout $(( $(left) > 240 ? 240 : $(left) )) "$BIN/croq_gpu_tests" --gtest_filter='SparseGpu.*' \
    > "$RAW/sparse-gpu-tests.log" 2>&1
  echo "exit $?" >> "$RAW/sparse-gpu-tests.log"
  grep -E "^\[( +OK|  FAILED|  SKIPPED|  PASSED) |Failure|Expected|Which is|exit " "$RAW/sparse-gpu-tests.log" | head -60
else
  say "croq_gpu_tests not run ($([ -x "$BIN/croq_gpu_tests" ] && echo "time budget" || echo "not packed: bash bench/gpu/gemm_sp_baseline.sh build"))"
fi

# ---- the summary -----------------------------------------------------------------------------
python3 - "$ROWS" "$RAW/sparse-gpu-tests.log" "${CROQ_CUSPARSELT:-}" > "$DEST/gemm-sp-baseline.md" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
fixture = {  # h200_cusparselt_planned.csv (shared fixtures): best of default / searched plan, TFLOPS
    ("4096x8192x8192", "f16"): 1166.3, ("4096x8192x8192", "e4m3fp16"): 2299.8, ("768x768x768", "f16"): 90.2,
    ("768x768x768", "e4m3fp16"): 116.0, ("1024x1024x4096", "f16"): 466.8, ("1024x1024x4096", "e4m3fp16"): 695.4,
    ("4096x8192x512", "f16"): 667.3, ("4096x8192x512", "e4m3fp16"): 885.2, ("512x8192x8192", "f16"): 991.9,
    ("512x8192x8192", "e4m3fp16"): 1745.9, ("12288x12288x12288", "f16"): 1065.5, ("12288x12288x12288", "e4m3fp16"): 2035.7}
print("# 2:4 sparse GEMM baselines (croq baseline, gemm_sp)\n")
print("cuSPARSELt from: `%s`\n" % (sys.argv[3] or "the loader's search / not found"))
print("TFLOPS count 2·M·N·K (dense-equivalent). `cuSPARSELt` and `dense` are each library's best measured variant on the same pruned inputs; iter000 is the faster. `fixture` is the planned-once cuSPARSELt figure of h200_cusparselt_planned.csv (another day: compare ratios).\n")
print("| shape | dtype | iter000 library | iter000 TFLOPS | cuSPARSELt | dense (cuBLAS/cuBLASLt) | sparse/dense | fixture | robust CV | cuSPARSELt plans ok/screened | note |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    key = r["key"]
    parts = key.split("_")
    shape, dt = parts[-1], parts[-2]
    if r.get("not_run"):
        print("| %s | %s | not run (time budget) |||||||||" % (shape, dt)); continue
    libs = r.get("libraries") or {}
    sp = (libs.get("cusparseLt") or {}).get("tflops")
    dense = max([v.get("tflops") or 0 for k, v in libs.items() if k != "cusparseLt"] or [0]) or None
    ratio = "%.2f" % (sp / dense) if sp and dense else ""
    scr = [s for s in (r.get("screened") or []) if s.get("library") == "cusparseLt"]
    ok = sum(1 for s in scr if s.get("tflops"))
    st = (r.get("library_status") or {}).get("cusparselt") or {}
    note = st.get("error") or r.get("detail") or r.get("error") or ""
    fx = fixture.get((shape, dt))
    f = lambda x: "%.1f" % x if isinstance(x, (int, float)) else ""
    print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d/%d | %s |" % (
        shape, dt, r.get("library") or "FAILED (rc %s)" % r.get("rc"), f(r.get("tflops")), f(sp), f(dense), ratio,
        f(fx), ("%.2f %%" % (100 * r["robust_cv"])) if r.get("robust_cv") is not None else "", ok, len(scr),
        str(note).replace("|", "/")[:160]))
print("\n## The sparse verification tests (croq_gpu_tests SparseGpu.*)\n")
try:
    lines = [l.rstrip() for l in open(sys.argv[2]) if l.startswith(("[       OK", "[  FAILED", "[  SKIPPED", "[  PASSED", "exit "))]
    print("```\n" + "\n".join(lines[:40]) + "\n```")
except OSError:
    print("not run")
PY
cp "$ROWS" "$RAW/rows.jsonl"
# Every baseline's files (result, measurement) beside the log.
(cd "$WS" && find tuning -name "*.json" -path "*baseline*" -print0 | tar czf "$RAW/workspace-baselines.tgz" --null -T -) 2>/dev/null
tar czf "$DEST/gemm-sp-baseline-raw.tgz" -C "$RAW" .
say "wrote $DEST/gemm-sp-baseline.md and gemm-sp-baseline-raw.tgz"
cat "$DEST/gemm-sp-baseline.md"
