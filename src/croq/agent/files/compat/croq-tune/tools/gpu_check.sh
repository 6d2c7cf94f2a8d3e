#!/usr/bin/env bash
# The seeds' gpu_check.sh [--wait] [--timeout N] [--kill-others] [--reset]: GPU health. croq
# never resets a GPU or ends another user's process, so --reset and --kill-others are refused
# with what to do instead. Exit 0 idle, 1 busy, 6 still busy after --wait, 7 without a GPU.
source "$(dirname "${BASH_SOURCE[0]}")/croq_shim.sh"
croq gpu check "$@"
