#!/usr/bin/env python3
"""Runtime A/B of the launcher's environment knobs through the Python
package, timed as the benchmark command times (python/dhp_attention/bench.py:
10 warm-up calls, then calls back to back with CUDA events around each): a
burst of tens of milliseconds, at the boost clock, as dhp_bench's. With
--preload-s the timing follows seconds of the same calls instead, at the
power cap, where session 53 read the same kernels 10-20 % slower and
ours / cuDNN moved by up to 10 % (scripts/sustained-vs-cudnn.py). Knobs read
once per process need a process per setting: each round runs one child per
setting, the order rotated per round; the table gives the median over rounds
of each child's median per case, and cuDNN's from the same children (--sdpa).
  python3 scripts/sustained-env-ab.py --rounds 3 --case 8,32,2048,64,1 \\
      lists=DHP_SM90_SCHEDULE_TABLE=1 snake=DHP_SM90_SCHEDULE_TABLE=0
With --preload-s 2 --iters 200 each timing follows 2 s of the same calls: the
comparison at the power cap instead of at the boost clock."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def child(cases, iters, sdpa, preload_s):
    import torch

    import dhp_attention
    from dhp_attention.bench import time_events

    out = {}
    for spec in cases:
        B, H, S, D, causal = (int(x) for x in spec.split(","))
        q, k, v = (torch.randn(B, S, H, D, device="cuda", dtype=torch.float16) for _ in range(3))
        fns = {"ours": lambda: dhp_attention.attention(q, k, v, causal=bool(causal))}
        if sdpa:
            from torch.nn.attention import SDPBackend, sdpa_kernel
            qt, kt, vt = (x.transpose(1, 2) for x in (q, k, v))

            def cudnn():
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    return torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=bool(causal))
            fns["cudnn"] = cudnn
        for name, fn in fns.items():
            t_end = time.time() + preload_s  # --preload-s: reach the sustained (power-capped) state first
            while time.time() < t_end:
                time_events([fn], 0, 8)
            out[f"{spec} {name}"] = statistics.median(time_events([fn], 10, iters)) * 1e3
    print("RESULT " + json.dumps(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", action="append", required=True, help="B,H,S,D,causal (fp16, H_q = H_kv, BSHD)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--sdpa", action="store_true", help="also time cuDNN SDPA in each child")
    ap.add_argument("--preload-s", type=float, default=0.0,
                    help="seconds of calls before each timing (2: the sustained state; 0: a burst, as the benchmark)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("settings", nargs="*", help="NAME=ENV=VALUE[ ENV=VALUE...]")
    a = ap.parse_args()
    if a.child:
        return child(a.case, a.iters, a.sdpa, a.preload_s)
    names = [s.split("=", 1)[0] for s in a.settings]
    runs = {n: [] for n in names}
    for r in range(a.rounds):
        for i in range(len(names)):
            name, envs = a.settings[(r + i) % len(names)].split("=", 1)
            env = dict(os.environ, **dict(e.split("=", 1) for e in envs.split()))
            cmd = [sys.executable, os.path.abspath(__file__), "--child", "--iters", str(a.iters),
                   "--preload-s", str(a.preload_s)]
            cmd += [x for c in a.case for x in ("--case", c)] + (["--sdpa"] if a.sdpa else [])
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd="/tmp", timeout=600)
            line = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")]
            if p.returncode or not line:
                sys.exit(f"{name}, round {r + 1}: failed\n{p.stderr[-2000:]}")
            runs[name].append(json.loads(line[0][7:]))
    print("| B,H,S,D,causal | " + " | ".join(f"{n} us" for n in names) + (" | cuDNN us" if a.sdpa else "") +
          " | " + " | ".join(f"{n}/{names[0]}" for n in names[1:]) + " |")
    print("|---" * (1 + len(names) + (1 if a.sdpa else 0) + len(names) - 1) + "|")
    for c in a.case:
        med = {n: statistics.median(x[f"{c} ours"] for x in runs[n]) for n in names}
        row = f"| {c} | " + " | ".join(f"{med[n]:.1f}" for n in names)
        if a.sdpa:
            row += f" | {statistics.median(x[f'{c} cudnn'] for n in names for x in runs[n]):.1f}"
        print(row + " | " + " | ".join(f"{med[n] / med[names[0]]:.4f}" for n in names[1:]) + " |")


if __name__ == "__main__":
    main()
