"""bench/gpu/cta_trace.py (the digest of CROQ_TRACE=1 builds) on a made-up trace with known answers,
no GPU needed: two launches of four CTAs in two clusters of two, where cluster 1 takes twice as
long per unit as cluster 0 and its rank-1 CTA ends 5 us after its rank-0 CTA.

Checks: the launches are told apart; a cluster's span is its CTAs' latest end (its time per unit
too: cluster 1's 65 us over 3 units); the per-wave unit
times come from consecutive unit starts (the last unit ends at the CTA's end); the on-demand model
hands the next unit to the cluster free first; the digest names the slow cluster first and prints
the stream-K shares of a trace whose data-parallel part ends before its CTAs do; the SM clock of each
wave from clock64 over the globaltimer between consecutive starts; a file without trace lines is
reported as such.
Exit 0 when every check holds; prints what failed otherwise.
Usage: python3 tests/python/cta_trace_test.py <source-dir>
"""
import importlib.util
import io
import os
import sys
import tempfile
from contextlib import redirect_stdout


def load(src):
    spec = importlib.util.spec_from_file_location("cta_trace", os.path.join(src, "bench", "gpu", "cta_trace.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def trace_lines(base, sk_tail_ns=0):
    """One launch: cluster 0 runs 3 units of 10 us, cluster 1 runs 3 units of 20 us (times in ns); with
    sk_tail_ns, every CTA then works that long more after its data-parallel units (a stream-K share)."""
    out = []
    for cta in range(4):
        cluster, rank = cta // 2, cta % 2
        per = 10_000 if cluster == 0 else 20_000
        t0 = base
        late = 5_000 if cluster == 1 and rank == 1 else 0
        dp = base + 3 * per + (late if not sk_tail_ns else 0)  # without stream-K a CTA prints dp = end
        end = base + 3 * per + late + sk_tail_ns
        out.append(f"croq-trace sm={10 + cta} cta={cta} cluster={cluster} t0={t0} dp={dp} end={end} units=3")
        for i in range(3):
            # clock64 at 1.5 GHz in the first unit, 1.2 GHz after (1.5 and 1.2 cycles a ns)
            clk = int(1.5 * min(i, 1) * per + 1.2 * max(i - 1, 0) * per)
            out.append(f"croq-trace-unit cta={cta} i={i} unit={cluster + 2 * i} t={t0 + i * per} clk={clk}")
    return out


def main():
    src = sys.argv[1]
    ct = load(src)
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.txt")
        with open(path, "w") as f:
            f.write("\n".join(trace_lines(1_000_000) + ["unrelated output"] + trace_lines(9_000_000)) + "\n")
        ls = ct.launches(path)
        check(len(ls) == 2, f"2 launches expected, got {len(ls)}")
        check(all(len(x) == 4 for x in ls), "4 CTAs per launch expected")
        cl = ct.per_cluster(ls[0])
        check(cl[0]["end"] == 30_000 and cl[1]["end"] == 65_000, f"cluster spans wrong: {cl}")
        ut = sorted(ct.unit_times(ls[0]))
        check(ut == [(0, 0, 0, 10_000), (0, 1, 2, 10_000), (0, 2, 4, 10_000),
                     (1, 0, 1, 20_000), (1, 1, 3, 20_000), (1, 2, 5, 20_000)], f"unit times wrong: {ut}")
        mhz = ct.wave_clocks(ls[0])
        check(set(mhz) == {0, 1} and abs(mhz[0][0] - 1500) < 1e-6 and abs(mhz[1][0] - 1200) < 1e-6,
              f"wave clocks wrong: {mhz}")
        # cluster 0's units are 10 us, cluster 1's 20: 15 and 30 thousand cycles at 1.5 GHz, median 22.5
        check(abs(mhz[0][1] - 22.5) < 1e-6 and abs(mhz[1][1] - 18.0) < 1e-6, f"wave cycles wrong: {mhz}")
        # On demand: cluster 0 (10 per unit) and cluster 1 (20): 6 units end at 40 (0 takes 4, 1 takes 2).
        check(abs(ct.on_demand({0: 10.0, 1: 20.0}, 6) - 40.0) < 1e-9, "on-demand makespan wrong")
        buf = io.StringIO()
        with redirect_stdout(buf):
            ct.report(path)
        text = buf.getvalue()
        check("slowest clusters (time per unit, SMs): 1 (21.67 us, 12/13), 0 (10.00 us" in text, "the slow cluster is not named first:\n" + text)
        check("span 65.0 us" in text, "the span is not the latest CTA's end:\n" + text)
        check("after the data-parallel units" not in text, "a trace without stream-K printed shares")
        with open(path, "w") as f:
            f.write("\n".join(trace_lines(1_000_000, sk_tail_ns=7_000)) + "\n")
        buf = io.StringIO()
        with redirect_stdout(buf):
            ct.report(path)
        check("after the data-parallel units (a stream-K share): 7.0 / " in buf.getvalue(),
              "the stream-K shares are not printed:\n" + buf.getvalue())
        # A file without trace lines (a build without CROQ_TRACE) is said to be so, not a crash.
        with open(path, "w") as f:
            f.write("unrelated output\n")
        buf = io.StringIO()
        with redirect_stdout(buf):
            ct.report(path)
        check("no croq-trace lines" in buf.getvalue(), "a file without trace lines:\n" + buf.getvalue())
    for f in failures:
        print("FAIL:", f)
    print("cta_trace ok" if not failures else f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
