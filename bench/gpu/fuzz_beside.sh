#!/usr/bin/env bash
# croq's fuzz targets (tests/fuzz: json tsv checkpoint ncu_csv http) on a GPU machine's idle cores,
# beside the GPU work of the same call: WORKERS processes per target, niced and pinned to CPUS, each
# stopping by itself after SECONDS. They share one corpus per target (libFuzzer reloads what the
# others found), seeded from tests/fuzz/corpus and the corpus carried from earlier runs.
#
#   here:        bash bench/gpu/fuzz_beside.sh --pack [build-fuzz]
#                  strips the fuzz executables into .carry/fuzz/ with the shared libraries they need
#                  (ldd, minus glibc and libstdc++) and the grown corpus (build-fuzz/corpus)
#   GPU machine: OUT=... bash bench/gpu/fuzz_beside.sh SECONDS [WORKERS=2] [CPUS=6-15] &
#                  ... the call's GPU work ...; wait
#                or, to stop with the GPU work instead of waiting for SECONDS:
#                  bash bench/gpu/fuzz_beside.sh SECONDS ... & fz=$!; ... the GPU work ...; kill -TERM $fz; wait $fz
#                  (the workers get SIGINT, print their figures and the results are written as below)
#                writes $OUT/fuzz-runs.tsv (bench/fuzz.sh's columns: one line
#                per target, seconds = wall seconds, runs summed over the workers), $OUT/fuzz.log,
#                $OUT/fuzz-corpus.tgz (the grown corpus, to unpack into build-fuzz/ here) and any
#                crashing input under $OUT/fuzz-crashes/ (replay: build-fuzz/fuzz_TARGET FILE).
set -uo pipefail
cd "$(dirname "$0")/../.."
targets="json tsv checkpoint ncu_csv http"
if [ "${1:-}" = "--pack" ]; then
  set -e
  build=${2:-build-fuzz}
  rm -rf .carry/fuzz && mkdir -p .carry/fuzz/bin .carry/fuzz/lib
  for t in $targets; do objcopy --strip-debug "$build/fuzz_$t" ".carry/fuzz/bin/fuzz_$t"; done
  skip='linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libgcc_s|libstdc\+\+'
  for t in $targets; do ldd "$build/fuzz_$t" | awk '/=> \// {print $3}' | grep -Ev "$skip" || true; done \
    | sort -u | while read -r lib; do cp -L "$lib" .carry/fuzz/lib/; done
  [ -d "$build/corpus" ] && tar -czf .carry/fuzz/corpus.tgz -C "$build" corpus
  git rev-parse --short HEAD > .carry/fuzz/commit.txt
  du -sh .carry/fuzz | awk '{print "fuzz_beside: packed " $1 " into .carry/fuzz"}'
  exit 0
fi
seconds=${1:?usage: bench/gpu/fuzz_beside.sh SECONDS [WORKERS] [CPUS] | --pack [build-fuzz]}
workers=${2:-2}
cpus=${3:-6-15}
out=${OUT:-/tmp/croq-fuzz-out}
work=$(mktemp -d /tmp/croq-fuzz-XXXXXX)
mkdir -p "$out/fuzz-crashes" "$work/corpus"
[ -f .carry/fuzz/corpus.tgz ] && tar -xzf .carry/fuzz/corpus.tgz -C "$work"
export LD_LIBRARY_PATH=$PWD/.carry/fuzz/lib:${LD_LIBRARY_PATH:-}
commit=$(cat .carry/fuzz/commit.txt 2>/dev/null || echo unknown)
host=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | tr ' ' '_')
started=$(date +%s)
echo "[fuzz] $workers worker(s) per target on cpus $cpus for $seconds s, commit $commit" >"$out/fuzz.log"
pin=(taskset -c "$cpus")
command -v taskset >/dev/null || pin=()
pids=()
for t in $targets; do
  mkdir -p "$work/corpus/$t"
  for w in $(seq 1 "$workers"); do
    nice -n 19 "${pin[@]}" .carry/fuzz/bin/fuzz_"$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$out/fuzz-crashes/$t-" "$work/corpus/$t" "tests/fuzz/corpus/$t" \
      >"$work/$t.$w.log" 2>&1 &
    pids+=($!)
  done
done
# SIGTERM or SIGINT ends the run early: the workers are interrupted (libFuzzer then prints its final
# figures) and the results below are written for the time they ran.
stop_workers() { kill -INT "${pids[@]}" 2>/dev/null; }
trap stop_workers TERM INT
for p in "${pids[@]}"; do
  while kill -0 "$p" 2>/dev/null; do wait "$p"; done
done
trap - TERM INT
elapsed=$(( $(date +%s) - started ))
# cpu_seconds is left empty here: the workers are pinned to idle cores, so seconds x workers is their CPU time.
printf 'date\tcommit\ttarget\tseconds\truns\tcrashes\tcorpus_files\tworkers\thost\tcpu_seconds\n' >"$out/fuzz-runs.tsv"
for t in $targets; do
  runs=0
  for w in $(seq 1 "$workers"); do
    r=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.$w.log" | tail -1)
    runs=$((runs + ${r:-0}))
    tail -3 "$work/$t.$w.log" | sed "s/^/[fuzz $t.$w] /" >>"$out/fuzz.log"
  done
  crashes=$(ls "$out/fuzz-crashes" | grep -c "^$t-" || true)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$commit" "$t" "$elapsed" "$runs" \
    "$crashes" "$(ls "$work/corpus/$t" | wc -l)" "$workers" "${host:-gpu-machine}" >>"$out/fuzz-runs.tsv"
done
tar -czf "$out/fuzz-corpus.tgz" -C "$work" corpus
cat "$out/fuzz-runs.tsv" >>"$out/fuzz.log"
echo "[fuzz] done in $elapsed s" >>"$out/fuzz.log"
