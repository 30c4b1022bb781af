#!/usr/bin/env python3
"""Times PyTorch SDPA (FlashAttention-2 and cuDNN backends) on the rows of a
dhp_bench TSV, in the same run on the same GPU, and prints a markdown table:
ours vs each peer, TFLOP/s and ratios (FLOPs = 4*B*H*S^2*D, halved for causal).

    python3 scripts/sdpa_compare.py bench.tsv
"""
import csv
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}


def time_sdpa(backend, dtype, B, H, S, D, causal, warmup=5, iters=30):
    # Random inputs (never zeros), BHSD as SDPA expects.
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=dtype) for _ in range(3))
    try:
        with sdpa_kernel([backend]):
            for _ in range(warmup):
                F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            times = []
            for _ in range(iters):
                start = torch.cuda.Event(enable_timing=True)
                stop = torch.cuda.Event(enable_timing=True)
                start.record()
                F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                stop.record()
                stop.synchronize()
                times.append(start.elapsed_time(stop))
        return statistics.median(times)
    except RuntimeError as e:  # backend unavailable for this shape
        print(f"{backend} B={B} H={H} S={S} D={D}: {e}".splitlines()[0], file=sys.stderr)
        return None


def main(path):
    rows = list(csv.DictReader(open(path), delimiter="\t"))
    dev = torch.cuda.get_device_name()
    print(f"device: {dev}; torch {torch.__version__}; cuDNN {torch.backends.cudnn.version()}\n")
    print("| dtype | B | H | S | D | causal | ours TFLOP/s | FA2 TFLOP/s | cuDNN TFLOP/s | ours/FA2 | ours/cuDNN |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        B, H, S, D = (int(r[x]) for x in ("B", "H", "S", "D"))
        causal = r["causal"] == "1"
        dtype = torch.float16 if r["dtype"] == "fp16" else torch.bfloat16
        flops = 4.0 * B * H * S * S * D / (2 if causal else 1)
        ours = float(r["tflops"])
        peer = {}
        for name, be in BACKENDS.items():
            ms = time_sdpa(be, dtype, B, H, S, D, causal)
            peer[name] = flops / (ms * 1e-3) / 1e12 if ms else None
        fmt = lambda x: f"{x:.1f}" if x else "n/a"
        ratio = lambda p: f"{ours / p:.2f}" if p else "n/a"
        print(f"| {r['dtype']} | {B} | {H} | {S} | {D} | {int(causal)} | {ours:.1f} | {fmt(peer['flash'])} | "
              f"{fmt(peer['cudnn'])} | {ratio(peer['flash'])} | {ratio(peer['cudnn'])} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
