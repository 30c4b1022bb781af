"""Shared fixtures: skips with a plain reason where PyTorch, transformers or a
CUDA device are missing, random inputs (never zeros) and a float64 reference
implementing the threat model's semantics (docs/threat-model.md §3)."""
from __future__ import annotations

import importlib.util
import math
import os

import pytest

try:
    import torch
except ImportError:
    torch = None

HAS_TORCH = torch is not None
HAS_CUDA = HAS_TORCH and torch.cuda.is_available()
HAS_TRANSFORMERS = importlib.util.find_spec("transformers") is not None

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="skipped: PyTorch not installed")
needs_gpu = pytest.mark.skipif(not HAS_CUDA, reason="skipped: no CUDA device")
needs_transformers = pytest.mark.skipif(not HAS_TRANSFORMERS, reason="skipped: transformers not installed")


def pytest_configure(config):
    # The GPU machine's scripts set DHP_REQUIRE_GPU: there a run that would
    # skip every GPU test (no PyTorch, a CPU-only PyTorch, no device) is an
    # error, not a pass.
    if os.environ.get("DHP_REQUIRE_GPU") and not HAS_CUDA:
        why = "PyTorch is not installed" if not HAS_TORCH else "PyTorch sees no CUDA device"
        raise pytest.UsageError(f"DHP_REQUIRE_GPU is set but {why}")


def pytest_report_header(config):
    dev = torch.cuda.get_device_name() if HAS_CUDA else "none (GPU tests skipped: no CUDA device)"
    return [f"torch: {torch.__version__ if HAS_TORCH else 'not installed'}; CUDA device: {dev}"]


def rand(*shape, dtype=None, device="cuda", gen=None):
    """Standard normal values; a fresh draw on every call."""
    return torch.randn(*shape, dtype=torch.float32, device=device, generator=gen).to(dtype or torch.float16)


def make_qkv(B, Sq, Sk, Hq, Hkv, D, dtype, layout="bshd"):
    def one(S, H):
        t = rand(B, S, H, D, dtype=dtype)
        return t if layout == "bshd" else t.transpose(1, 2).contiguous()
    return one(Sq, Hq), one(Sk, Hkv), one(Sk, Hkv)


def reference(q, k, v, *, causal=False, scale=None, seqlens=None, seqlens_q=None, seqlens_k=None, layout="bshd"):
    """float64 attention with bottom-right causal alignment, clamped secret
    lengths, o = 0 and lse = -inf for rows with no visible key. Returns o in
    q's layout and lse [B, H_q, S_q]."""
    if layout == "bhsd":
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    B, Sq, Hq, D = q.shape
    Sk, Hkv = k.shape[1], k.shape[2]
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    qd, kd, vd = (t.to(torch.float64).transpose(1, 2) for t in (q, k, v))  # [B, H, S, D]
    kd = kd.repeat_interleave(Hq // Hkv, dim=1)
    vd = vd.repeat_interleave(Hq // Hkv, dim=1)
    dev = q.device
    full = lambda S: torch.full((B,), S, dtype=torch.int64, device=dev)  # noqa: E731
    if seqlens is not None:
        lq = lk = seqlens.to(torch.int64).clamp(0, Sq)
    else:
        lq = full(Sq) if seqlens_q is None else seqlens_q.to(torch.int64).clamp(0, Sq)
        lk = full(Sk) if seqlens_k is None else seqlens_k.to(torch.int64).clamp(0, Sk)
    i = torch.arange(Sq, device=dev).view(1, Sq, 1)
    j = torch.arange(Sk, device=dev).view(1, 1, Sk)
    visible = (j < lk.view(B, 1, 1)) & (i < lq.view(B, 1, 1))
    if causal:
        visible &= j <= i + (lk - lq).view(B, 1, 1)
    visible = visible[:, None]  # [B, 1, Sq, Sk]
    # Padding may hold anything (NaN included): zero it so that it cannot leak.
    kd = torch.where((j.view(1, 1, Sk, 1) < lk.view(B, 1, 1, 1)), kd, 0.0)
    vd = torch.where((j.view(1, 1, Sk, 1) < lk.view(B, 1, 1, 1)), vd, 0.0)
    qd = torch.where((i.view(1, 1, Sq, 1) < lq.view(B, 1, 1, 1)), qd, 0.0)
    s = torch.where(visible, (qd @ kd.transpose(-1, -2)) * scale, -math.inf)
    lse = torch.logsumexp(s, dim=-1)  # -inf for empty rows
    p = torch.where(visible, torch.exp(s - torch.where(torch.isinf(lse), 0.0, lse)[..., None]), 0.0)
    o = (p @ vd).transpose(1, 2)  # [B, Sq, H, D]
    if layout == "bhsd":
        o = o.transpose(1, 2)
    return o, lse.to(torch.float32)


def rel_l2(x, ref):
    x, ref = x.to(torch.float64), ref.to(torch.float64)
    return ((x - ref).norm() / ref.norm().clamp_min(1e-30)).item()


# Relative L2 vs float64, as the C++ suite (tests/support/harness.hpp: fp16
# measured 3.3e-4, bf16 2.2e-3 at most over its cases).
TOL = {"float16": 2e-3, "bfloat16": 1e-2}


@pytest.fixture(autouse=True)
def fresh_seed(request):
    """torch starts from a fixed seed; draw a new one per test (fresh inputs on
    every run) and record it so that a failure can be replayed."""
    if HAS_TORCH:
        seed = torch.seed()
        request.node.user_properties.append(("torch_seed", seed))
        print(f"torch seed {seed}")
