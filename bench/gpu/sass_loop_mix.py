#!/usr/bin/env python3
"""The instruction mix of a kernel's k loop from a `cuobjdump -sass` listing: in the first function
whose name holds FUNCTION_SUBSTRING, the innermost loop (the shortest range of a backward branch)
that holds WGMMA instructions (QGMMA / HGMMA), counted statically (one pass through the body as
laid out).
   python3 bench/gpu/sass_loop_mix.py SASS.txt [FUNCTION_SUBSTRING]"""
import collections
import re
import sys

path = sys.argv[1]
want = sys.argv[2] if len(sys.argv) > 2 else "gemm_kernel"
funcs, cur = [], None
for line in open(path):
    f = re.search(r"Function : (\S+)", line)
    if f:
        cur = [f.group(1), []]
        funcs.append(cur)
        continue
    m = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
    if m and cur is not None:
        cur[1].append((int(m.group(1), 16), m.group(2).strip()))
name, ins = next((f for f in funcs if want in f[0]), (None, []))
if not ins:
    sys.exit(f"no function matching {want!r} in {path}")
best = None
for addr, text in ins:
    b = re.search(r"BRA (?:\S+ )?0x([0-9a-f]+)", text)
    if not b:
        continue
    target = int(b.group(1), 16)
    if target >= addr:
        continue
    body = [t for a, t in ins if target <= a <= addr]
    mma = sum(1 for t in body if re.search(r"\b[QH]GMMA", t))
    if mma and (best is None or len(body) < len(best[3])):
        best = (mma, target, addr, body)
if best is None:
    sys.exit("no loop with WGMMA instructions found")
mma, start, end, body = best
ops = collections.Counter(re.sub(r"^@!?U?P[T0-9]+\s+", "", t).split()[0].split(".")[0] for t in body)
print(f"{name}\nloop {start:#x}-{end:#x}: {len(body)} instructions, {mma} WGMMA")
print(" ".join(f"{k}:{v}" for k, v in ops.most_common()))
