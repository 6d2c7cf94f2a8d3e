#!/usr/bin/env python3
"""How much of a Python-runner measurement croq's gate keeps out of the device's lease.

Runs croq's Python runner (src/python/croq_runner.py) N times on one candidate with
`--go-file F`, creating F as soon as F.ready appears (no lease to wait for here), and reports per
run the runner's `process.gate.before_ms` (its start and imports: outside the lease since the gate)
and the whole wall time of the process; the lease is held from the gate to the end, so
`held = wall - before - waited`.

Usage: python3 bench/python_gate.py [--device cpu|cuda] [--runs N] [--size M] [--candidate FILE]
         [--out FILE.md]
  --device cuda on a GPU machine (the default candidate is plain PyTorch element-wise code, which
  runs on either device; pass a Triton candidate with --candidate).
Needs python3 with torch; croq-cpu-runner (for --print-rules) on PATH or in build/bin.
"""
import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CANDIDATE = '''def croq_matmul(problem, a, b, c):
    bb = b.t() if problem["b_layout"] == "col" else b
    c.copy_((a.float().unsqueeze(2) * bb.float().unsqueeze(0)).sum(1).to(c.dtype))
'''


def rules():
    exe = shutil.which("croq-cpu-runner") or os.path.join(REPO, "build", "bin", "croq-cpu-runner")
    return subprocess.run([exe, "--print-rules"], capture_output=True, text=True, check=True).stdout.strip()


def one_run(args, rules_text, candidate, work):
    go = os.path.join(work, "gate.go")
    for f in (go, go + ".ready"):
        if os.path.exists(f):
            os.unlink(f)
    cmd = [sys.executable, os.path.join(REPO, "src", "python", "croq_runner.py"), "--rules", rules_text,
           "--candidate", candidate, "--m", str(args.size), "--n", str(args.size), "--k", str(args.size),
           "--dtype", "f16f32", "--device", args.device, "--max-reps", "20", "--time-budget-ms", "200",
           "--go-file", go]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while proc.poll() is None and not os.path.exists(go + ".ready"):
        time.sleep(0.002)
    ready = time.perf_counter()
    with open(go, "w", encoding="utf-8") as f:
        f.write("go\n")
    out, err = proc.communicate(timeout=600)
    end = time.perf_counter()
    doc = json.loads(out) if out.strip() else {}
    gate = (doc.get("process") or {}).get("gate") or {}
    return {"verdict": doc.get("verdict"), "wall_ms": (end - start) * 1e3, "ready_ms": (ready - start) * 1e3,
            "before_ms": gate.get("before_ms"), "waited_ms": gate.get("waited_ms"), "err": err[-300:]}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--size", type=int, default=256)
    p.add_argument("--candidate")
    p.add_argument("--out")
    args = p.parse_args()
    work = tempfile.mkdtemp(prefix="croq-gate-")
    candidate = args.candidate
    if not candidate:
        candidate = os.path.join(work, "iter001_elementwise.py")
        with open(candidate, "w", encoding="utf-8") as f:
            f.write(CANDIDATE)
    rules_text = rules()
    runs = [one_run(args, rules_text, candidate, work) for _ in range(args.runs)]
    shutil.rmtree(work, ignore_errors=True)
    bad = [r for r in runs if r["verdict"] != "PASS" or r["before_ms"] is None]
    if bad:
        print("python_gate: a run did not pass or reported no gate: %s" % bad[0], file=sys.stderr)
        return 1
    wall = statistics.median(r["wall_ms"] for r in runs)
    before = statistics.median(r["before_ms"] for r in runs)
    held = statistics.median(r["wall_ms"] - r["ready_ms"] for r in runs)
    try:
        import platform
        host = "%s, %d cores" % (platform.processor() or platform.machine(), os.cpu_count() or 0)
    except Exception:  # pragma: no cover
        host = "?"
    commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short=12", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    lines = [
        "# The Python runner's gate: time outside the device's lease",
        "",
        "- date: %s UTC; host: %s; device: %s; croq %s" % (
            datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"), host, args.device, commit),
        "- command: `python3 bench/python_gate.py --device %s --runs %d --size %d%s`" % (
            args.device, args.runs, args.size, " --candidate " + args.candidate if args.candidate else ""),
        "",
        "| run | wall ms | before the gate (start, imports) ms | from the gate to the end (lease held) ms |",
        "|---|---|---|---|",
    ]
    for i, r in enumerate(runs, 1):
        lines.append("| %d | %.0f | %.0f | %.0f |" % (i, r["wall_ms"], r["before_ms"], r["wall_ms"] - r["ready_ms"]))
    lines += ["", "Medians: wall %.0f ms, before the gate %.0f ms (%.0f %% of the wall), lease held %.0f ms."
              % (wall, before, 100 * before / wall, held)]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
