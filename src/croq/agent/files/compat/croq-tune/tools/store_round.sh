#!/usr/bin/env bash
# The seeds' store_round.sh --dsl --shape-key --model --iter --kernel --tflops --decision
# --bottleneck --idea --round [--category --expected-gain]: appends the idea-log.jsonl record and
# the results.tsv row atomically and prints "[store_round] STORE complete: ...". Calls
# `croq store-round` (prefer --measurement <file from croq measure> to a typed --tflops).
source "$(dirname "${BASH_SOURCE[0]}")/croq_shim.sh"
croq store-round "$@"
