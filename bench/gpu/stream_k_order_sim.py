"""How long the Hopper template's stream-K region takes with each order of a share's pieces (CROQ_SK_ORDER),
in a model with no GPU: the template's plan (plan_stream_k: the last partial wave and the full one before it)
and shares (sk_bound: iters * c / clusters), one k block a time unit, every cluster busy from the region's
start, a reduce piece held until the partial sums of the tile's other pieces are published (plus half a k
block for the reduction). Order 0: the head (the share's last piece, starting a tile), then the share in k
order, so the start piece (a reduce of the tile the cluster before began) comes second. Order 1: the head,
the whole tiles, the start piece last. Prints the region's length in tile-times against its work.
  python3 bench/gpu/stream_k_order_sim.py [--full-waves W] [units k_blocks clusters ...]
(W: CROQ_SK_FULL_WAVES, the full waves the region takes besides the partial one; 1 by default)
(default: the block-scaled goal shapes in 256x128 tiles with a 1x2 cluster on 132 SMs: 8192^3 = 1024 cluster
tiles of 64 k blocks, 4096x7168x7168 = 448 of 56, on 66 clusters). docs/results/fp8-h200.md, 42nd run."""
import sys


def pieces_of(c, iters, clusters, nkb, order):
    s, e = c * iters // clusters, (c + 1) * iters // clusters
    segs, g = [], s
    while g < e:
        t = g // nkb
        te = min((t + 1) * nkb, e)
        segs.append((t, g - t * nkb, te - t * nkb))
        g = te
    head = [x for x in segs if x[1] == 0 and x[2] < nkb and len(segs) > 1]
    start = [x for x in segs if x[1] > 0]
    whole = [x for x in segs if x not in head and x not in start]
    return head + (start + whole if order == 0 else whole + start)


def simulate(units, nkb, clusters, order, full_waves=1):
    full = units // clusters
    dp = (full - full_waves) * clusters if full >= full_waves else 0
    iters = (units - dp) * nkb
    pieces = {c: pieces_of(c, iters, clusters, nkb, order) for c in range(clusters)}
    owners = {}
    for c, ps in pieces.items():
        for t, _, _ in ps:
            owners.setdefault(t, set()).add(c)
    published, clock, at = {}, {c: 0.0 for c in pieces}, {c: 0 for c in pieces}
    moved = True
    while moved:
        moved = False
        for c, ps in pieces.items():
            while at[c] < len(ps):
                t, k0, k1 = ps[at[c]]
                end = clock[c] + (k1 - k0)
                if k1 < nkb:  # partial sums for the tile's reduce (a head, or a middle piece)
                    published[(t, c)] = end
                elif k0 > 0:  # the reduce: waits for the tile's other pieces
                    others = owners[t] - {c}
                    if not all((t, o) in published for o in others):
                        break
                    end = max([end] + [published[(t, o)] for o in others]) + 0.5
                clock[c], at[c], moved = end, at[c] + 1, True
    if any(at[c] < len(ps) for c, ps in pieces.items()):
        raise SystemExit(f"{units} units: the schedule waits for a piece that never runs")
    return dp // clusters, max(clock.values()) / nkb, iters / clusters / nkb


def main():
    argv = sys.argv[1:]
    full_waves = 1
    if argv[:1] == ["--full-waves"]:
        full_waves, argv = int(argv[1]), argv[2:]
    args = [int(a) for a in argv]
    cases = [args[i:i + 3] for i in range(0, len(args), 3)] if args else [[1024, 64, 66], [448, 56, 66]]
    for units, nkb, clusters in cases:
        waves = -(-units // clusters)
        for order in (0, 1):
            dpw, region, work = simulate(units, nkb, clusters, order, full_waves)
            print(f"{units} units x {nkb} k blocks on {clusters} clusters, CROQ_SK_FULL_WAVES={full_waves}, "
                  f"CROQ_SK_ORDER={order}: "
                  f"{dpw} data-parallel waves + region {region:.2f} tile-times (work {work:.2f}) = {dpw + region:.2f}, "
                  f"without stream-K {waves}")


if __name__ == "__main__":
    main()
