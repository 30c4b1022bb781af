"""Ours and cuDNN SDPA on one FA3-grid style case, for the timing scripts
(sustained-vs-cudnn.py, energy-per-call.py; import as a sibling module).
A case is "dtype,B,H,S,D,causal": fp16 or bf16, H_q = H_kv, random inputs
stored [B, S, H, D] and viewed as [B, H, S, D], the storage the benchmark
command (python -m dhp_attention.bench) hands both contestants."""
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

import dhp_attention


def parse(spec: str):
    """(dtype name, B, H, S, D, causal) of a case."""
    dt, B, H, S, D, causal = spec.split(",")
    return dt, int(B), int(H), int(S), int(D), bool(int(causal))


def flops(spec: str) -> float:
    """The benchmark command's count: 4 B H S^2 D, halved for causal."""
    _, B, H, S, D, causal = parse(spec)
    return 4.0 * B * H * S ** 2 * D / (2 if causal else 1)


def contestants(spec: str) -> dict:
    """{"ours": fn, "cudnn": fn}, each one forward call on the case's inputs."""
    dt, B, H, S, D, causal = parse(spec)
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[dt]
    q, k, v = (torch.randn(B, S, H, D, device="cuda", dtype=dtype).transpose(1, 2) for _ in range(3))

    def ours():
        return dhp_attention.attention(q, k, v, causal=causal, layout="bhsd")

    def cudnn():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)

    return {"ours": ours, "cudnn": cudnn}
