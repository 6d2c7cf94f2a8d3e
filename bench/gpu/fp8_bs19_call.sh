#!/usr/bin/env bash
# One H200 device call for the block-scaled FP8 kernel (issue 21): does letting the scheduler switch
# warps inside the promotion's long FFMA runs close the last 5-6 % to cuBLASLt? nvcc 13 writes the
# yield hint into one of the default's two promotion runs (alternate FFMAs) and not into the other
# (63 FFMAs in a row that keep the warp). bench/gpu/sass_yield.py patches the built kernel: every
# second (y2), every (y1) or every fourth (y4) FFMA of such runs yields. Only the hint and that
# instruction's reuse flags change; the measurement verifies each variant as any candidate.
#   bash bench/gpu/fp8_bs19_call.sh build   here: renders and compiles the default into .carry/bs19,
#                                           then writes the patched variants beside it
#                                           (then pack: bench/gpu/pack_device.sh build && --bundle)
#   bash bench/gpu/fp8_bs19_call.sh run     there (.carry/bundle.tar.xz and .carry/bs19 carried,
#                                           unbundled): the GPU tests of the runner (its input
#                                           sizes now come from one table), then checks with cuobjdump that every patched
#                                           instruction is an FFMA (a variant that fails is not
#                                           measured), then the variants against cuBLASLt, then
#                                           (BS19_PROFILE=1) Nsight Compute of the default, the best
#                                           variant and cuBLASLt's kernel at 8192^3; writes to $OUT
#                                           gpu-tests.md, fp8bs19.md, yield-check.txt, fp8-bs-profile.txt,
#                                           sass-loops.txt and call-logs.tgz
# Knobs: BS19_GPU_TESTS (the filters; ' ' for none), BS19_TESTS_BUDGET_S (150), BS19_CONFIG_BUDGET_S
# (150), BS19_REPEATS (2), BS19_PROFILE (1).
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)
KDIR=$REPO/.carry/bs19
if [ "${1:-run}" = build ]; then
  GEMM_CONFIGS=bench/gpu/gemm_configs_fp8bs19.txt CONFIG_DIR=$KDIR bash bench/gpu/gemm_configs.sh build || exit 1
  for so in "$KDIR"/*__ss.so; do
    for every in 2 1 4; do
      python3 bench/gpu/sass_yield.py --every "$every" "$so" "${so%__ss.so}__ss_y$every.so" || exit 1
    done
  done
  python3 - "$KDIR" <<'PY'
import sys, os
kdir = sys.argv[1]
rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(kdir, "configs.tsv")) if l.strip()]
out = []
for key, name, params in rows:
    out.append((key, name, params))
    for every in (2, 1, 4):
        out.append((key, f"{name}_y{every}", f"{params} sass_yield.py --every {every}"))
open(os.path.join(kdir, "configs.tsv"), "w").write("".join("\t".join(r) + "\n" for r in out))
PY
  exit 0
fi
FINAL=${OUT:-$REPO/docs/results}
W=$(mktemp -d /tmp/croq-bs19-XXXXXX)
mkdir -p "$W/configs" "$W/profile" "$FINAL"
START=$SECONDS
TESTS=${BS19_GPU_TESTS:-GpuRunner.Cheating* GpuRunner.ScaledFp8*}
if [ "$TESTS" != " " ]; then
  echo "[bs19] GPU tests of the runner ($TESTS)"
  OUT=$W GPU_TESTS="$TESTS" GPU_TEST_LIMIT_S=120 GPU_TESTS_BUDGET_S=${BS19_TESTS_BUDGET_S:-150} \
    bash bench/gpu/gpu_tests_call.sh > "$W/gpu-tests.log" 2>&1
  cp "$W/gpu-tests.md" "$FINAL/" 2>/dev/null
fi
echo "[bs19] $((SECONDS - START)) s: checking the patched instructions with cuobjdump"
for so in "$KDIR"/*__ss_y*.so; do
  if ! python3 bench/gpu/sass_yield.py --check "$so" >> "$W/yield-check.txt" 2>&1; then
    echo "  $(basename "$so"): not all patched instructions are FFMA; not measured" | tee -a "$W/yield-check.txt"
    mv "$so" "$so.unchecked"
  fi
done
cat "$W/yield-check.txt"
echo "[bs19] $((SECONDS - START)) s: the variants against cuBLASLt"
OUT=$W/configs CONFIG_DIR=$KDIR GEMM_CONFIGS=bench/gpu/gemm_configs_fp8bs19.txt CONFIG_REPORT=fp8bs19 \
  CONFIG_REPEATS=${BS19_REPEATS:-2} CONFIG_BUDGET_S=${BS19_CONFIG_BUDGET_S:-150} bash bench/gpu/gemm_configs.sh run \
  > "$W/configs.log" 2>&1
cat "$W/configs/fp8bs19.md"
if [ "${BS19_PROFILE:-1}" = 1 ]; then
  best=$(python3 - "$W/configs/fp8bs19.md" <<'PY'
import sys
best, ratio = "ss_y2", 0.0
for line in open(sys.argv[1]):
    c = [x.strip() for x in line.split("|")]
    if len(c) > 6 and c[1].endswith("8192x8192x8192") and c[2].startswith("ss_y"):
        try:
            r = float(c[5])
        except ValueError:
            continue
        if r > ratio:
            best, ratio = c[2], r
print(best)
PY
)
  echo "[bs19] $((SECONDS - START)) s: profiles of ss, $best and cuBLASLt"
  OUT=$W/profile CONFIG_DIR=$KDIR BSPROF_ONLY="ss $best" bash bench/gpu/fp8_bs_profile.sh > "$W/profile.log" 2>&1
  for csv in /tmp/croq-bsprof-*/*-sass.csv; do
    [ -f "$csv" ] && python3 bench/gpu/sass_loop.py "$csv" >> "$W/sass-loops.txt" 2>&1
  done
fi
echo "[bs19] $((SECONDS - START)) s: done"
cp "$W/configs/fp8bs19.md" "$W/yield-check.txt" "$W/profile/fp8-bs-profile.txt" "$W/sass-loops.txt" "$FINAL/" 2>/dev/null
tar czf "$FINAL/call-logs.tgz" -C "$W" .
