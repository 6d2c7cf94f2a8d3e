#!/usr/bin/env bash
# GPU probe of the hopper_gemm family, run on the H200 from the repository root with .carry/gemm
# carried (built beforehand by bench/gpu/gemm_build_probe.sh on a machine without a GPU, which also
# copies this script, the harness source and the ABI header into it, so the folder is
# self-contained):
#
#   bash .carry/gemm/gemm_probe.sh          (carry: .carry/gemm)
#   bash bench/gpu/gemm_probe.sh            (the same, from a checkout of this branch)
#
# Pass 1 checks every configuration of .carry/gemm/manifest.tsv against cuBLAS on odd shapes
# (random inputs, every element, all four dtypes, both B layouts, two calls on a garbage-filled
# workspace), then compute-sanitizer memcheck runs on a split-K and a cluster configuration. Pass 2
# times each configuration on its shape groups (see gemm_probe_configs.txt), cuBLAS interleaved
# repetition by repetition in the same process. Then a summary. Each configuration runs in its own
# process under a time limit, so a hang or a crash costs only that configuration. Writes log.txt,
# results.jsonl, table.md, sass_summary.txt, gpu_clocks.csv to $OUT (or docs/results/gemm-probe/).
# Budget: under 3 minutes; timing that would overrun is skipped and listed.
#
# Environment: PROBE_ONLY="hp2 s1" (labels to run), PROBE_REPS (timed repetitions, default 15;
# short kernels get more), PROBE_BUDGET_S (no timing process starts after it; default 150),
# PROBE_TIME=0 (checks only).
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
budget=${PROBE_BUDGET_S:-150}
reps=${PROBE_REPS:-15}
only=" ${PROBE_ONLY:-} "

echo "== gemm probe: $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(cat "$carry/commit.txt" 2>/dev/null || echo unknown)"
[ -s "$carry/dirty.txt" ] && { echo "   built from uncommitted changes:"; sed 's/^/     /' "$carry/dirty.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv 2>&1 | head -3
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv 2>&1 | head -5
# Clock, power and throttle reasons every 500 ms, to tell a slow kernel from a slowed GPU.
sampler=""
for q in "timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active" \
         "timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu"; do
  if nvidia-smi --query-gpu="$q" --format=csv,noheader > /dev/null 2>&1; then
    echo "$q" > "$out/gpu_clocks.csv"
    nvidia-smi --query-gpu="$q" --format=csv,noheader -lms 500 >> "$out/gpu_clocks.csv" 2>/dev/null &
    sampler=$!
    break
  fi
done
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

selected() { [ "$only" = "  " ] || [[ $only == *" $1 "* ]]; }

# SASS of a cluster and a split-K configuration: instruction counts per kernel (MEMBAR with its
# scope: a MEMBAR.ALL.GPU per stage release was the cluster slowdown of the first run).
echo "== SASS (instruction counts per kernel, f16->f32 B row-major instantiation)"
: > "$out/sass_summary.txt"
if command -v cuobjdump > /dev/null; then
  for label in k1 s1 hp2; do
    [ -f "$carry/$label.so" ] || continue
    cuobjdump -sass "$carry/$label.so" > "/tmp/sass_$label.txt" 2>&1
    awk -v L="$label" '/Function :/ {name=$3; keep = (name ~ /__halffLb0/)} keep && /HGMMA|UTMALDG|UTMASTG|SYNCS|STSM|USETMAXREG|BAR\.|MEMBAR|LDL|STL|SHFL|STG|LDG|NANOSLEEP/ {
         op=$0; sub(/^[^A-Z@]*\/\*[0-9a-f]*\*\/ */, "", op); sub(/^@!?U?P[0-9T] +/, "", op)
         split(op, w, /[ ;]/); o=w[1]; if (o !~ /^MEMBAR/) { split(o, z, "."); o=z[1] } c[L" "o]++ }
       END { for (k in c) print c[k], k }' "/tmp/sass_$label.txt" | sort -k2 >> "$out/sass_summary.txt"
    gzip -c "/tmp/sass_$label.txt" > "$out/sass_$label.txt.gz"
  done
  cat "$out/sass_summary.txt"
else
  echo "(cuobjdump not found)"
fi

# Correctness cases (odd shapes, every dtype, both layouts) and the timed shape groups.
check_shapes="1000,1000,1000 4096,4100,520 257,129,65 17,33,9 128,256,64 4096,4096,256 1,1,1 300,2000,4000 \
100,100,5000 33,4000,3000"
group_cases() {  # group -> M,N,K,DTYPE,LAYOUT cases
  case $1 in
    small) echo "768,768,768,f16f32,row 768,768,768,f16f32,col 1024,1024,4096,f16f32,row 1024,1024,4096,f16f32,col" ;;
    big) echo "512,8192,8192,f16f32,row 4096,8192,512,f16f32,row 4096,8192,512,f16f32,col 4096,32768,8192,f16f32,row \
16384,8192,8192,f16f32,row 12288,8192,12288,f16f32,row" ;;
    sq) echo "4096,4096,4096,f16f32,row 4096,4096,4096,f16f32,col 8192,8192,8192,f16f32,row 4096,4096,4096,bf16f32,row \
8192,8192,8192,bf16f32,row" ;;
    out16) echo "4096,4096,4096,bf16,row 4096,4096,4096,bf16,col 4096,4096,4096,f16,col 8192,8192,8192,bf16,row" ;;
  esac
}

run_probe() {  # label so (--check|--time) CASE ...
  local label=$1 so=$2 mode=$3
  shift 2
  timeout 120 "$probe" --so "$so" --label "$label" --reps "$reps" --out "$results" "$@" 2>&1 \
    | grep -v '^RESULT' | grep -v '\] check ' | sed "s/^/   /"
  local rc=${PIPESTATUS[0]}
  [ "$rc" -ne 0 ] && echo "   [$label] exited with status $rc (124: timeout, 3: hang detected, 4: CUDA error)"
  python3 - "$results" "$label" "$mode" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
mode = "time" if sys.argv[3] == "--time" else "check"
rows = [r for r in rows if r.get("label") == sys.argv[2] and r.get("mode", mode) == mode]
v = {}
for r in rows: v[r.get("verdict", "?")] = v.get(r.get("verdict", "?"), 0) + 1
line = f"   {mode} verdicts: {v}"
if mode == "time":
    line += "  ratios: " + " ".join(f'{r["m"]}x{r["n"]}x{r["k"]}/{r["dtype"]}/{r["layout"]}={r["ratio"]:.2f}' for r in rows if "ratio" in r)
print(line)
for r in rows:
    if r.get("verdict") not in ("PASS", "UNSUPPORTED") or r.get("recheck", "PASS") != "PASS":
        print("   !", json.dumps(r))
PY
  return 0
}

echo "== pass 1: correctness (elapsed $((SECONDS - start)) s)"
while IFS=$'\t' read -r label family groups defs; do
  selected "$label" || continue
  so="$carry/$label.so"
  echo "== [$label] check: $defs"
  [ -f "$so" ] || { echo "   missing $so (build failed?)"; continue; }
  args=()
  for s in $check_shapes; do
    for dt in f16f32 f16 bf16f32 bf16; do
      for lay in row col; do args+=(--check "$s,$dt,$lay"); done
    done
  done
  run_probe "$label" "$so" "${args[@]}"
done < "$carry/manifest.tsv"

# A memory check on small odd shapes (out-of-bounds or misaligned accesses at the edges, the
# split-K workspace, the multicast), when pass 1 left time and the sanitizer works here.
if command -v compute-sanitizer > /dev/null && [ $((SECONDS - start)) -lt 75 ]; then
  for label in s1 k1; do
    [ -f "$carry/$label.so" ] || continue
    echo "== compute-sanitizer memcheck [$label]"
    timeout 25 compute-sanitizer --tool memcheck --print-limit 5 "$probe" --so "$carry/$label.so" --label "$label-memcheck" \
      --check 257,129,65,f16f32,row --check 300,2000,4000,bf16,col --check 17,33,9,f16,row 2>&1 | tail -8 | sed "s/^/   /"
    [ "${PIPESTATUS[0]}" = 124 ] && echo "   [$label] memcheck timed out after 25 s (not a verdict on the kernel: split-K spin-waits need every CTA resident)"
  done
fi
if [ "${PROBE_TIME:-1}" != 0 ]; then
  echo "== pass 2: timing against cuBLAS (elapsed $((SECONDS - start)) s)"
  while IFS=$'\t' read -r label family groups defs; do
    selected "$label" || continue
    so="$carry/$label.so"
    [ -f "$so" ] || continue
    if [ $((SECONDS - start)) -gt "$budget" ]; then
      echo "== [$label] time budget spent: timing skipped"
      continue
    fi
    echo "== [$label] time ($groups)   (elapsed $((SECONDS - start)) s)"
    args=()
    for g in ${groups//,/ }; do
      for c in $(group_cases "$g"); do args+=(--time "$c"); done
    done
    [ ${#args[@]} -gt 0 ] && run_probe "$label" "$so" "${args[@]}"
  done < "$carry/manifest.tsv"
fi

[ -n "$sampler" ] && kill "$sampler" 2> /dev/null

echo "== summary (elapsed $((SECONDS - start)) s)"
python3 - "$results" "$carry/manifest.tsv" "$out/gpu_clocks.csv" > "$out/table.md" <<'PY'
import json, sys, collections, statistics
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
defs, order = {}, []
for line in open(sys.argv[2]):
    p = line.rstrip("\n").split("\t")
    if len(p) >= 4: defs[p[0]] = (p[2], p[3]); order.append(p[0])
print("# GEMM probe on the H200\n")
print("## Correctness (checked cases per configuration: odd shapes, 4 dtypes, 2 layouts, 2 calls each)\n")
print("| config | pass | fail | other | worst rel err | failing cases |")
print("|---|---|---|---|---|---|")
by = collections.OrderedDict()
for r in rows: by.setdefault(r["label"], []).append(r)
for lab, rs in by.items():
    p = sum(r.get("verdict") == "PASS" and r.get("recheck", "PASS") == "PASS" for r in rs)
    f = [r for r in rs if r.get("verdict") == "FAIL" or r.get("recheck") == "FAIL"]
    o = [r for r in rs if r.get("verdict") not in ("PASS", "FAIL")]
    worst = max([r.get("rel_err", 0) for r in rs if "rel_err" in r] or [0])
    def what(r):
        if "m" not in r: return f'{r.get("verdict")} {r.get("error", "")}'
        s = f'{r["m"]}x{r["n"]}x{r["k"]} {r["dtype"]} {r["layout"]} {r.get("verdict")}'
        if r.get("verdict") == "FAIL":
            s += f' call={r.get("failed_call")} bad={r.get("bad")} nan={r.get("nan")} at ({r.get("first_bad_row")},{r.get("first_bad_col")}) max_abs={r.get("max_abs_err")}'
        if r.get("recheck") == "FAIL": s += " recheck=FAIL"
        return s + (f' {r["cuda"]}' if "cuda" in r else "")
    bad = "; ".join(what(r) for r in (f + o)[:4])
    print(f"| {lab} | {p} | {len(f)} | {len(o)} | {worst:.2e} | {bad} |")

timed = [r for r in rows if "ratio" in r]
keys = collections.OrderedDict()
for r in timed: keys.setdefault((r["m"], r["n"], r["k"], r["dtype"], r["layout"]), []).append(r)
print("\n## Timing against cuBLAS (interleaved in each process; ratio = cuBLAS median time / candidate median time)\n")
print("cuBLAS: median (min-max) over the processes that timed the shape. best: the configuration with the")
print("highest in-process ratio. Controls hp2 / hq3 / hc2 are the best configurations of the first run.\n")
print("| shape | dtype | B | cuBLAS TFLOPS | best | TFLOPS | ratio | hp2 | hq3 | hc2 | all (config ratio) |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
best_by_shape = {}
for (m, n, k, dt, lay), rs in keys.items():
    cub = [r["cublas_tflops"] for r in rs]
    best = max(rs, key=lambda r: r["ratio"])
    best_by_shape[(m, n, k, dt, lay)] = best
    ctl = {r["label"]: f'{r["ratio"]:.2f}' for r in rs}
    allc = " ".join(f'{r["label"]}:{r["ratio"]:.2f}' for r in sorted(rs, key=lambda r: -r["ratio"]))
    print(f"| {m}x{n}x{k} | {dt} | {lay} | {statistics.median(cub):.0f} ({min(cub):.0f}-{max(cub):.0f}) | {best['label']} | "
          f"{best['tflops']:.0f} | {best['ratio']:.2f} | {ctl.get('hp2', '')} | {ctl.get('hq3', '')} | {ctl.get('hc2', '')} | {allc} |")

print("\n## Against the issue's goals (best in-process ratio)\n")
sq = [(s, b) for s, b in best_by_shape.items() if s[:3] in ((4096, 4096, 4096), (8192, 8192, 8192)) and s[3] in ("f16f32", "bf16f32")]
print("- squares f16->f32 / bf16->f32 >= 0.90: " + ", ".join(f'{s[0]}^3 {s[3]} {s[4]} {b["ratio"]:.2f}{" ok" if b["ratio"] >= 0.9 else " MISS"}' for s, b in sq))
typ = [(s, b) for s, b in best_by_shape.items() if s[3] == "f16f32" and s[:3] not in ((4096, 4096, 4096), (8192, 8192, 8192))]
print("- typical shapes timed here, f16->f32 >= 0.80: " + ", ".join(f'{s[0]}x{s[1]}x{s[2]} {s[4]} {b["ratio"]:.2f}{" ok" if b["ratio"] >= 0.8 else " MISS"}' for s, b in typ))
print(f"- at or above cuBLAS (>= 1.00): {sum(b['ratio'] >= 1.0 for s, b in typ)} of {len(typ)} timed typical cases")

spreads = [r for r in timed if r.get("spread", 0) > 0.05 or r.get("cublas_spread", 0) > 0.05]
if spreads:
    print(f"\n{len(spreads)} timed cases drifted more than 5 % between the first and second half of their repetitions "
          "(spread / cublas_spread in results.jsonl).")
try:
    lines = open(sys.argv[3]).read().splitlines()
    vals = [l.split(",") for l in lines[1:] if l.count(",") >= 3]
    clk = [float(v[1].split()[0]) for v in vals if v[1].strip().split()[0].replace(".", "").isdigit()]
    pw = [float(v[3].split()[0]) for v in vals if v[3].strip().split()[0].replace(".", "").isdigit()]
    if clk:
        print(f"\nSM clock during the run: min {min(clk):.0f}, median {statistics.median(clk):.0f}, max {max(clk):.0f} MHz; "
              f"power median {statistics.median(pw):.0f} W, max {max(pw):.0f} W ({len(clk)} samples, gpu_clocks.csv).")
except Exception as e:
    print(f"\n(no clock samples: {e})")

print("\n## Configurations\n")
for lab in order:
    g, d = defs[lab]
    print(f"- {lab} [{g}]: {d}")
PY
cat "$out/table.md"
echo "== done in $((SECONDS - start)) s; files in $out"
