"""The kernels croq tune kept, read from tune workspaces (extracted gemm-ws.tgz archives) for the
bench scripts that re-measure or explain them (bench/gpu/pacing_evidence.sh, bench/gemm_verdicts.sh),
and a tune's convergence for the scripts that report it (tune_evidence.sh, croqtile_evidence.sh)."""
import glob
import json


def newest_best_keeps(roots):
    """roots: workspace folders holding tuning/, oldest first. For every tuned shape, the best KEEP
    record of its newest tune: {shape_key: (record, root index, idea-log path)}."""
    chosen = {}
    for i, root in enumerate(roots):
        for log in sorted(glob.glob(f"{root}/tuning/*/cuda/logs/matmul_*/croq-search/idea-log.jsonl")):
            best = None
            for line in open(log):
                r = json.loads(line)
                if r.get("decision") == "KEEP" and r.get("params") and (best is None or r["tflops"] > best["tflops"]):
                    best = r
            if best:
                chosen[log.split("/")[-3]] = (best, i, log)
    return chosen


def convergence(recs):
    """recs: a task's idea-log records. Returns (the BASELINE record or None, [(record, best KEEP
    TFLOPS so far or None)] for every other record, in order)."""
    base = next((r for r in recs if r.get("decision") == "BASELINE"), None)
    rows, best = [], None
    for r in recs:
        if r.get("decision") == "BASELINE":
            continue
        t = r.get("tflops")
        if r.get("decision") == "KEEP" and t:
            best = max(best or 0, t)
        rows.append((r, best))
    return base, rows


def idea_cell(r, width):
    """A record's idea as one Markdown table cell."""
    return (r.get("idea") or "").replace("|", "/").replace("\n", " ")[:width]
