#!/usr/bin/env python3
"""The seeds' validate_tuning_session.py --gpu <gpu> --dsl <dsl>: checks every task's ledger.

Prints croq's JSON {pass, gpu, dsl, tasks}; exit 1 when a ledger has errors. Calls
`croq session validate`. Installed by `croq init --compat`.
"""
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("CROQ_ROOT") or os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
CROQ = os.environ.get("CROQ_BIN") or "{{croq}}"
if not os.access(CROQ, os.X_OK):
    CROQ = shutil.which("croq") or ""
if not CROQ:
    sys.exit("validate_tuning_session: croq not found: set CROQ_BIN or put croq on PATH")
os.execv(CROQ, [CROQ, "--root", ROOT, "session", "validate"] + sys.argv[1:])
