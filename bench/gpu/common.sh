# Pieces the GPU bench scripts share; `source bench/gpu/common.sh` after `cd` to the repository root.
#
# croq_executables: BIN is croq's executables folder, the pack of bench/gpu/pack_device.sh
# (.carry/croq, with its libraries) when there is one, else $CROQ_BIN_DIR or build/bin; PATH,
# LD_LIBRARY_PATH and CROQ_HOME are set for them.
croq_executables() {
  REPO=${REPO:-$(pwd)}
  if [ -x "$REPO/.carry/croq/bin/croq" ]; then
    BIN=$REPO/.carry/croq/bin
    export LD_LIBRARY_PATH=$REPO/.carry/croq/lib:${LD_LIBRARY_PATH:-}
  else
    BIN=${CROQ_BIN_DIR:-$REPO/build/bin}
  fi
  export PATH=$BIN:$PATH CROQ_HOME=$REPO
}

# build_hopper_sources DIR: compiles every DIR/*.cu (sources rendered by bench/gpu/render_hopper.py)
# into DIR/<name>.so on all cores, with the flags the hopper family's builds use, then removes the
# sources. A configuration that does not compile is reported with the end of its log.
build_hopper_sources() {
  local dir=$1
  ls "$dir"/*.cu | xargs -P "$(nproc)" -I{} sh -c \
    '/usr/local/cuda/bin/nvcc -O3 -std=c++17 --shared -Xcompiler -fPIC -I"$2/include" \
       -gencode=arch=compute_90a,code=sm_90a "$1" -o "${1%.cu}.so" 2> "${1%.cu}.log" && echo "built $(basename "${1%.cu}")" \
       || echo "FAILED $(basename "$1"): $(tail -2 "${1%.cu}.log")"' _ {} "$REPO"
  rm -f "$dir"/*.cu
  du -sh "$dir"
}
