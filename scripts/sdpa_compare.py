#!/usr/bin/env python3
"""Times PyTorch SDPA (FlashAttention-2 and cuDNN backends) on the rows of a
dhp_bench TSV, in the same run on the same GPU, and prints a markdown table:
ours vs each peer, TFLOP/s and ratios (FLOPs = 4*B*H*S^2*D, halved for causal).
With several TSVs (one per kernel variant, same rows), each gets a column and
the ratios use the first.

    python3 scripts/sdpa_compare.py bench.tsv [NAME=other.tsv ...]
"""
import csv
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}


def time_sdpa(backend, dtype, B, H, S, D, causal, warmup=5, iters=30):
    # Random inputs (never zeros), stored [B, S, H, D] and viewed as the
    # [B, H, S, D] SDPA expects: the storage our kernel and the benchmark
    # command (python -m dhp_attention.bench) use, on which cuDNN is faster
    # at some rows than on contiguous [B, H, S, D] (D64 causal S1024: 309
    # against 270 TFLOP/s on an H200; docs/results/2026-11-21-ab-session7-h200.md).
    q, k, v = (torch.randn(B, S, H, D, device="cuda", dtype=dtype).transpose(1, 2) for _ in range(3))
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


def main(paths):
    named = [p.split("=", 1) if "=" in p else ("ours", p) for p in paths]
    tables = [(name, list(csv.DictReader(open(p), delimiter="\t"))) for name, p in named]
    rows = tables[0][1]
    dev = torch.cuda.get_device_name()
    print(f"device: {dev}; torch {torch.__version__}; cuDNN {torch.backends.cudnn.version()}\n")
    extra = [name for name, _ in tables[1:]]
    head = ["dtype", "B", "H", "S", "D", "causal", f"{tables[0][0]} TFLOP/s"] + [f"{n} TFLOP/s" for n in extra]
    head += ["FA2 TFLOP/s", "cuDNN TFLOP/s", "ours/FA2", "ours/cuDNN"] + [f"{n}/cuDNN" for n in extra]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for i, r in enumerate(rows):
        B, H, S, D = (int(r[x]) for x in ("B", "H", "S", "D"))
        causal = r["causal"] == "1"
        dtype = torch.float16 if r["dtype"] == "fp16" else torch.bfloat16
        flops = 4.0 * B * H * S * S * D / (2 if causal else 1)
        ours = float(r["tflops"])
        others = []
        for _, t in tables[1:]:
            same = i < len(t) and all(t[i][x] == r[x] for x in ("dtype", "B", "H", "S", "D", "causal"))
            others.append(float(t[i]["tflops"]) if same else None)
        peer = {}
        for name, be in BACKENDS.items():
            ms = time_sdpa(be, dtype, B, H, S, D, causal)
            peer[name] = flops / (ms * 1e-3) / 1e12 if ms else None
        fmt = lambda x: f"{x:.1f}" if x else "n/a"
        ratio = lambda x, p: f"{x / p:.2f}" if (x and p) else "n/a"
        mode = r.get("mode", "dense")
        label = r["dtype"] if mode == "dense" else f"{r['dtype']} ({mode})"
        cells = [label, B, H, S, D, int(causal), f"{ours:.1f}"] + [fmt(x) for x in others]
        cells += [fmt(peer["flash"]), fmt(peer["cudnn"]), ratio(ours, peer["flash"]), ratio(ours, peer["cudnn"])]
        cells += [ratio(x, peer["cudnn"]) for x in others]
        print("| " + " | ".join(str(c) for c in cells) + " |", flush=True)
    # The side figures, from the first TSV.
    key = lambda r: (r["dtype"], r["B"], r["H"], r["S"], r["D"], r["causal"])
    # The last dense row of the shape: dhp_bench puts one right before each
    # lengths row, so the ratio compares runs in the same thermal state.
    dense = {key(r): float(r["tflops"]) for r in rows if r.get("mode", "dense") == "dense"}
    print()
    for r in rows:
        mode = r.get("mode", "dense")
        if mode == "lengths" and key(r) in dense:
            print(f"- secret lengths, {r['dtype']} B{r['B']} H{r['H']} S_max {r['S']} D{r['D']} causal {r['causal']}: "
                  f"{float(r['tflops']):.1f} TFLOP/s = {float(r['tflops']) / dense[key(r)]:.2f}x the same kernel dense")
        elif mode == "graph":
            print(f"- {r['dtype']} B{r['B']} H{r['H']} S{r['S']} D{r['D']}: {1000 * float(r['median_ms']):.2f} us per call "
                  f"(CUDA graph replay; the SDPA columns time single calls)")


if __name__ == "__main__":
    main(sys.argv[1:])
