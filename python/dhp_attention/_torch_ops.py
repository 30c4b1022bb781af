"""The PyTorch operator torch.ops.dhp.attention (torch.library.custom_op).

The fake implementation runs the same checks as the real one and allocates
outputs of the same shapes and strides, so torch.compile(fullgraph=True)
traces calls without graph breaks and reports bad arguments at trace time.
The operator runs on the current CUDA stream of the inputs' device.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from . import _core

_LSE_EMPTY = (0,)  # lse when not requested: an op must return the same number of tensors every time


def _infos(q, k, v, seqlens, seqlens_q, seqlens_k, with_ptr):
    f = _core.torch_info
    opt = lambda t: None if t is None else f(t, with_ptr)  # noqa: E731
    return f(q, with_ptr), f(k, with_ptr), f(v, with_ptr), opt(seqlens), opt(seqlens_q), opt(seqlens_k)


def _o_layout(p: _core.Problem, layout: str) -> tuple[tuple, tuple, tuple]:
    """o's size and allocation strides, and its (batch, seq, head) strides for
    the C ABI. BSHD memory order for both layouts: for "bhsd" o is a
    [B, H, S, D] tensor with BSHD strides, as SDPA's flash backend returns, so
    that the (B, S, H*D) reshape every model does next is free."""
    B, S, H, D = p.batch, p.seqlen_q, p.heads_q, p.head_dim
    size, strides = ((B, S, H, D), (S * H * D, H * D, D, 1)) if layout == "bshd" else \
        ((B, H, S, D), (S * H * D, D, H * D, 1))
    return size, strides, (S * H * D, H * D, D)


def _outputs(p: _core.Problem, layout: str, return_lse: bool, device) -> tuple[Tensor, Tensor]:
    size, strides, _ = _o_layout(p, layout)
    o = torch.empty_strided(size, strides, dtype=_DTYPES[p.dtype], device=device)
    lse_shape = (p.batch, p.heads_q, p.seqlen_q) if return_lse else _LSE_EMPTY
    return o, torch.empty(lse_shape, dtype=torch.float32, device=device)


_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}

try:  # the raw handle without building a torch.cuda.Stream object (what inductor uses)
    _raw_stream = torch._C._cuda_getCurrentRawStream
except AttributeError:  # pragma: no cover - other torch builds
    def _raw_stream(index):
        return torch.cuda.current_stream(index).cuda_stream


def forward(q: Tensor, k: Tensor, v: Tensor, seqlens: Optional[Tensor], seqlens_q: Optional[Tensor],
            seqlens_k: Optional[Tensor], causal: bool, scale: Optional[float], return_lse: bool,
            layout: str) -> tuple[Tensor, Tensor]:
    """softmax(q kᵀ · scale) v; returns (o, lse), lse empty unless return_lse."""
    qi, ki, vi, si, sqi, ski = _infos(q, k, v, seqlens, seqlens_q, seqlens_k, True)
    p = _core.check(qi, ki, vi, layout=layout, causal=causal, scale=scale, seqlens=si, seqlens_q=sqi,
                    seqlens_k=ski)
    o, lse = _outputs(p, layout, return_lse, q.device)
    _core.launch(p, qi, ki, vi, o.data_ptr(), _o_layout(p, layout)[2], lse_ptr=lse.data_ptr() if return_lse else 0,
                 causal=causal, scale=scale, seqlens=si, seqlens_q=sqi, seqlens_k=ski,
                 stream=_raw_stream(q.device.index))
    return o, lse


attention_op = torch.library.custom_op("dhp::attention", forward, mutates_args=())

# --------------------------------------------------------------------------
# The eager path without the dispatcher (attention() takes it when direct_ok).
#
# Everything _core.check decides depends on public metadata alone (shapes,
# strides, dtypes, devices, layout, causal, scale; never the addresses and
# never the contents), so its answer for one set of metadata is kept and
# reused: a call whose metadata matches a checked one skips the Python checks
# (about 6 us) and the metadata reads through torch_info (about 8 us). The
# library's own checks (alignment, overlap, launch limits) run on every call
# (the C ABI's validate, in _C.forward), since they depend on the addresses.
# Only calls that passed the checks are kept; a bad call raises every time.

# A plan: (device index, o's size and allocation strides, lse's size or None,
# and _core.c_public_args: the C ABI's arguments other than pointers, stream
# and device).
_PLANS: dict = {}
_PLANS_MAX = 256  # distinct public shapes kept; the table is cleared when full


def _meta(t):
    # is_cuda with get_device(): get_device() alone is the index of any
    # accelerator (an XPU tensor's too), and -1 for CPU and meta tensors.
    return None if t is None else (t.shape, t.stride(), t.dtype, t.is_cuda, t.get_device())


def _ptr(t) -> int:
    return 0 if t is None else t.data_ptr()


def _make_plan(q, k, v, seqlens, seqlens_q, seqlens_k, causal, scale, return_lse, layout):
    qi, ki, vi, si, sqi, ski = _infos(q, k, v, seqlens, seqlens_q, seqlens_k, False)
    p = _core.check(qi, ki, vi, layout=layout, causal=causal, scale=scale, seqlens=si, seqlens_q=sqi,
                    seqlens_k=ski)
    o_size, o_alloc_strides, o_strides = _o_layout(p, layout)
    return (-1 if p.device_index is None else p.device_index, o_size, o_alloc_strides,
            (p.batch, p.heads_q, p.seqlen_q) if return_lse else None,
            _core.c_public_args(p, o_strides, causal, scale))


def forward_eager(q: Tensor, k: Tensor, v: Tensor, seqlens: Optional[Tensor], seqlens_q: Optional[Tensor],
                  seqlens_k: Optional[Tensor], causal: bool, scale: Optional[float], return_lse: bool,
                  layout: str) -> tuple[Tensor, Optional[Tensor]]:
    """forward() for direct_ok calls: the same checks (kept per public
    metadata), the same outputs, bits and errors; lse is None unless
    return_lse. causal and return_lse must be bools (attention() checks)."""
    if type(causal) is not bool or type(return_lse) is not bool:  # 1 == True: the key cannot tell them apart
        raise TypeError(f"causal, return_lse: must be bools, got {type(causal).__name__}, "
                        f"{type(return_lse).__name__}")
    # type(scale): True == 1.0 and hashes alike, yet check_scale refuses a bool.
    key = (_meta(q), _meta(k), _meta(v), _meta(seqlens), _meta(seqlens_q), _meta(seqlens_k), causal, scale,
           type(scale), return_lse, layout)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _make_plan(q, k, v, seqlens, seqlens_q, seqlens_k, causal, scale, return_lse, layout)
        if len(_PLANS) >= _PLANS_MAX:
            _PLANS.clear()
        _PLANS[key] = plan
    device, o_size, o_alloc_strides, lse_size, (shape, strides, flags) = plan
    o = q.new_empty_strided(o_size, o_alloc_strides)
    lse = None if lse_size is None else q.new_empty(lse_size, dtype=torch.float32)
    _core.require_C().forward(*shape, q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), strides, _ptr(lse),
                              *flags, _ptr(seqlens), _ptr(seqlens_q), _ptr(seqlens_k), 0, 0, _raw_stream(device),
                              device, True)
    return o, lse


_Tensor = torch.Tensor


def direct_ok(q, k, v) -> bool:
    """True when a call may skip the dispatcher and run `forward` itself: eager
    mode, plain tensors, no autograd graph to record, no dispatch or function
    mode (fake tensors, tracing, profilers' modes all take the operator). The
    operator's Python dispatch costs about 20 µs a call, more than the kernel
    of a small problem; the result is the same bits either way."""
    return (not torch.compiler.is_compiling() and type(q) is _Tensor and type(k) is _Tensor
            and type(v) is _Tensor and q.is_cuda
            and not (torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad))
            and torch._C._len_torch_dispatch_stack() == 0 and not torch._C._is_torch_function_mode_enabled())


@attention_op.register_fake
def _(q, k, v, seqlens, seqlens_q, seqlens_k, causal, scale, return_lse, layout):
    qi, ki, vi, si, sqi, ski = _infos(q, k, v, seqlens, seqlens_q, seqlens_k, False)
    p = _core.check(qi, ki, vi, layout=layout, causal=causal, scale=scale, seqlens=si, seqlens_q=sqi,
                    seqlens_k=ski, fake=True)
    return _outputs(p, layout, return_lse, q.device)


def _setup_context(ctx, inputs, output):
    pass


def _backward(ctx, grad_o, grad_lse):
    # The library implements the forward pass only; say so instead of
    # returning wrong (zero) gradients.
    raise NotImplementedError("dhp_attention: the backward pass is not implemented (forward/inference only); "
                              "run under torch.no_grad() or torch.inference_mode()")


attention_op.register_autograd(_backward, setup_context=_setup_context)
