#!/usr/bin/env python3
"""Gate 2 on the shipped library: dhp-audit must exit 0 (no finding) and
must have audited every kernel the build contains -- a missing cubin would
make "clean" meaningless. The library holds translation units with the same
file name (sm80/ and sm90/ instantiate_*.cu), which is what once hid half
of the kernels from the audit.

  check_library.py --audit BIN --expect-kernels N [--public FILE] LIB
"""
import argparse
import collections
import json
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--audit", required=True)
    ap.add_argument("--expect-kernels", type=int, required=True)
    ap.add_argument("--public")
    ap.add_argument("lib")
    a = ap.parse_args()
    extra = ["--public", a.public] if a.public else []
    table = subprocess.run([a.audit] + extra + [a.lib], capture_output=True, text=True)
    print(table.stdout[-4000:], table.stderr, sep="")
    p = subprocess.run([a.audit, "--json"] + extra + [a.lib], capture_output=True, text=True)
    if p.returncode != 0:
        print(f"FAIL: dhp-audit exit {p.returncode} (want 0: no findings)")
        return 1
    kernels = [k for f in json.loads(p.stdout)["files"] for k in f["kernels"]]
    per_arch = collections.Counter(k["arch"] for k in kernels)
    print(f"audited {len(kernels)} kernels: " + ", ".join(f"{n} on {a}" for a, n in sorted(per_arch.items())))
    if len(kernels) != a.expect_kernels:
        print(f"FAIL: expected {a.expect_kernels} kernels in the library")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
