#!/usr/bin/env python3
"""The seeds' fsm-engine scripts (state-transition, pre-step-check, post-step-check) on croq.

The seeds' FSM kept its state in a JSON file that the agent updated with guard flags; croq derives
the step from evidence instead (`croq state`). These scripts keep the seeds' state file
($CROQTUNER_STATE_FILE, else .claude/skills/fsm-engine/state/loop-state.json) for the skills that
read it, and check the agent's step against croq's whenever a croq task can be named: from
dsl=/shape_key=/model=/gpu= given to INIT or later transitions, else CROQ_DSL, CROQ_SHAPE_KEY,
CROQ_MODEL, CROQ_GPU. Installed by `croq init --compat`.

  state-transition.sh <STATE> [key=value ...]   record the transition; prints the state JSON
  pre-step-check.sh [STEP]    exit 0 when STEP (default: the current state) is croq's next step
  post-step-check.sh [STEP]   exit 0 when croq has moved past STEP (its evidence exists)
"""
import datetime
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
STATE_FILE = os.environ.get("CROQTUNER_STATE_FILE") or ".claude/skills/fsm-engine/state/loop-state.json"
if not os.path.isabs(STATE_FILE):
    STATE_FILE = os.path.join(ROOT, STATE_FILE)
# The seeds' step names and croq's.
ALIASES = {"INIT": "PREPARE", "SETUP": "PREPARE", "BASELINE": "PREPARE", "PROFILING": "PROFILE",
           "IMPLEMENTATION": "IMPLEMENT", "BUILD": "IMPLEMENT", "VERIFICATION": "VERIFY",
           "BENCHMARK": "MEASURE", "DECISION": "DECIDE", "COMMIT": "STORE"}


def now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def load():
    try:
        with open(STATE_FILE) as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except ValueError:
        sys.exit(f"fsm: {STATE_FILE} is not JSON; run state-transition.sh INIT ... again")


def save(doc):
    os.makedirs(os.path.dirname(STATE_FILE), exist_ok=True)
    tmp = STATE_FILE + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    os.replace(tmp, STATE_FILE)


def task_args(doc):
    v = (doc or {}).get("vars", {})
    dsl = v.get("dsl") or os.environ.get("CROQ_DSL")
    key = v.get("shape_key") or os.environ.get("CROQ_SHAPE_KEY")
    model = v.get("model") or os.environ.get("CROQ_MODEL")
    gpu = v.get("gpu") or os.environ.get("CROQ_GPU")
    if not (dsl and key and model):
        return None
    args = ["--dsl", dsl, "--shape-key", key, "--model", model]
    if gpu:
        args += ["--gpu", gpu]
    return args


def croq_state(doc):
    args = task_args(doc)
    if args is None or not CROQ:
        return None, "no croq task named (give dsl= shape_key= model= to INIT, or set CROQ_DSL/CROQ_SHAPE_KEY/CROQ_MODEL)"
    r = subprocess.run([CROQ, "--root", ROOT, "state"] + args, capture_output=True, text=True)
    try:
        return json.loads(r.stdout), None
    except ValueError:
        return None, f"croq state failed: {r.stderr.strip() or r.stdout.strip()}"


def norm(step):
    s = (step or "").upper().replace("-", "_")
    return ALIASES.get(s, s)


def transition(argv):
    if not argv:
        sys.exit("state-transition: give the new state, e.g. INIT shape_key=... dtype=...")
    doc = load() or {"schema": "croq-fsm-compat-v1", "fsm": {}, "vars": {}, "history": []}
    new = argv[0]
    for kv in argv[1:]:
        if "=" not in kv:
            sys.exit(f"state-transition: '{kv}' is not key=value")
        k, v = kv.split("=", 1)
        doc.setdefault("vars", {})[k] = v
    fsm = doc.setdefault("fsm", {})
    fsm["previous_state"] = fsm.get("current_state")
    fsm["current_state"] = new
    fsm["updated_at"] = now()
    doc.setdefault("history", []).append({"state": new, "at": fsm["updated_at"]})
    doc["history"] = doc["history"][-200:]
    state, note = croq_state(doc)
    doc["croq"] = state if state is not None else {"note": note}
    save(doc)
    print(json.dumps(doc))
    return 0


def check(argv, post):
    doc = load()
    if doc is None:
        print(json.dumps({"ok": False, "reason": f"no state file {STATE_FILE}: run state-transition.sh INIT first"}))
        return 1
    step = argv[0] if argv else doc.get("fsm", {}).get("current_state")
    state, note = croq_state(doc)
    if state is None:
        print(json.dumps({"ok": True, "step": step, "note": note}))
        return 0
    croq_step = state.get("step")
    if post:
        ok = norm(step) != croq_step
        reason = "croq has the evidence of this step" if ok else f"croq has no evidence that {step} was done"
    else:
        ok = norm(step) == croq_step or norm(step) == "PREPARE" and croq_step == "PREPARE"
        reason = "croq agrees" if ok else f"croq's next step is {croq_step}, not {step}"
    print(json.dumps({"ok": ok, "step": step, "croq_step": croq_step, "reason": reason,
                      "next_action": state.get("next_action"), "stop_allowed": state.get("stop_allowed")}))
    return 0 if ok else 1


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    rest = sys.argv[2:]
    if mode == "transition":
        sys.exit(transition(rest))
    if mode in ("pre", "post"):
        sys.exit(check(rest, mode == "post"))
    sys.exit("fsm_croq.py transition|pre|post ...")
