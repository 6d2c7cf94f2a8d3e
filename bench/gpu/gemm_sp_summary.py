#!/usr/bin/env python3
"""The 2:4 sparse GEMM table of a croq workspace tuned by bench/gpu/gemm_sp_evidence.sh.

Usage: gemm_sp_summary.py WORKSPACE DSL COMMIT KEY...

Per key (gemm_sp_<dtype>_<MxNxK>): the baseline's libraries (cuSPARSELt and the dense ones, each its
best variant on the same pruned inputs, from the task's baseline result file), croq's best kept
kernel, the ratios to cuSPARSELt and to dense, the configuration and the round it was found at, and
the repeats (best kernel and baseline measured again, alternating) with their spread. A summary
counts the shapes at >= 1.0 and >= 0.9 of cuSPARSELt per dtype.
"""
import datetime
import glob
import json
import os
import statistics
import subprocess
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def cv_of(ws, rec):
    """The robust CV of the measurement behind a record (its timing's robust_cv, else cv), or None."""
    f = ((rec or {}).get("measurement") or {}).get("file")
    d = load(f if f and os.path.isabs(f) else os.path.join(ws, f or "-")) or {}
    t = d.get("timing") or {}
    v = t.get("robust_cv", t.get("cv"))
    return v if isinstance(v, (int, float)) else None


def main():
    ws, dsl, commit, keys = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    try:
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True).stdout.strip() or "no GPU"
    except OSError:
        gpu = "no GPU (nvidia-smi not found)"
    print("# 2:4 sparse GEMM (gemm_sp) tuned by croq\n")
    print(f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M')} UTC; device: {gpu}; commit: {commit}")
    print(f"- `croq tune <keys> --dsl {dsl} --seed 1 --jobs N --profile-preset quick` from the hopper_gemm_sp family's default")
    print("  (bench/gpu/gemm_sp_evidence.sh). cuSPARSELt and dense: each library's best variant measured by the task's")
    print("  `croq baseline` on the same pruned inputs with croq's runner (A compressed once, off the clock). TFLOPS count")
    print("  2*M*N*K (dense-equivalent). Repeats: `croq baseline --force` and `croq measure` of the best kernel again,")
    print("  alternating, once a shape's tune has completed; spread = (max - min) / median. CV: the robust coefficient of")
    print("  variation of the timed launches of the best kernel's and the baseline's own measurement.\n")
    print("| shape | dtype | cuSPARSELt | dense | croq best | / cuSPARSELt | / dense | CV croq % | CV iter000 % | round found | rounds | repeats croq | repeats iter000 | spread croq % | configuration |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    per_dtype = {}
    for key in keys:
        parts = key.split("_")
        dtype, shape = parts[-2], parts[-1]
        logs = glob.glob(f"{ws}/tuning/*/{dsl}/logs/{key}/croq-search/idea-log.jsonl")
        if not logs:
            print(f"| {shape} | {dtype} | not run |||||||||||||")
            continue
        recs = [json.loads(line) for line in open(logs[0]) if line.strip()]
        tune = load(os.path.join(os.path.dirname(logs[0]), "tune.json")) or {}
        results = glob.glob(f"{ws}/tuning/*/{dsl}/baseline/{key}/croq-search/*_result.json")
        res = load(results[0]) if results else {}
        libs = (res or {}).get("libraries") or {}
        sp = (libs.get("cusparseLt") or {}).get("tflops")
        dense = max([v.get("tflops") or 0 for k, v in libs.items() if k != "cusparseLt"] or [0]) or None
        if not libs and res:
            dense = res.get("tflops")
        base = next((r for r in recs if r.get("decision") == "BASELINE"), None)
        keeps = [r for r in recs if r.get("decision") == "KEEP" and r.get("tflops")]
        rounds = max((r.get("round", 0) for r in recs), default=0)
        done = "" if tune.get("completed") else " (unfinished)"
        pct = lambda v: f"{100 * v:.2f}" if isinstance(v, (int, float)) else "-"
        f = lambda x: f"{x:.1f}" if isinstance(x, (int, float)) else "-"
        if not keeps:
            print(f"| {shape} | {dtype} | {f(sp)} | {f(dense)} | no kept kernel | | | | | | {rounds}{done} | | | | |")
            continue
        best = max(keeps, key=lambda r: r["tflops"])
        ct = best["tflops"]
        rep = os.path.join(ws, "repeats", key)
        c_runs = [d["tflops"] for d in (load(p) for p in sorted(glob.glob(os.path.join(rep, "candidate_*.json"))))
                  if d and d.get("verdict") == "PASS" and isinstance(d.get("tflops"), (int, float))]
        b_runs = [((d or {}).get("result") or {}).get("tflops") for d in
                  (load(p) for p in sorted(glob.glob(os.path.join(rep, "baseline_*.json"))))]
        b_runs = [x for x in b_runs if isinstance(x, (int, float))]
        spread = (max(c_runs) - min(c_runs)) / statistics.median(c_runs) if len(c_runs) > 1 else None
        r_sp = ct / sp if sp else None
        r_dense = ct / dense if dense else None
        per_dtype.setdefault(dtype, []).append(r_sp)
        cfg = " ".join(f"{k}={v}" for k, v in sorted((best.get("params") or {}).items()))
        runs = lambda v: " / ".join(f"{x:.0f}" for x in v) if v else "-"
        print(f"| {shape} | {dtype} | {f(sp)} | {f(dense)} | {ct:.1f} | {'-' if r_sp is None else f'{r_sp:.3f}'} | "
              f"{'-' if r_dense is None else f'{r_dense:.3f}'} | {pct(cv_of(ws, best))} | {pct(cv_of(ws, base))} | {best.get('round')} | {rounds}{done} | {runs(c_runs)} | "
              f"{runs(b_runs)} | {'-' if spread is None else f'{100 * spread:.2f}'} | {cfg} |")
    print()
    for dtype, ratios in per_dtype.items():
        known = [r for r in ratios if r is not None]
        print(f"- {dtype}: {len(ratios)} shapes with a kept kernel; vs cuSPARSELt >= 1.0: "
              f"{sum(1 for r in known if r >= 1.0)}, >= 0.9: {sum(1 for r in known if r >= 0.9)} (of {len(known)} with a cuSPARSELt figure)")


if __name__ == "__main__":
    main()
