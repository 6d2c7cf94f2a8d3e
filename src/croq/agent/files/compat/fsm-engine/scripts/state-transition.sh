#!/usr/bin/env bash
# The seeds' fsm-engine state-transition.sh on croq (see fsm_croq.py beside it).
exec python3 "$(dirname "${BASH_SOURCE[0]}")/fsm_croq.py" transition "$@"
