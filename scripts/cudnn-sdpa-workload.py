#!/usr/bin/env python3
# Three calls of PyTorch SDPA on the cuDNN backend (fp16, random inputs), for
# profiling cuDNN's kernel beside ours (scripts/ncu-vs-cudnn,
# scripts/ncu-sass-stalls --cudnn).   cudnn-sdpa-workload.py B H S D causal
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

B, H, S, D, causal = (int(x) for x in sys.argv[1:6])
torch.manual_seed(1)
# Stored [B, S, H, D] and viewed as the [B, H, S, D] SDPA expects: the storage
# our kernel is profiled on (dhp_validate) and the benchmark command times
# both with; cuDNN's speed (and kernel) depends on it.
q, k, v = (torch.randn(B, S, H, D, device="cuda", dtype=torch.float16).transpose(1, 2) for _ in range(3))
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(3):
        torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
torch.cuda.synchronize()
