#!/usr/bin/env python3
"""Prints gate 1's per-instruction findings (and the counters' verdicts)
from a dhp-validate report: scripts/perpc-findings.py OUT/validation.json.
For a GPU run whose $OUT cannot bring the whole report back."""
import json
import sys

report = json.load(open(sys.argv[1]))
for rec in report["steps"].get("perpc", []):
    print("==", rec["name"], rec["verdict"])
    for family, sub in rec.get("families", {}).items():
        print(" ", family, sub.get("verdict"), sub.get("n_findings"), sub.get("retry_blocks"),
              sub.get("rejected_blocks"))
        for f in sub.get("findings", [])[:40]:
            print("   +0x%x" % f["offset"], f["metric"], f["state"], f["sass"][:60], json.dumps(f["values"])[:300])
for rec in report["steps"].get("counters", []):
    print("== counters", rec.get("name"), rec.get("verdict"), str(rec.get("why", ""))[:200])
