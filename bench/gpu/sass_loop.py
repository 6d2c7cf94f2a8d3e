#!/usr/bin/env python3
"""The hot loop of a kernel from Nsight Compute's SASS source page (`ncu --import R --page source --csv
--print-source sass`, as bench/gpu/fp8_bs_profile.sh writes it): every instruction executed at least
MIN times (default: a quarter of the most executed one's count), with its share of the warp stall
samples; runs of FFMA are folded into one line. For reading where a kernel waits, side by side with
another's. With FIRST:LAST instead of MIN, the lines FIRST to LAST whatever their counts: straight-line
code whose lines each run once per group (the block-scaled kernel's groups of k blocks). With `mix`, the
kernel's loops told apart by how often their lines run: the execution counts that the most instructions
were executed at, with their lines, then per loop (count) its opcodes, e.g. a k loop run per data-parallel
tile beside the same k loop run per stream-K piece.
    python3 bench/gpu/sass_loop.py KERNEL-sass.csv [MIN | FIRST:LAST | mix [COUNT ...]]"""
import collections
import csv
import re
import sys


def mix(name, lines, counts):
    executed = collections.Counter()
    for _, _, e in lines:
        executed[e] += e
    total = sum(executed.values()) or 1
    print(f"# {name}: {len(lines)} lines, {total} instructions executed; the most executed counts:")
    for e, n in executed.most_common(12):
        print(f"  run {e} times: {n // e if e else 0} lines, {100 * n / total:.1f} % of the instructions")
    for want in counts:
        ops = collections.Counter(re.sub(r"^@!?U?P[0-9T]\s+", "", src).split(" ")[0] for src, _, e in lines if e == want)
        print(f"# lines run {want} times ({sum(ops.values())}): " + ", ".join(f"{op} {n}" for op, n in ops.most_common()))


def main():
    rows = list(csv.reader(open(sys.argv[1])))
    head = next(i for i, r in enumerate(rows) if "Address" in r and "Source" in r)
    col = {k: i for i, k in enumerate(rows[head])}
    samp = next(k for k in rows[head] if k.startswith("Warp Stall Sampling (All"))
    lines = []
    for r in rows[head + 1:]:
        try:
            lines.append((r[col["Source"]].strip(), int(r[col[samp]] or 0), int(r[col["Instructions Executed"]] or 0)))
        except (ValueError, IndexError):
            pass
    total = sum(s for _, s, _ in lines) or 1
    name = sys.argv[1].rsplit("/", 1)[-1]
    arg = sys.argv[2] if len(sys.argv) > 2 else ""
    if arg == "mix":
        mix(name, lines, [int(x) for x in sys.argv[3:]])
        return
    if ":" in arg:
        first, last = (int(x) for x in arg.split(":"))
        shown = lambda i, e: first <= i <= last  # noqa: E731
        print(f"# {name}: lines {first} to {last}; stall samples in all: {total}")
    else:
        floor = int(arg) if arg else max(e for _, _, e in lines) // 4
        shown = lambda i, e: e >= floor  # noqa: E731
        print(f"# {name}: instructions executed >= {floor}; stall samples in all: {total}")
    run = None  # (count, samples) of a run of FFMA
    for i, (src, s, e) in enumerate(lines):
        if not shown(i, e):
            continue
        if src.startswith("FFMA"):
            run = (run[0] + 1, run[1] + s) if run else (1, s)
            continue
        if run:
            print(f"      {100 * run[1] / total:5.1f}%  ({run[0]} FFMA)")
            run = None
        print(f"{i:5d} {100 * s / total:5.1f}%  {src[:100]}")
    if run:
        print(f"      {100 * run[1] / total:5.1f}%  ({run[0]} FFMA)")


if __name__ == "__main__":
    main()
