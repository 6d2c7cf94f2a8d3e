#!/usr/bin/env bash
# Packs croq's executables (croq, croq-gpu-runner, ...) from a build folder into .carry/croq/ for
# a run on a GPU machine that has no Debian -dev packages: binaries stripped of debug info, plus
# the shared libraries they need that such a machine may lack (ldd, minus glibc, libstdc++ and the
# CUDA driver). GPU scripts then run with
#   export PATH=$PWD/.carry/croq/bin:$PATH LD_LIBRARY_PATH=$PWD/.carry/croq/lib:$LD_LIBRARY_PATH CROQ_HOME=$PWD
# Usage: bench/gpu/pack_device.sh [build-folder]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
dest=.carry/croq
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
git rev-parse --short=12 HEAD > "$dest/commit.txt"
du -sh "$dest" | awk '{print "packed " $1 " into '"$dest"'"}'
ls "$dest/bin" "$dest/lib"
