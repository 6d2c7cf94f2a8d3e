#!/usr/bin/env python3
"""Fits time = intercept + slope x K to the lines `NAME K REP VERDICT TFLOPS MS` of
bench/gpu/croqtile_profile.sh ksweep (median of the repeats per K): the slope is a kernel's main loop
per unit of K, the intercept what a launch costs besides (tiles' prologues and epilogues, the tail).
    python3 bench/gpu/ksweep_fit.py ctprof-ksweep.txt"""
import collections
import statistics
import sys


def fit(pts):
    """Least squares of time = intercept + slope x K over {K: time}; returns (slope, intercept)."""
    ks = sorted(pts)
    mx = sum(ks) / len(ks)
    my = sum(pts[k] for k in ks) / len(ks)
    slope = sum((k - mx) * (pts[k] - my) for k in ks) / sum((k - mx) ** 2 for k in ks)
    return slope, my - slope * mx


def main():
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
        slope, icpt = fit({k: ms for k, ms, _ in pts})
        cells = " | ".join(f"{ms:.4f} ({tf:.0f})" for _, ms, tf in pts)
        print(f"| {name} | {cells} | {slope * 1024 * 1000:.2f} | {icpt * 1000:.1f} |")


if __name__ == "__main__":
    main()
