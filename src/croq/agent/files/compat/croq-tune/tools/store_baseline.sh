#!/usr/bin/env bash
# The seeds' store_baseline.sh --dsl --shape-key --model --dtype --m --n --k --task-uid
# [--warmup --iters]: writes task_config.json (task uid first), measures the library baseline with
# croq's own harness, stores iter000 and prints the result. Idempotent. Calls `croq baseline`.
source "$(dirname "${BASH_SOURCE[0]}")/croq_shim.sh"
croq baseline "$@"
