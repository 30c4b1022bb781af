"""DHP-Safe FlashAttention for Python: constant-time fused attention.

    import dhp_attention
    o = dhp_attention.attention(q, k, v, causal=True)            # q [B, S, H, D] fp16/bf16 CUDA
    o = dhp_attention.attention(q, k, v, layout="bhsd")           # q [B, H, S, D]
    o, lse = dhp_attention.attention(q, k, v, seqlens=lengths, return_lse=True)

Semantics are the C++ API's (README.md, docs/threat-model.md): bottom-right
causal alignment, secret lengths clamped into [0, S], rows with no visible key
give o = 0 and lse = -inf. `attention` is the PyTorch operator
torch.ops.dhp.attention (works under torch.compile and CUDA graphs);
`attention_into` writes into caller-provided outputs and takes any array with
__cuda_array_interface__ or DLPack (CuPy, JAX, ...), with or without PyTorch.
Hugging Face: dhp_attention.integrations.transformers.register().
"""
from __future__ import annotations

from typing import Any, Optional

from . import _core
from ._core import HEAD_DIMS, LAYOUTS

__all__ = ["attention", "attention_into", "calibrate_time_budget", "deadline_state", "is_available", "HEAD_DIMS",
           "LAYOUTS", "__version__"]

try:
    from importlib.metadata import version as _version

    __version__ = _version("dhp-attention")
except Exception:  # running from a source or build tree
    __version__ = "0.2.0"

torch = _core.torch
from ._deadline import calibrate_time_budget, deadline_state  # noqa: E402
if torch is not None:
    from . import _torch_ops  # noqa: F401  (registers torch.ops.dhp.attention)


def is_available() -> bool:
    """True when the compiled module loads and a CUDA device is visible to it."""
    return _core._C is not None and _core._C.device_count() > 0


def _is_tensor(x) -> bool:
    return torch is not None and isinstance(x, torch.Tensor)


def attention(q, k, v, *, causal: bool = False, scale: Optional[float] = None, seqlens=None, seqlens_q=None,
              seqlens_k=None, return_lse: bool = False, layout: str = "bshd"):
    """softmax(q·kᵀ·scale)·v on the current CUDA stream.

    q: [B, S_q, H_q, D] ("bshd") or [B, H_q, S_q, D] ("bhsd"), float16 or
    bfloat16, on a CUDA device, last dimension contiguous; k, v: the same with
    S_k and H_kv (H_q a multiple of H_kv: GQA/MQA); D in {64, 128, 256}.
    causal: bottom-right aligned (key j visible to query i iff j <= i + L_k - L_q).
    scale: default 1/sqrt(D). seqlens (shared, requires S_q == S_k) or
    seqlens_q / seqlens_k: int32 [B] on q's device, secret per-sequence lengths.
    Returns o shaped like q (for "bhsd" with BSHD memory order, as SDPA), and
    with return_lse=True also lse float32 [B, H_q, S_q] (natural log).
    Raises TypeError/ValueError naming the argument; nothing runs then.
    """
    if not _is_tensor(q):
        return _attention_generic(q, k, v, causal=causal, scale=scale, seqlens=seqlens, seqlens_q=seqlens_q,
                                  seqlens_k=seqlens_k, return_lse=return_lse, layout=layout)
    # Checks the operator's schema cannot express with a clear message; the
    # rest runs inside the operator (and its fake, at trace time).
    for name, x in (("k", k), ("v", v)):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{name}: expected a torch.Tensor like q, got {type(x).__name__}")
    for name, x in (("seqlens", seqlens), ("seqlens_q", seqlens_q), ("seqlens_k", seqlens_k)):
        if x is not None and not isinstance(x, torch.Tensor):
            raise TypeError(f"{name}: expected an int32 torch.Tensor of shape (B,) or None, got {type(x).__name__}")
    if not isinstance(return_lse, bool):
        raise TypeError(f"return_lse: must be a bool, got {type(return_lse).__name__}")
    if not isinstance(causal, bool):
        raise TypeError(f"causal: must be a bool, got {type(causal).__name__}")
    _core.check_scale(scale)
    if not isinstance(layout, str):
        raise ValueError(f"layout: must be 'bshd' or 'bhsd', got {layout!r}")
    args = (q, k, v, seqlens, seqlens_q, seqlens_k, causal, None if scale is None else float(scale), return_lse,
            layout)
    o, lse = _torch_ops.forward_eager(*args) if _torch_ops.direct_ok(q, k, v) else torch.ops.dhp.attention(*args)
    return (o, lse) if return_lse else o


def _attention_generic(q, k, v, **kw):
    # Not a torch tensor: check everything (so errors name the argument), then
    # explain that allocation needs PyTorch or caller-provided outputs.
    q_info = _core.describe(q, "q")
    _problem(q_info, k, v, kw)
    raise TypeError(f"q: attention() allocates its outputs with PyTorch and takes torch tensors; for "
                    f"{type(q).__module__}.{type(q).__qualname__} arrays call attention_into(q, k, v, out, ...)")


def _problem(q_info, k, v, kw):
    k_info, v_info = _core.describe(k, "k"), _core.describe(v, "v")
    lens = {n: None if kw.get(n) is None else _core.describe(kw[n], n) for n in ("seqlens", "seqlens_q", "seqlens_k")}
    p = _core.check(q_info, k_info, v_info, layout=kw["layout"], causal=kw["causal"], scale=kw["scale"], **lens)
    return p, k_info, v_info, lens


def attention_into(q, k, v, out, *, lse=None, causal: bool = False, scale: Optional[float] = None, seqlens=None,
                   seqlens_q=None, seqlens_k=None, layout: str = "bshd", stream: Any = None,
                   time_budget_ns: int = 0, deadline_state=None) -> None:
    """Like attention(), writing o into `out` (shaped like q, any strides with
    a contiguous last dimension) and, if given, lse into `lse` (float32
    [B, H_q, S_q], contiguous). Takes torch tensors or any CUDA array with
    __cuda_array_interface__ or DLPack. stream: a cudaStream_t as an int, a
    torch.cuda.Stream or a CuPy stream; None means torch's current stream for
    torch tensors, else the stream the arrays' __cuda_array_interface__ names
    (all the same one, else ValueError), else the legacy default stream (0). Not traced by
    torch.compile (it mutates its outputs); use attention() there.

    time_budget_ns, deadline_state: the deadline (threat model §8): the call ends on the GPU at its
    start + time_budget_ns (1 ns .. 10 s) on the GPU's nanosecond clock, not the SM clock, so that
    its duration does not follow the secret lengths' effect on power (a residual of 0-6 ns per 20 µs
    call remains after the deadline, either sign, larger the further apart the compared lengths'
    work is; sessions 48-51). deadline_state:
    int64 [3] on q's device, zeroed once (deadline_state() makes one), one per stream in flight; the
    call writes (start_ns, overruns, last_work_ns) there. Calibrate the budget on public inputs
    (calibrate_time_budget: full lengths, random values; graph=N for calls replayed from CUDA
    graphs) and keep overruns at 0: an overrun waits
    for a later multiple of the budget, and slower inputs overrun more often."""
    kw = dict(causal=causal, scale=scale, seqlens=seqlens, seqlens_q=seqlens_q, seqlens_k=seqlens_k, layout=layout)
    q_info = _core.describe(q, "q")
    state_info = None if deadline_state is None else _core.describe(deadline_state, "deadline_state")
    _core.check_deadline(time_budget_ns, state_info, q_info)
    p, k_info, v_info, lens = _problem(q_info, k, v, kw)
    o_info = _core.describe(out, "out")
    o_strides = _core.check_out(o_info, p, q_info, layout)
    lse_ptr, lse_info = 0, None
    if lse is not None:
        lse_info = _core.describe(lse, "lse")
        _core.check_lse(lse_info, p)
        lse_ptr = lse_info.ptr
    if stream is None:
        stream = torch.cuda.current_stream(q.device).cuda_stream if _is_tensor(q) and q.is_cuda else \
            _core.producer_stream([q_info, k_info, v_info, o_info, lse_info, state_info, *lens.values()])
    _core.launch(p, q_info, k_info, v_info, o_info.ptr, o_strides, lse_ptr=lse_ptr, causal=causal, scale=scale,
                 time_budget_ns=time_budget_ns, deadline_state=state_info, stream=_core.stream_handle(stream), **lens)
