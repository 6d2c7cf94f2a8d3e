#!/usr/bin/env bash
# Runs one of croq's fuzz targets (tests/fuzz: json tsv checkpoint ncu_csv http) for SECONDS,
# niced, from its seed corpus plus the corpus grown by earlier runs, and appends one line to
# docs/results/fuzz-runs.tsv: date, commit, target, seconds it ran (a crash ends it early), inputs
# run, crashes, corpus files, workers (1), host (FUZZ_HOST, default the host name) and the CPU
# seconds the fuzzer used (user + system: on a busy machine a niced run gets less than its wall time).
# A crash leaves its input in build-fuzz/crashes/ (replay: build-fuzz/fuzz_TARGET FILE) and makes
# the script exit 1. The targets are built with clang and libFuzzer in build-fuzz/ (scripts/setup.sh
# installs clang and libclang-rt-dev).
# Usage: bench/fuzz.sh TARGET [SECONDS=600] [--out FILE]
set -euo pipefail
cd "$(dirname "$0")/.."

target=${1:-}
seconds=${2:-600}
out=docs/results/fuzz-runs.tsv
[ "${3:-}" = "--out" ] && out=$4
case "$target" in
  json|tsv|checkpoint|ncu_csv|http) ;;
  *) echo "usage: bench/fuzz.sh json|tsv|checkpoint|ncu_csv|http [SECONDS] [--out FILE]" >&2; exit 2 ;;
esac
command -v clang++ >/dev/null || { echo "bench/fuzz.sh: needs clang++ and libclang-rt-dev (scripts/setup.sh)" >&2; exit 2; }

build=build-fuzz
if [ ! -f "$build/build.ninja" ]; then
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  cmake -S tests/fuzz -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        "${launcher[@]}" >/dev/null
fi
nice -n 19 cmake --build "$build" -j 2 --target "fuzz_$target" >/dev/null

corpus="$build/corpus/$target"
crashes="$build/crashes"
mkdir -p "$corpus" "$crashes"
log="$build/fuzz_$target.log"
before=$(ls "$crashes" | grep -c "^$target-" || true)
echo "bench/fuzz.sh: fuzzing $target for $seconds s (log: $log)" >&2
started=$(date +%s)
set +e
cpu_file=$(mktemp)
# The fuzzer runs under a small Python wrapper that reads its CPU time (getrusage of the child).
nice -n 19 python3 -c '
import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1], "w").write("%.0f" % (ru.ru_utime + ru.ru_stime))
sys.exit(rc)' "$cpu_file" "$build/fuzz_$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$crashes/$target-" "$corpus" "tests/fuzz/corpus/$target" >"$log" 2>&1
rc=$?
cpu=$(cat "$cpu_file" 2>/dev/null || true)
rm -f "$cpu_file"
set -e
elapsed=$(( $(date +%s) - started ))  # a crash ends the run early
after=$(ls "$crashes" | grep -c "^$target-" || true)
found=$((after - before))
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
[ -n "$runs" ] || runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -1)
files=$(ls "$corpus" | wc -l)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -f "$out" ] || printf 'date\tcommit\ttarget\tseconds\truns\tcrashes\tcorpus_files\tworkers\thost\tcpu_seconds\n' >"$out"
printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t1\t%s\t%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$commit" "$target" "$elapsed" "${runs:-0}" \
  "$found" "$files" "${FUZZ_HOST:-$(hostname)}" "${cpu:-}" >>"$out"
echo "bench/fuzz.sh: $target: ${runs:-0} inputs in $elapsed s ($cpu CPU s), $found crash(es), $files corpus files (rc $rc)" >&2
if [ "$found" -gt 0 ] || [ "$rc" -ne 0 ]; then
  tail -40 "$log" >&2
  exit 1
fi
