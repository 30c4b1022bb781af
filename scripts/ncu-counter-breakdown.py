#!/usr/bin/env python3
"""Gate 1's hardware counters split by every sub-metric this GPU's ncu knows:
for a configuration where a total differs between input classes with every
SASS-level count identical (perf-log session 32: the D = 64 decode kernel's
smsp__thread_inst_executed_pred_on, 160 lower for nan-inf-rows), profiles
the runner's input classes with all metrics whose base name matches
--pattern and prints, per kernel family, the ones that separate classes
and the ones that vary within one, by gate 1's own judge
(gates.py, judge_counters). A diagnostic for finding which pipe or instruction kind a
difference lives in, not a gate: scripts/dhp-validate judges.

    scripts/ncu-counter-breakdown.py [--build-dir DIR] [--out DIR]
        [--pattern REGEX] [--repeats N] -- RUNNER-CONFIG...

e.g. (session 38, the D64 decode kernel: nothing separated classes)
scripts/ncu-counter-breakdown.py -- --dtype bf16 --batch 1 --heads 8
--heads-kv 2 --seqlen 1 --seqlen-k 2100 --head-dim 64 --causal
"""
import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools" / "validate"))
import ncu  # noqa: E402
from gates import judge_counters  # noqa: E402

DEFAULT_PATTERN = r"^smsp__(thread_inst_executed|inst_executed_pipe|inst_executed_op|sass_thread_inst_executed_op)"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=str(ncu.ROOT / "build" / "validate-gpu"))
    ap.add_argument("--out", default="counter-breakdown-out")
    ap.add_argument("--pattern", default=DEFAULT_PATTERN)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("config", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cfg = [c for c in a.config if c != "--"]
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "breakdown.log"
    exe = ncu.build(a.build_dir, log, leaky=False)
    if exe is None:
        sys.exit(f"build failed: see {log}")
    known = ncu.available_metrics(out / "query-metrics.txt")
    if known is None:
        sys.exit("ncu --query-metrics failed")
    # Counts only: ratios (_per_) and percentages have no .sum.
    names = sorted(m for m in known if re.search(a.pattern, m) and "_per_" not in m and "pct" not in m)
    metrics = [m + ".sum" for m in names]
    print(f"{len(metrics)} metrics match {a.pattern!r}")
    csvp, jsonp = out / "ncu.csv", out / "classes.json"
    rc, _ = ncu.profile([exe, "classes", *cfg, "--repeats", a.repeats, "--out", jsonp], metrics, csvp, log,
                        timeout=540)
    if not jsonp.exists() or not csvp.exists():
        sys.exit(f"profile failed (exit {rc}): see {log}")
    classes = [c["name"] for c in json.loads(jsonp.read_text())["classes"]]
    fams = {}
    for r in ncu.parse_raw_csv(csvp.read_text()):
        fams.setdefault(ncu.kernel_family(r.get("Kernel Name")), []).append(r)
    status = 0
    for fam, fr in fams.items():
        res = judge_counters(fr, classes, [(m, m) for m in metrics])
        print(f"\n== {fam} ({len(fr)} launches): {res['verdict']} {res.get('why', '')}")
        for title, entries in (("separate classes", res.get("differing", [])),
                               ("vary within a class, separate none", res.get("noisy", []))):
            print(f"{title} ({len(entries)}):")
            for e in entries:
                text = "; ".join(f"{'/'.join(cs)} {v}" for v, cs in e["values"].items())
                print(f"  {e['metric']} [{e['state']}]: {text}")
        status |= res["verdict"] != "PASS"
    return status


if __name__ == "__main__":
    sys.exit(main())
