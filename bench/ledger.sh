#!/usr/bin/env bash
# Ledger speed: the median wall time of the ledger verbs on ledgers of 100, 1,000 and 10,000
# stored rounds, with the real croq binary. Each ledger's idea-log.jsonl is generated directly
# (croq-round-v1 records, as store-round writes them); a first store-round then brings results.tsv
# in step and a first resume builds the index, so every measured call works on a real ledger of
# that size. Measured (REPS calls each, median and 90th percentile):
#   store-round      a new round each call (the ledger grows by REPS)
#   next-iter        a new reservation each call
#   resume           the seeds' resume JSON (index warm)
#   resume, cold     the same after deleting the index (a full read of the log)
#   checkpoint read  of an open plan
# and, as the floor every verb pays, `croq --version` and /bin/true (and `croq-web --version`, the
# start of the executable that also holds the monitor, for comparison).
#
# Usage: bench/ledger.sh [REPS]   (default 30)
# Environment: CROQ (the binary, default build/bin/croq), OUT (folder for ledger.md; default
# docs/results), KEEP=1 keeps the workspace.
# Goal: each verb under 10 ms median; resume growing no worse than linearly with the rounds.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
croq="${CROQ:-$here/build/bin/croq}"
reps="${1:-30}"
out_dir="${OUT:-$here/docs/results}"
[ -x "$croq" ] || { echo "bench/ledger.sh: $croq not found; build first (scripts/test.sh or cmake --build build)" >&2; exit 2; }
ws="$(mktemp -d /tmp/croq-bench-ledger.XXXXXX)"
trap '[ "${KEEP:-0}" = 1 ] || rm -rf "$ws"' EXIT
mkdir -p "$ws/tuning" "$out_dir"
export CROQ_ROOT="$ws"
unset CROQ_GPU
gpu=sm90_NVIDIA_H200

now_ns() { date +%s%N; }

# Times one command (its output discarded); prints microseconds. Fails loudly if it fails.
time_us() {
  local t0 t1
  t0=$(now_ns)
  if ! "$@" >/dev/null 2>"$ws/last.err"; then
    echo "bench/ledger.sh: failed: $*" >&2
    cat "$ws/last.err" >&2
    exit 1
  fi
  t1=$(now_ns)
  echo $(((t1 - t0) / 1000))
}

# Median and 90th percentile (milliseconds, two decimals) of microsecond samples on stdin.
stats() {
  sort -n | awk '{ v[NR] = $1 } END {
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
    p = v[int(NR * 0.9 + 0.999)];
    printf "%.2f %.2f\n", m / 1000, p / 1000 }'
}

# Writes N croq-round-v1 records: a baseline, a starting kernel, then tuning rounds with a mix of
# decisions (every 7th a compile failure stored under an attempt id).
generate_ledger() {
  local n="$1" file="$2"
  awk -v n="$n" 'BEGIN {
    srand(42);
    printf "{\"round\":0,\"iter\":\"iter000\",\"kernel\":\"iter000_cublas\",\"tflops\":610.5,\"decision\":\"BASELINE\",\"bottleneck\":\"n/a\",\"idea\":\"\",\"category\":\"\",\"expected_gain\":\"\",\"timestamp\":\"2026-11-29T00:00:00.000Z\",\"source\":\"measured\",\"schema\":\"croq-round-v1\"}\n";
    printf "{\"round\":0,\"iter\":\"iter001\",\"kernel\":\"iter001_draft\",\"tflops\":200.0,\"decision\":\"KEEP\",\"bottleneck\":\"n/a\",\"idea\":\"starting kernel\",\"category\":\"\",\"expected_gain\":\"\",\"timestamp\":\"2026-11-29T00:00:01.000Z\",\"source\":\"measured\",\"schema\":\"croq-round-v1\"}\n";
    iter = 1; att = 0; best = 200;
    split("memory_bound compute_bound latency_bound launch_bound mixed", bn, " ");
    split("tiling pipeline memory compute misc", cat, " ");
    for (r = 1; r <= n - 2; r++) {
      b = bn[1 + r % 5]; c = cat[1 + r % 5];
      idea = sprintf("round %d: change \\\"BK\\\" to %d and swizzle %d\\tso the loads coalesce", r, 16 * (1 + r % 8), 32 * (1 + r % 4));
      ts = sprintf("2026-11-29T%02d:%02d:%02d.000Z", int(r / 3600) % 24, int(r / 60) % 60, r % 60);
      if (r % 7 == 3) {
        l1 = int(att / 17576) % 26; l2 = int(att / 676) % 26; l3 = int(att / 26) % 26; l4 = att % 26;
        id = sprintf("attempt%c%c%c%c", 65 + l1, 65 + l2, 65 + l3, 65 + l4); att++;
        printf "{\"round\":%d,\"iter\":\"%s\",\"kernel\":\"%s_r%d\",\"tflops\":0.0,\"decision\":\"COMPILE_FAIL\",\"bottleneck\":\"%s\",\"idea\":\"%s\",\"category\":\"%s\",\"expected_gain\":\"+2%%\",\"timestamp\":\"%s\",\"source\":\"reported\",\"schema\":\"croq-round-v1\",\"planned_iter\":\"iter%03d\"}\n", r, id, id, r, b, idea, c, ts, iter + 1;
        continue;
      }
      iter++;
      t = 200 + r * 0.05 + rand() * 20;
      d = (t > best) ? "KEEP" : "DISCARD"; if (t > best) best = t;
      printf "{\"round\":%d,\"iter\":\"iter%03d\",\"kernel\":\"iter%03d_r%d\",\"tflops\":%.2f,\"decision\":\"%s\",\"bottleneck\":\"%s\",\"idea\":\"%s\",\"category\":\"%s\",\"expected_gain\":\"+2%%\",\"timestamp\":\"%s\",\"source\":\"measured\",\"schema\":\"croq-round-v1\"}\n", r, iter, iter, r, t, d, b, idea, c, ts;
    }
  }' > "$file"
}

results=()
resume_medians=()
floor_rows=()

echo "bench/ledger.sh: $reps calls per verb; workspace $ws" >&2
for i in $(seq 5); do time_us /bin/true >/dev/null; done
true_line=$(for i in $(seq "$reps"); do time_us /bin/true; done | stats)
version_line=$(for i in $(seq "$reps"); do time_us "$croq" --version; done | stats)
floor_rows+=("| \`/bin/true\` (process start on this machine) | ${true_line% *} | ${true_line#* } |")
floor_rows+=("| \`croq --version\` (croq's start, no ledger) | ${version_line% *} | ${version_line#* } |")
# croq-web beside croq: the same verbs linked with the monitor's libraries (HTTP server, SQLite,
# TLS, compression), which croq itself leaves out; its start is what every verb paid before.
web="$(dirname "$croq")/croq-web"
if [ -x "$web" ] && [ "$(basename "$croq")" != croq-web ]; then
  web_line=$(for i in $(seq "$reps"); do time_us "$web" --version; done | stats)
  floor_rows+=("| \`croq-web --version\` (the same verbs with the monitor's libraries) | ${web_line% *} | ${web_line#* } |")
fi

for n in 100 1000 10000; do
  key="matmul_f16fp32_4096x4096x4096"
  model="bench-$n"
  task=(--gpu "$gpu" --dsl cuda --shape-key "$key" --model "$model")
  logs="$ws/tuning/$gpu/cuda/logs/$key/$model"
  mkdir -p "$logs" "$ws/tuning/$gpu/cuda/srcs/$key/$model"
  echo "bench/ledger.sh: ledger of $n rounds" >&2
  generate_ledger "$n" "$logs/idea-log.jsonl"
  stored=$(wc -l < "$logs/idea-log.jsonl")
  last_iter=$(grep -o '"iter":"iter[0-9]*"' "$logs/idea-log.jsonl" | tail -1 | grep -o '[0-9][0-9]*')
  last_iter=$((10#$last_iter))
  # Warm up: the view and the index are built once, as on a live ledger.
  "$croq" task init "${task[@]}" --task-uid "bench$n" >/dev/null
  "$croq" resume "${task[@]}" >/dev/null
  next=$((last_iter + 1))
  "$croq" store-round "${task[@]}" --iter "iter$(printf %03d $next)_warm" --decision DISCARD --tflops 1 \
    --bottleneck mixed --idea "warm-up" >/dev/null 2>&1
  next=$((next + 1))

  act="$ws/tuning/$gpu/cuda/memory/$key/$model/activity.jsonl"
  a0=$(wc -l < "$act")
  samples=()
  for i in $(seq "$reps"); do
    samples+=("$(time_us "$croq" store-round "${task[@]}" --iter "iter$(printf %03d $next)_b$i" --decision DISCARD \
      --tflops 100.5 --bottleneck memory_bound --idea "bench round $i: it's \"quoted\"")")
    next=$((next + 1))
  done
  s_store=$(printf '%s\n' "${samples[@]}" | stats)
  s_next=$(for i in $(seq "$reps"); do time_us "$croq" next-iter "${task[@]}" --tag "nx$i"; done | stats)
  s_resume=$(for i in $(seq "$reps"); do time_us "$croq" resume "${task[@]}"; done | stats)
  "$croq" checkpoint write "${task[@]}" --iter "iter$(printf %03d $((next + 100)))" --bottleneck mixed \
    --idea "bench plan" --levers BK >/dev/null
  s_cpread=$(for i in $(seq "$reps"); do time_us "$croq" checkpoint read "${task[@]}"; done | stats)
  cold_reps=$(( reps < 10 ? reps : 10 ))
  a1=$(wc -l < "$act")
  s_cold=$(for i in $(seq "$cold_reps"); do rm -f "$logs/.ledger-index.json"; time_us "$croq" resume "${task[@]}"; done | stats)
  # croq's own time inside each call (the activity trace's `ms`: from the verb's start to its end,
  # without process creation and dynamic loading), for the warm calls measured above.
  inproc=$(python3 - "$act" "$a0" "$a1" <<'PY'
import json, statistics, sys
path, a0, a1 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = [json.loads(l) for l in open(path).read().splitlines()[a0:a1] if l.strip()]
out = []
for verb in ("store-round", "next-iter", "resume", "checkpoint read"):
    v = [r["ms"] for r in rows if r.get("verb") == verb and "ms" in r]
    out.append(f"{statistics.median(v):.2f}" if v else "n/a")
print(" / ".join(out))
PY
)
  # The ledger must have stayed healthy through all of it.
  "$croq" session validate --gpu "$gpu" --dsl cuda --shape-key "$key" --model "$model" >/dev/null ||
    { echo "bench/ledger.sh: session validate failed for $n rounds" >&2; exit 1; }
  size_kib=$(( $(stat -c %s "$logs/idea-log.jsonl") / 1024 ))
  results+=("| $n | $stored | $size_kib | ${s_store% *} | ${s_next% *} | ${s_resume% *} | ${s_cpread% *} | ${s_cold% *} | ${s_store#* } / ${s_next#* } / ${s_resume#* } / ${s_cpread#* } | $inproc |")
  resume_medians+=("${s_resume% *}")
done

commit=$(git -C "$here" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
dirty=$(git -C "$here" status --porcelain 2>/dev/null | grep -qv '^??' && echo " (with uncommitted changes)" || true)
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
fs_type=$(stat -f -c %T "$ws")
{
  echo "# Ledger speed"
  echo
  echo "Generated by \`bench/ledger.sh $reps\` on $(date -u +%Y-%m-%dT%H:%MZ): $(nproc) cores ($cpu),"
  echo "load average $(cut -d' ' -f1-3 /proc/loadavg) when it finished, workspace on $fs_type, commit $commit$dirty."
  echo
  echo "Median wall time in milliseconds of one call of the real \`croq\` binary (a fresh process each"
  echo "time, \`--gpu\` given so no GPU is queried), $reps calls per verb; the last column gives the 90th"
  echo "percentiles of the first four. \`rounds\` is the ledger's size before the measured calls."
  echo
  echo "| rounds | records | idea-log KiB | store-round | next-iter | resume | checkpoint read | resume, cold index | p90 store / next / resume / read | in-process median store / next / resume / read |"
  echo "|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"
  printf '%s\n' "${results[@]}"
  echo
  echo "What every call pays before any ledger work:"
  echo
  echo "| floor | median ms | p90 ms |"
  echo "|---|---:|---:|"
  printf '%s\n' "${floor_rows[@]}"
  echo
  echo "resume (warm index) at 100 / 1,000 / 10,000 rounds: ${resume_medians[0]} / ${resume_medians[1]} / ${resume_medians[2]} ms."
  echo "The warm index makes resume's ledger work independent of the number of rounds (it reads the"
  echo "index and the bytes appended since); the cold column is the one-time full read after the index"
  echo "is deleted or the log rewritten, which grows linearly with the log. store-round's cost includes"
  echo "one fdatasync of idea-log.jsonl. The last column is croq's own time inside each call (the"
  echo 'activity trace'"'"'s `ms`, from the verb'"'"'s start to its end): the rest of the wall time is process'
  echo "creation and dynamic loading, the floor above."
} > "$out_dir/ledger.md"
cat "$out_dir/ledger.md"
