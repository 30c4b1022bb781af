#!/usr/bin/env python3
"""Each setting's median dhp time per shape over the passes of a
scripts/decode-run.sh run with REPEATS > 1 (logs decode-LABEL-rN.log in the
directory given), with the spread (max / min - 1) across passes, and each
setting's time over the first setting's:
    python3 scripts/decode-summary.py OUT_DIR
SDPA's medians are printed once per shape (over every pass of every
setting: the same backends in every setting)."""
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

out = Path(sys.argv[1])
runs = defaultdict(lambda: defaultdict(list))  # label -> shape -> [dhp us]
sdpa = defaultdict(lambda: defaultdict(list))  # shape -> backend -> [us]
labels = []
for log in sorted(out.glob("decode-*-r*.log")):
    m = re.fullmatch(r"decode-(.+)-r(\d+)\.log", log.name)
    if not m:
        continue
    label = m.group(1)
    if label not in labels:
        labels.append(label)
    for line in log.read_text().splitlines():
        c = [x.strip() for x in line.split("|")[1:-1]]
        if len(c) == 11 and c[0].isdigit():
            shape = tuple(c[:5])
            runs[label][shape].append(float(c[5]))
            for name, v in (("cuDNN", c[6]), ("FA2", c[7])):
                if v != "n/a":
                    sdpa[shape][name].append(float(v))
if not labels:
    sys.exit(f"no decode-LABEL-rN.log in {out}")
labels.sort(key=lambda l: (l != "shipped", l != "dense", l))  # decode-run.sh's first two, then the rest
shapes = list(runs[labels[0]])
med = lambda xs: statistics.median(xs) if xs else float("nan")
print("| B | S_q | H_q/H_kv | S_k | D | " + " | ".join(f"{l} us (spread)" for l in labels) +
      " | cuDNN | FA2 | " + " | ".join(f"{l} / {labels[0]}" for l in labels[1:]) + " |")
print("|" + "---|" * (5 + 2 * len(labels) + 1))
for s in shapes:
    cells = []
    for l in labels:
        xs = runs[l].get(s, [])
        cells.append(f"{med(xs):.1f} ({max(xs) / min(xs) - 1:.0%})" if xs else "n/a")
    ratios = [f"{med(runs[l].get(s, [])) / med(runs[labels[0]][s]):.2f}" for l in labels[1:]]
    print("| " + " | ".join(s) + " | " + " | ".join(cells) + f" | {med(sdpa[s]['cuDNN']):.1f} | "
          f"{med(sdpa[s]['FA2']):.1f} | " + " | ".join(ratios) + " |")
