#!/usr/bin/env bash
# Where ptxas spills the Hopper template past its accumulator limits (kernels/cuda/matmul/hopper/gemm_sm90.cu,
# MAX_ACC: 192 per consumer thread, 160 with split-K, 128 with stream-K; three consumers 96 / 64). The limits
# were set where ptxas reports no spill at all; what costs time is local memory in the k loop, paid every k
# step, not once per tile. For each configuration below (built with CROQ_ACC_UNCHECKED=1), the ptxas spill
# report and `croq sass dump`'s local_loads / local_stores / local_in_tensor_loops (loops from backward
# branches, docs/classifier.md). Writes $OUT/spill-sass.md (default docs/results/). The builds are also
# a configuration list for bench/gpu/gemm_configs.sh (.carry/spills/configs.tsv: the 256x192 ones), so
# the same call can time them against cuBLAS:
#   CONFIG_DIR=.carry/spills CONFIG_REPORT=gemm-configs-unchecked-h200 bash bench/gpu/gemm_configs.sh run
#   bash bench/gpu/spill_sass.sh build   renders and compiles the configurations into .carry/spills/ (here)
#   bash bench/gpu/spill_sass.sh run     disassembles them with cuobjdump (on the GPU machine, which has it)
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
source bench/gpu/common.sh
KDIR=$REPO/.carry/spills
KEY=matmul_f16fp32_12288x8192x12288
if [ "${1:-run}" = build ]; then
  rm -rf "$KDIR" && mkdir -p "$KDIR"
  python3 - "$KDIR" "$REPO" "$KEY" <<'PY'
import os, sys
kdir, repo, key = sys.argv[1:4]
sys.path.insert(0, os.path.join(repo, "bench/gpu"))
from render_hopper import HAND_BASE, describe, render
wide = dict(BM="256", BN="192", STAGES="3", EPILOGUE="1")
three = dict(BM="192", BN="192", STAGES="3", CONSUMERS="3", EPILOGUE="1")
configs = {
    "co256x192": wide,
    "co256x192_k2": dict(wide, SPLIT_K="2"),
    "co256x192_k2_c21": dict(wide, SPLIT_K="2", CLUSTER_M="2"),
    "co256x192_sk": dict(wide, STREAM_K="1"),
    "co256x192_sk_c21": dict(wide, STREAM_K="1", CLUSTER_M="2"),
    "co192x192_3c_k2": dict(three, SPLIT_K="2"),
    "co192x192_3c_sk": dict(three, STREAM_K="1"),
    "co128x256_sk_c21": dict(EPILOGUE="1", STREAM_K="1", CLUSTER_M="2"),
}
rows = []
for name, ch in configs.items():
    p = dict(HAND_BASE, **ch)
    text = render(repo, p, key, f"{name}, bench/gpu/spill_sass.sh")
    open(os.path.join(kdir, f"{key}__{name}.cu"), "w").write("#define CROQ_ACC_UNCHECKED 1\n" + text)
    if name.startswith("co256x192"):
        rows.append(f"{key}\t{name}\t{describe(p)}")
open(os.path.join(kdir, "configs.tsv"), "w").write("\n".join(rows) + "\n")
PY
  for f in "$KDIR"/*.cu; do
    /usr/local/cuda/bin/nvcc -O3 -std=c++17 --shared -Xcompiler -fPIC -I"$REPO/include" -gencode=arch=compute_90a,code=sm_90a \
      -Xptxas -v "$f" -o "${f%.cu}.so" 2>&1 | grep -A2 "Compiling entry function '_ZN11croq_hopper[0-9A-Za-z_]*11gemm_kernel" | grep -o "[0-9]* bytes stack frame, [0-9]* bytes spill stores, [0-9]* bytes spill loads" | head -1 > "${f%.cu}.ptxas" &
  done
  wait
  rm -f "$KDIR"/*.cu
  for f in "$KDIR"/*.ptxas; do n=$(basename "$f" .ptxas); echo "${n#*__}: $(cat "$f")"; done
  exit 0
fi
croq_executables
DEST=${OUT:-$REPO/docs/results}
mkdir -p "$DEST"
{
  echo "# Where ptxas spills the Hopper template past its accumulator limits (H200's cuobjdump)"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M') UTC; croq: $(croq --version 2>&1); script: \`bench/gpu/spill_sass.sh\`"
  echo "- shape key for the build: $KEY; f16 -> f32, B row-major; the function is the template's gemm_kernel"
  echo
  echo "| configuration | ptxas (build here) | LDL | STL | tensor loops | LDL/STL in them |"
  echo "|---|---|---|---|---|---|"
  for so in "$KDIR"/*.so; do
    n=$(basename "$so" .so)
    croq sass dump --candidate "$so" --kernel gemm_kernel > "$KDIR/$n.json" 2> "$KDIR/$n.err"
    python3 - "$KDIR/$n.json" "${n#*__}" "$(cat "$KDIR/$n.ptxas" 2>/dev/null)" <<'PY'
import json, sys
path, name, ptxas = sys.argv[1:4]
try:
    m = json.load(open(path))["mix"]
    print(f"| {name} | {ptxas or '-'} | {m['local_loads']} | {m['local_stores']} | {m['tensor_loops']} | {m['local_in_tensor_loops']} |")
except Exception as e:
    print(f"| {name} | {ptxas or '-'} | - | - | - | no dump ({e}) |")
PY
  done
} > "$DEST/spill-sass.md"
cat "$DEST/spill-sass.md"
