#!/usr/bin/env python3
"""Time against K from a bench/gpu/gemm_configs.sh report (REPORT.md): for every configuration name
and the library, over the report's keys that share M and N (M, N given), the time of a launch
(2·M·N·K / TFLOPS, medians of the repeats) fitted as intercept + slope x K, once over all K and once
over the two largest. The slope is the main loop per unit of K, the intercept the rest of a launch.
    python3 bench/gpu/configs_kfit.py REPORT.md 8192 8192"""
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ksweep_fit import fit  # noqa: E402

path, m, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
points = {}  # name -> {k: ms}
for line in open(path):
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) < 5 or not re.match(r"\w+_(\d+)x(\d+)x(\d+)$", cells[0]):
        continue
    km, kn, kk = map(int, re.match(r"\w+_(\d+)x(\d+)x(\d+)$", cells[0]).groups())
    if (km, kn) != (m, n):
        continue
    flop = 2.0 * m * n * kk
    for name, col in (("library", cells[2]), (cells[1], cells[3])):
        vals = [float(v) for v in re.findall(r"[\d.]+", col.split("(")[0])]
        if vals:
            points.setdefault(name, {})[kk] = flop / (statistics.median(vals) * 1e12) * 1e3  # ms


print(f"| at M = {m}, N = {n} | K | ms | all K: us per 1024 of K | all K: rest (us) | two largest K: us per 1024 | rest (us) |")
print("|---|---|---|---|---|---|---|")
for name, pts in points.items():
    if len(pts) < 2:
        continue
    s_all, i_all = fit(pts)
    top = dict(sorted(pts.items())[-2:])
    s_top, i_top = fit(top)
    ks = " / ".join(str(k) for k in sorted(pts))
    ms = " / ".join(f"{pts[k]:.4f}" for k in sorted(pts))
    print(f"| {name} | {ks} | {ms} | {s_all * 1024e3:.1f} | {i_all * 1e3:.1f} | {s_top * 1024e3:.1f} | {i_top * 1e3:.1f} |")
