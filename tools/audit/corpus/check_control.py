#!/usr/bin/env python3
"""Gate 2 on the leaky control: dhp-audit must exit 1 and flag, in every
control kernel, a secret-dependent control transfer (rule a) whose chain
starts at the load of the secret length in forward_kernel.cuh.

  check_control.py --audit BIN OBJECT...
"""
import argparse
import json
import os
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--audit", required=True)
    ap.add_argument("objects", nargs="+")
    a = ap.parse_args()
    p = subprocess.run([a.audit, "--json"] + a.objects, capture_output=True, text=True)
    if p.returncode != 1:
        print(f"FAIL: dhp-audit exit {p.returncode} on the leaky control (want 1)\n{p.stderr}")
        return 1
    doc = json.loads(p.stdout)
    bad, n = [], 0
    for f in doc["files"]:
        for k in f["kernels"]:
            n += 1
            hits = [x for x in k["findings"] if x["rule"].startswith("a")
                    and x["chain"] and os.path.basename(x["chain"][0]["file"] or "") == "forward_kernel.cuh"]
            first = hits[0] if hits else None
            print(f"{k['arch']:7} {len(k['findings']):3} findings  {k['demangled'][:90]}")
            if first:
                c = first["chain"][0]
                print(f"        e.g. {first['sass']}  at {os.path.basename(first['file'] or '?')}:{first['line']}"
                      f"  <- {c['sass']} at forward_kernel.cuh:{c['line']}")
            else:
                bad.append(k["demangled"])
    if not n or bad:
        print("FAIL: control kernels without a rule-a finding from the length load:", bad)
        return 1
    print(f"gate 2 fails on the leaky control, as it must: {n} kernels flagged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
