#!/usr/bin/env bash
# The seeds' gpu_contention.sh [--kill] [--kill-ours] [--json] [--except <pid>]: processes on the
# GPU, ours and foreign; --kill ends only croq's own stale processes. Calls `croq gpu contention`.
source "$(dirname "${BASH_SOURCE[0]}")/croq_shim.sh"
croq gpu contention "$@"
