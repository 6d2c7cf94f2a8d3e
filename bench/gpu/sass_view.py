#!/usr/bin/env python3
"""Prints a range of SASS lines of a kernel from Nsight Compute's source page (CSV, as written by
bench/gpu/fp8_bs_profile.sh: `ncu --import R --page source --csv --print-source sass`) with each
line's share of all warp stall samples and its executions; runs of FFMA are folded into one line.
Where bench/gpu/sass_loop.py keeps only the lines executed most (a loop), this shows straight-line
code whose lines each run once per group (the block-scaled kernel's groups of k blocks).
  python3 bench/gpu/sass_view.py ss-sass.csv FIRST LAST
"""
import csv
import sys


def main():
    path, lo, hi = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rows = list(csv.reader(open(path)))
    header = rows[1]
    data = [dict(zip(header, r)) for r in rows[2:]]
    stall = "Warp Stall Sampling (All Samples)"
    total = sum(float(d[stall] or 0) for d in data) or 1.0
    run = None  # [count, samples, executions] of the FFMA run being folded

    def flush():
        nonlocal run
        if run:
            print(f"      ({run[0]} FFMA: {run[1] / total * 100:.1f}% stall, exec {run[2]})")
            run = None

    for i, d in enumerate(data):
        if i < lo or i > hi:
            continue
        s = float(d[stall] or 0)
        src = d["Source"].strip()
        words = src.split()
        op = words[1] if src.startswith("@") and len(words) > 1 else (words[0] if words else "")
        if op.startswith("FFMA"):
            if run:
                run[0] += 1
                run[1] += s
            else:
                run = [1, s, d["Instructions Executed"]]
            continue
        flush()
        print(f"{i:5} {s / total * 100:5.1f}%  {d['Instructions Executed']:>9} {src[:90]}")
    flush()


if __name__ == "__main__":
    main()
