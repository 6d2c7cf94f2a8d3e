#!/usr/bin/env bash
# The seeds' profile_extract.sh --csv <ncu csv> --iter <tag>: one-line JSON {bottleneck,
# confidence, evidence:{key_metrics, ncu_rep, ...}, hints}; bottleneck is never unknown.
# Calls `croq classify`.
source "$(dirname "${BASH_SOURCE[0]}")/croq_shim.sh"
croq classify "$@"
