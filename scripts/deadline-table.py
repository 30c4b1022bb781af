#!/usr/bin/env python3
"""One table of scripts/deadline-probe.sh runs, sorted by budget: the class
difference of the event-timed means (fixed - random, ns), the classes'
standard deviations, the dudect statistics and the overruns -- the figures
the residual under the deadline is read from (docs/security-validation.md).

    scripts/deadline-table.py OUT_DIR...   (each a deadline-probe.sh $OUT:
                                            summary.txt + logs.tar.gz)
"""
import io
import json
import re
import sys
import tarfile
from pathlib import Path


def runs(out_dir: Path):
    """(label, record) per run of one deadline-probe.sh output folder."""
    labels = re.findall(r"^== (\S+)", (out_dir / "summary.txt").read_text(), re.M)
    with tarfile.open(out_dir / "logs.tar.gz") as tar:
        names = set(tar.getnames())
        for i, label in enumerate(labels, 1):
            name = next((n for n in (f"run{i}.json", f"./run{i}.json") if n in names), None)
            if name is None:
                print(f"{out_dir}: run{i}.json ({label}) missing: the run did not finish", file=sys.stderr)
                continue
            yield label, json.load(io.TextIOWrapper(tar.extractfile(name)))


def row(label, rec):
    fixed, rand = rec["classes"]
    last = rec["curve"][-1]
    probe = rec.get("deadline_probe") or {}
    post = probe.get("post_ns")
    return (rec["deadline_ns"], label, (fixed["mean_us"] - rand["mean_us"]) * 1e3, fixed["sd_us"] * 1e3,
            rand["sd_us"] * 1e3, float(last["t_raw"]), float(last["max_abs_t"]), last["worst"],
            "PASS" if rec["pass"] else "FAIL", rec["deadline_overruns"],
            "" if post is None else f"{float(post['fixed']) - float(post['random']):+.2f} ({float(post['t']):+.1f})")


def main(argv):
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    rows = sorted(row(label, rec) for d in argv for label, rec in runs(Path(d)))
    print("| budget ns | run | mean diff ns | sd fixed / random ns | t_raw | max \\|t\\| (where) | "
          "result | overruns | probe post_ns diff (t) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]:+.2f} | {r[3]:.0f} / {r[4]:.0f} | {r[5]:+.2f} | {r[6]:.2f} ({r[7]}) | "
              f"{r[8]} | {r[9]} | {r[10]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
