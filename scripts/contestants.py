"""Ours and cuDNN SDPA on one FA3-grid style case, for the timing scripts
(sustained-vs-cudnn.py, energy-per-call.py; import as a sibling module).
A case is "dtype,B,H,S,D,causal[,lengths]": fp16 or bf16, H_q = H_kv, random
inputs stored [B, S, H, D] and viewed as [B, H, S, D], the storage the
benchmark command (python -m dhp_attention.bench) hands both contestants.
lengths: 0 (or absent) none; 1 the benchmark's secret-length row, S is S_max
and each sequence a random length in [1, S]; min / max every length 1 / S
(the extreme classes of the length timing test, for the power channel of
docs/threat-model.md section 8). Ours gets them as seqlens, cuDNN the same
lengths as a boolean padding mask (so both do the padded problem)."""
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

import dhp_attention
from dhp_attention.bench import _padding_mask


def parse(spec: str):
    """(dtype name, B, H, S, D, causal, lengths) of a case; lengths is None
    (no lengths), "random", "min" or "max"."""
    f = spec.split(",")
    kinds = {"0": None, "1": "random", "min": "min", "max": "max"}
    if len(f) not in (6, 7) or (len(f) == 7 and f[6] not in kinds):
        raise ValueError(f"case {spec!r}: want dtype,B,H,S,D,causal[,lengths], lengths one of {list(kinds)}")
    dt, B, H, S, D, causal = f[:6]
    return dt, int(B), int(H), int(S), int(D), bool(int(causal)), kinds[f[6]] if len(f) == 7 else None


def flops(spec: str) -> float:
    """The benchmark command's count: 4 B H S^2 D, halved for causal (with
    lengths, the padded problem, as the benchmark counts it)."""
    _, B, H, S, D, causal, _ = parse(spec)
    return 4.0 * B * H * S ** 2 * D / (2 if causal else 1)


def secret_lengths(kind: str, B: int, S: int):
    """int32 [B] on the GPU: "random" in [1, S], "min" every length 1, "max" every length S."""
    if kind == "random":
        return torch.randint(1, S + 1, (B,), device="cuda", dtype=torch.int32)
    return torch.full((B,), 1 if kind == "min" else S, device="cuda", dtype=torch.int32)


def contestants(spec: str) -> dict:
    """{"ours": fn, "cudnn": fn}, each one forward call on the case's inputs."""
    dt, B, H, S, D, causal, lengths = parse(spec)
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[dt]
    q, k, v = (torch.randn(B, S, H, D, device="cuda", dtype=dtype).transpose(1, 2) for _ in range(3))
    kw, sdpa_kw = {}, dict(is_causal=causal)
    if lengths:
        lens = secret_lengths(lengths, B, S)
        kw, sdpa_kw = dict(seqlens=lens), dict(attn_mask=_padding_mask(lens, S, causal))  # the benchmark's mask

    def ours():
        return dhp_attention.attention(q, k, v, causal=causal, layout="bhsd", **kw)

    def cudnn():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, **sdpa_kw)

    return {"ours": ours, "cudnn": cudnn}
