#!/usr/bin/env python3
"""Static check of sparse WGMMA metadata registers in SASS (cuobjdump -sass output).

A sparse WGMMA (HGMMA.SP) reads its metadata register after it has been issued, while it runs, and
ptxas does not keep that register reserved until the WARPGROUP.DEPBAR that retires the WGMMA's
group: code that writes the register in between (the next k block's words, an address, a counter)
changes the metadata the tensor core multiplies with. This script follows the control flow from
every sparse GMMA (HGMMA.SP for 16-bit inputs, QGMMA.SP for fp8; both ways at a predicated branch, around loops) until the DEPBAR that retires its
group and reports every instruction on the way that writes its metadata register.

    sass_sparse_meta_check.py FILE.sass [...]    exit 0: no hazard; 1: hazards (listed); 2: no HGMMA.SP

A group is closed by the first GMMA carrying gsb0 at or after the WGMMA; WARPGROUP.DEPBAR.LE gsb0, N
retires it once at least N later groups have been closed. Writes are read from the first operand of
every instruction that has a destination register (.64 / .128 / .WIDE: 2 or 4 registers).
"""
import re
import sys

INSN = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
REG = re.compile(r"^R(\d+)$")
SPARSE = re.compile(r"^[HQIB]GMMA\.SP\b")  # HGMMA (16-bit), QGMMA (fp8), IGMMA, BGMMA
GMMA = re.compile(r"^[HQIB]GMMA\b")
# Opcodes whose first operand is not a general register they write.
NO_WRITE = ("ST", "STS", "STG", "STL", "RED", "BRA", "BRX", "JMP", "EXIT", "RET", "CALL", "BAR", "BSYNC",
            "BSSY", "WARPSYNC", "NOP", "MEMBAR", "FENCE", "DEPBAR", "WARPGROUP", "SYNCS", "UTMA", "UBLKCP",
            "UTMASTG", "UTMALDG", "UTMACMDFLUSH", "UTMAPF", "CCTL", "ERRBAR", "HGMMA", "QGMMA", "IGMMA", "BGMMA", "STSM", "YIELD", "ACQBULK",
            "UBLKRED", "UBLKPF", "PREEXIT", "KILL", "NANOSLEEP", "ELECT", "VOTEU", "R2UR", "S2UR", "LDCU")


def parse(path):
    """Functions of a SASS listing: name -> list of (addr, predicated, opcode, operands)."""
    funcs, cur = {}, None
    for line in open(path, errors="replace"):
        m = re.search(r"Function : (\S+)", line)
        if m:
            cur = funcs.setdefault(m.group(1), [])
            continue
        m = INSN.search(line)
        if not m or cur is None:
            continue
        text = m.group(2).strip()
        pred = False
        if text.startswith("@"):
            pred = True
            text = text.split(None, 1)[1] if " " in text else ""
        parts = text.split(None, 1)
        if not parts:
            continue
        op = parts[0]
        operands = [o.strip() for o in parts[1].split(",")] if len(parts) > 1 else []
        cur.append((int(m.group(1), 16), pred, op, operands))
    return funcs


def written(op, operands):
    """General registers an instruction writes."""
    base = op.split(".")[0]
    if any(base == n or base.startswith(n) for n in NO_WRITE) or not operands:
        return []
    m = REG.match(operands[0])
    if not m:
        return []
    width = 4 if ".128" in op else 2 if (".64" in op or ".WIDE" in op) else 1
    return [int(m.group(1)) + i for i in range(width)]


def check(insns):
    """(number of HGMMA.SP, hazards as (wgmma addr, register, writer addr, writer text))."""
    index = {addr: i for i, (addr, _, _, _) in enumerate(insns)}
    hazards, unparsed, count = [], [], 0
    for i, (addr, _, op, ops) in enumerate(insns):
        if not SPARSE.match(op):
            continue
        count += 1
        regs = [REG.match(o) for o in ops[3:]]
        meta = next((int(r.group(1)) for r in regs if r), None)
        if meta is None:
            unparsed.append(f"no metadata register found in {op} {', '.join(ops)}")
            continue
        closed0 = "gsb0" in ops
        # Depth-first over (position, group closed, later groups closed) until the retiring DEPBAR.
        stack, seen = [(i + 1, closed0, 0)], set()
        while stack:
            j, closed, later = stack.pop()
            steps = 0
            while 0 <= j < len(insns) and steps < 4000:
                key = (j, closed, min(later, 4))
                if key in seen:
                    break
                seen.add(key)
                steps += 1
                a, pred, o, opnds = insns[j]
                if GMMA.match(o) and "gsb0" in opnds:
                    if closed:
                        later += 1
                    else:
                        closed = True
                if o.startswith("WARPGROUP.DEPBAR"):
                    n = int(opnds[-1], 16) if opnds and opnds[-1].startswith("0x") else 0
                    if closed and later >= n:
                        break  # retired
                if meta in written(o, opnds):
                    hazards.append((addr, meta, a, f"{o} {', '.join(opnds)}"))
                    break
                if o.startswith("EXIT") and not pred:
                    break
                if o == "BRA" or o.startswith("BRA."):
                    target = int(opnds[-1], 16) if opnds and opnds[-1].startswith("0x") else None
                    if target is not None and target in index:
                        if pred:
                            stack.append((index[target], closed, later))
                        else:
                            j = index[target]
                            continue
                j += 1
    return count, hazards, unparsed


def main(paths):
    total, bad, odd = 0, 0, 0
    for path in paths:
        for name, insns in parse(path).items():
            count, hazards, unparsed = check(insns)
            if not count:
                continue
            total += count
            odd += len(unparsed)
            for u in unparsed[:5]:
                print(f"  {u}")
            print(f"{path}: {name}: {count} sparse GMMA, {len(hazards)} metadata hazards")
            for w, r, a, t in hazards[:20]:
                print(f"  sparse GMMA at {w:#06x} reads R{r}; written at {a:#06x} before its group retires: {t}")
            bad += len(hazards)
    if total == 0:
        print("no sparse GMMA (HGMMA.SP, QGMMA.SP) found")
        return 2
    return 1 if bad else 3 if odd else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
