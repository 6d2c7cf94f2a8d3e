#!/usr/bin/env python3
"""One line per measurement document (croq measure / croq baseline JSON) of a raw folder: verdict,
TFLOPS and the verification's errors, as a TSV for a results folder.
   python3 bench/gpu/measurements_tsv.py RAW_DIR > measurements.tsv"""
import glob
import json
import os
import sys


def first(o, key):
    if isinstance(o, dict):
        if key in o:
            return o[key]
        for v in o.values():
            r = first(v, key)
            if r is not None:
                return r
    elif isinstance(o, list):
        for v in o:
            r = first(v, key)
            if r is not None:
                return r
    return None


print("file\tverdict\ttflops\tmax_abs_err\tnormwise_rel_err\tmismatches\telements")
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    try:
        d = json.load(open(f))
    except (OSError, ValueError) as e:
        print(f"{os.path.basename(f)}\tunreadable ({e})\t\t\t\t\t")
        continue
    verdict = first(d, "verdict") or ("PASS" if first(d, "tflops") else None)
    row = [verdict, first(d, "tflops"), first(d, "max_abs_err"), first(d, "normwise_rel_err"),
           first(d, "mismatches"), first(d, "elements")]
    print(os.path.basename(f) + "\t" + "\t".join(str(x) for x in row))
