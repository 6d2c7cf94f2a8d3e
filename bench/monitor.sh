#!/usr/bin/env bash
# Load benchmark of the monitor (croq serve), no GPU needed:
#  1. a workspace of TASKS tasks x ROUNDS rounds (ledgers written directly, as croq writes them)
#     is indexed from scratch at start;
#  2. median latency of the task list, a task page (ROUNDS rounds: charts and table) and two API
#     calls, over REPEAT requests each, gzip accepted as a browser does (goal: < 200 ms median);
#  3. CLIENTS event-stream clients stay connected while BURST rounds are stored with
#     `croq store-round` (one worker per task, over 10 tasks at once); every client must receive every
#     `round` event, each exactly once;
#  4. `croq serve --check` afterwards must be clean.
# Writes a Markdown table with the date, machine and commit to docs/results/monitor.md (or --out).
# Usage: bench/monitor.sh [--tasks 100] [--rounds 1000] [--clients 50] [--burst 1000]
#                         [--repeat 50] [--out FILE] [--keep]
set -euo pipefail
cd "$(dirname "$0")/.."

tasks=100 rounds=1000 clients=50 burst=1000 repeat=50 out=docs/results/monitor.md keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --tasks) tasks=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --burst) burst=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "bench/monitor.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

croq=${CROQ_BIN:-build/bin/croq}
[ -x "$croq" ] || { echo "bench/monitor.sh: $croq not found; build first (cmake --build build)" >&2; exit 2; }
croq=$(cd "$(dirname "$croq")" && pwd)/$(basename "$croq")
command -v curl >/dev/null || { echo "bench/monitor.sh: needs curl" >&2; exit 2; }

work=$(mktemp -d /tmp/croq-monitor-bench-XXXXXX)
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  jobs -p | xargs -r kill 2>/dev/null || true
  if [ "$keep" = 1 ]; then echo "bench: kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
say() { echo "bench: $*" >&2; }

# ---- 1. the workspace ----
say "writing $tasks tasks x $rounds rounds into $work"
gpu=cpu_x86_64 dsl=cpp model=bench
for ((t = 0; t < tasks; t++)); do
  key=$(printf 'matmul_f32_%dx512x512' $((256 + 8 * t)))
  dir="$work/tuning/$gpu/$dsl/logs/$key/$model"
  mkdir -p "$dir"
  awk -v n="$rounds" -v seed="$t" -v jsonl="$dir/idea-log.jsonl" -v tsv="$dir/results.tsv" 'BEGIN {
    srand(seed + 1);
    split("memory_bound compute_bound latency_bound launch_bound mixed", B, " ");
    split("tiling pipeline memory compute misc", C, " ");
    printf "iter\tkernel\ttflops\tdecision\tbottleneck\tidea_summary\n" > tsv;
    base = 100 + seed;
    printf "{\"round\":0,\"iter\":\"iter000\",\"kernel\":\"iter000_cublas\",\"tflops\":%.1f,\"decision\":\"BASELINE\",\"bottleneck\":\"n/a\",\"idea\":\"\",\"category\":\"\",\"expected_gain\":\"\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"schema\":\"croq-round-v1\",\"source\":\"reported\"}\n", base > jsonl;
    printf "iter000\titer000_cublas\t%.1f\tBASELINE\tn/a\t\n", base > tsv;
    best = 0; iter = 1; att = 0;
    for (r = 1; r <= n; r++) {
      b = B[int(rand() * 5) + 1]; c = C[int(rand() * 5) + 1];
      ts = sprintf("2026-01-%02dT%02d:%02d:%02d.000Z", 1 + int(r / 1440) % 28, int(r / 60) % 24, r % 60, int(rand() * 60));
      if (r % 13 == 0) {
        a = att++; l = sprintf("%c%c%c%c", 65 + int(a / 17576) % 26, 65 + int(a / 676) % 26, 65 + int(a / 26) % 26, 65 + a % 26);
        printf "{\"round\":%d,\"iter\":\"attempt%s\",\"kernel\":\"attempt%s_try%d\",\"tflops\":0,\"decision\":\"COMPILE_FAIL\",\"bottleneck\":\"%s\",\"idea\":\"round %d: an idea that did not build\",\"category\":\"%s\",\"expected_gain\":\"+3%%\",\"timestamp\":\"%s\",\"schema\":\"croq-round-v1\",\"source\":\"reported\"}\n", r, l, l, r, b, r, c, ts > jsonl;
        printf "attempt%s\tattempt%s_try%d\t0.0\tCOMPILE_FAIL\t%s\tround %d\n", l, l, r, b, r > tsv;
        continue;
      }
      v = base * (1 + 0.6 * (1 - exp(-r / 250.0))) * (0.9 + 0.12 * rand());
      d = v > best ? "KEEP" : "DISCARD"; if (v > best) best = v;
      printf "{\"round\":%d,\"iter\":\"iter%03d\",\"kernel\":\"iter%03d_t%d\",\"tflops\":%.2f,\"decision\":\"%s\",\"bottleneck\":\"%s\",\"idea\":\"round %d: a %s change for a %s kernel\",\"category\":\"%s\",\"expected_gain\":\"+2%%\",\"timestamp\":\"%s\",\"schema\":\"croq-round-v1\",\"source\":\"reported\"}\n", r, iter, iter, r, v, d, b, r, c, b, c, ts > jsonl;
      printf "iter%03d\titer%03d_t%d\t%.2f\t%s\t%s\tround %d\n", iter, iter, r, v, d, b, r > tsv;
      iter++;
    }
  }'
done
records=$(cat "$work"/tuning/$gpu/$dsl/logs/*/$model/idea-log.jsonl | wc -l)
say "$records records written"

# ---- the server ----
"$croq" --root "$work" serve --bind 127.0.0.1:0 --poll-ms 200 --max-streams $((clients + 8)) --max-client-streams $((clients + 8)) --max-client-connections $((clients + 64)) >"$work/serve.out" 2>"$work/serve.err" &
server_pid=$!
for _ in $(seq 1 1200); do
  grep -q '"port"' "$work/serve.out" 2>/dev/null && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/serve.err" >&2; exit 1; }
  sleep 0.25
done
start_doc=$(head -1 "$work/serve.out")
port=$(sed -n 's/.*"port":\([0-9]*\).*/\1/p' <<<"$start_doc")
index_ms=$(sed -n 's/.*"index_ms":\([0-9.]*\).*/\1/p' <<<"$start_doc" | awk '{printf "%.0f", $1}')
indexed=$(sed -n 's/.*"records_indexed":\([0-9]*\).*/\1/p' <<<"$start_doc")
base="http://127.0.0.1:$port"
say "server on $base: indexed $indexed records in $index_ms ms"
uid=$(curl -s "$base/api/v1/tasks" | grep -o '"uid":"[^"]*"' | head -1 | cut -d'"' -f4)

# ---- 2. latencies ----
median() { sort -n | awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
p90() { sort -n | awk '{a[NR] = $1} END {i = int(NR * 0.9); if (i < 1) i = 1; print a[i]}'; }
declare -A med p9 size
measure() {  # name path
  local name=$1 path=$2 f="$work/lat-$1"
  : >"$f"
  for ((i = 0; i < repeat; i++)); do
    curl -s --compressed -o /dev/null -w '%{time_total}\n' "$base$path" >>"$f"
  done
  med[$name]=$(awk '{printf "%.1f\n", $1 * 1000}' "$f" | median)
  p9[$name]=$(awk '{printf "%.1f\n", $1 * 1000}' "$f" | p90)
  size[$name]=$(curl -s -o /dev/null -w '%{size_download}' "$base$path")
  say "$name: median ${med[$name]} ms, p90 ${p9[$name]} ms, ${size[$name]} bytes"
}
measure list "/"
measure task "/tasks/$uid"
measure api_tasks "/api/v1/tasks"
measure api_rounds "/api/v1/tasks/$uid/rounds"
measure chart "/api/v1/tasks/$uid/charts/convergence.svg"

# ---- 3. event-stream clients and a burst of stores ----
say "connecting $clients event-stream clients"
for ((c = 0; c < clients; c++)); do
  curl -sN "$base/api/v1/events?kinds=round" >"$work/sse-$c.txt" 2>/dev/null &
done
for _ in $(seq 1 400); do
  ready=$(grep -l 'event: hello' "$work"/sse-*.txt 2>/dev/null | wc -l)
  [ "$ready" -ge "$clients" ] && break
  sleep 0.05
done
say "$ready clients connected; storing $burst rounds"
mapfile -t keys < <(ls "$work/tuning/$gpu/$dsl/logs" | head -10)
: >"$work/burst.args"
for ((i = 0; i < burst; i++)); do
  k=${keys[$((i % ${#keys[@]}))]}
  n=$(((rounds - rounds / 13) + 1 + i / ${#keys[@]}))
  printf '%s %s %d\n' "$k" "$(printf 'iter%03d' "$n")" "$i" >>"$work/burst.args"
done
t0=$(date +%s.%N)
store_one() {
  "$croq" --root "$work" --quiet store-round --gpu "$gpu" --dsl "$dsl" --shape-key "$1" --model "$model" \
    --iter "$2" --kernel "$2_b$3" --tflops 1 --decision DISCARD --bottleneck mixed --idea "burst store $3" >/dev/null
}
# Stores of one task stay in order (one worker per task); the tasks run in parallel.
store_pids=()
for k in "${keys[@]}"; do
  (grep "^$k " "$work/burst.args" | while read -r key it i; do store_one "$key" "$it" "$i"; done) &
  store_pids+=($!)
done
for p in "${store_pids[@]}"; do wait "$p" || { say "a store failed"; exit 1; }; done
t1=$(date +%s.%N)
burst_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}')
say "burst stored in $burst_s s; waiting for the events"
complete=0
for _ in $(seq 1 600); do
  complete=0
  for ((c = 0; c < clients; c++)); do
    n=$(grep -c '^event: round' "$work/sse-$c.txt" || true)
    [ "$n" -ge "$burst" ] && complete=$((complete + 1))
  done
  [ "$complete" -ge "$clients" ] && break
  sleep 0.2
done
t2=$(date +%s.%N)
drain_s=$(awk -v a="$t1" -v b="$t2" 'BEGIN {printf "%.1f", b - a}')
min_ev=$burst max_ev=0 dup=0
grep '^id: ' "$work/sse-0.txt" | sort >"$work/ids-0"
mismatch=0
for ((c = 0; c < clients; c++)); do
  n=$(grep -c '^event: round' "$work/sse-$c.txt" || true)
  [ "$n" -lt "$min_ev" ] && min_ev=$n
  [ "$n" -gt "$max_ev" ] && max_ev=$n
  u=$(grep '^id: ' "$work/sse-$c.txt" | sort -u | wc -l)
  [ "$u" -ne "$(grep -c '^id: ' "$work/sse-$c.txt")" ] && dup=$((dup + 1))
  grep '^id: ' "$work/sse-$c.txt" | sort | cmp -s - "$work/ids-0" || mismatch=$((mismatch + 1))
done
say "events per client: min $min_ev, max $max_ev (of $burst); $complete complete; $dup with duplicates; $mismatch differ from client 0"

# ---- 4. the check ----
t3=$(date +%s.%N)
check_rc=0
"$croq" --root "$work" serve --check >"$work/check.json" 2>"$work/check.err" || check_rc=$?
t4=$(date +%s.%N)
check_s=$(awk -v a="$t3" -v b="$t4" 'BEGIN {printf "%.1f", b - a}')
pending=$(grep -o '"pending":\[[^]]*\]' "$work/check.json" | grep -c '"kind"' || true)
say "serve --check: exit $check_rc in $check_s s"
rss_kb=$(ps -o rss= -p "$server_pid" | tr -d ' ')

# ---- the results ----
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
dirty=$(git status --porcelain 2>/dev/null | grep -q . && echo " (with local changes)" || true)
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
mem=$(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)
ok_lat=$(awk -v a="${med[list]}" -v b="${med[task]}" 'BEGIN {print (a < 200 && b < 200) ? "yes" : "no"}')
ok_ev=$([ "$complete" -ge "$clients" ] && [ "$dup" -eq 0 ] && [ "$mismatch" -eq 0 ] && echo yes || echo no)
ok_check=$([ "$check_rc" -eq 0 ] && echo yes || echo no)
mkdir -p "$(dirname "$out")"
cat >"$out" <<MD
# Monitor load benchmark (bench/monitor.sh)

- date: $(date -u +%Y-%m-%dT%H:%M:%SZ)
- machine: $(hostname), $cpu, $(nproc) cores, $mem, load average at start $(cut -d' ' -f1-3 /proc/loadavg)
- commit: $commit$dirty, $("$croq" --version)
- workload: $tasks tasks x $rounds rounds ($records records), $clients event-stream clients, a burst of $burst stores
  (\`croq store-round\`, one worker per task over ${#keys[@]} tasks), $repeat requests per page (gzip accepted)

## Indexing

| what | value |
|---|---|
| records indexed at start (empty database) | $indexed |
| time to index them | $index_ms ms |
| server memory after the run (RSS) | $((rss_kb / 1024)) MiB |

## Page latency (goal: task list and task page < 200 ms median)

| request | median ms | p90 ms | bytes (uncompressed) |
|---|---|---|---|
| task list \`/\` ($tasks tasks) | ${med[list]} | ${p9[list]} | ${size[list]} |
| task page \`/tasks/<uid>\` ($rounds rounds: 3 charts, table, ideas) | ${med[task]} | ${p9[task]} | ${size[task]} |
| \`GET /api/v1/tasks\` | ${med[api_tasks]} | ${p9[api_tasks]} | ${size[api_tasks]} |
| \`GET /api/v1/tasks/<uid>/rounds\` | ${med[api_rounds]} | ${p9[api_rounds]} | ${size[api_rounds]} |
| convergence chart SVG | ${med[chart]} | ${p9[chart]} | ${size[chart]} |

Goal met: **$ok_lat**

## Event stream (goal: every client receives every event of the burst)

| what | value |
|---|---|
| clients connected | $ready of $clients |
| burst of $burst stores took | $burst_s s |
| last event delivered to every client after the burst | $drain_s s |
| \`round\` events per client | min $min_ev, max $max_ev |
| clients with every event | $complete of $clients |
| clients with a duplicate / a different event set than client 0 | $dup / $mismatch |

Goal met: **$ok_ev**

## Consistency after the run

\`croq serve --check\` (with the server running): exit $check_rc in $check_s s, $pending task(s) still being
indexed. Clean: **$ok_check**
MD
say "wrote $out"
cat "$out"
