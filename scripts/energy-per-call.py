#!/usr/bin/env python3
"""Energy per call, ours against cuDNN SDPA, from NVML's total-energy counter
(millijoules since the driver loaded; read through ctypes, no pynvml needed).
At the power cap throughput follows work per joule (session 53: under
sustained load our lead over cuDNN shrinks on causal rows), so this is the
figure that says whether a kernel is efficient or only fast at the boost clock.
Per case and contestant, ROUNDS times alternating: 1 s of load to reach the
sustained state, then about WINDOW seconds of back-to-back calls with the
counter read before and after. The counter's update period and the power
sensor's sampling are not documented (on A100 / H100 the sensor is reported to
sample part of the time only), hence windows of several seconds and the
median over rounds. Also reports the idle power read the same way, so that
the energy above idle can be compared too, TFLOP per joule for each (the
benchmark's FLOP count, causal halved), and with several cases the median of
cuDNN's energy over ours. A case with a seventh field 1 is the benchmark's
secret-length row (contestants.py; min / max: every length 1 / S_max); when
its dense twin is also run, our time and energy per call with lengths over
our dense call's are printed as well (the counterparts of the issue's
secret-length throughput figure; between min and max, of the power channel).
  python3 scripts/energy-per-call.py [--window 3] [--rounds 3] [--case dtype,B,H,S,D,causal[,lengths] ...]"""
import argparse
import statistics
import time

import torch

from contestants import contestants, flops, parse
from nvml_energy import Energy, window

CASES = ["fp16,2,32,8192,64,1", "fp16,4,32,4096,64,1", "fp16,4,16,4096,128,0", "fp16,4,16,4096,128,1",
         "fp16,4,8,4096,256,0", "fp16,4,8,4096,256,1"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", action="append",
                    help="dtype,B,H,S,D,causal[,lengths] (BSHD memory, H_q = H_kv; lengths 1: random secret lengths, min / max: all 1 / all S)")
    ap.add_argument("--window", type=float, default=3.0, help="seconds of timed calls per measurement")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--nvml-index", type=int, default=None,
                    help="the GPU's NVML index (default: the current CUDA device, matched by UUID)")
    a = ap.parse_args()
    meter = Energy(a.nvml_index)
    torch.cuda.synchronize()
    time.sleep(1.0)
    e0, t0 = meter.joules(), time.time()
    time.sleep(2.0)
    idle_w = (meter.joules() - e0) / (time.time() - t0)
    print(f"idle power {idle_w:.0f} W")
    print("| case | ours us | cuDNN us | ours mJ/call | cuDNN mJ/call | cuDNN mJ / ours mJ | same, above idle | "
          "ours W | cuDNN W | ours TFLOP/J | cuDNN TFLOP/J |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    ratios, ours = [], {}  # spec: (s, J) per call
    for spec in a.case or CASES:
        fns = contestants(spec)
        got = {n: [] for n in fns}  # (s per call, J per call, J above idle per call, W)
        for r in range(a.rounds):
            for n in (list(fns) if r % 2 == 0 else list(fns)[::-1]):
                window(fns[n], 1.0, meter)  # the sustained state
                calls, secs, joules, host_secs = window(fns[n], a.window, meter)
                got[n].append((secs / calls, joules / calls, (joules - idle_w * host_secs) / calls, joules / host_secs))
        m = {n: [statistics.median(x[i] for x in got[n]) for i in range(4)] for n in fns}
        o, c = m["ours"], m["cudnn"]
        flop = flops(spec)
        ratios.append(c[1] / o[1])
        ours[spec] = (o[0], o[1])
        print(f"| {spec} | {o[0] * 1e6:.1f} | {c[0] * 1e6:.1f} | {o[1] * 1e3:.1f} | {c[1] * 1e3:.1f} | "
              f"{c[1] / o[1]:.3f} | {c[2] / o[2]:.3f} | {o[3]:.0f} | {c[3]:.0f} | "
              f"{flop / o[1] / 1e12:.2f} | {flop / c[1] / 1e12:.2f} |", flush=True)
    twins = {parse(spec)[:6]: spec for spec in ours if parse(spec)[6] is None}  # dense, however written
    for spec, (s, j) in ours.items():
        dense = twins.get(parse(spec)[:6])
        if parse(spec)[6] and dense is not None:
            print(f"ours, {spec} over {dense}: time per call {s / ours[dense][0]:.4f}, "
                  f"energy per call {j / ours[dense][1]:.4f}")
    if len(ratios) > 1:
        print(f"cuDNN mJ / ours mJ over {len(ratios)} cases: median {statistics.median(ratios):.3f}, "
              f"min {min(ratios):.3f}, max {max(ratios):.3f}")


if __name__ == "__main__":
    main()
