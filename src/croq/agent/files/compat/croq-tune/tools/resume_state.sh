#!/usr/bin/env bash
# The seeds' resume_state.sh --gpu --dsl --shape-key --model: the resume JSON (current_best_*,
# last_round, last_iter, last_decision, last_bottleneck, next_iter_number, src_count,
# open_checkpoint, memory_files_ok, warnings). Calls `croq resume`.
source "$(dirname "${BASH_SOURCE[0]}")/croq_shim.sh"
croq resume "$@"
