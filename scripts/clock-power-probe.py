#!/usr/bin/env python3
# Diagnostic (no gate): SM clock and board power while ours and PyTorch
# SDPA's cuDNN backend each run one shape back to back. Tells whether a
# shape is power-limited (the clock falls below the application clock under
# load) and whether the two kernels run at the same clock, i.e. whether a
# throughput difference is cycles or clock. nvidia-smi is only read.
#   clock-power-probe.py [--seconds 2.5] [--rounds 3] B,H,S,D[,causal] ...
import argparse
import statistics
import subprocess
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import dhp_attention


def sampler(path):
    return subprocess.Popen(
        ["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu", "--format=csv,noheader,nounits",
         "-lms", "50"], stdout=open(path, "w"), stderr=subprocess.DEVNULL)


def read_samples(path):
    out = []
    for line in open(path):
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 4:
            continue
        try:
            t = time.mktime(time.strptime(parts[0].split(".")[0], "%Y/%m/%d %H:%M:%S")) + float("0." + parts[0].split(".")[1])
            out.append((t, float(parts[1]), float(parts[2]), float(parts[3])))
        except ValueError:
            pass
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cases", nargs="+")
    ap.add_argument("--seconds", type=float, default=2.5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--log", default="/tmp/clock-power.csv")
    a = ap.parse_args()
    smi = sampler(a.log)
    time.sleep(1.0)
    windows = []  # (case, name, t0, t1, tflops)
    for spec in a.cases:
        B, H, S, D, *rest = (int(x) for x in spec.split(","))
        causal = bool(rest and rest[0])
        q, k, v = (torch.randn(B, S, H, D, device="cuda", dtype=torch.float16).transpose(1, 2) for _ in range(3))
        fl = 4.0 * B * H * S * S * D / (2 if causal else 1)
        fns = {
            "dhp": lambda: dhp_attention.attention(q, k, v, causal=causal, layout="bhsd"),
            "cuDNN": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal),
        }
        for r in range(a.rounds):
            for name in (["dhp", "cuDNN"] if r % 2 == 0 else ["cuDNN", "dhp"]):
                ctx = sdpa_kernel([SDPBackend.CUDNN_ATTENTION]) if name == "cuDNN" else None
                if ctx:
                    ctx.__enter__()
                fn = fns[name]
                for _ in range(3):
                    fn()
                torch.cuda.synchronize()
                t0 = time.time()
                n = 0
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
                while time.time() - t0 < a.seconds:
                    for _ in range(10):
                        fn()
                    n += 10
                    torch.cuda.synchronize()
                e1.record()
                torch.cuda.synchronize()
                t1 = time.time()
                if ctx:
                    ctx.__exit__(None, None, None)
                windows.append((spec, name, t0, t1, fl * n / (e0.elapsed_time(e1) * 1e-3) / 1e12))
                time.sleep(0.5)
    time.sleep(0.3)
    smi.terminate()
    smi.wait()
    samples = read_samples(a.log)
    print("| case | contestant | round TFLOP/s | median SM MHz | median W | max °C |")
    print("|---|---|---|---|---|---|")
    for spec, name, t0, t1, tf in windows:
        s = [x for x in samples if t0 + 0.4 <= x[0] <= t1]
        if not s:
            print(f"| {spec} | {name} | {tf:.1f} | n/a | n/a | n/a |")
            continue
        print(f"| {spec} | {name} | {tf:.1f} | {statistics.median(x[1] for x in s):.0f} | "
              f"{statistics.median(x[2] for x in s):.0f} | {max(x[3] for x in s):.0f} |")


if __name__ == "__main__":
    main()
