#!/usr/bin/env bash
# One cpp task set up and one round driven by hand, the way docs/results/front-door.md counts
# commands: prints each croq command, its exit code and the count. No GPU needed.
#   bench/front_door_round.sh            # croq at build/bin/croq (or $CROQ)
set -u
here="$(cd "$(dirname "$0")/.." && pwd)"
C="${CROQ:-$here/build/bin/croq}"
R="$(mktemp -d /tmp/croq-front-door-XXXXXX)"
trap 'rm -rf "$R"' EXIT
n=0
c() {
  n=$((n + 1))
  echo "\$ croq $*"
  out="$("$C" --root "$R" "$@" 2>"$R/.err")"
  rc=$?
  echo "  [exit $rc] $(grep -m2 'error\|hint' "$R/.err" | tr '\n' ' ' | head -c 300)"
}
c use --dsl cpp --shape-key matmul_f32_64x64x64 --model by-hand
c protocol begin --rounds 2
c state
c baseline
c state
c prepare --from "$here/kernels/cpp/matmul/blocked.cpp"
c round
echo "=== PREPARE: $n commands"
p=$n
c profile --iter iter001_blocked
b="$(printf '%s' "$out" | sed -n 's/.*"bottleneck":"\([a-z_]*\)".*/\1/p' | head -n1)"
c checkpoint write --iter iter002 --base iter001_blocked --bottleneck "$b" --idea "halve the K panel" --levers k_kc \
  --params '{"k_kc":64}'
c next-iter --tag kc64
src="$(ls -d "$R"/tuning/*/cpp/srcs/*/*)"
sed 's/constexpr int64_t k_kc = 128;/constexpr int64_t k_kc = 64;/' "$src/iter001_blocked.cpp" > "$src/iter002_kc64.cpp"
echo "   (IMPLEMENT: the source written by hand)"
i=$n
c round
echo "=== one round: $((n - p)) commands, $((n - i)) after IMPLEMENT"
c state --model by-hnd
