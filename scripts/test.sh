#!/usr/bin/env bash
# Builds croq (if needed) and runs every test that needs no GPU: unit tests, CLI tests, the
# crash-safety and concurrency tests and the cpp-backend end-to-end tests. GPU tests are labelled
# `gpu` and skip themselves when no GPU is present. A fresh build folder is configured with the
# fuzz targets (CROQ_FUZZ: clang and libFuzzer), which run for a few seconds each (label fuzz);
# without clang's libFuzzer they are skipped with a message. CROQ_WERROR=ON (as CI sets it) makes a
# warning in a fresh build an error.
# Usage: scripts/test.sh [ctest arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/build.ninja ]; then
  fuzz=OFF
  probe=$(mktemp -d)
  printf '#include <cstddef>\n#include <cstdint>\nextern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n' >"$probe/p.cpp"
  if command -v clang++ >/dev/null && clang++ -fsanitize=fuzzer,address,undefined "$probe/p.cpp" -o "$probe/p" 2>/dev/null; then
    fuzz=ON
  else
    echo "scripts/test.sh: clang++ with libFuzzer not found: the fuzz targets are skipped (install clang and libclang-rt-dev, as scripts/setup.sh does)" >&2
  fi
  rm -rf "$probe"
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCROQ_FUZZ=$fuzz -DCROQ_WERROR="${CROQ_WERROR:-OFF}" >/dev/null
fi
cmake --build build
cd build
ctest --output-on-failure --timeout 900 -j "$(nproc)" "$@"
