#!/usr/bin/env python3
"""Where a decode call's time goes, kernel by kernel: our call and PyTorch
SDPA's cuDNN backend on the same shapes, each run N times back to back under
torch.profiler (CUPTI's kernel records: device start and end, launches not
serialised, so our split-combine kernel's programmatic-dependent-launch
overlap with the decode kernel stays as in a real call -- unlike under ncu).
Prints each kernel's median duration and the median span from a call's
first kernel start to its last kernel end. A measurement for the perf log,
not a gate.

    python3 scripts/decode-kernel-times.py [--calls N] --shape B,S_q,H_q,H_kv,S_k,D ...
"""
import argparse
import itertools
import math
import statistics
import warnings

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile

import dhp_attention

ap = argparse.ArgumentParser()
ap.add_argument("--shape", action="append", required=True, help="B,S_q,H_q,H_kv,S_k,D")
ap.add_argument("--calls", type=int, default=50)
args = ap.parse_args()
warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
l2 = torch.cuda.get_device_properties(0).L2_cache_size


def kernels_per_call(fn, calls):
    """[(name, start_us, end_us)] per call, from CUPTI's records."""
    for _ in range(5):  # warm-up: module load, plans, allocator
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
            torch.cuda.synchronize()  # one call per window: its kernels are the ones between syncs
    evs = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
                  and "memcpy" not in e.name.lower() and "memset" not in e.name.lower()),
                 key=lambda e: e.time_range.start)
    # Split into calls: a gap longer than any kernel's overlap marks the next call
    # (each call ends in a synchronize, so consecutive calls are microseconds apart).
    per_call, cur, last_end = [], [], None
    for e in evs:
        if last_end is not None and e.time_range.start > last_end + 5.0 and cur:
            per_call.append(cur)
            cur = []
        cur.append((e.name, e.time_range.start, e.time_range.end))
        last_end = e.time_range.end if last_end is None else max(last_end, e.time_range.end)
    if cur:
        per_call.append(cur)
    return per_call


def short(name):
    name = name.replace("(anonymous namespace)::", "").split("(")[0]
    return name if len(name) <= 60 else name[:57] + "..."


def report(label, per_call):
    spans = [max(k[2] for k in c) - min(k[1] for k in c) for c in per_call]
    names = {}
    for c in per_call:
        for n, s, e in c:
            names.setdefault(short(n), []).append(e - s)
    print(f"  {label}: {len(per_call)} calls, span per call median {statistics.median(spans):.1f} us")
    for n, ds in names.items():
        print(f"    {statistics.median(ds):8.1f} us  x{len(ds) / len(per_call):.0f}/call  {n}")


print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}; fp16, bhsd views; "
      f"{args.calls} calls each, one per synchronize")
for spec in args.shape:
    B, Sq, Hq, Hkv, Sk, D = (int(x) for x in spec.split(","))
    # Fresh inputs: sets rotated, together at least 4x L2 (as decode-shapes.py),
    # so that K and V come from DRAM as in a real decode step.
    per_set = 2 * B * (2 * Sq * Hq + 2 * Sk * Hkv) * D
    n_sets = min(64, max(1, math.ceil(4 * l2 / per_set)))
    sets = [tuple(torch.randn(B, s, h, D, device="cuda", dtype=torch.float16).transpose(1, 2)
                  for s, h in ((Sq, Hq), (Sk, Hkv), (Sk, Hkv))) for _ in range(n_sets)]
    turn = itertools.count()
    print(f"B{B} S_q{Sq} H{Hq}/{Hkv} S_k{Sk} D{D}")
    with torch.no_grad():
        report("dhp", kernels_per_call(
            lambda: dhp_attention.attention(*sets[next(turn) % n_sets], layout="bhsd"), args.calls))
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            report("cuDNN", kernels_per_call(
                lambda: F.scaled_dot_product_attention(*sets[next(turn) % n_sets], enable_gqa=True), args.calls))
