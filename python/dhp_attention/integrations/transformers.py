"""Hugging Face transformers integration: attn_implementation="dhp".

    from dhp_attention.integrations.transformers import register
    register()
    model = AutoModelForCausalLM.from_pretrained(name, attn_implementation="dhp", torch_dtype=torch.float16)

register() adds "dhp" to transformers' AttentionInterface (the attention
function) and AttentionMaskInterface (the mask builder), so the mask the model
asks for is never dropped silently: a causal or bidirectional mask with right
padding becomes secret per-sequence lengths (computed on the GPU; the host
reads one bit, "is this right padding", in eager mode); sliding-window,
chunked, packed-sequence, left-padded, custom and 4-D masks raise ValueError.
Dropout > 0 raises. GQA/MQA: the key/value heads are passed as they are.

Rows of padding queries come out as zeros (SDPA fills them with something
else); real tokens agree with SDPA.
"""
from __future__ import annotations

import dataclasses
import logging
from typing import Optional

import torch
from transformers import masking_utils as _mu

import dhp_attention

NAME = "dhp"
logger = logging.getLogger(__name__)

# Keyword arguments some models pass that change the attention itself: we
# refuse them rather than compute something else.
_UNSUPPORTED_KWARGS = ("sliding_window", "softcap", "s_aux", "position_bias", "head_mask", "attention_chunk_size",
                       "cu_seq_lens_q", "cu_seq_lens_k")


@dataclasses.dataclass(frozen=True)
class PaddingLengths:
    """What the "dhp" mask builder hands to the attention function: valid
    key lengths [B] (int32, on the GPU) and, when queries and keys are the same
    positions (no cache offset), shared=True so causal tiles can be skipped."""

    k: torch.Tensor
    q: Optional[torch.Tensor] = None
    shared: bool = False


def _right_padding_lengths(mask: torch.Tensor, name: str) -> torch.Tensor:
    """Lengths of a 2-D right-padding mask (1 = token, 0 = padding). Raises
    ValueError for any other pattern (left padding, holes)."""
    if mask.dim() != 2:
        raise ValueError(f"{name}: the dhp attention takes a 2-D right-padding mask (batch, length); got a "
                         f"{mask.dim()}-D mask of shape {tuple(mask.shape)} (custom or prepared 4-D masks are "
                         "not supported)")
    mask = mask.to(torch.bool)
    lengths = mask.sum(dim=-1, dtype=torch.int32)
    positions = torch.arange(mask.shape[-1], device=mask.device, dtype=torch.int32)
    ok = torch.equal(positions[None, :] < lengths[:, None], mask) if not torch.compiler.is_compiling() else None
    if ok is None:  # no host read while compiling: assert on the device instead
        torch._assert_async(((positions[None, :] < lengths[:, None]) == mask).all(),
                            "dhp attention: attention_mask is not right padding")
    elif not ok:
        raise ValueError(f"{name}: the dhp attention needs right padding (each row: ones, then zeros); this mask "
                         "has left padding or holes. Tokenize with padding_side='right', or use another "
                         "attn_implementation")
    return lengths


def dhp_mask(batch_size: int, q_length: int, kv_length: int, q_offset=0, kv_offset: int = 0,
             mask_function=None, attention_mask: Optional[torch.Tensor] = None, **kwargs):
    """AttentionMaskInterface entry: returns None (no padding) or PaddingLengths."""
    if mask_function not in (None, _mu.causal_mask_function, _mu.bidirectional_mask_function):
        raise ValueError("dhp attention supports causal or bidirectional masks with right padding only; got mask "
                         f"function {getattr(mask_function, '__qualname__', mask_function)} (sliding-window, "
                         "chunked, packed-sequence or custom masks)")
    if not isinstance(kv_offset, int) or kv_offset != 0:
        raise ValueError(f"dhp attention: kv_offset {kv_offset} (a sliding or chunked cache) is not supported")
    bidirectional = mask_function is _mu.bidirectional_mask_function
    if attention_mask is not None:
        attention_mask = attention_mask[:, -kv_length:]
        if attention_mask.shape[-1] != kv_length:
            raise ValueError(f"attention_mask: covers {attention_mask.shape[-1]} key positions, the keys are "
                             f"{kv_length}; this cache layout is not supported by the dhp attention")
        lk = _right_padding_lengths(attention_mask, "attention_mask")
    elif isinstance(q_offset, torch.Tensor) or q_offset + q_length < kv_length:
        # A static cache: keys past the tokens seen so far are empty slots.
        seen = torch.as_tensor(q_offset, device=kwargs.get("device")) + q_length
        lk = seen.to(torch.int32).expand(batch_size).contiguous()
    else:
        return None
    if bidirectional:  # queries are not masked (padding rows as in SDPA); keys are
        return PaddingLengths(k=lk)
    if isinstance(q_offset, int) and q_offset == 0 and q_length == kv_length:
        return PaddingLengths(k=lk, shared=True)
    # Query i sits at position q_offset + i: it is padding iff that is >= L_k.
    return PaddingLengths(k=lk, q=lk - q_offset)


def dhp_attention_forward(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                          attention_mask, dropout: float = 0.0, scaling: Optional[float] = None,
                          is_causal: Optional[bool] = None, **kwargs):
    """AttentionInterface entry: (B, H, S, D) in, ((B, S, H, D), None) out."""
    if dropout:
        raise ValueError(f"dropout: the dhp attention has no dropout (got {dropout}); set the model's attention "
                         "dropout to 0 or call model.eval()")
    for name in _UNSUPPORTED_KWARGS:
        if kwargs.get(name) is not None:
            raise ValueError(f"{name}: not supported by the dhp attention (got {kwargs[name]!r})")
    if kwargs.get("output_attentions", False):
        logger.warning("dhp attention does not return attention weights (output_attentions=True ignored)")
    causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    lengths = {}
    if isinstance(attention_mask, PaddingLengths):
        if attention_mask.shared:
            lengths["seqlens"] = attention_mask.k
        else:
            lengths["seqlens_k"] = attention_mask.k
            lengths["seqlens_q"] = attention_mask.q
    elif isinstance(attention_mask, torch.Tensor):
        # A 2-D padding mask passed straight in (not through our mask builder).
        lk = _right_padding_lengths(attention_mask[:, -key.shape[2]:] if attention_mask.dim() == 2
                                    else attention_mask, "attention_mask")
        if query.shape[2] == key.shape[2]:
            lengths["seqlens"] = lk
        else:
            lengths["seqlens_k"] = lk
            lengths["seqlens_q"] = lk - (key.shape[2] - query.shape[2]) if causal else None
    elif attention_mask is not None:
        raise ValueError(f"attention_mask: unsupported type {type(attention_mask).__name__} for the dhp attention")
    out = dhp_attention.attention(query, key, value, causal=bool(causal), scale=scaling, layout="bhsd", **lengths)
    return out.transpose(1, 2), None


def register(name: str = NAME) -> str:
    """Registers the attention function and its mask builder under `name`
    (default "dhp"); returns the name to pass as attn_implementation."""
    from transformers import AttentionInterface

    AttentionInterface.register(name, dhp_attention_forward)
    _mu.AttentionMaskInterface.register(name, dhp_mask)
    return name
