#!/usr/bin/env python3
"""The seeds' prepare_baseline_env.py --dsl --operator --kernel --shape-key --libs auto.

Checks the environment for the dsl and its baseline library and prints one JSON document:
{dsl, operator, kernel, shape_key, libs, pass, env}. Calls `croq env validate`; exit 1 when the
environment has an error. Installed by `croq init --compat`.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("CROQ_ROOT") or os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
CROQ = os.environ.get("CROQ_BIN") or "{{croq}}"
if not os.access(CROQ, os.X_OK):
    CROQ = shutil.which("croq") or ""
if not CROQ:
    sys.exit("prepare_baseline_env: croq not found: set CROQ_BIN or put croq on PATH")

LIBS = {"cuda": ["cublas", "cublasLt"], "croqtile": ["cublas", "cublasLt"], "triton": ["torch"], "cpp": ["openblas"]}

p = argparse.ArgumentParser()
p.add_argument("--dsl", required=True)
p.add_argument("--operator", default="matmul")
p.add_argument("--kernel", default="")
p.add_argument("--shape-key", default="")
p.add_argument("--libs", default="auto")
a = p.parse_args()
r = subprocess.run([CROQ, "--root", ROOT, "env", "validate", "--dsl", a.dsl], capture_output=True, text=True)
try:
    env = json.loads(r.stdout)
except ValueError:
    sys.stderr.write(r.stderr)
    sys.exit(r.returncode or 1)
libs = LIBS.get(a.dsl, []) if a.libs == "auto" else [x for x in a.libs.split(",") if x]
print(json.dumps({"dsl": a.dsl, "operator": a.operator, "kernel": a.kernel, "shape_key": a.shape_key,
                  "libs": libs, "pass": bool(env.get("pass")), "env": env}))
sys.exit(r.returncode)
