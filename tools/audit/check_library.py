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
    # One audit: the JSON document carries everything the check and the
    # summary below need (scripts/test.sh picks up the "verdict:" line).
    p = subprocess.run([a.audit, "--json"] + extra + [a.lib], capture_output=True, text=True)
    if p.returncode not in (0, 1) or not p.stdout.startswith("{"):
        print(f"FAIL: dhp-audit exit {p.returncode}: {p.stderr.strip()}")
        return 1
    doc = json.loads(p.stdout)
    for f in doc["files"]:
        for k in f["kernels"]:
            for x in k["findings"]:
                print(f"[{x['rule']}] {k['demangled']} {k['arch']} 0x{x['offset']:04x} "
                      f"{x['file']}:{x['line']}: {x['sass']} -- {x['reason']}")
    if p.returncode != 0:
        print(f"verdict: LEAKS: {doc['findings']} findings")
        print(f"FAIL: dhp-audit exit {p.returncode} (want 0: no findings)")
        return 1
    kernels = [k for f in doc["files"] for k in f["kernels"]]
    per_arch = collections.Counter(k["arch"] for k in kernels)
    print(f"audited {len(kernels)} kernels: " + ", ".join(f"{n} on {arch}" for arch, n in sorted(per_arch.items())))
    if len(kernels) != a.expect_kernels:
        print(f"verdict: INCOMPLETE: {len(kernels)} kernels audited, {a.expect_kernels} built")
        return 1
    print(f"verdict: CLEAN: {len(kernels)} kernels in 1 file, no findings")
    return 0


if __name__ == "__main__":
    sys.exit(main())
