#!/usr/bin/env python3
"""Totals per fuzz target from docs/results/fuzz-runs.tsv (bench/fuzz.sh and
bench/gpu/fuzz_beside.sh append to it), as a Markdown table.

Usage: bench/fuzz_totals.py [--since-row N] [FILE]
  --since-row N  count rows N.. only (1 is the first data row), e.g. the runs after a fix

Columns: wall seconds x workers; CPU seconds, where known: the cpu_seconds column (bench/fuzz.sh
records it), or seconds x workers for rows from the GPU machine (fuzz_beside.sh pins each worker to
an idle core, so it has the core to itself); rows without either are counted under "CPU unknown"
(older niced runs on a shared machine: their wall time overstates the fuzzing they got).
"""
import csv
import sys
from collections import OrderedDict


def main(argv):
    path = "docs/results/fuzz-runs.tsv"
    since = 1
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--since-row":
            since = int(args.pop(0))
        else:
            path = a
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))[since - 1:]
    totals = OrderedDict()
    for r in rows:
        t = totals.setdefault(r["target"], {"wall": 0, "cpu": 0, "unknown": 0, "runs": 0, "crashes": 0})
        workers = int(r.get("workers") or 1)
        wall = int(r["seconds"]) * workers
        t["wall"] += wall
        t["runs"] += int(r["runs"] or 0)
        t["crashes"] += int(r["crashes"] or 0)
        cpu = (r.get("cpu_seconds") or "").strip()
        if cpu:
            t["cpu"] += int(float(cpu))
        elif r.get("host", "").startswith("NVIDIA"):
            t["cpu"] += wall
        else:
            t["unknown"] += wall
    print("| target | wall seconds x workers | CPU seconds (known) | minutes of CPU (known) | "
          "wall seconds, CPU unknown | inputs | crashes |")
    print("|---|---|---|---|---|---|---|")
    for name, t in totals.items():
        print(f"| `{name}` | {t['wall']} | {t['cpu']} | {t['cpu'] / 60:.0f} | {t['unknown']} | "
              f"{t['runs']:,} | {t['crashes']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
