#!/usr/bin/env python3
"""How unevenly the CTAs of a persistent Hopper GEMM launch finish, from the lines a CROQ_TRACE=1 build
prints (kernels/cuda/matmul/hopper/gemm_sm90.cu: per CTA its SM, cluster, %globaltimer at its start, at the
end of its data-parallel units and at its end, and its data-parallel units). Per launch: the span, when the CTAs end
(earliest, median, latest), the SMs' mean idle share of the span, and how far a static schedule's span is
from two bounds computed with each cluster's own measured time per data-parallel unit: the same units
handed out on demand (the next unit to whichever cluster is free first: a dynamic tile scheduler) and the
work spread perfectly; per wave of units the median and slowest unit's time (and, where the trace has clock64
beside each start, the SM clock the wave ran at), and the slowest clusters' units one by one. The first launch and the last three are shown. Over launches: whether the same clusters are the slow ones each time (the
correlation of their time per unit between the first launch and the others).
    python3 bench/gpu/cta_trace.py TRACE.txt [TRACE.txt ...]"""
import heapq
import os
import re
import statistics
import sys

LINE = re.compile(r"croq-trace sm=(\d+) cta=(\d+) cluster=(\d+) t0=(\d+) dp=(\d+) end=(\d+) units=(\d+)")
UNIT = re.compile(r"croq-trace-unit cta=(\d+) i=(\d+) unit=(\d+) t=(\d+)(?: clk=(\d+))?")


def launches(path):
    out, cur = [], {}
    for line in open(path, errors="replace"):
        m = LINE.search(line)
        if m:
            sm, cta, cluster, t0, dp, end, units = (int(x) for x in m.groups())
            if cta in cur:  # a CTA seen again: the next launch
                out.append(cur)
                cur = {}
            cur[cta] = dict(sm=sm, cluster=cluster, t0=t0, dp=dp, end=end, units=units, starts={})
            continue
        m = UNIT.search(line)
        if m:
            cta, i, unit, t = (int(x) for x in m.groups()[:4])
            if cta in cur:
                cur[cta]["starts"][i] = (unit, t)
                if m.group(5) is not None:
                    cur[cta].setdefault("clocks", {})[i] = int(m.group(5))
    if cur:
        out.append(cur)
    return out


def wave_clocks(launch):
    """Per unit index (wave): (the median SM clock in MHz, the median thousands of SM cycles) between that unit's
    start and the next one's, over the CTAs that recorded clock64 beside their starts."""
    by_i = {}
    for c in launch.values():
        st, ck = c["starts"], c.get("clocks", {})
        for i in sorted(ck):
            if i + 1 in ck and i in st and i + 1 in st and st[i + 1][1] > st[i][1]:
                by_i.setdefault(i, []).append((1e3 * (ck[i + 1] - ck[i]) / (st[i + 1][1] - st[i][1]),
                                               (ck[i + 1] - ck[i]) / 1e3))
    return {i: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) for i, v in sorted(by_i.items())}


def unit_times(launch):
    """(cluster, index, unit, duration ns) of every traced unit of rank-0 CTAs: until the next unit's start, the
    last one until the CTA's end."""
    out = []
    for cta, c in launch.items():
        st = c["starts"]
        if not st or any(o["cluster"] == c["cluster"] and k < cta for k, o in launch.items()):
            continue
        for i in sorted(st):
            unit, t = st[i]
            nxt = st[i + 1][1] if i + 1 in st else (c["end"] if i == c["units"] - 1 else None)
            if nxt is not None:
                out.append((c["cluster"], i, unit, nxt - t))
    return out


def per_cluster(launch):
    cl = {}
    base = min(c["t0"] for c in launch.values())
    for c in launch.values():
        d = cl.setdefault(c["cluster"], dict(t0=c["t0"] - base, dp=0, end=0, units=c["units"]))
        d["t0"] = min(d["t0"], c["t0"] - base)
        d["dp"] = max(d["dp"], c["dp"] - base)
        d["end"] = max(d["end"], c["end"] - base)
    return cl


def on_demand(rates, units):
    """Makespan when each unit goes to the cluster free first, each cluster at its own time per unit."""
    heap = [(0.0, c) for c in rates]
    heapq.heapify(heap)
    for _ in range(units):
        t, c = heapq.heappop(heap)
        heapq.heappush(heap, (t + rates[c], c))
    return max(t for t, _ in heap)


def report(path):
    ls = launches(path)
    print(f"# {path}: {len(ls)} launches of {len(ls[0]) if ls else 0} CTAs")
    if not ls:
        print("  no croq-trace lines: was the kernel built with CROQ_TRACE=1?")
        return
    first_rates = None
    show = set(range(len(ls))) if len(ls) <= 4 else {0, len(ls) - 3, len(ls) - 2, len(ls) - 1}
    for i, launch in enumerate(ls):
        if i not in show:
            continue
        cl = per_cluster(launch)
        span = max(d["end"] for d in cl.values())
        ends = sorted(d["end"] for d in cl.values())
        dps = sorted(d["dp"] for d in cl.values())
        idle = 1 - statistics.mean(d["end"] - d["t0"] for d in cl.values()) / span
        rates = {c: (d["dp"] - d["t0"]) / d["units"] for c, d in cl.items() if d["units"] > 0 and d["dp"] > d["t0"]}
        units = sum(d["units"] for d in cl.values())
        dp_units = sum(d["units"] for c, d in cl.items() if c in rates)
        dyn = on_demand(rates, dp_units) if rates else 0
        perfect = dp_units / sum(1 / r for r in rates.values()) if rates else 0
        static_dp = max(dps)
        mean_rate = statistics.mean(rates.values()) if rates else 0
        print(f"launch {i}: span {span / 1e3:.1f} us; CTAs end {ends[0] / 1e3:.1f} / {statistics.median(ends) / 1e3:.1f} / "
              f"{ends[-1] / 1e3:.1f} us (earliest / median / latest); data-parallel part ends {dps[0] / 1e3:.1f} / "
              f"{dps[-1] / 1e3:.1f} us; idle {100 * idle:.1f} % of the SMs' time; {units} units")
        if rates:
            lo, hi = min(rates.values()), max(rates.values())
            print(f"  time per data-parallel unit: {lo / 1e3:.2f} to {hi / 1e3:.2f} us (mean {mean_rate / 1e3:.2f}, "
                  f"spread {100 * (hi / lo - 1):.1f} %); the {dp_units} data-parallel units: static {static_dp / 1e3:.1f} us, "
                  f"on demand {dyn / 1e3:.1f} us, perfectly spread {perfect / 1e3:.1f} us")
            region = sorted(d["end"] - d["dp"] for d in cl.values())
            if region[-1] > 0:
                print(f"  after the data-parallel units (a stream-K share): {region[0] / 1e3:.1f} / "
                      f"{statistics.median(region) / 1e3:.1f} / {region[-1] / 1e3:.1f} us")
            slow = sorted(rates, key=rates.get, reverse=True)[:6]
            print("  slowest clusters (time per unit, SMs): " + ", ".join(
                f"{c} ({rates[c] / 1e3:.2f} us, {'/'.join(str(x['sm']) for x in launch.values() if x['cluster'] == c)})"
                for c in slow))
            ut = unit_times(launch)
            if ut:
                by_i = {}
                for cl_, i, unit, d in ut:
                    by_i.setdefault(i, []).append((d, cl_, unit))
                print("  per unit index (wave): median us, slowest (us, cluster, unit): " + "; ".join(
                    f"{i}: {statistics.median(x[0] for x in v) / 1e3:.1f}, {max(v)[0] / 1e3:.1f} c{max(v)[1]} u{max(v)[2]}"
                    for i, v in sorted(by_i.items())))
                mhz = wave_clocks(launch)
                if mhz:
                    print("  SM clock per unit index (MHz, median over CTAs): " +
                          " ".join(f"{i}: {v[0]:.0f}" for i, v in mhz.items()))
                    print("  SM cycles per unit (thousands, median over CTAs): " +
                          " ".join(f"{i}: {v[1]:.1f}" for i, v in mhz.items()))
                for c in slow[:2]:
                    print(f"  cluster {c}, its units' times (us): " + " ".join(
                        f"{d / 1e3:.0f}" for cl_, i, unit, d in sorted(ut, key=lambda x: x[1]) if cl_ == c))
            if first_rates is None:
                first_rates = rates
            elif len(rates) > 2:
                common = [c for c in rates if c in first_rates]
                a = [first_rates[c] for c in common]
                b = [rates[c] for c in common]
                print(f"  correlation of the clusters' time per unit with launch 0: {statistics.correlation(a, b):.2f}")


def main():
    for path in sys.argv[1:]:
        if not os.path.isfile(path):
            print(f"# {path}: no such file (no trace was run)")
            continue
        report(path)


if __name__ == "__main__":
    main()
