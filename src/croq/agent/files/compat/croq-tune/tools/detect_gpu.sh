#!/usr/bin/env bash
# The seeds' detect_gpu.sh: prints the device key (sm90_NVIDIA_H200) and caches it in
# /tmp/croq_gpu_key. Calls `croq gpu key`; exit 7 without a GPU (CROQ_GPU, when set, is printed
# instead: CPU workspaces use the cpp dsl's cpu_<arch> key).
source "$(dirname "${BASH_SOURCE[0]}")/croq_shim.sh"
out="$(croq gpu key)"
rc=$?
if [ $rc -eq 0 ]; then
  key="$(printf '%s' "$out" | json_field key)"
  printf '%s\n' "$key" > /tmp/croq_gpu_key 2>/dev/null || true
  printf '%s\n' "$key"
  exit 0
fi
if [ -n "${CROQ_GPU:-}" ]; then
  printf '%s\n' "$CROQ_GPU"
  exit 0
fi
echo "detect_gpu: no GPU found (croq gpu key exit $rc); a CPU-only workspace tunes the cpp dsl, whose key croq derives itself (or set CROQ_GPU)" >&2
exit $rc
