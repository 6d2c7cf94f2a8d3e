#!/usr/bin/env python3
"""Nsight Compute details pages side by side: every metric whose value differs between the kernels, one row
each (section, metric, unit, then the values in the order given). For the per-kernel CSVs that
bench/gpu/fp8_bs_profile.sh packs into fp8-bs-profile.tgz (NAME-details.csv).
    python3 bench/gpu/ncu_compare.py A-details.csv B-details.csv [...]"""
import csv
import os
import sys


def main():
    paths = sys.argv[1:]
    names = [os.path.basename(p).removesuffix("-details.csv") for p in paths]
    rows = {}
    for n, p in zip(names, paths):
        for r in csv.DictReader(open(p)):
            key = (r["Section Name"], r["Metric Name"], r["Metric Unit"])
            rows.setdefault(key, {})[n] = r["Metric Value"]
    print(f"{'section':28} {'metric':45} {'unit':10} " + " ".join(f"{n:>14}" for n in names))
    for (sec, metric, unit), v in rows.items():
        if len(set(v.values())) > 1:
            print(f"{sec[:28]:28} {metric[:45]:45} {unit[:10]:10} " + " ".join(f"{v.get(n, '-'):>14}" for n in names))


if __name__ == "__main__":
    main()
