#!/usr/bin/env python3
# Summarises the "dhp-cycles L0 L1 cycles ns" lines of a DHP_SM90_CYCLE_PROBE
# build (scripts/length-timing-diag.sh): per class (fixed = both lengths 0,
# else random) the mean SM cycles, nanoseconds and clock of CTA 0, and the
# Welch t of each between the classes. The first 2 % are warm-up.
import math
import sys


def welch(a, b):
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    va = sum((x - ma) ** 2 for x in a) / (len(a) - 1)
    vb = sum((x - mb) ** 2 for x in b) / (len(b) - 1)
    return ma, mb, (ma - mb) / math.sqrt(va / len(a) + vb / len(b) + 1e-300)


def main():
    name, path = sys.argv[1], sys.argv[2]
    rows = []
    for line in open(path, errors="replace"):
        f = line.split()
        if len(f) == 5 and f[0] == "dhp-cycles":
            rows.append((int(f[1]), int(f[2]), int(f[3]), int(f[4])))
    rows = rows[len(rows) // 50:]
    cls = {"fixed": [], "random": []}
    for l0, l1, cyc, ns in rows:
        cls["fixed" if (l0 == 0 and l1 == 0) else "random"].append((cyc, ns))
    if not cls["fixed"] or not cls["random"]:
        print(f"{name}: no probe lines ({len(rows)})")
        return 1
    out = [f"{name}: probe lines fixed {len(cls['fixed'])} random {len(cls['random'])}"]
    for label, key in (("cycles", lambda r: r[0]), ("ns", lambda r: r[1]), ("MHz", lambda r: 1e3 * r[0] / r[1])):
        a = [key(r) for r in cls["fixed"]]
        b = [key(r) for r in cls["random"]]
        ma, mb, t = welch(a, b)
        out.append(f"  {label:7s} fixed {ma:12.2f}  random {mb:12.2f}  ratio {ma / mb:.5f}  t {t:8.2f}")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
