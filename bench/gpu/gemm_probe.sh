#!/usr/bin/env bash
# GPU probe of the GEMM families, run on the H200 from the repository root with .carry/gemm
# carried (built beforehand by bench/gpu/gemm_build_probe.sh on a machine without a GPU, which also
# copies this script, the harness source and the ABI header into it, so the folder is
# self-contained):
#
#   bash .carry/gemm/gemm_probe.sh          (carry: .carry/gemm)
#   bash bench/gpu/gemm_probe.sh            (the same, from a checkout of this branch)
#
# For every configuration in .carry/gemm/manifest.tsv it checks correctness against cuBLAS
# (random inputs, every element, odd shapes such as 1000x1000x1000 and 4096x4100x520, both B
# layouts, every dtype the configuration has) and times it against cuBLAS in the same process on
# the seeds' 14 typical shapes plus 4096^3 and 8192^3. Each configuration runs in its own process
# under a time limit, so a hang or a crash costs only that configuration. Prints every step and a
# summary table at the end; writes results.jsonl, table.md, log.txt and sass_summary.txt to $OUT
# (or docs/results/gemm-probe/ without $OUT). Budget: about 5 minutes; parts that would overrun
# are skipped and listed.
#
# Environment: PROBE_ONLY="hc1 hp2" (labels to run), PROBE_REPS (timed repetitions, default 15),
# PROBE_BUDGET_S (default 300), PROBE_TIME=0 (checks only).
set -u
here=$(cd "$(dirname "$0")" && pwd)
if [ -f "$here/manifest.tsv" ]; then carry=$here; root=$(cd "$here/../.." && pwd); else root=$(cd "$here/../.." && pwd); carry="$root/.carry/gemm"; fi
out=${OUT:-$root/docs/results/gemm-probe}
mkdir -p "$out"
log="$out/log.txt"
results="$out/results.jsonl"
: > "$results"
exec > >(tee -a "$log") 2>&1
start=$SECONDS
budget=${PROBE_BUDGET_S:-300}
reps=${PROBE_REPS:-15}
only=" ${PROBE_ONLY:-} "

echo "== gemm probe: $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(cat "$carry/commit.txt" 2>/dev/null || echo unknown)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv 2>&1 | head -3
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv 2>&1 | head -5
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
for d in $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, s, "lib") for p in nvidia.__path__ for s in ("cublas", "cuda_runtime")))' 2>/dev/null); do
  [ -d "$d" ] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
done
[ -f "$carry/manifest.tsv" ] || { echo "no $carry/manifest.tsv: run bench/gpu/gemm_build_probe.sh and carry .carry/gemm"; exit 1; }

probe="$carry/gemm_probe"
"$probe" > /dev/null 2>&1
if [ $? -ne 2 ]; then  # with no arguments the harness prints its usage and exits with 2
  echo "== the carried harness does not start here ($(ldd "$probe" 2>&1 | grep 'not found' | tr '\n' ' ')); rebuilding it"
  probe=/tmp/gemm_probe
  nvcc -O2 -std=c++17 -I"$carry/include" -I"$root/include" -gencode=arch=compute_90,code=sm_90 "$carry/gemm_probe.cu" \
    -o "$probe" -lcublas -ldl -cudart shared || { echo "harness build failed"; exit 1; }
fi

echo "== SASS of the first configuration (instruction counts per kernel)"
first_so=$(awk -F'\t' 'NR==1 {print $1}' "$carry/manifest.tsv")
if command -v cuobjdump > /dev/null && [ -f "$carry/$first_so.so" ]; then
  cuobjdump -sass "$carry/$first_so.so" > /tmp/sass.txt 2>&1
  awk '/Function :/ {name=$3} /HGMMA|UTMALDG|UTMASTG|UTMAPF|SYNCS|STSM|USETMAXREG|BAR\.|LDL|STL|UBLKCP/ {
         op=$0; sub(/^[^A-Z]*\/\*[0-9a-f]*\*\/ */, "", op); sub(/^@!?U?P[0-9T] +/, "", op)
         split(op, w, /[ .;]/); c[name" "w[1]]++ }
       END { for (k in c) print c[k], k }' /tmp/sass.txt | sort -k2 > "$out/sass_summary.txt"
  grep -m3 HGMMA /tmp/sass.txt >> "$out/sass_summary.txt"
  cat "$out/sass_summary.txt" | head -60
  gzip -c /tmp/sass.txt > "$out/sass_first.txt.gz"
else
  echo "(cuobjdump not found or nothing built)"
fi

# Correctness cases (odd shapes, every dtype, both layouts) and timed shapes.
check_shapes="1000,1000,1000 4096,4100,520 257,129,65 17,33,9 128,256,64 4096,4096,256 1,1,1 300,2000,4000"
perf_shapes="4096,4096,4096 8192,8192,8192 768,768,768 12288,12288,12288 512,8192,8192 16384,8192,8192 \
4096,1024,8192 4096,32768,8192 4096,8192,512 4096,8192,32768 1024,1024,4096 12288,12288,4096 1024,8192,1024 \
12288,8192,12288 4096,1024,1024 12288,4096,4096"

run_probe() {  # label so args...
  local label=$1 so=$2
  shift 2
  timeout 150 "$probe" --so "$so" --label "$label" --reps "$reps" --out "$results" "$@" 2>&1 \
    | grep -v '^RESULT' | sed "s/^/   /"
  local rc=${PIPESTATUS[0]}
  [ "$rc" -ne 0 ] && echo "   [$label] exited with status $rc (124: timeout, 3: hang detected, 4: CUDA error)"
  return 0
}

while IFS=$'\t' read -r label role family defs; do
  if [ "$only" != "  " ] && [[ $only != *" $label "* ]]; then continue; fi
  so="$carry/$label.so"
  echo "== [$label] $role $family: $defs   (elapsed $((SECONDS - start)) s)"
  [ -f "$so" ] || { echo "   missing $so (build failed?)"; continue; }
  args=()
  if [ "$role" = full ]; then dts="f16f32 f16 bf16f32 bf16"; else dts="f16f32 bf16f32"; fi
  for s in $check_shapes; do
    for dt in $dts; do
      for lay in row col; do args+=(--check "$s,$dt,$lay"); done
    done
  done
  if [ "${PROBE_TIME:-1}" != 0 ]; then
    if [ $((SECONDS - start)) -gt "$budget" ]; then
      echo "   time budget spent: timing of $label skipped"
    elif [ "$family" = ampere ]; then
      args+=(--time 4096,4096,4096,f16f32,row --time 4096,4096,4096,f16f32,col)
    elif [ "$role" = full ]; then
      for lay in row col; do
        args+=(--time 4096,4096,4096,f16f32,$lay --time 8192,8192,8192,f16f32,$lay --time 4096,4096,4096,bf16,$lay)
      done
    else
      for s in $perf_shapes; do args+=(--time "$s,f16f32,row" --time "$s,f16f32,col"); done
      for s in 4096,4096,4096 8192,8192,8192; do args+=(--time "$s,bf16f32,row" --time "$s,bf16f32,col"); done
    fi
  fi
  run_probe "$label" "$so" "${args[@]}"
  python3 - "$results" "$label" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [r for r in rows if r.get("label") == sys.argv[2]]
v = {}
for r in rows: v[r.get("verdict", "?")] = v.get(r.get("verdict", "?"), 0) + 1
print("   verdicts:", v)
for r in rows:
    if r.get("verdict") not in ("PASS", "UNSUPPORTED"):
        print("   !", json.dumps(r))
EOF
done < "$carry/manifest.tsv"

# A memory check of two configurations on small odd shapes (out-of-bounds or misaligned global
# accesses at the edges), when there is time left and the sanitizer works on this machine.
if command -v compute-sanitizer > /dev/null && [ $((SECONDS - start)) -lt $((budget - 100)) ]; then
  for label in hc1 hc2; do
    [ -f "$carry/$label.so" ] || continue
    echo "== compute-sanitizer memcheck [$label]"
    timeout 60 compute-sanitizer --tool memcheck --print-limit 5 "$probe" --so "$carry/$label.so" --label "$label-memcheck" \
      --check 257,129,65,f16f32,row --check 257,129,65,bf16,col --check 17,33,9,f16,row 2>&1 | tail -12 | sed "s/^/   /"
  done
fi

echo "== summary (elapsed $((SECONDS - start)) s)"
python3 - "$results" "$carry/manifest.tsv" > "$out/table.md" <<'EOF'
import json, sys, collections
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
defs = {}
for line in open(sys.argv[2]):
    p = line.rstrip("\n").split("\t")
    if len(p) >= 4: defs[p[0]] = p[3]
print("# GEMM probe on the H200\n")
print("## Correctness (checked cases per configuration)\n")
print("| config | pass | fail | other | worst rel err | failing cases |")
print("|---|---|---|---|---|---|")
by = collections.OrderedDict()
for r in rows: by.setdefault(r["label"], []).append(r)
for lab, rs in by.items():
    p = sum(r.get("verdict") == "PASS" for r in rs)
    f = [r for r in rs if r.get("verdict") == "FAIL"]
    o = [r for r in rs if r.get("verdict") not in ("PASS", "FAIL")]
    worst = max([r.get("rel_err", 0) for r in rs if "rel_err" in r] or [0])
    def what(r):
        if "m" not in r: return f'{r.get("verdict")} {r.get("error", "")}'
        s = f'{r["m"]}x{r["n"]}x{r["k"]} {r["dtype"]} {r["layout"]} {r.get("verdict")}'
        if r.get("verdict") == "FAIL":
            s += f' bad={r.get("bad")} nan={r.get("nan")} at ({r.get("first_bad_row")},{r.get("first_bad_col")}) max_abs={r.get("max_abs_err")}'
        return s + (f' {r["cuda"]}' if "cuda" in r else "")
    bad = "; ".join(what(r) for r in (f + o)[:4])
    print(f"| {lab} | {p} | {len(f)} | {len(o)} | {worst:.2e} | {bad} |")
print("\n## Timing (median TFLOPS, L2 flushed; ratio = cuBLAS time / candidate time)\n")
timed = [r for r in rows if "tflops" in r]
keys = collections.OrderedDict()
for r in timed: keys.setdefault((r["m"], r["n"], r["k"], r["dtype"], r["layout"]), []).append(r)
print("| shape | dtype | B | cuBLAS | best | ratio | config | all (config: TFLOPS ratio) |")
print("|---|---|---|---|---|---|---|---|")
for (m, n, k, dt, lay), rs in keys.items():
    cub = max(r["cublas_tflops"] for r in rs)
    best = max(rs, key=lambda r: r["tflops"])
    allc = " ".join(f'{r["label"]}:{r["tflops"]:.0f} {r["ratio"]:.2f}' for r in sorted(rs, key=lambda r: -r["tflops"]))
    print(f"| {m}x{n}x{k} | {dt} | {lay} | {cub:.0f} | {best['tflops']:.0f} | {best['tflops']/cub:.2f} | {best['label']} | {allc} |")
print("\n## Configurations\n")
for lab in by:
    print(f"- {lab}: {defs.get(lab, '')}")
EOF
cat "$out/table.md"
echo "== done in $((SECONDS - start)) s; files in $out"
