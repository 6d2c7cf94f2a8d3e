#!/usr/bin/env bash
# Builds croq (if needed) and runs every test that needs no GPU: unit tests, CLI tests, the
# crash-safety and concurrency tests and the cpp-backend end-to-end tests. GPU tests are labelled
# `gpu` and skip themselves when no GPU is present.
# Usage: scripts/test.sh [ctest arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build build
cd build
ctest --output-on-failure --timeout 900 -j "$(nproc)" "$@"
