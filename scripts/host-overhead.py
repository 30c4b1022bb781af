#!/usr/bin/env python3
"""Host time per call of the eager path, piece by piece (GPU machine).

The benchmark's "eager" figure for the small configuration (B=1 H=8 S=512
D=64) is host time, not kernel time: the kernel takes about 5 us and the GPU
waits for the next launch. This splits one dhp_attention.attention() call
into its steps and times each in a loop on the host (wall clock over N calls,
the GPU synchronised before and after), beside PyTorch SDPA's cuDNN and
FlashAttention-2 backends on the same tensors. Prints a table (microseconds
per call, median of ROUNDS rounds).

    python3 scripts/host-overhead.py [--calls 2000] [--rounds 7]
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import dhp_attention
from dhp_attention import _core, _torch_ops


def per_call_us(fn, calls: int) -> float:
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / calls * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--shape", default="1,8,512,64", help="B,H,S,D (layout bhsd, fp16)")
    args = ap.parse_args()
    B, H, S, D = (int(x) for x in args.shape.split(","))
    g = torch.Generator(device="cuda").manual_seed(int(time.time()))
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.float16, generator=g) for _ in range(3))

    layout, causal, scale = "bhsd", False, None
    qi, ki, vi = (_core.torch_info(t) for t in (q, k, v))
    p = _core.check(qi, ki, vi, layout=layout, causal=causal, scale=scale)
    o, lse = _torch_ops._outputs(p, layout, False, q.device)
    o_strides = (p.seqlen_q * p.heads_q * p.head_dim, p.heads_q * p.head_dim, p.head_dim)
    stream = _torch_ops._raw_stream(q.device.index)

    steps = {
        "attention() (whole eager call)": lambda: dhp_attention.attention(q, k, v, layout=layout),
        "  direct_ok": lambda: _torch_ops.direct_ok(q, k, v),
        "  forward_eager (plan kept)": lambda: _torch_ops.forward_eager(q, k, v, None, None, None, causal, scale,
                                                                       False, layout),
        "  _meta x3 (plan key)": lambda: (_torch_ops._meta(q), _torch_ops._meta(k), _torch_ops._meta(v)),
        "  o = q.new_empty_strided": lambda: q.new_empty_strided((B, H, S, D), (S * H * D, D, H * D, 1)),
        "  (old path) torch_info x3": lambda: (_core.torch_info(q), _core.torch_info(k), _core.torch_info(v)),
        "  (old path) _core.check": lambda: _core.check(qi, ki, vi, layout=layout, causal=causal, scale=scale),
        "  (old path) _outputs (o, empty lse)": lambda: _torch_ops._outputs(p, layout, False, q.device),
        "  raw stream": lambda: _torch_ops._raw_stream(q.device.index),
        "  C forward, validate only": lambda: _core.launch(p, qi, ki, vi, o.data_ptr(), o_strides, causal=causal,
                                                          scale=scale, stream=stream, launch=False),
        "  C forward, validate + launch": lambda: _core.launch(p, qi, ki, vi, o.data_ptr(), o_strides,
                                                              causal=causal, scale=scale, stream=stream),
        "torch.empty_like(q) (reference)": lambda: torch.empty_like(q),
    }
    peers = {"SDPA cuDNN": SDPBackend.CUDNN_ATTENTION, "SDPA FA2": SDPBackend.FLASH_ATTENTION}
    results = {name: [] for name in list(steps) + list(peers)}
    for fn in steps.values():  # warm-up (lazy set-up, caches)
        per_call_us(fn, 50)
    for name, backend in peers.items():
        with sdpa_kernel([backend]):
            per_call_us(lambda: F.scaled_dot_product_attention(q, k, v), 50)
    for r in range(args.rounds):
        for name, fn in steps.items():
            results[name].append(per_call_us(fn, args.calls))
        for name, backend in peers.items():
            with sdpa_kernel([backend]):
                results[name].append(per_call_us(lambda: F.scaled_dot_product_attention(q, k, v), args.calls))

    # As the benchmark's eager row: CUDA events around each call (the GPU
    # waits for the host between them, so this is host time once it exceeds
    # the kernel's).
    def events_us(fn, n=1000):
        for _ in range(20):
            fn()
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
        for a, b in ev:
            a.record()
            fn()
            b.record()
        torch.cuda.synchronize()
        return statistics.median(a.elapsed_time(b) * 1000 for a, b in ev)

    event_rows = {"attention(), event-timed": events_us(lambda: dhp_attention.attention(q, k, v, layout=layout))}
    for name, backend in peers.items():
        with sdpa_kernel([backend]):
            event_rows[f"{name}, event-timed"] = events_us(lambda: F.scaled_dot_product_attention(q, k, v))

    print(f"host time per call, us (median of {args.rounds} rounds of {args.calls} calls; "
          f"B,H,S,D = {args.shape} fp16 bhsd; {torch.cuda.get_device_name()}, torch {torch.__version__})")
    print(f"| step | median | min | max |\n|---|---|---|---|")
    for name, xs in results.items():
        print(f"| {name} | {statistics.median(xs):.2f} | {min(xs):.2f} | {max(xs):.2f} |")
    for name, us in event_rows.items():
        print(f"| {name} (median of 1000) | {us:.2f} | | |")


if __name__ == "__main__":
    main()
