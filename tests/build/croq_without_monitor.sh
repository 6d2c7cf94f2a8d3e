#!/usr/bin/env bash
# croq itself needs neither SQLite nor the monitor (ARCHITECTURE.md): checked on the built binary
# and on a configuration without the monitor where SQLite cannot be found.
#   1. the croq executable loads no SQLite, libpq or HTTP library (readelf -d: its NEEDED entries);
#   2. the core library (every component but web) calls no SQLite or libpq function (nm -u);
#   3. configured with -DCROQ_WITH_WEB=OFF and SQLite hidden from CMake, the configuration
#      succeeds and the commands that build croq compile no monitor source and name no SQLite
#      (ninja -t commands: nothing is compiled, so this takes seconds).
# Usage: croq_without_monitor.sh SOURCE_DIR CROQ_EXECUTABLE CORE_LIBRARY
set -euo pipefail
src=$1 croq=$2 core=$3
fail=0

needed=$(readelf -d "$croq" | grep '(NEEDED)' || true)
if grep -Ei 'sqlite|libpq|httplib' <<<"$needed"; then
  echo "FAIL: $croq loads the monitor's libraries (above); only croq-web may link them"
  fail=1
fi

if nm -u "$core" 2>/dev/null | grep -E ' U (sqlite3_|PQ[a-z])' | sort -u | head; then
  echo "FAIL: $core (the components but web) calls SQLite or libpq (above): that code belongs in src/croq/web"
  fail=1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! cmake -S "$src" -B "$tmp" -G Ninja -DCROQ_WITH_WEB=OFF -DCROQ_WITH_CUDA=OFF -DCROQ_TESTS=OFF \
     -DCMAKE_DISABLE_FIND_PACKAGE_SQLite3=ON >"$tmp/configure.log" 2>&1; then
  cat "$tmp/configure.log"
  echo "FAIL: croq does not configure without the monitor where SQLite is not found (above)"
  exit 1
fi
ninja -C "$tmp" -t commands croq >"$tmp/commands.txt"
if ! grep -q 'croq/build/builder.cpp' "$tmp/commands.txt"; then
  echo "FAIL: the commands for croq do not compile the components (ninja -t commands croq looks wrong)"
  fail=1
fi
if grep -E 'src/croq/web/|sqlite' "$tmp/commands.txt" | head -5; then
  echo "FAIL: building croq without the monitor compiles monitor code or names SQLite (above)"
  fail=1
fi
if grep -q 'croq-web' "$tmp/commands.txt"; then
  echo "FAIL: building croq without the monitor still builds croq-web"
  fail=1
fi
[ "$fail" = 0 ] && echo "croq builds and runs without SQLite and the monitor: $(wc -l <"$tmp/commands.txt") commands, none of the monitor's"
exit "$fail"
