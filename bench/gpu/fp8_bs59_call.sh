#!/usr/bin/env bash
# One H200 call for the block-scaled FP8 goal (issue 21): the two orders of a k block's scale reads in the waves
# (CROQ_BS_SCALES_LATE 0: before the block's first WGMMAs; 1: after its first atom's) by hand, the SM clock and
# cycles per tile of both, and `croq tune` of both goal keys in the same call: with the template as committed,
# and with its CROQ_BS_SCALES_LATE default flipped in the device's copy (restored afterwards), so that the
# tune's ratio with either order as the waves' default is measured beside the other.
#   bash bench/gpu/fp8_bs59_call.sh build   here: renders and compiles the lists into .carry/bs59 and
#                                           .carry/bs59t (the croq binaries: .carry/bundle.tar.xz)
#   bash bench/gpu/fp8_bs59_call.sh run     there (.carry/bundle.tar.xz, .carry/bs59 and .carry/bs59t
#                                           carried): writes to $OUT fp8bs59.md, cta-trace.txt,
#                                           tune-committed.md, tune-flipped.md, nvidia-smi.txt and all.tgz
# Refuses to run on anything but an H200 (the `nvidia-h200` kind can hand out an H100); BS59_ANY_GPU=1
# lifts that. Knobs: BS59_TUNE_S (100, each tune's budget), BS59_CONFIGS_S (100; 0 skips the list by hand),
# BS59_TRACE (1; 0 skips the trace builds), BS59_TUNES ("committed flipped"; "none"; "auto" runs one tune only,
# with the order whose best build by hand (w_late or w_sk_late against w or w_sk) is ahead at both goal keys, the
# committed one on a tie, a split or without the list by hand).
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
TEMPLATE=kernels/cuda/matmul/hopper/gemm_sm90.cu
if [ "${1:-run}" = build ]; then
  set -e
  GEMM_CONFIGS=bench/gpu/gemm_configs_fp8bs59.txt CONFIG_DIR=.carry/bs59 bash bench/gpu/gemm_configs.sh build
  GEMM_CONFIGS=bench/gpu/gemm_configs_fp8bs59t.txt CONFIG_DIR=.carry/bs59t bash bench/gpu/gemm_configs.sh build
  exit 0
fi
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
case "$GPU" in
  *H200*) ;;
  *) if [ "${BS59_ANY_GPU:-0}" != 1 ]; then echo "[bs59] not an H200 ($GPU): nothing run"; exit 3; fi ;;
esac
bash bench/gpu/pack_device.sh --unbundle > /dev/null
FINAL=${OUT:-$REPO/docs/results/bs59-run}
W=$(mktemp -d /tmp/croq-bs59-XXXXXX)
mkdir -p "$W" "$FINAL"
START=$SECONDS
say() { echo "[bs59 $((SECONDS - START))s] $*"; }
nvidia-smi > "$W/nvidia-smi.txt" 2>&1
if [ "${BS59_CONFIGS_S:-100}" -gt 0 ]; then
  say "on $GPU: by hand (bench/gpu/gemm_configs_fp8bs59.txt)"
  OUT=$W GEMM_CONFIGS=bench/gpu/gemm_configs_fp8bs59.txt CONFIG_DIR=.carry/bs59 CONFIG_REPEATS=3 \
    CONFIG_REPORT=fp8bs59 timeout "${BS59_CONFIGS_S:-100}" bash bench/gpu/gemm_configs.sh run > "$W/configs.log" 2>&1
  say "configs exit $?"
else
  say "on $GPU: BS59_CONFIGS_S=0, the list by hand is not run"
fi
if [ "${BS59_TRACE:-1}" = 1 ]; then
  say "the trace builds (bench/gpu/gemm_configs_fp8bs59t.txt)"
  OUT=$W CONFIG_DIR=.carry/bs59t timeout 60 bash bench/gpu/cta_trace.sh > "$W/trace.log" 2>&1
  say "trace exit $?"
fi
tune() {  # name
  mkdir -p "$W/$1"
  OUT=$W/$1 FP8_TESTS=0 FP8_SHAPES=' ' FP8_ROUNDS=3 FP8_BUDGET_S=${BS59_TUNE_S:-100} \
    timeout $(( ${BS59_TUNE_S:-100} + 40 )) bash bench/gpu/fp8_evidence.sh run > "$W/$1.log" 2>&1
  say "tune $1 exit $?"
  cp "$W/$1/fp8-h200.md" "$W/tune-$1.md" 2>/dev/null
}
committed_late=$(grep -c '^#define CROQ_BS_SCALES_LATE 1$' "$TEMPLATE")
flipped_tune() {
  local from=$committed_late to=$((1 - committed_late))
  cp "$TEMPLATE" "$W/template.orig"
  sed -i "s/^#define CROQ_BS_SCALES_LATE $from\$/#define CROQ_BS_SCALES_LATE $to/" "$TEMPLATE"
  if grep -q "^#define CROQ_BS_SCALES_LATE $to\$" "$TEMPLATE"; then
    diff "$W/template.orig" "$TEMPLATE" > "$W/template-flipped.diff"
    say "croq tune with CROQ_BS_SCALES_LATE $to as the template's default (committed: $from)"
    tune flipped
  else
    say "the template's CROQ_BS_SCALES_LATE default was not found: the flipped tune is not run"
  fi
  cp "$W/template.orig" "$TEMPLATE"
}
TUNES=${BS59_TUNES:-committed flipped}
if [ "$TUNES" = auto ]; then
  # the by-hand report's rows: | key | name | library | croq | ratio | parameters |
  late=$(python3 - "$W/fp8bs59.md" "$committed_late" <<'PY'
import sys
best = {}
try:
    rows = [l.split("|") for l in open(sys.argv[1]) if l.startswith("| blockscaled_")]
except OSError:
    rows = []
for r in rows:
    key, name, ratio = r[1].strip(), r[2].strip(), r[5].strip()
    try:
        v = float(ratio)
    except ValueError:
        continue
    side = 1 if name.endswith("late") else 0
    best[(key, side)] = max(best.get((key, side), 0.0), v)
keys = {k for k, _ in best}
committed = int(sys.argv[2])
other = 1 - committed
ahead = bool(keys) and all(best.get((k, other), 0.0) > best.get((k, committed), 0.0) for k in keys)
print(other if ahead else committed)
PY
)
  TUNES=$([ "$late" = "$committed_late" ] && echo committed || echo flipped)
  say "auto: the by-hand report picks CROQ_BS_SCALES_LATE $late for the tune ($TUNES)"
fi
for t in $TUNES; do
  case $t in
    committed) say "croq tune with the template as committed (CROQ_BS_SCALES_LATE $committed_late)"; tune committed ;;
    flipped) flipped_tune ;;
  esac
done
for f in fp8bs59.md cta-trace.txt tune-committed.md tune-flipped.md nvidia-smi.txt; do
  cp "$W/$f" "$FINAL/" 2>/dev/null
done
tail -n 3 "$W"/*.log
tar czf "$FINAL/all.tgz" -C "$W" .
say "done"
