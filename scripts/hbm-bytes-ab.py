#!/usr/bin/env python3
"""HBM bytes and duration of one forward call under ncu, per environment
setting, on dhp_bench --case rows (clocks as the card has them; base units;
tools/validate/ncu.py runs ncu). The first call of each process is profiled:
cold L2 alike for every setting.
  python3 scripts/hbm-bytes-ab.py --case 2,32,8192,64,1 ... \\
      shipped=DHP_SM90_SCHEDULE_TABLE=1 lists=DHP_SM90_SCHEDULE_TABLE=2"""
import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools" / "validate"))
import ncu  # noqa: E402

METRICS = ["dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", action="append", required=True, help="dhp_bench's B,H,S,D,causal")
    ap.add_argument("--bench", default=str(ncu.ROOT / "build" / "hopper" / "tools" / "dhp_bench"))
    ap.add_argument("settings", nargs="+", help="NAME=ENV=VALUE[ ENV=VALUE...]")
    a = ap.parse_args()
    if not ncu.have("ncu"):
        sys.exit("ncu not found")
    work = Path(tempfile.mkdtemp(prefix="hbm-bytes-"))
    print("| case | setting | HBM read MB | HBM written MB | duration us |")
    print("|---|---|---|---|---|")
    for case in a.case:
        for setting in a.settings:
            name, envs = setting.split("=", 1)
            env = dict(os.environ, **dict(e.split("=", 1) for e in envs.split()))
            csv_path, log = work / f"{case}-{name}.csv", work / f"{case}-{name}.log"
            cmd = ["ncu", "--clock-control", "none", "--kernel-name", "regex:attention_forward_sm90",
                   "--launch-count", "1", "--metrics", ",".join(METRICS), "--csv", "--page", "raw",
                   "--print-units", "base", "--log-file", str(csv_path), a.bench, "--case", case]
            rc, out = ncu.run(cmd, log, timeout=180, env=env)
            rows = ncu.parse_raw_csv(csv_path.read_text()) if csv_path.exists() else []
            if rc != 0 or not rows:
                print(f"| {case} | {name} | failed (rc {rc}; {log}) | | |")
                continue
            r = rows[0]
            vals = [r.get(m) for m in METRICS]
            if not all(isinstance(v, (int, float)) for v in vals):
                print(f"| {case} | {name} | not numbers: {vals} | | |")
                continue
            print(f"| {case} | {name} | {vals[0] / 1e6:.0f} | {vals[1] / 1e6:.0f} | {vals[2] / 1e3:.1f} |", flush=True)


if __name__ == "__main__":
    main()
