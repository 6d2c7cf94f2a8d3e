#!/usr/bin/env python3
"""The seeds' clean_kernel_work_state.py --gpu <gpu> --dsl <dsl> --invalid-only | --reset-all.

--invalid-only repairs damaged ledgers (old files kept as .bak); --reset-all moves the dsl's whole
tree to tuning/.trash/<time>/ (nothing is deleted). Calls `croq session clean` (the seeds' call has
no confirmation flag, so --reset-all is confirmed here). Installed by `croq init --compat`.
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
    sys.exit("clean_kernel_work_state: croq not found: set CROQ_BIN or put croq on PATH")
args = sys.argv[1:]
if "--reset-all" in args and "--yes" not in args:
    args.append("--yes")
os.execv(CROQ, [CROQ, "--root", ROOT, "session", "clean"] + args)
