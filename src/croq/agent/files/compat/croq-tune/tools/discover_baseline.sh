#!/usr/bin/env bash
# The seeds' discover_baseline.sh --dsl --operator [--dtype] [--gpu]: tier A (bundled kernels),
# B (earlier sessions' best KEEPs) or C (from scratch) with candidates and a recommendation.
# Calls `croq discover`; `croq prepare --pick N` then makes iter001 from a candidate.
source "$(dirname "${BASH_SOURCE[0]}")/croq_shim.sh"
croq discover "$@"
