#!/usr/bin/env bash
# Packs croq's executables (croq, croq-gpu-runner, ...) from a build folder into .carry/croq/ for
# a run on a GPU machine that has no Debian -dev packages: binaries stripped of debug info, plus
# the shared libraries they need that such a machine may lack (ldd, minus glibc, libstdc++ and the
# CUDA driver). GPU scripts then run with
#   export PATH=$PWD/.carry/croq/bin:$PATH LD_LIBRARY_PATH=$PWD/.carry/croq/lib:$LD_LIBRARY_PATH CROQ_HOME=$PWD
# When the pinned CroqTile toolchain is installed (scripts/setup.sh --with-choreo), it travels too,
# as .carry/croq/toolchains/choreo-<commit12>.tar.xz (the choreo binary, the runtime headers, the
# CuTe/CUTLASS include folders and toolchain.json; about 4 MB): a GPU script unpacks it with
#   bench/gpu/pack_device.sh --unpack-toolchain
# into .carry/croq/toolchains/choreo-<commit12>/, beside croq, where croq finds it by itself.
# The pack with the GPU tests' kernels and the fuzz executables is over a device call's 64 MiB;
# --bundle compresses .carry/croq (and .carry/fuzz, when packed) into one .carry/bundle.tar.xz
# (about 25 MB) to carry instead, and --unbundle unpacks it there (python3's tarfile: no xz needed).
# Usage: bench/gpu/pack_device.sh [build-folder]   (default: build)
#        bench/gpu/pack_device.sh --unpack-toolchain
#        bench/gpu/pack_device.sh --bundle | --unbundle
set -euo pipefail
cd "$(dirname "$0")/../.."
dest=.carry/croq
# Unpacks a .tar.xz into a folder: tar needs the xz program for -J (the GPU machine may lack it);
# python3's tarfile reads .tar.xz without it.
untar_xz() {
  mkdir -p "$2"
  if command -v xz >/dev/null; then tar -xJf "$1" -C "$2"
  else python3 -c 'import sys, tarfile; t = tarfile.open(sys.argv[1]); t.extractall(sys.argv[2], **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))' "$1" "$2"; fi
}
if [ "${1:-}" = "--unpack-toolchain" ]; then
  for tarball in "$dest"/toolchains/choreo-*.tar.xz; do
    [ -f "$tarball" ] || { echo "pack_device: no CroqTile toolchain in $dest/toolchains" >&2; exit 1; }
    dir=${tarball%.tar.xz}
    if [ ! -x "$dir/build/choreo" ]; then
      untar_xz "$tarball" "$dir"
    fi
    "$dir/build/choreo" --help >/dev/null 2>&1 && echo "$dir"
  done
  exit 0
fi
if [ "${1:-}" = "--bundle" ]; then
  parts=(croq)
  [ -d .carry/fuzz ] && parts+=(fuzz)
  tar -cf - -C .carry "${parts[@]}" | xz -T0 -6 >.carry/bundle.tar.xz.part
  mv .carry/bundle.tar.xz.part .carry/bundle.tar.xz
  du -h .carry/bundle.tar.xz | awk '{print "bundled " $1 " into .carry/bundle.tar.xz ('"${parts[*]}"')"}'
  exit 0
fi
if [ "${1:-}" = "--unbundle" ]; then
  untar_xz .carry/bundle.tar.xz .carry
  echo "unbundled $(cat .carry/croq/commit.txt 2>/dev/null) into .carry"
  exit 0
fi
build=${1:-build}
rm -rf "$dest" && mkdir -p "$dest/bin" "$dest/lib"
for exe in "$build"/bin/*; do
  [ -f "$exe" ] && [ -x "$exe" ] || continue
  objcopy --strip-debug "$exe" "$dest/bin/$(basename "$exe")"
done
# Libraries outside the base system (the GPU machine's image is another distribution).
skip='linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libgcc_s|libstdc\+\+|libcuda\.so|libcublas|libcudart|libnvrtc|libnvJitLink'
for exe in "$dest"/bin/*; do
  ldd "$exe" 2>/dev/null | awk '/=> \// {print $3}' | grep -Ev "$skip" || true
done | sort -u | while read -r lib; do
  cp -L "$lib" "$dest/lib/"
done
# The GPU test binary (tests/gpu), when built: it runs from the pack (CROQ_TEST_BIN_DIR=.carry/croq/bin).
if [ -x "$build/tests/gpu/croq_gpu_tests" ]; then objcopy --strip-debug "$build/tests/gpu/croq_gpu_tests" "$dest/bin/croq_gpu_tests"; fi
# The measurement evidence's test kernels (built with the tests), when present.
if [ -d "$build/test-kernels" ]; then cp -r "$build/test-kernels" "$dest/test-kernels"; fi
# The pinned CroqTile toolchain, when installed here (CHOREO_HOME names another one).
toolchain=${CHOREO_HOME:-$(scripts/install_choreo.sh --print-dest)}
if [ -x "$toolchain/build/choreo" ]; then
  commit=$(sed -n 's/^CHOREO_COMMIT=//p' scripts/choreo.pin)
  mkdir -p "$dest/toolchains"
  tar -cJf "$dest/toolchains/choreo-${commit:0:12}.tar.xz" -C "$toolchain" build/choreo runtime \
    extern/cutlass/include/cute extern/cutlass/include/cutlass $(cd "$toolchain" && ls toolchain.json 2>/dev/null)
  du -h "$dest/toolchains/choreo-${commit:0:12}.tar.xz"
else
  echo "pack_device: no CroqTile toolchain installed ($toolchain): croqtile kernels cannot be built there" >&2
fi
git rev-parse --short=12 HEAD > "$dest/commit.txt"
du -sh "$dest" | awk '{print "packed " $1 " into '"$dest"'"}'
ls "$dest/bin" "$dest/lib"
