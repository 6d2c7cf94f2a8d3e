def sim(units, nkb, C, order):
    full=units//C; dp=(full-1)*C if full>=1 else 0
    iters=(units-dp)*nkb
    bound=lambda c: c*iters//C
    # pieces per cluster in order: list of (tile, kb0, kb1)
    pieces={}
    for c in range(C):
        s,e=bound(c),bound(c+1)
        # split [s,e) at tile boundaries
        segs=[]; g=s
        while g<e:
            t=g//nkb; te=min((t+1)*nkb,e); segs.append((t,g-t*nkb,te-t*nkb)); g=te
        head=[x for x in segs if x[1]==0 and x[2]<nkb]
        start=[x for x in segs if x[1]>0]
        mid=[x for x in segs if x not in head and x not in start]
        if order==0: seq=head+start+mid
        else: seq=head+mid+start
        pieces[c]=seq
    # simulate: partial publish time per (tile, cluster)
    done={}  # (tile,c) -> time partial ready
    # iterate: compute times with dependencies; reduce waits for partials of all earlier owners of tile
    t_of={c:0.0 for c in range(C)}; idx={c:0 for c in range(C)}
    pending=True
    finish={}
    import itertools
    for _ in range(100):
        progress=False
        for c in range(C):
            while idx[c]<len(pieces[c]):
                tile,k0,k1=pieces[c][idx[c]]
                t=t_of[c]+(k1-k0)
                if k1<nkb:  # partial
                    done[(tile,c)]=t; t_of[c]=t; idx[c]+=1; progress=True; continue
                if k0>0:  # reduce: wait for partial pieces of this tile from other clusters
                    owners=[cc for cc in range(C) if cc!=c and any(p[0]==tile for p in pieces[cc])]
                    if not all((tile,cc) in done for cc in owners): break
                    t=max([t]+[done[(tile,cc)] for cc in owners])+0.5  # +0.5 kb for the reduction
                t_of[c]=t; idx[c]+=1; progress=True
        if not progress: break
    return dp//C, max(t_of.values())/nkb, iters/C/nkb
for name,units,nkb in [("8192^3",1024,64),("4096x7168x7168",448,56)]:
    for o in (0,1):
        dpw,sk,ideal=sim(units,nkb,66,o)
        print(f"{name} order {o}: dp waves {dpw}, SK region {sk:.2f} tile-times (ideal {ideal:.2f}); total {dpw+sk:.2f} vs no SK {-(-units//66)}")
