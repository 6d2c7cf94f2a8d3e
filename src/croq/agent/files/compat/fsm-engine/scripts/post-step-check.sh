#!/usr/bin/env bash
# The seeds' fsm-engine post-step-check.sh on croq (see fsm_croq.py beside it).
exec python3 "$(dirname "${BASH_SOURCE[0]}")/fsm_croq.py" post "$@"
