#!/usr/bin/env bash
# Where the block-scaled FP8 kernel loses to cuBLASLt (docs/results/fp8-h200.md: 0.79-0.80): Nsight
# Compute's full set, with the SASS-level warp stall samples, of one launch of each configuration of
# bench/gpu/gemm_configs_fp8bsprof.txt and of cuBLASLt's block-scaled GEMM, all through croq's runner
# (`croq-gpu-runner --mode profile`: warm-up, then one launch inside the NVTX range croq_candidate,
# as `croq profile` does).
#   CONFIG_DIR=.carry/bsprof GEMM_CONFIGS=bench/gpu/gemm_configs_fp8bsprof.txt bash bench/gpu/gemm_configs.sh build
#   bash bench/gpu/fp8_bs_profile.sh     (on the GPU machine, .carry/croq and .carry/bsprof carried)
# Writes $OUT/fp8-bs-profile.tgz (per kernel: the details page as CSV, the SASS source page with its stall
# columns as CSV) and $OUT/fp8-bs-profile.txt (a digest: tensor pipe, issue, top stall reasons, hottest
# SASS lines).
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
source bench/gpu/common.sh
croq_executables
KDIR=${CONFIG_DIR:-$REPO/.carry/bsprof}
DEST=${OUT:-$REPO/docs/results}
W=$(mktemp -d /tmp/croq-bsprof-XXXXXX)
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
KEY=${BSPROF_KEY:-blockscaled_e4m3bf16_8192x8192x8192}
SHAPE=${KEY##*_}
M=${SHAPE%%x*}; R=${SHAPE#*x}; N=${R%%x*}; K=${R#*x}
RUNNER=(croq-gpu-runner --op blockscaled --m "$M" --n "$N" --k "$K" --dtype e4m3bf16 --b-layout col --mode profile --seed 3)
profile() {  # name, runner arguments...
  local name=$1; shift
  timeout 300 "$NCU" --nvtx --nvtx-include croq_candidate/ --clock-control none --set full --import-source yes \
    --launch-count 1 --target-processes all --export "$W/$name" --force-overwrite "${RUNNER[@]}" "$@" \
    > "$W/$name.log" 2>&1
  echo "[bsprof] $name: ncu exit $?"
  "$NCU" --import "$W/$name.ncu-rep" --page details --csv > "$W/$name-details.csv" 2>> "$W/$name.log"
  "$NCU" --import "$W/$name.ncu-rep" --page source --csv --print-source sass > "$W/$name-sass.csv" 2>> "$W/$name.log"
}
# BSPROF_ONLY: the configuration names to profile (default: every one built for KEY); BSPROF_LIBRARY=0
# leaves out cuBLASLt's kernel (profiled in an earlier call).
for so in "$KDIR"/"$KEY"__*.so; do
  [ -f "$so" ] || continue
  n=$(basename "$so" .so); n=${n#*__}
  if [ -n "${BSPROF_ONLY:-}" ] && ! grep -qw -- "$n" <<< "$BSPROF_ONLY"; then continue; fi
  profile "$n" --candidate "$so"
done
[ "${BSPROF_LIBRARY:-1}" = 0 ] || profile cublaslt --library cublaslt
python3 - "$W" > "$DEST/fp8-bs-profile.txt" <<'PY'
import csv, glob, os, sys, collections
w = sys.argv[1]
want = ["Duration", "SM Throughput", "Compute (SM) Throughput", "Memory Throughput", "Issue Slots Busy",
        "Issued Warp Per Scheduler", "No Eligible", "Active Warps Per Scheduler", "Eligible Warps Per Scheduler",
        "Warp Cycles Per Issued Instruction", "Registers Per Thread", "Executed Instructions", "L2 Hit Rate",
        "DRAM Throughput", "Shared Memory Configuration Size", "Achieved Occupancy", "Block Size", "Grid Size"]
for det in sorted(glob.glob(os.path.join(w, "*-details.csv"))):
    name = os.path.basename(det)[:-12]
    print(f"== {name}")
    try:
        rows = list(csv.DictReader(open(det)))
    except Exception as e:
        print("  unreadable:", e); continue
    if rows:
        print("  kernel:", rows[0].get("Kernel Name", "")[:120])
    seen = set()
    for r in rows:
        m = r.get("Metric Name", "")
        if (m in want or "Stall" in m or "pipe" in m.lower() or "Tensor" in m) and (r.get("Section Name"), m) not in seen:
            seen.add((r.get("Section Name"), m))
            print(f"  {r.get('Section Name','')[:28]:28} {m[:60]:60} {r.get('Metric Value','')} {r.get('Metric Unit','')}")
    sass = os.path.join(w, f"{name}-sass.csv")
    try:
        srows = list(csv.reader(open(sass)))
    except Exception:
        continue
    hdr_i = next((i for i, r in enumerate(srows) if any("Warp Stall Sampling (All" in c for c in r)), None)
    if hdr_i is None:
        print("  (no SASS stall columns)"); continue
    hdr = srows[hdr_i]
    col = {h: i for i, h in enumerate(hdr)}
    samp = next(h for h in hdr if h.startswith("Warp Stall Sampling (All"))
    src = next((h for h in hdr if h.lower() == "source"), hdr[1])
    lines = []
    for r in srows[hdr_i + 1:]:
        try:
            lines.append((float(r[col[samp]] or 0), r))
        except (ValueError, IndexError):
            pass
    total = sum(s for s, _ in lines) or 1
    print(f"  SASS lines {len(lines)}, stall samples {total:.0f}; the 30 hottest:")
    for s, r in sorted(lines, key=lambda x: -x[0])[:30]:
        print(f"   {100*s/total:5.1f}%  {r[col[src]][:110]}")
PY
tar czf "$DEST/fp8-bs-profile.tgz" -C "$W" --exclude='*.ncu-rep' .
ls -la "$W"
cat "$DEST/fp8-bs-profile.txt" | head -150
