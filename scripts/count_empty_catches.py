#!/usr/bin/env python3
"""Lists the catch blocks of C++ sources whose body is empty or only a comment, and counts them.

usage: scripts/count_empty_catches.py [FOLDER]   (default: src)
An empty catch that hides a damaged file is a defect (docs/architecture-changes.md); one that
turns "not a number" into "no value" need not be. Read the list, not just the count.
"""
import os
import re
import sys

PATTERN = re.compile(r'catch\s*\(([^)]*)\)\s*\{((?:\s|//[^\n]*)*)\}')


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "src"
    total = bare = 0
    for folder, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            if not name.endswith((".cpp", ".hpp", ".h", ".cu")):
                continue
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            for m in PATTERN.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                body = m.group(2).strip()
                total += 1
                bare += 0 if body else 1
                print(f"{path}:{line}: catch ({m.group(1)}) {{{body}}}")
    print(f"total {total}, without a comment {bare}")


if __name__ == "__main__":
    main()
