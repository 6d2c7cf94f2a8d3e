#!/usr/bin/env bash
# GPU evidence for croq's build pipelines (run on the H200 by the device tool; every step prints
# what it does and a failing step does not stop the others):
#   1. croq env validate for cuda, triton and croqtile;
#   2. the bundled cuda kernels (naive, smem_tiled, wmma_tc) prepared, built cold and then from the
#      cache, and measured, for f16->f32 and bf16->f32 at 4096^3 and at an odd shape;
#   3. the bundled Triton kernel checked and measured by croq's Python runner;
#   4. one CroqTile .co (tests/data/choreo/matmul_f16f32_wgmma.co) through both phases with the
#      choreo binary and CUTLASS headers carried in .carry/choreo/, measured through its ABI wrapper
#      and run through its own harness.
# Results (markdown, with date, device and commit) go to $OUT/build-h200.md when $OUT is set, else
# docs/results/build-h200.md. Budget: under 5 minutes on an H200.
#
# Preparing the carry (on a build machine, once): bench/gpu/build_evidence.sh --prepare-carry
# CROQTILE_DIR [CUTLASS_INCLUDE_DIR] copies the choreo binary (stripped), its runtime headers and
# the CUTLASS/CuTe include folder (default CROQTILE_DIR/extern/cutlass/include) into the ignored
# folder .carry/choreo/ (build/choreo, runtime/, cutlass/include/) for the device machine.
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
if [ "${1:-}" = "--prepare-carry" ]; then
  SRC=${2:?usage: $0 --prepare-carry CROQTILE_DIR [CUTLASS_INCLUDE_DIR]}
  INC=${3:-$SRC/extern/cutlass/include}
  DEST=$REPO/.carry/choreo
  rm -rf "$DEST" && mkdir -p "$DEST/build" "$DEST/cutlass"
  cp "$SRC/build/choreo" "$DEST/build/choreo" && strip "$DEST/build/choreo" 2>/dev/null
  cp -r "$SRC/runtime" "$DEST/runtime"
  cp -r "$INC" "$DEST/cutlass/include"
  du -sh "$DEST" "$DEST"/* "$DEST"/build/choreo
  "$DEST/build/choreo" --help 2>&1 | head -1
  exit 0
fi
START=$(date +%s)
OUTDIR=${OUT:-$REPO/docs/results}
mkdir -p "$OUTDIR"
REPORT=$OUTDIR/build-h200.md
WORK=$(mktemp -d /tmp/croq-build-evidence.XXXXXX)
WS=$WORK/ws
mkdir -p "$WS"
JOBS=$(nproc 2>/dev/null || echo 4)
step() { echo; echo "=== [$(( $(date +%s) - START ))s] $*"; }
note() { echo "    $*"; }
ROWS=()        # markdown table rows of builds and measurements
PROBLEMS=()    # steps that failed

step "environment"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>&1 | sed 's/^/    /'
DEVICE=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
COMMIT=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
NVCC=${CROQ_NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
note "nvcc: $NVCC ($("$NVCC" --version 2>/dev/null | grep -o 'release [0-9.]*'))"
note "python: $(python3 -c 'import sys, torch, triton; print(sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__)' 2>&1 | tail -1)"

step "croq binary"
CROQ=""
for c in "$REPO/.carry/croq/bin/croq" "$REPO/build/bin/croq" "$REPO/build-gpu/bin/croq"; do
  if [ -x "$c" ] && "$c" help >/dev/null 2>&1; then CROQ=$c; break; fi
done
if [ -z "$CROQ" ]; then
  note "no carried build: configuring and building croq ($JOBS jobs)"
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCROQ_TESTS=OFF -DCROQ_WITH_WEB=OFF >/dev/null 2>&1 \
    || cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCROQ_TESTS=OFF -DCROQ_WITH_WEB=OFF >/dev/null 2>&1
  cmake --build build-gpu -j "$JOBS" --target croq croq-cpu-runner 2>&1 | tail -3
  CROQ=$REPO/build-gpu/bin/croq
fi
if [ ! -x "$CROQ" ]; then echo "FATAL: no croq binary"; exit 1; fi
note "croq: $CROQ"
export CROQ_HOME=$REPO
RUNNER=$REPO/src/python/croq_runner.py
# croq's measurement rules (dtypes, tolerances, timing defaults, peak table): the Python runner has
# no copy of them.
RULES=$("$(dirname "$CROQ")/croq-cpu-runner" --print-rules 2>/dev/null || true)
croq() { "$CROQ" --root "$WS" "$@"; }
jget() { python3 -c 'import json,sys
d=json.load(sys.stdin)
for k in sys.argv[1].split("."):
    d = d[int(k)] if isinstance(d, list) else (d.get(k) if isinstance(d, dict) else None)
    if d is None: break
print("" if d is None else (json.dumps(d) if isinstance(d, (dict, list)) else d))' "$1" 2>/dev/null; }

# Measures one candidate: with `croq measure` when it takes --candidate, else with croq's Python
# runner (which loads ABI shared objects through ctypes). Prints "verdict tflops cv".
HAVE_MEASURE=0
"$CROQ" measure --help 2>/dev/null | grep -q -- "--candidate" && HAVE_MEASURE=1
measure() {  # key dtype m n k candidate label -> appends JSON to $WORK/<label>.json
  local key=$1 dtype=$2 m=$3 n=$4 k=$5 cand=$6 label=$7 model=$8 dsl=$9 out=$WORK/$7.json
  : > "$out"
  if [ "$HAVE_MEASURE" = 1 ] && [ "${cand##*.}" = so ]; then
    timeout 120 "$CROQ" --root "$WS" measure --dsl "$dsl" --shape-key "$key" --model "$model" --candidate "$cand" > "$out" 2> "$WORK/$label.err"
  fi
  if [ -z "$(jget verdict < "$out")" ]; then  # no croq measure (yet), or it gave no document
    timeout 150 python3 "$RUNNER" --rules "$RULES" --candidate "$cand" --m "$m" --n "$n" --k "$k" --dtype "$dtype" \
      --b-layout "${BLAYOUT:-row}" --seed 1234 --time-budget-ms 2000 --timeout-s 120 --croq-git "$COMMIT" > "$out" 2> "$WORK/$label.err"
  fi
  local v t cv
  v=$(jget verdict < "$out"); t=$(jget tflops < "$out"); cv=$(jget timing.cv < "$out")
  [ -z "$v" ] && v="no-result($(tail -1 "$WORK/$label.err" | cut -c1-80))"
  echo "$v ${t:-n/a} ${cv:-n/a}"
}
fmt() { python3 -c 'import sys
v=sys.argv[1]
try: print("%.1f" % float(v))
except ValueError: print(v)' "$1"; }
fmt3() { python3 -c 'import sys
v=sys.argv[1]
try: print("%.3f" % float(v))
except ValueError: print(v)' "$1"; }

step "croq env validate"
ENV_ROWS=()
for dsl in cuda triton croqtile; do
  if [ "$dsl" = croqtile ] && [ -d "$REPO/.carry/choreo" ]; then
    export CHOREO_HOME=$REPO/.carry/choreo CUTE_HOME=$REPO/.carry/choreo/cutlass
  fi
  doc=$(croq env validate --dsl "$dsl" 2>/dev/null)
  pass=$(echo "$doc" | jget pass)
  errs=$(echo "$doc" | python3 -c 'import json,sys; d=json.load(sys.stdin); print("; ".join("%s: %s" % (e["check"], e["message"]) for e in d["errors"]) or "-")' 2>/dev/null)
  note "$dsl: pass=$pass errors=$errs"
  ENV_ROWS+=("| $dsl | $pass | ${errs//|//} |")
done

step "cuda: bundled kernels, prepare + build (cold, then cached) + measure"
for dtype in f16f32 bf16f32; do
  for shape in 4096x4096x4096 1000x1000x1000; do
    key=matmul_${dtype}_${shape}
    IFS=x read -r M N K <<< "$shape"
    for kern in naive smem_tiled wmma_tc; do
      model=${kern//_/-}
      label=cuda_${kern}_${dtype}_${shape}
      if [ "$kern" = naive ] && [ "$shape" = 4096x4096x4096 ] && [ "$dtype" = bf16f32 ]; then continue; fi  # slow, one is enough
      croq prepare --dsl cuda --shape-key "$key" --model "$model" --from "$REPO/kernels/cuda/matmul/$kern.cu" --tag "$kern" >/dev/null 2>"$WORK/$label.prep.err" \
        || { note "prepare $label failed: $(tail -1 "$WORK/$label.prep.err")"; PROBLEMS+=("prepare $label"); continue; }
      t0=$(date +%s%N)
      b=$(croq build --dsl cuda --shape-key "$key" --model "$model" --iter 1 2>/dev/null)
      cold_wall=$(( ($(date +%s%N) - t0) / 1000000 ))
      verdict=$(echo "$b" | jget verdict); cold=$(echo "$b" | jget compile_ms); cached1=$(echo "$b" | jget cached)
      t0=$(date +%s%N)
      b2=$(croq build --dsl cuda --shape-key "$key" --model "$model" --iter 1 2>/dev/null)
      warm_wall=$(( ($(date +%s%N) - t0) / 1000000 ))
      warm=$(echo "$b2" | jget compile_ms); cached2=$(echo "$b2" | jget cached)
      regs=$(echo "$b" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(" ".join(sorted({"%d/%d/%d" % (r["registers"], r["shared_bytes"], r["spill_stores"]) for r in d["resources"] if ("__half, float" in r["kernel"] or "__nv_bfloat16, float" in r["kernel"]) and "false>" in r["kernel"]})))' 2>/dev/null)
      so=$WS/$(echo "$b" | jget outputs.0)
      note "$label: build $verdict cold ${cold}ms (cached=$cached1, wall ${cold_wall}ms), again ${warm}ms (cached=$cached2, wall ${warm_wall}ms), regs/smem/spills $regs"
      if [ "$verdict" != OK ]; then PROBLEMS+=("build $label: $(echo "$b" | jget errors)"); ROWS+=("| cuda | $kern | $dtype | $shape | $verdict | $(fmt "$cold") | $(fmt "$warm") | - | - | - |"); continue; fi
      read -r mv mt mcv <<< "$(measure "$key" "$dtype" "$M" "$N" "$K" "$so" "$label" "$model" cuda)"
      note "$label: measure $mv TFLOPS=$(fmt "$mt") cv=$(fmt3 "$mcv")"
      [ "$mv" = PASS ] || PROBLEMS+=("measure $label: $mv")
      ROWS+=("| cuda | $kern | $dtype | $shape | $verdict | $(fmt "$cold") ($cached1) | $(fmt "$warm") ($cached2) | $regs | $mv | $(fmt "$mt") |")
    done
  done
done

step "triton: bundled tiled.py, check (build) + measure"
for dtype in f16f32 bf16f32; do
  for shape in 4096x4096x4096 1000x1000x1000; do
    key=matmul_${dtype}_${shape}; IFS=x read -r M N K <<< "$shape"; label=triton_tiled_${dtype}_${shape}
    croq prepare --dsl triton --shape-key "$key" --model tiled --from "$REPO/kernels/triton/matmul/tiled.py" --tag tiled >/dev/null 2>"$WORK/$label.prep.err" \
      || { note "prepare $label failed: $(tail -1 "$WORK/$label.prep.err")"; PROBLEMS+=("prepare $label"); continue; }
    b=$(croq build --dsl triton --shape-key "$key" --model tiled --iter 1 2>/dev/null)
    verdict=$(echo "$b" | jget verdict); cold=$(echo "$b" | jget compile_ms)
    b2=$(croq build --dsl triton --shape-key "$key" --model tiled --iter 1 2>/dev/null)
    warm=$(echo "$b2" | jget compile_ms); cached2=$(echo "$b2" | jget cached)
    note "$label: check $verdict ${cold}ms, again ${warm}ms (cached=$cached2) $(echo "$b" | jget errors)"
    src=$WS/$(echo "$b" | jget source)
    read -r mv mt mcv <<< "$(measure "$key" "$dtype" "$M" "$N" "$K" "$src" "$label" tiled triton)"
    note "$label: measure $mv TFLOPS=$(fmt "$mt") cv=$(fmt3 "$mcv") $(jget reason < "$WORK/$label.json" | cut -c1-120)"
    [ "$mv" = PASS ] || PROBLEMS+=("measure $label: $mv")
    ROWS+=("| triton | tiled | $dtype | $shape | $verdict | $(fmt "$cold") | $(fmt "$warm") ($cached2) | - | $mv | $(fmt "$mt") |")
  done
done

step "triton: the runtime guard refuses a candidate that hides torch.matmul"
cat > "$WORK/sneaky.py" <<'EOF'
import torch
_f = getattr(torch, "mat" + "mul")
def croq_matmul(problem, a, b, c):
    c.copy_(_f(a.float(), b.float()))
EOF
read -r sv st scv <<< "$(measure matmul_f16f32_512x512x512 f16f32 512 512 512 "$WORK/sneaky.py" triton_sneaky x triton)"
note "sneaky.py: $sv (want LIBRARY_CALL_FORBIDDEN) $(jget reason < "$WORK/triton_sneaky.json")"
ROWS+=("| triton | sneaky (getattr torch.matmul) | f16f32 | 512x512x512 | - | - | - | - | $sv | - |")

step "croqtile: two-phase build of tests/data/choreo/matmul_f16f32_wgmma.co"
if [ -x "$REPO/.carry/choreo/build/choreo" ]; then
  export CHOREO_HOME=$REPO/.carry/choreo CUTE_HOME=$REPO/.carry/choreo/cutlass
  key=matmul_f16f32_4096x4096x4096; label=croqtile_wgmma
  croq prepare --dsl croqtile --shape-key "$key" --model wgmma --from "$REPO/tests/data/choreo/matmul_f16f32_wgmma.co" --tag wgmma >/dev/null 2>"$WORK/$label.prep.err" \
    || { note "prepare failed: $(tail -1 "$WORK/$label.prep.err")"; PROBLEMS+=("prepare $label"); }
  b=$(croq build --dsl croqtile --shape-key "$key" --model wgmma --iter 1 2>"$WORK/$label.build.err")
  echo "$b" > "$WORK/$label.build.json"
  verdict=$(echo "$b" | jget verdict); cold=$(echo "$b" | jget compile_ms)
  note "build: $verdict in ${cold}ms; phase 1: $(echo "$b" | jget phase1.ran) ($(echo "$b" | jget phase1.choreo_ms) ms), abi: $(echo "$b" | jget abi.built) $(echo "$b" | jget abi.reason)"
  note "nvcc flags from the script: $(echo "$b" | jget phase1.nvcc_flags | cut -c1-300)"
  [ "$verdict" = OK ] || { PROBLEMS+=("croqtile build: $(echo "$b" | jget errors) $(echo "$b" | jget choreo_message | cut -c1-300)"); tail -5 "$WORK/$label.build.err"; }
  b2=$(croq build --dsl croqtile --shape-key "$key" --model wgmma --iter 1 2>/dev/null)
  warm=$(echo "$b2" | jget compile_ms); cached2=$(echo "$b2" | jget cached)
  note "again: ${warm}ms cached=$cached2 (phase 1 ran: $(echo "$b2" | jget phase1.ran))"
  regs=$(echo "$b" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(" ".join(sorted({"%d/%d/%d" % (r["registers"], r["shared_bytes"], r["spill_stores"]) for r in d["resources"]})))' 2>/dev/null)
  so=$WS/tuning/$(ls "$WS/tuning" | head -1)/croqtile/bin/$key/wgmma/iter001_wgmma.so
  exe=${so%.so}
  if [ -f "$so" ]; then
    read -r mv mt mcv <<< "$(BLAYOUT=col measure "$key" f16f32 4096 4096 4096 "$so" croqtile_abi wgmma croqtile)"
    note "ABI-bound kernel: $mv TFLOPS=$(fmt "$mt") cv=$(fmt3 "$mcv") $(jget reason < "$WORK/croqtile_abi.json" | cut -c1-160)"
    [ "$mv" = PASS ] || PROBLEMS+=("croqtile abi measure: $mv")
  else
    mv="no .so"; mt=""
  fi
  ROWS+=("| croqtile | matmul_f16f32_wgmma.co (ABI) | f16f32 | 4096x4096x4096 | $verdict | $(fmt "$cold") | $(fmt "$warm") ($cached2) | $regs | $mv | $(fmt "$mt") |")
  if [ -x "$exe" ]; then
    note "legacy program (choreo's own harness):"
    timeout 60 "$exe" 2>&1 | tail -4 | sed 's/^/      /'
    leg=$(timeout 60 "$exe" 2>&1 | grep -E "TFLOPS|VERIFY" | tr '\n' ' ')
    ROWS+=("| croqtile | matmul_f16f32_wgmma.co (own harness, reported) | f16f32 | 4096x4096x4096 | $verdict | - | - | - | ${leg:-no output} | - |")
  fi
else
  note "no .carry/choreo/build/choreo: CroqTile step skipped"
  PROBLEMS+=("croqtile: .carry/choreo missing")
fi

step "writing $REPORT"
{
  echo "# croq build pipelines on the GPU"
  echo
  echo "Date: $(date -u +%Y-%m-%dT%H:%MZ). Device: ${DEVICE:-unknown}. Commit: $COMMIT. Script: bench/gpu/build_evidence.sh."
  echo "Measured by: $([ "$HAVE_MEASURE" = 1 ] && echo 'croq measure (cuda, croqtile) and' ) croq's Python runner (src/python/croq_runner.py; ABI shared objects through ctypes)."
  echo "Build times are croq build's compile_ms: cold (a compile) and again (the build cache)."
  echo "Resources: registers/shared bytes/spill-store bytes of the f32-output, row-major-B kernels (ptxas -v)."
  echo
  echo "## croq env validate"
  echo
  echo "| dsl | pass | errors |"
  echo "|---|---|---|"
  printf '%s\n' "${ENV_ROWS[@]}"
  echo
  echo "## Builds and measurements"
  echo
  echo "| dsl | kernel | dtype | M x N x K | build | cold ms (cached) | again ms (cached) | regs/smem/spill | verdict | TFLOPS |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${ROWS[@]}"
  echo
  echo "## Problems"
  echo
  if [ ${#PROBLEMS[@]} -eq 0 ]; then echo "none"; else printf -- '- %s\n' "${PROBLEMS[@]}"; fi
  echo
  echo "Total time: $(( $(date +%s) - START )) s."
} > "$REPORT"
cat "$REPORT"
[ -n "${OUT:-}" ] && cp "$WORK"/*.json "$OUT"/ 2>/dev/null
echo "done in $(( $(date +%s) - START )) s"
