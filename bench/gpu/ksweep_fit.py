#!/usr/bin/env python3
"""Fits time = intercept + slope x K to the lines `NAME K REP VERDICT TFLOPS MS` of
bench/gpu/croqtile_profile.sh ksweep (median of the repeats per K): the slope is a kernel's main loop
per unit of K, the intercept what a launch costs besides (tiles' prologues and epilogues, the tail).
    python3 bench/gpu/ksweep_fit.py ctprof-ksweep.txt"""
import collections
import statistics
import sys

runs = collections.defaultdict(list)
order = []
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) != 6 or f[3] != "PASS":
        continue
    if f[0] not in order:
        order.append(f[0])
    runs[(f[0], int(f[1]))].append((float(f[5]), float(f[4])))
ks = sorted({k for _, k in runs})
print("| kernel | " + " | ".join(f"K={k} ms (TFLOPS)" for k in ks) + " | slope (us per 1024 of K) | intercept (us) |")
print("|---" * (len(ks) + 3) + "|")
for name in order:
    pts = [(k, statistics.median(m for m, _ in runs[(name, k)]), statistics.median(t for _, t in runs[(name, k)]))
           for k in ks if runs[(name, k)]]
    n = len(pts)
    mx = sum(k for k, _, _ in pts) / n
    my = sum(ms for _, ms, _ in pts) / n
    slope = sum((k - mx) * (ms - my) for k, ms, _ in pts) / sum((k - mx) ** 2 for k, _, _ in pts)
    icpt = my - slope * mx
    cells = " | ".join(f"{ms:.4f} ({tf:.0f})" for _, ms, tf in pts)
    print(f"| {name} | {cells} | {slope * 1024 * 1000:.2f} | {icpt * 1000:.1f} |")
