#!/usr/bin/env bash
# H200 evidence for CroqTile as a dsl of croq, in one device call (budget ~9 minutes):
#   1. `croq env validate --dsl croqtile` with the toolchain carried in .carry/croq (croq finds it
#      beside itself: no CHOREO_HOME);
#   2. the bundled CroqTile kernels (kernels/croqtile/) prepared, built (choreo, then nvcc) and
#      measured by croq's harness through their ABI wrappers, each against its task's
#      `croq baseline` (cuBLAS; cuSPARSELt for the sparse operator) in the same workspace:
#      dense f16->f32 and bf16->f32 at 4096^3 and 8192^3, gemm_sp f16 and e4m3 at 4096x8192x8192
#      (the sparse ones only when this croq measures the sparse operator);
#   3. a short `croq tune <CT_TUNE_KEY...> --dsl croqtile` (default matmul_f16fp32_4096x4096x4096: the
#      croqtile_gemm family from its default; a gemm_sp key tunes the croqtile_gemm_sp family; several
#      keys, space-separated, are tuned at once with --jobs, their builds side by side), under a time
#      limit, with each shape's convergence against its task's baseline.
# Writes $OUT/croqtile-h200.md and $OUT/croqtile-h200.json (and croqtile-ws.tgz, the workspace
# without binaries and reports; put it at .carry/croqtile/croqtile-ws.tgz and call again to resume
# the tune where the time limit stopped it).
#
# Prepare, on the build machine (scripts/setup.sh --with-choreo once, croq built):
#   bash bench/gpu/croqtile_evidence.sh --pack [build-folder]
# which packs .carry/croq with what this script needs and nothing more: bin/croq,
# bin/croq-gpu-runner, the libraries they need that a CUDA image lacks (lib/libcrypto.so.3) and the
# toolchain (toolchains/choreo-<commit12>.tar.xz), about 16 MB. Then call the device with
# carry [".carry/croq"] (and ".carry/croqtile" when resuming) and the command
#   bash bench/gpu/croqtile_evidence.sh
# Environment: CT_TUNE_KEY (one key or several, space-separated), CT_TUNE_ROUNDS (default 20), CT_TUNE_LIMIT_S (default 300), CT_SHAPES_DENSE
# (the bundled list below), CT_SKIP_TUNE=1.
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
if [ "${1:-}" = "--pack" ]; then
  build=${2:-build}
  [ -x "$build/bin/croq" ] && [ -x "$build/bin/croq-gpu-runner" ] || {
    echo "croqtile_evidence: no croq and croq-gpu-runner in $build/bin: build croq first" >&2; exit 1; }
  bash bench/gpu/pack_device.sh "$build" > /dev/null || exit 1
  ls .carry/croq/toolchains/choreo-*.tar.xz > /dev/null 2>&1 || {
    echo "croqtile_evidence: no CroqTile toolchain packed: run scripts/setup.sh --with-choreo first" >&2; exit 1; }
  # Only what this script runs: croq and the GPU runner, and the libraries those two need.
  rm -rf .carry/croq/test-kernels
  for f in .carry/croq/bin/*; do
    case $(basename "$f") in croq|croq-gpu-runner) ;; *) rm -f "$f" ;; esac
  done
  needed=$(ldd .carry/croq/bin/croq .carry/croq/bin/croq-gpu-runner | awk '/=> /{print $1}' | sort -u)
  for f in .carry/croq/lib/*; do
    [ -e "$f" ] || continue
    grep -qxF "$(basename "$f")" <<< "$needed" || rm -f "$f"
  done
  find .carry/croq -type f | sort
  du -sh .carry/croq
  exit 0
fi
source bench/gpu/common.sh
croq_executables
[ -x "$BIN/croq" ] || { echo "croqtile_evidence: no croq in $BIN: carry .carry/croq (bash bench/gpu/croqtile_evidence.sh --pack)" >&2; exit 1; }
START=$(date +%s)
left() { echo $(( 560 - ($(date +%s) - START) )); }
say() { echo "[croqtile-evidence $(( $(date +%s) - START ))s] $*"; }
DEST=${OUT:-$REPO/docs/results}
WS=/tmp/croq-croqtile-ws
mkdir -p "$DEST" "$WS/tuning"
if [ -f "$REPO/.carry/croqtile/croqtile-ws.tgz" ] && [ -z "$(ls -A "$WS/tuning")" ]; then
  tar xzf "$REPO/.carry/croqtile/croqtile-ws.tgz" -C "$WS" && say "resumed the workspace from .carry/croqtile/croqtile-ws.tgz"
fi
RESULTS=$WS/results.jsonl
touch "$RESULTS"

# ---- 1. the toolchain, beside croq ---------------------------------------------------------------
TC=$(bash bench/gpu/pack_device.sh --unpack-toolchain 2>&1 | tail -1)
say "toolchain: $TC"
unset CHOREO_HOME CUTE_HOME CROQ_CHOREO
croq env validate --dsl croqtile > "$WS/env.json" 2> "$WS/env.err"
say "env validate: exit $? $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("pass" if d.get("pass") else "FAIL", [e.get("check") for e in d.get("errors", [])])' "$WS/env.json" 2>/dev/null)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader

# ---- 2. the bundled kernels against the libraries -------------------------------------------------
# one KEY KERNEL TAG per line
BUNDLED=${CT_SHAPES_DENSE:-"matmul_f16fp32_4096x4096x4096 matmul/matmul_f16f32_ws.co ws
matmul_bf16fp32_4096x4096x4096 matmul/matmul_bf16f32_ws.co ws
matmul_f16fp32_8192x8192x8192 matmul/matmul_f16f32_ws.co ws
matmul_bf16fp32_8192x8192x8192 matmul/matmul_bf16f32_ws.co ws
gemm_sp_f16fp32_4096x8192x8192 gemm_sp/gemm_sp_f16.co sp
gemm_sp_e4m3fp16_4096x8192x8192 gemm_sp/gemm_sp_e4m3.co sp"}
# Builds first, all at once (choreo and nvcc use the CPUs only), then the GPU steps one at a time.
while read -r key file tag; do
  [ -n "$key" ] || continue
  grep -q "\"key\": \"$key\"" "$RESULTS" && continue
  t=(--dsl croqtile --shape-key "$key" --model bundled)
  d=$WS/bundled/$key; mkdir -p "$d"
  ( croq --root "$WS" -q prepare "${t[@]}" --from "$REPO/kernels/croqtile/$file" --tag "$tag" > "$d/prepare.json" 2> "$d/prepare.err"
    croq --root "$WS" -q build "${t[@]}" --iter 1 > "$d/build.json" 2> "$d/build.err"; echo $? > "$d/build.rc" ) &
done <<< "$BUNDLED"
wait
say "built: $(cat "$WS"/bundled/*/build.rc 2>/dev/null | tr '\n' ' ')"
while read -r key file tag; do
  [ -n "$key" ] || continue
  if grep -q "\"key\": \"$key\"" "$RESULTS"; then say "$key: measured before"; continue; fi
  if [ "$(left)" -lt 120 ]; then say "$key: skipped (time)"; continue; fi
  t=(--dsl croqtile --shape-key "$key" --model bundled)
  d=$WS/bundled/$key
  croq --root "$WS" -q baseline "${t[@]}" --task-uid "croqtile-$key" > "$d/baseline.json" 2> "$d/baseline.err"; brc=$?
  bdrc=$(cat "$d/build.rc" 2>/dev/null || echo 1)
  croq --root "$WS" -q measure "${t[@]}" --iter 1 > "$d/measure.json" 2> "$d/measure.err"; mrc=$?
  python3 - "$key" "$file" "$d" "$brc" "$bdrc" "$mrc" >> "$RESULTS" <<'PY'
import json, sys
key, file, d, brc, bdrc, mrc = sys.argv[1:7]
def load(n):
    try: return json.load(open(f"{d}/{n}.json"))
    except Exception: return {}
def err(n):
    try: return open(f"{d}/{n}.err").read().strip()[-300:]
    except Exception: return ""
b, bd, m = load("baseline"), load("build"), load("measure")
br = b.get("result") or {}
print(json.dumps({"key": key, "kernel": file, "baseline_tflops": br.get("tflops"), "baseline_kernel": br.get("library"),
                  "baseline_libraries": br.get("libraries"),
                  "baseline_exit": int(brc), "baseline_error": err("baseline") if int(brc) else "",
                  "build": bd.get("verdict"), "build_exit": int(bdrc), "abi_built": (bd.get("abi") or {}).get("built"),
                  "build_errors": bd.get("errors") or (err("build") if int(bdrc) else None),
                  "registers": [r.get("registers") for r in bd.get("resources", [])],
                  "verdict": m.get("verdict"), "tflops": m.get("tflops"),
                  "cv": m.get("cv", (m.get("timing") or {}).get("cv")), "reason": m.get("reason"),
                  "detail": m.get("detail"), "contended": m.get("contended"),
                  "measure_exit": int(mrc), "measure_error": err("measure") if int(mrc) else ""}))
PY
  say "$key: $(tail -1 "$RESULTS" | cut -c1-300)"
done <<< "$BUNDLED"

# ---- 3. croq tune --dsl croqtile ------------------------------------------------------------------
read -r -a KEYS <<< "${CT_TUNE_KEY:-matmul_f16fp32_4096x4096x4096}"
LIMIT=${CT_TUNE_LIMIT_S:-300}
[ "$LIMIT" -gt "$(( $(left) - 40 ))" ] && LIMIT=$(( $(left) - 40 ))
if [ "${CT_SKIP_TUNE:-0}" != 1 ] && [ "$LIMIT" -gt 60 ]; then
  say "tune: ${KEYS[*]} for at most $LIMIT s, ${#KEYS[@]} at once"
  # SIGTERM stops every shape's process where it is (each resumes on the next call); KILL only if not.
  timeout --signal=TERM --kill-after=20 "$LIMIT" croq --root "$WS" tune "${KEYS[@]}" --dsl croqtile \
    --rounds "${CT_TUNE_ROUNDS:-20}" --seed 1 --jobs "${#KEYS[@]}" --profile-preset quick \
    > "$WS/tune-summary.json" 2>> "$WS/tune-events.jsonl"
  say "tune: exit $?"
  tail -3 "$WS/tune-events.jsonl"
fi

# ---- 4. report -----------------------------------------------------------------------------------
tar czf "$DEST/croqtile-ws.tgz" --exclude="*.ncu-rep" --exclude="*.so" --exclude="*.o" -C "$WS" tuning results.jsonl \
  tune-events.jsonl 2>/dev/null
COMMIT=$(cat "$REPO/.carry/croq/commit.txt" 2>/dev/null || git rev-parse --short=12 HEAD 2>/dev/null)
python3 - "$WS" "${KEYS[*]}" "$COMMIT" "$TC" "$DEST/croqtile-h200.json" > "$DEST/croqtile-h200.md" <<'PY'
import json, sys, glob, subprocess, datetime
ws, keys, commit, tc, json_out = sys.argv[1:6]
sys.path.insert(0, "bench/gpu")
import tunes as tunes_lib
rows = [json.loads(l) for l in open(f"{ws}/results.jsonl") if l.strip()]
try: env = json.load(open(f"{ws}/env.json"))
except Exception: env = {}
try: gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
except OSError: gpu = "no nvidia-smi"
try: tcj = json.load(open(f"{tc}/toolchain.json"))
except Exception: tcj = {}
def f(x, p=1): return "-" if x is None else f"{x:.{p}f}"
print("# CroqTile on the H200\n")
print(f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M')} UTC; device: {gpu}; croq {commit}")
print(f"- choreo {tcj.get('choreo_commit', '?')[:12]} (CUTLASS {tcj.get('cutlass_tag', '?')}), carried in .carry/croq/toolchains, found by croq beside itself")
print(f"- `croq env validate --dsl croqtile`: {'pass' if env.get('pass') else 'FAIL ' + json.dumps(env.get('errors'))}\n")
print("## Bundled kernels (croq's harness through the ABI wrapper) against the library baseline\n")
print("| task | kernel | baseline | baseline TFLOPS | build | registers | verdict | TFLOPS | CV | ratio | note |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    ratio = r["tflops"] / r["baseline_tflops"] if r.get("tflops") and r.get("baseline_tflops") else None
    note = (r.get("baseline_error") or r.get("measure_error") or r.get("detail") or r.get("reason") or "").replace("|", "/").replace("\n", " ")[:160]
    print(f"| {r['key']} | {r['kernel']} | {r.get('baseline_kernel') or '-'} | {f(r.get('baseline_tflops'))} | {r.get('build')} | {r.get('registers')} | {r.get('verdict')} | {f(r.get('tflops'))} | {f(r.get('cv'), 3)} | {f(ratio, 3)} | {note} |")
tunes = []
for key in keys.split():
    logs = glob.glob(f"{ws}/tuning/*/croqtile/logs/{key}/croq-search/idea-log.jsonl")
    recs = [json.loads(l) for l in open(logs[0]) if l.strip()] if logs else []
    base, rows_k = tunes_lib.convergence(recs)
    bt = base.get("tflops") if base else None
    family = "croqtile_gemm_sp" if key.startswith("gemm_sp") else "croqtile_gemm"
    print(f"\n## `croq tune {key} --dsl croqtile` ({family} family, seed 1)\n")
    print(f"- baseline: {base.get('kernel') if base else '-'} {f(bt)} TFLOPS\n")
    print("| round | kernel | decision | TFLOPS | best so far | of the baseline | bottleneck | idea |")
    print("|---|---|---|---|---|---|---|---|")
    best = None
    for r, best in rows_k:
        print(f"| {r.get('round')} | {r.get('kernel')} | {r.get('decision')} | {f(r.get('tflops'))} | {f(best)} | {f(best / bt if best and bt else None, 3)} | {r.get('bottleneck')} | {tunes_lib.idea_cell(r, 100)} |")
    tunes.append({"key": key, "baseline_tflops": bt, "best_tflops": best, "rounds": recs})
json.dump({"bundled": rows, "tunes": tunes, "env": env, "toolchain": tcj, "commit": commit, "device": gpu},
          open(json_out, "w"), indent=1)
PY
say "wrote $DEST/croqtile-h200.md"
cat "$DEST/croqtile-h200.md"
