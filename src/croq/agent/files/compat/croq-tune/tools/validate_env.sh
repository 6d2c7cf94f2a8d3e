#!/usr/bin/env bash
# The seeds' validate_env.sh --dsl <dsl>: one-line JSON {dsl, pass, errors, warnings, checks};
# exit 1 when an error was found. Calls `croq env validate`.
source "$(dirname "${BASH_SOURCE[0]}")/croq_shim.sh"
croq env validate "$@"
