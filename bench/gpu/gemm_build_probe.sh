#!/usr/bin/env bash
# Builds, on a machine with nvcc but no GPU, everything bench/gpu/gemm_probe.sh needs on the GPU
# machine into .carry/gemm/ (git-ignored; carried to the device): one shared object per line of
# bench/gpu/gemm_probe_configs.txt (all four dtypes, both B layouts), its ptxas report (registers,
# spills, shared memory), the probe harness, and manifest.tsv. Compiling here saves the device's
# scarce time. The folder is made self-contained (probe script, harness source, ABI header).
#
#   bash bench/gpu/gemm_build_probe.sh [LABEL...]     (default: every configuration)
#
# Environment: NVCC (default /usr/local/cuda/bin/nvcc), JOBS (parallel compiles, default 2).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out="$root/.carry/gemm"
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
jobs=${JOBS:-2}
configs="$root/bench/gpu/gemm_probe_configs.txt"
mkdir -p "$out"
want=" $* "

build_one() {
  local label=$1 family=$2
  shift 2
  local src flags defs=()
  case $family in
    hopper) src="$root/kernels/cuda/matmul/hopper/gemm_sm90.cu"; flags="-gencode=arch=compute_90a,code=sm_90a" ;;
    ampere) src="$root/kernels/cuda/matmul/ampere/gemm_sm80.cu"; flags="-gencode=arch=compute_90,code=sm_90" ;;
    *) echo "[$label] unknown family $family"; return 1 ;;
  esac
  for kv in "$@"; do defs+=("-DCROQ_$kv"); done
  defs+=(-DCROQ_DTYPES=15 -DCROQ_BLAYOUTS=3)
  local t0=$SECONDS
  if "$nvcc" -O3 -std=c++17 $flags -I"$root/include" -shared -Xcompiler -fPIC -cudart shared -Xptxas -v \
      "${defs[@]}" -o "$out/$label.so" "$src" > "$out/$label.ptxas.txt" 2>&1; then
    local regs spills
    regs=$(grep -o 'Used [0-9]* registers' "$out/$label.ptxas.txt" | awk '{print $2}' | sort -n | tail -1)
    spills=$(grep -o '[0-9]* bytes spill stores' "$out/$label.ptxas.txt" | awk '{s+=$1} END {print s+0}')
    echo "[$label] built in $((SECONDS - t0)) s: max $regs registers, $spills bytes of spill stores"
  else
    echo "[$label] BUILD FAILED after $((SECONDS - t0)) s:"; tail -20 "$out/$label.ptxas.txt"
    rm -f "$out/$label.so"
  fi
}

echo "building the probe harness"
"$nvcc" -O2 -std=c++17 -I"$root/include" -gencode=arch=compute_90,code=sm_90 "$root/bench/gpu/gemm_probe.cu" \
  -o "$out/gemm_probe" -lcublas -ldl -cudart shared || echo "harness build failed (gemm_probe.sh rebuilds it on the device)"

# Shared objects of configurations no longer listed would be carried for nothing.
listed=$(awk '!/^#/ && NF {print $1}' "$configs")
for so in "$out"/*.so; do
  [ -e "$so" ] || continue
  name=$(basename "$so" .so)
  if ! grep -qx "$name" <<< "$listed"; then rm -f "$so" "$out/$name.ptxas.txt"; echo "removed stale $name.so"; fi
done

: > "$out/manifest.tsv.new"
running=0
while read -r label family groups rest; do
  case $label in ''|'#'*) continue ;; esac
  printf '%s\t%s\t%s\t%s\n' "$label" "$family" "$groups" "$rest" >> "$out/manifest.tsv.new"
  if [ "$want" != "  " ] && [[ $want != *" $label "* ]]; then continue; fi
  # shellcheck disable=SC2086
  build_one "$label" "$family" $rest &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
done < "$configs"
wait
mv "$out/manifest.tsv.new" "$out/manifest.tsv"
(cd "$root" && git rev-parse --short=12 HEAD > "$out/commit.txt" 2>/dev/null)
(cd "$root" && git status --porcelain -- kernels bench > "$out/dirty.txt" 2>/dev/null)
cp "$root/bench/gpu/gemm_probe.sh" "$root/bench/gpu/gemm_probe.cu" "$out/"
mkdir -p "$out/include/croq" && cp "$root/include/croq/kernel_abi.h" "$out/include/croq/"
du -sh "$out"
