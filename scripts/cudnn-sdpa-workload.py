#!/usr/bin/env python3
# Three calls of PyTorch SDPA on the cuDNN backend (fp16, random inputs), for
# profiling cuDNN's kernel beside ours (scripts/ncu-vs-cudnn,
# scripts/ncu-sass-stalls --cudnn).   cudnn-sdpa-workload.py B H S D causal [S_k H_kv]
# S_k and H_kv (default S and H): a key sequence of its own length and
# grouped kv heads (decoding shapes: S = 1, GQA through enable_gqa).
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

B, H, S, D, causal = (int(x) for x in sys.argv[1:6])
if len(sys.argv) not in (6, 8):
    sys.exit("usage: cudnn-sdpa-workload.py B H S D causal [S_k H_kv]")
Sk, Hkv = (int(x) for x in sys.argv[6:8]) if len(sys.argv) == 8 else (S, H)
torch.manual_seed(1)
# Stored [B, S, H, D] and viewed as the [B, H, S, D] SDPA expects: the storage
# our kernel is profiled on (dhp_validate) and the benchmark command times
# both with; cuDNN's speed (and kernel) depends on it.
q = torch.randn(B, S, H, D, device="cuda", dtype=torch.float16).transpose(1, 2)
k, v = (torch.randn(B, Sk, Hkv, D, device="cuda", dtype=torch.float16).transpose(1, 2) for _ in range(2))
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(3):
        torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=bool(causal), enable_gqa=Hkv != H)
torch.cuda.synchronize()
