#!/usr/bin/env python3
"""Lets the warp scheduler switch warps inside long runs of FFMA in a built kernel (a trial for the
block-scaled FP8 kernel's promotion, issue 21).

nvcc 13 interleaves the yield hint into some of the block-scaled kernel's promotion runs (64 FFMAs
that add one k block's WGMMA sums, scaled, to the f32 totals) and leaves others as 64 FFMAs in a row
that never yield: while one consumer warp issues them, the other consumer warp on the same scheduler
cannot issue its next WGMMAs. This script finds, in every sm_90a cubin inside a shared object
(.nv_fatbin, uncompressed), the runs of at least --min-run consecutive FFMAs whose yield hint is off,
and turns the hint on for every --every'th of them (2: the alternate pattern nvcc itself writes; 1:
all), clearing that instruction's operand-reuse flags as nvcc does (after a yield the next
instruction issued may be another warp's, so nothing can be kept for it). Only those bits change;
every other byte of the file stays the same.

Encoding (sm_90, 128-bit instructions, little-endian; the high word's control field): bit 45 of the
high word is the yield hint, 1 = no yield (nvcc's interleaved runs alternate it, and only the
instructions with it set carry reuse flags); bits 41-44 the stall count; bits 58-61 the
operand-reuse flags (58: operand a, the scale the promotion's FFMAs share). FFMA with three
register operands has 0x223 in bits 0-11 of the low word. The GPU machine's cuobjdump checks the
patched instructions (--check): each must disassemble as FFMA.

  python3 bench/gpu/sass_yield.py IN.so OUT.so [--every 2] [--min-run 16]   writes OUT.so and
      OUT.so.yield.json (the patched offsets and counts)
  python3 bench/gpu/sass_yield.py --check OUT.so                             (there) every patched
      offset is an FFMA in cuobjdump -sass's listing of OUT.so; exit 1 when not
"""
import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys

EM_CUDA = 190
OP_MASK, OP_FFMA = 0xFFF, 0x223
YIELD_OFF = 1 << 45          # high word: 1 = the scheduler keeps this warp
REUSE = 0xF << 58            # high word: the four operand-reuse flags


def cubins(data):
    """(offset, e_flags) of every CUDA ELF embedded in `data`."""
    i = -1
    while True:
        i = data.find(b"\x7fELF", i + 1)
        if i < 0:
            return
        if len(data) >= i + 64 and data[i + 4] == 2 and struct.unpack_from("<H", data, i + 18)[0] == EM_CUDA:
            yield i, struct.unpack_from("<I", data, i + 0x30)[0]


def text_sections(data, base):
    """(name, file offset, size) of the cubin's .text.* sections."""
    shoff = struct.unpack_from("<Q", data, base + 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, base + 0x3A)
    headers = []
    for k in range(shnum):
        name, _typ, _flags, _addr, off, size = struct.unpack_from("<IIQQQQ", data, base + shoff + k * shentsize)
        headers.append((name, off, size))
    strtab = base + headers[shstrndx][1]
    for name, off, size in headers:
        end = data.index(b"\0", strtab + name)
        label = data[strtab + name:end].decode("ascii", "replace")
        if label.startswith(".text."):
            if base + off + size > len(data) or size % 16:
                raise SystemExit(f"section {label} of the cubin at {base:#x} is not whole: is the fatbin compressed?")
            yield label, base + off, size


def runs(data, off, size, min_run):
    """Lists of file offsets of consecutive FFMAs with the yield hint off."""
    out, cur = [], []
    for p in range(off, off + size, 16):
        lo, hi = struct.unpack_from("<QQ", data, p)
        if lo & OP_MASK == OP_FFMA and hi & YIELD_OFF:
            cur.append(p)
            continue
        if len(cur) >= min_run:
            out.append(cur)
        cur = []
    if len(cur) >= min_run:
        out.append(cur)
    return out


def patch(src, dst, every, min_run):
    data = bytearray(open(src, "rb").read())
    report = {"source": os.path.basename(src), "every": every, "min_run": min_run, "sections": []}
    for base, flags in list(cubins(bytes(data))):
        if (flags >> 8) & 0xFF != 90:  # sm_90 / sm_90a only: the encoding above is Hopper's
            continue
        for label, off, size in text_sections(bytes(data), base):
            found = runs(data, off, size, min_run)
            patched = []
            for run in found:
                for j, p in enumerate(run):
                    if j % every == 0:
                        lo, hi = struct.unpack_from("<QQ", data, p)
                        struct.pack_into("<QQ", data, p, lo, hi & ~(YIELD_OFF | REUSE))
                        patched.append(p)
            if found:
                report["sections"].append({"section": label, "runs": [len(r) for r in found],
                                           "patched": len(patched),
                                           "offsets": [p - off for p in patched],
                                           "file_offsets": patched})
    open(dst, "wb").write(data)
    shutil.copymode(src, dst)
    report["patched"] = sum(s["patched"] for s in report["sections"])
    json.dump(report, open(dst + ".yield.json", "w"), indent=1)
    return report


def check(path):
    """Every patched offset disassembles as FFMA (cuobjdump, on the GPU machine)."""
    report = json.load(open(path + ".yield.json"))
    cuobjdump = shutil.which("cuobjdump") or "/usr/local/cuda/bin/cuobjdump"
    listing = subprocess.run([cuobjdump, "-sass", path], check=True, capture_output=True, text=True).stdout
    # Per function: "Function : NAME", then "/*OFFS*/  OPCODE ... ;  /* 0xLOW */" lines.
    by_function, current = {}, None
    for line in listing.splitlines():
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            current = by_function.setdefault(m.group(1), {})
            continue
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
        if m and current is not None:
            current[int(m.group(1), 16)] = m.group(2)
    bad = []
    for sec in report["sections"]:
        name = sec["section"][len(".text."):]
        listing_of = by_function.get(name, {})
        for off in sec["offsets"]:
            op = listing_of.get(off, "?")
            if not op.startswith("FFMA"):
                bad.append(f"{name[:60]}+{off:#x}: {op}")
    print(f"{path}: {report['patched']} patched instructions, {len(bad)} not FFMA")
    for b in bad[:10]:
        print("  ", b)
    return not bad


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--every", type=int, default=2)
    ap.add_argument("--min-run", type=int, default=16)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    if a.check:
        sys.exit(0 if all(check(p) for p in a.paths) else 1)
    if len(a.paths) != 2:
        ap.error("give IN.so OUT.so")
    r = patch(a.paths[0], a.paths[1], a.every, a.min_run)
    for s in r["sections"]:
        print(f"{s['section'][:70]}: runs {s['runs']}, {s['patched']} FFMAs now yield")
    if not r["patched"]:
        print("no run of FFMAs without yield found: nothing patched")


if __name__ == "__main__":
    main()
