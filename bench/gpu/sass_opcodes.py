"""Which instructions a compiled Hopper kernel has, on a machine without cuobjdump or nvdisasm: the 12-bit
opcode field of each 128-bit SASS instruction in the cubin's .text section of the kernel, named by the mnemonics
an ncu source page (SASS, CSV) gives the same instructions of a cubin built from the same source (the page and
the cubin must list the same instructions: the script checks the counts). Then, for other cubins, the count of
chosen mnemonics around each group of tensor-core instructions (a k loop's WGMMAs), e.g. R2UR (a descriptor
moved from a vector to a uniform register) and WARPSYNC (ptxas not sure the warp is converged).
  python3 bench/gpu/sass_opcodes.py LEARN.cubin LEARN-sass.csv X.cubin [Y.cubin ...]
LEARN-sass.csv: `ncu --import R.ncu-rep --page source --csv --print-source sass` (bench/gpu/fp8_bs_profile.sh
writes one per kernel into its archive); LEARN.cubin: `nvcc -cubin` of the same rendered source. Opcodes the
page never showed print as ?<hex>."""
import collections
import csv
import re
import subprocess
import sys

WATCH = ["R2UR", "UMOV", "UIADD3", "ULEA", "WARPSYNC", "S2R", "LDL", "STL"]


def kernel_words(cubin, name="gemm_kernel"):
    out = subprocess.run(["readelf", "-S", "-W", cubin], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if re.search(r"\] \.text\.", line) and name in line:
            parts = line.split()
            i = next(j for j, p in enumerate(parts) if p.startswith(".text."))
            off, size = int(parts[i + 3], 16), int(parts[i + 4], 16)
            data = open(cubin, "rb").read()[off:off + size]
            return [int.from_bytes(data[k:k + 16], "little") for k in range(0, size, 16)]
    raise SystemExit(f"{cubin}: no .text section of a {name} function")


def mnemonic(src):
    src = re.sub(r"^@!?U?P[0-9T]\s+", "", src.strip())
    return src.split()[0].split(".")[0] if src else ""


def learn(cubin, sass_csv):
    words = kernel_words(cubin)
    rows = list(csv.reader(open(sass_csv)))
    col = {h: i for i, h in enumerate(rows[1])}
    srcs = [r[col["Source"]] for r in rows[2:] if len(r) > col["Source"]]
    if len(words) != len(srcs):
        raise SystemExit(f"{cubin} has {len(words)} instructions, {sass_csv} {len(srcs)}: not the same kernel")
    names = collections.defaultdict(collections.Counter)
    for w, s in zip(words, srcs):
        names[w & 0xFFF][mnemonic(s)] += 1
    clash = {f"{k:x}": dict(v) for k, v in names.items() if len(v) > 1}
    if clash:
        print(f"opcodes with more than one mnemonic (the first is used): {clash}")
    return {k: v.most_common(1)[0][0] for k, v in names.items()}


def report(table, cubin):
    names = [table.get(w & 0xFFF, f"?{w & 0xFFF:x}") for w in kernel_words(cubin)]
    total = collections.Counter(names)
    print(f"{cubin}: {len(names)} instructions; " + ", ".join(f"{n} {total[n]}" for n in WATCH + ["QGMMA", "HGMMA"]))
    mma = [i for i, n in enumerate(names) if n in ("QGMMA", "HGMMA")]
    groups = []
    for i in mma:
        if groups and i - groups[-1][-1] < 120:
            groups[-1].append(i)
        else:
            groups.append([i])
    for g in groups:
        window = collections.Counter(names[max(0, g[0] - 60):g[-1] + 20])
        print(f"  tensor-core group at instructions {g[0]}..{g[-1]} ({len(g)}): "
              + ", ".join(f"{n} {window[n]}" for n in WATCH))


def main():
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    table = learn(sys.argv[1], sys.argv[2])
    for cubin in sys.argv[3:]:
        report(table, cubin)


if __name__ == "__main__":
    main()
