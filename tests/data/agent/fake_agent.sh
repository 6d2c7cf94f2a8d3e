#!/usr/bin/env bash
# A scripted stand-in for a coding agent, for the tests of `croq agent run`: it drives a cpp task
# through croq's verbs the way an agent does, including the mistakes agents make, and prints one
# line per step ("STEP <name> rc=<exit>" and "MISTAKE <name> rc=<exit> rule=<rule>") so a test can
# read what happened from the session log. Which part it plays comes from the session number
# (CROQ_AGENT_SESSION ends in -sNN):
#   s01: PREPARE (baseline, iter001 built, measured, stored); then an idea without a profile
#        (refused: profile_before_idea); then it exits early.
#   s02: profiles, plans round 2, writes a candidate that does not compile; types a TFLOPS number
#        for it (refused); stores COMPILE_FAIL; plans the same idea again (refused: no_repeat); exits.
#   s03: plans a parameter-only idea after two rounds without a structural change (refused:
#        structural_after_two_macro), plans it again with its structural change, builds, verifies,
#        measures, decides and stores it: the budget is met.
# FAKE_AGENT_RATE_LIMIT=N: the first N sessions print a rate-limit message and exit 1 instead.
set -u
C="$CROQ_BIN"
T=(--gpu "$CROQ_GPU" --dsl "$CROQ_DSL" --shape-key "$CROQ_SHAPE_KEY" --model "$CROQ_MODEL")
session="${CROQ_AGENT_SESSION##*-s}"
session=$((10#$session))
counter="$CROQ_ROOT/.fake-agent-rate-limits"
if [ -n "${FAKE_AGENT_RATE_LIMIT:-}" ]; then
  n=$(cat "$counter" 2>/dev/null || echo 0)
  if [ "$n" -lt "$FAKE_AGENT_RATE_LIMIT" ]; then
    echo $((n + 1)) > "$counter"
    echo "API Error: 429 Too Many Requests (rate limit reached)"
    exit 1
  fi
fi

step() {  # step NAME cmd...: runs a croq verb, prints its exit code, keeps its JSON in $OUT
  local name="$1"; shift
  OUT="$("$C" "$@" 2>/tmp/fake-agent-err.$$)"
  RC=$?
  echo "STEP $name rc=$RC"
  [ $RC -eq 0 ] || { echo "  stderr: $(head -c 400 /tmp/fake-agent-err.$$)"; echo "  stdout: $(printf '%s' "$OUT" | head -c 400)"; }
}
mistake() {  # mistake NAME cmd...: a step croq should refuse
  local name="$1"; shift
  OUT="$("$C" "$@" 2>/dev/null)"
  RC=$?
  rule="$(printf '%s' "$OUT" | sed -n 's/.*"rule":"\([a-z_0-9]*\)".*/\1/p' | head -n1)"
  echo "MISTAKE $name rc=$RC rule=${rule:-none}"
}
field() { printf '%s' "$OUT" | sed -n "s/.*\"$1\":\"\\([^\"]*\\)\".*/\\1/p" | head -n1; }

echo "fake agent: session $session; prompt says: $(head -c 60 "${FAKE_AGENT_PROMPT_FILE:-/dev/null}" 2>/dev/null)"
case "$session" in
  1)
    step state state "${T[@]}"
    step baseline baseline "${T[@]}" --task-uid "${CROQ_TASK_UID:-fake-uid}"
    step prepare prepare "${T[@]}" --from "$FAKE_AGENT_KERNEL" --tag blocked
    step build1 build "${T[@]}" --iter iter001
    step measure1 measure "${T[@]}" --iter iter001_blocked
    m1="$(field measurement)"
    [ -n "$m1" ] || m1="tuning/$CROQ_GPU/$CROQ_DSL/perf/$CROQ_SHAPE_KEY/$CROQ_MODEL/measure_iter001_blocked.json"
    step store1 store-round "${T[@]}" --iter iter001 --kernel iter001_blocked --measurement "$m1" --decision KEEP \
      --bottleneck memory_bound --idea "starting kernel: cache-blocked matmul with packed B panels" --category misc
    mistake skip_profile checkpoint write "${T[@]}" --iter iter002 --base iter001_blocked --bottleneck memory_bound \
      --idea "halve the K panel to keep it in L1" --levers k_kc --params '{"k_kc":64}'
    echo "fake agent: done for now"   # exits early, before the budget is met
    exit 0 ;;
  2)
    step profile profile "${T[@]}" --iter iter001_blocked
    b="$(field bottleneck)"
    step plan2 checkpoint write "${T[@]}" --iter iter002 --base iter001_blocked --bottleneck "$b" \
      --idea "unroll the inner loop by hand" --levers k_unroll --params '{"k_unroll":4}'
    step read2 checkpoint read "${T[@]}"
    step next2 next-iter "${T[@]}" --tag unroll
    k2="$(field kernel)"
    src="$CROQ_ROOT/tuning/$CROQ_GPU/$CROQ_DSL/srcs/$CROQ_SHAPE_KEY/$CROQ_MODEL"
    { cat "$src/iter001_blocked.cpp"; echo "constexpr int k_unroll = 4 this does not compile"; } > "$src/$k2.cpp"
    step build2 build "${T[@]}" --iter "$k2"
    mistake typed_tflops store-round "${T[@]}" --iter iter002 --kernel "$k2" --tflops 999 --decision KEEP \
      --bottleneck "$b" --idea "unrolled inner loop"
    step store2 store-round "${T[@]}" --iter iter002 --kernel "$k2" --decision COMPILE_FAIL --bottleneck "$b" \
      --idea "hand-unrolled inner loop: does not compile" --category compute
    mistake repeat_idea checkpoint write "${T[@]}" --iter iter002 --base iter001_blocked --bottleneck "$b" \
      --idea "unroll the inner loop by hand" --levers k_unroll --params '{"k_unroll":4}'
    exit 0 ;;
  *)
    step profile3 profile "${T[@]}" --iter iter001_blocked
    b="$(field bottleneck)"
    step plan3 checkpoint write "${T[@]}" --iter iter002 --base iter001_blocked --bottleneck "$b" \
      --idea "halve the K panel so the packed B panel stays in L1" --levers k_kc --params '{"k_kc":64}' \
      --structural "memory hierarchy: the packed B panel (k_kc x k_nc) moves from L2 into L1"
    step read3 checkpoint read "${T[@]}"
    step next3 next-iter "${T[@]}" --tag kc64
    k3="$(field kernel)"
    src="$CROQ_ROOT/tuning/$CROQ_GPU/$CROQ_DSL/srcs/$CROQ_SHAPE_KEY/$CROQ_MODEL"
    sed 's/constexpr int64_t k_kc = 128;/constexpr int64_t k_kc = 64;/' "$src/iter001_blocked.cpp" > "$src/$k3.cpp"
    step build3 build "${T[@]}" --iter "$k3"
    step verify3 checkpoint verify "${T[@]}" --iter "$k3"
    step measure3 measure "${T[@]}" --iter "$k3"
    m3="$(field measurement)"
    [ -n "$m3" ] || m3="tuning/$CROQ_GPU/$CROQ_DSL/perf/$CROQ_SHAPE_KEY/$CROQ_MODEL/measure_$k3.json"
    step decide3 decide "${T[@]}" --measurement "$m3"
    d="$(field decision)"
    step store3 store-round "${T[@]}" --iter "${k3%%_*}" --kernel "$k3" --measurement "$m3" --decision "${d:-DISCARD}" \
      --bottleneck "$b" --idea "halved the K panel (k_kc 128 -> 64) to keep the packed B panel in L1" --category tiling
    step reinforce reinforce "${T[@]}"
    # A real agent would go on; the supervisor ends the session once the budget is met.
    sleep 30
    exit 0 ;;
esac
