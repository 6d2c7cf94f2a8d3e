#!/usr/bin/env bash
# A stand-in tuning driver for the monitor's tests: stores a baseline and then rounds with
# `croq store-round`, one every DELAY seconds, until N rounds are stored (continuing where the
# ledger stands, so a restarted driver resumes). Run by `croq serve` as [bash, drive.sh, N, DELAY];
# it gets CROQ_BIN, CROQ_ROOT, CROQ_GPU, CROQ_DSL, CROQ_SHAPE_KEY and CROQ_MODEL from the server.
set -euo pipefail
n=${1:-20}
delay=${2:-0.2}
log="$CROQ_ROOT/tuning/$CROQ_GPU/$CROQ_DSL/logs/$CROQ_SHAPE_KEY/$CROQ_MODEL/idea-log.jsonl"
task=(--gpu "$CROQ_GPU" --dsl "$CROQ_DSL" --shape-key "$CROQ_SHAPE_KEY" --model "$CROQ_MODEL")
store() { "$CROQ_BIN" --root "$CROQ_ROOT" --quiet store-round "${task[@]}" "$@" >/dev/null; }
if [ ! -s "$log" ]; then
  store --iter iter000 --kernel iter000_cublas --tflops 100 --decision BASELINE --idea "library baseline"
  echo "stored the baseline: 100 TFLOPS"
fi
bottlenecks=(memory_bound memory_bound latency_bound compute_bound mixed)
categories=(tiling pipeline memory compute misc)
stored=$(grep -c '"round":[1-9]' "$log" || true)
best=$(grep -o '"tflops":[0-9.]*,"decision":"KEEP"' "$log" | sed 's/[^0-9.]*\([0-9.]*\).*/\1/' | sort -n | tail -1 | cut -d. -f1 || true)
best=${best:-100}
iter=$("$CROQ_BIN" --root "$CROQ_ROOT" --quiet next-iter "${task[@]}" --tag next --peek | sed -n 's/.*"number":\([0-9]*\).*/\1/p')
for ((i = stored + 1; i <= n; i++)); do
  b=${bottlenecks[$((i % 5))]}
  c=${categories[$(((i * 3) % 5))]}
  if [ $((i % 7)) -eq 0 ]; then
    store --iter "$(printf 'iter%03d' "$iter")" --kernel "$(printf 'iter%03d_try%d' "$iter" "$i")" \
      --decision COMPILE_FAIL --bottleneck "$b" --category "$c" --idea "round $i: an idea that did not compile"
    echo "round $i: COMPILE_FAIL"
  else
    t=$((100 + i * 4 + (i * 37) % 23 - 11))
    if [ "$t" -gt "$best" ]; then d=KEEP; best=$t; else d=DISCARD; fi
    store --iter "$(printf 'iter%03d' "$iter")" --kernel "$(printf 'iter%03d_t%d' "$iter" "$i")" --tflops "$t" \
      --decision "$d" --bottleneck "$b" --category "$c" --idea "round $i: $c change against a $b kernel"
    echo "round $i: $t TFLOPS ($d)"
    iter=$((iter + 1))
  fi
  sleep "$delay"
done
echo "done: $n rounds"
