#!/usr/bin/env python3
"""Decode-like shapes (one or a few query rows against a long key sequence):
ours against PyTorch SDPA's cuDNN and FlashAttention-2 backends, same GPU,
same run. Device time per call from a chain of 20 calls in one CUDA graph,
fresh inputs (sets rotated, together larger than L2); the K/V bytes over that
time, against the GPU's memory bandwidth, say how close each is to the
memory roof that bounds decoding. A measurement, not a gate: the issue grid
(FA3's) has no decode rows.

    python3 scripts/decode-shapes.py [--quick] [--causal] [--head-major] [--shape B,S_q,H_q,H_kv,S_k,D ...]

--shape (repeatable) replaces the default list. --causal: the causal mask
aligned bottom-right (ours; the drafted tokens of speculative decoding),
given to SDPA as torch.nn.attention.bias.causal_lower_right (its
is_causal aligns top-left, which would not be the same work at S_q > 1).
Tensors are stored token-major, [B, S, H, D] (a key's heads side by side, as
a model's projections write them), and passed as [B, H, S, D] views;
--head-major stores them [B, H, S, D] (a head's keys contiguous, as a KV
cache laid out per head). --no-sdpa: ours alone, SDPA's columns n/a (an A/B
of our settings, whose peers are timed once in the shipped setting).
"""
import math
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.bias import causal_lower_right

import dhp_attention
from dhp_attention.bench import chain_graph, time_events

N_CHAIN = 20
SHAPES = [  # B, S_q, H_q, H_kv, S_k, D
    (1, 1, 32, 8, 4096, 128), (1, 1, 32, 8, 32768, 128), (8, 1, 32, 8, 4096, 128),
    (32, 1, 32, 8, 4096, 128), (8, 16, 32, 8, 8192, 128), (1, 1, 8, 8, 16384, 64),
    (1, 4, 32, 8, 8192, 128), (8, 8, 32, 8, 4096, 128)]  # the last two: checking drafted tokens
if "--quick" in sys.argv[1:]:
    SHAPES = SHAPES[:2]
_given = [tuple(int(x) for x in sys.argv[i + 1].split(",")) for i, a in enumerate(sys.argv) if a == "--shape"]
if _given:
    assert all(len(t) == 6 for t in _given), "--shape takes B,S_q,H_q,H_kv,S_k,D"
    SHAPES = _given
CAUSAL = "--causal" in sys.argv[1:]
HEAD_MAJOR = "--head-major" in sys.argv[1:]
NO_SDPA = "--no-sdpa" in sys.argv[1:]
l2 = torch.cuda.get_device_properties(0).L2_cache_size


def inputs(B, Sq, Hq, Hkv, Sk, D):
    per_set = 2 * B * (2 * Sq * Hq + 2 * Sk * Hkv) * D
    n = 1 if per_set >= 2 * l2 else min(64, math.ceil(4 * l2 / per_set))
    def tensor(s, h):
        if HEAD_MAJOR:
            return torch.randn(B, h, s, D, device="cuda", dtype=torch.float16)
        return torch.randn(B, s, h, D, device="cuda", dtype=torch.float16).transpose(1, 2)
    return [tuple(tensor(s, h) for s, h in ((Sq, Hq), (Sk, Hkv), (Sk, Hkv))) for _ in range(n)]


def chain_us(fs):
    return 1000 * statistics.median(time_events([chain_graph(fs, N_CHAIN)], 10, 100)) / N_CHAIN


print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}; fp16, fresh inputs, "
      f"{N_CHAIN} calls per graph; GB/s = K and V bytes / time"
      + ("; causal (bottom-right)" if CAUSAL else "")
      + ("; stored [B, H, S, D]" if HEAD_MAJOR else "; stored [B, S, H, D]"))
print("| B | S_q | H_q/H_kv | S_k | D | dhp us | cuDNN us | FA2 us | dhp GB/s | best SDPA GB/s | dhp/best SDPA |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for B, Sq, Hq, Hkv, Sk, D in SHAPES:
    sets = inputs(B, Sq, Hq, Hkv, Sk, D)
    kv_bytes = 2 * B * Sk * Hkv * D * 2
    row = {}
    mask = causal_lower_right(Sq, Sk) if CAUSAL else None
    with torch.no_grad():
        row["dhp"] = chain_us([lambda s=s: dhp_attention.attention(*s, causal=CAUSAL, layout="bhsd") for s in sets])
        ref = dhp_attention.attention(*sets[0], causal=CAUSAL, layout="bhsd")  # [B, H, S_q, D], as SDPA
        for name, be in (("cuDNN", SDPBackend.CUDNN_ATTENTION), ("FA2", SDPBackend.FLASH_ATTENTION)):
            if NO_SDPA:
                row[name] = None
                continue
            try:
                with sdpa_kernel([be]):
                    out = F.scaled_dot_product_attention(*sets[0], attn_mask=mask, enable_gqa=True)
                    err = (out.float() - ref.float()).norm() / out.float().norm()
                    assert err < 1e-2, f"{name} disagrees with dhp: {err:.2e}"
                    row[name] = chain_us([lambda s=s: F.scaled_dot_product_attention(*s, attn_mask=mask, enable_gqa=True)
                                          for s in sets])
            except Exception as e:  # a backend that does not take the shape
                row[name] = None
                print(f"  ({name} B{B} S_q{Sq} S_k{Sk}: {str(e).splitlines()[0][:100]})")
    best = min(v for k, v in row.items() if k != "dhp" and v is not None) if any(
        row[k] for k in ("cuDNN", "FA2")) else None
    f = lambda v: "n/a" if v is None else f"{v:.1f}"
    dhp_us = row["dhp"]
    best_gbs = "n/a" if best is None else f"{kv_bytes / best / 1e3:.0f}"
    ratio = "n/a" if best is None else f"{best / dhp_us:.2f}"
    print(f"| {B} | {Sq} | {Hq}/{Hkv} | {Sk} | {D} | {f(dhp_us)} | {f(row['cuDNN'])} | {f(row['FA2'])} | "
          f"{kv_bytes / dhp_us / 1e3:.0f} | {best_gbs} | {ratio} |")
    sys.stdout.flush()
