#!/usr/bin/env bash
# Runs a command with a throwaway PostgreSQL server: starts one in a temporary folder
# (start_postgres.sh), exports CROQ_TEST_POSTGRES, runs the command, stops the server and removes
# the folder. Exit: the command's; 77 (ctest: skipped) with the reason where no server can start.
#   tests/postgres/with_postgres.sh build/tests/croq_unit_tests --gtest_filter='*postgresql*'
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d "${TMPDIR:-/tmp}/croq-pg-XXXXXX") || exit 1
trap '"$here/stop_postgres.sh" "$dir"; rm -rf "$dir"' EXIT
out=$("$here/start_postgres.sh" "$dir")
rc=$?
if [ $rc -ne 0 ]; then
  echo "with_postgres: no PostgreSQL server here, skipped" >&2
  exit 77
fi
eval "$out"
"$@"
