#!/usr/bin/env python3
"""An ncu target: one decode-like call, ours or SDPA's cuDNN backend, twice
(profile the second), on K/V stored token-major [B, S, H, D] or head-major
[B, H, S, D] (scripts/decode-shapes.py's two layouts). For reading how the
layout changes L2 and DRAM traffic (docs/perf-log.md, session 42):

    ncu --metrics ... --kernel-name regex:'attention_forward|cudnn' --launch-skip 1 --launch-count 1 \\
        python3 scripts/decode-l2-probe.py dhp|cudnn bshd|bhsd B,S_q,H_q,H_kv,S_k,D
"""
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import dhp_attention

who, layout, shape = sys.argv[1], sys.argv[2], sys.argv[3]
assert who in ("dhp", "cudnn") and layout in ("bshd", "bhsd"), __doc__
B, Sq, Hq, Hkv, Sk, D = (int(x) for x in shape.split(","))


def tensor(s, h):
    if layout == "bhsd":
        return torch.randn(B, h, s, D, device="cuda", dtype=torch.float16)
    return torch.randn(B, s, h, D, device="cuda", dtype=torch.float16).transpose(1, 2)


q, k, v = tensor(Sq, Hq), tensor(Sk, Hkv), tensor(Sk, Hkv)
with torch.no_grad():
    for _ in range(2):
        if who == "dhp":
            dhp_attention.attention(q, k, v, layout="bhsd")
        else:
            with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
torch.cuda.synchronize()
