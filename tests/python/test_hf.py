"""Hugging Face integration. The mask-builder tests run on the CPU; the model
tests build a small randomly initialised Llama (GQA) from a config, with no
download, and compare attn_implementation="dhp" with "sdpa" on the GPU."""
from __future__ import annotations

import pytest

from conftest import needs_gpu, needs_torch, needs_transformers, reference, torch

pytestmark = [needs_torch, needs_transformers]


@pytest.fixture(scope="module")
def hf():
    from dhp_attention.integrations import transformers as integ

    assert integ.register() == "dhp"
    return integ


def _mask(lengths, S, left=False):
    m = torch.zeros(len(lengths), S, dtype=torch.long)
    for b, n in enumerate(lengths):
        if left:
            m[b, S - n:] = 1
        else:
            m[b, :n] = 1
    return m


def test_register_makes_dhp_an_attention_implementation(hf):
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS

    assert "dhp" in AttentionInterface._global_mapping
    assert ALL_MASK_ATTENTION_FUNCTIONS["dhp"] is hf.dhp_mask


def test_right_padding_becomes_lengths(hf):
    from transformers.masking_utils import causal_mask_function

    m = _mask([10, 4, 0], 10).bool()
    out = hf.dhp_mask(3, 10, 10, mask_function=causal_mask_function, attention_mask=m)
    assert out.shared and out.k.dtype == torch.int32 and out.k.tolist() == [10, 4, 0]
    # Decode with a cache: queries are the last positions.
    out = hf.dhp_mask(3, 2, 10, q_offset=8, mask_function=causal_mask_function, attention_mask=m)
    assert not out.shared and out.k.tolist() == [10, 4, 0] and out.q.tolist() == [2, -4, -8]
    assert hf.dhp_mask(3, 10, 10, mask_function=causal_mask_function, attention_mask=None) is None
    # A static cache: 10 slots, 6 tokens seen; the empty slots are excluded as key padding.
    out = hf.dhp_mask(3, 2, 10, q_offset=torch.tensor(4), mask_function=causal_mask_function, attention_mask=None)
    assert out.k.tolist() == [6, 6, 6] and out.q.tolist() == [2, 2, 2] and out.k.is_contiguous()


@pytest.mark.parametrize("what", ["left", "holes", "sliding", "kv_offset"])
def test_unsupported_masks_raise(hf, what):
    from transformers.masking_utils import causal_mask_function, sliding_window_causal_mask_function

    m = _mask([6, 3], 8, left=what == "left").bool()
    fn = causal_mask_function
    kw = {}
    if what == "holes":
        m[0, 2] = False
    if what == "sliding":
        fn = sliding_window_causal_mask_function(4)
    if what == "kv_offset":
        kw["kv_offset"] = 2
    with pytest.raises(ValueError, match="dhp attention|right padding"):
        hf.dhp_mask(2, 8, 8, mask_function=fn, attention_mask=m, **kw)


def test_dropout_and_4d_masks_raise(hf):
    q = torch.empty(1, 4, 8, 64, dtype=torch.float16, device="meta")
    with pytest.raises(ValueError, match="^dropout"):
        hf.dhp_attention_forward(torch.nn.Module(), q, q, q, None, dropout=0.1)
    with pytest.raises(ValueError, match="2-D right-padding mask"):
        hf.dhp_attention_forward(torch.nn.Module(), q, q, q, torch.ones(1, 1, 8, 8, dtype=torch.bool))
    with pytest.raises(ValueError, match="^sliding_window"):
        hf.dhp_attention_forward(torch.nn.Module(), q, q, q, None, sliding_window=4)


# -- the model -----------------------------------------------------------------

def _model(impl, seed_state, device="cuda", dtype=None):
    # dtype resolved here, not in the signature: without PyTorch `torch` is
    # None and a default argument would fail the whole file's collection
    # (instead of its tests reporting "skipped: PyTorch not installed").
    dtype = torch.float16 if dtype is None else dtype
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=512, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                      attn_implementation=impl)  # head_dim 64, GQA 4 -> 2
    torch.manual_seed(seed_state)
    return LlamaForCausalLM(cfg).to(device=device, dtype=dtype).eval()


def test_llama_plumbing_on_cpu(hf, monkeypatch):
    """The integration's side of the contract without a GPU: the model reaches
    our function with the right layout, GQA heads and lengths. The kernel is
    replaced by the float64 reference (same arguments), so the logits must
    match SDPA's on the real tokens."""
    calls = []

    def fake_attention(q, k, v, **kw):
        calls.append({n: (x.tolist() if isinstance(x, torch.Tensor) else x) for n, x in kw.items()})
        return reference(q, k, v, **kw)[0].to(q.dtype)

    monkeypatch.setattr(hf.dhp_attention, "attention", fake_attention)
    lengths = [12, 7, 1]
    ids = torch.randint(0, 512, (3, 12))
    mask = _mask(lengths, 12)
    logits = {}
    for impl in ("sdpa", "dhp"):
        with torch.no_grad():
            logits[impl] = _model(impl, 1234, "cpu", torch.float32)(input_ids=ids, attention_mask=mask).logits
    assert len(calls) == 2 and calls[0] == dict(causal=True, scale=0.125, layout="bhsd", seqlens=lengths)
    torch.testing.assert_close(logits["dhp"][mask.bool()], logits["sdpa"][mask.bool()], atol=1e-4, rtol=1e-4)
    with torch.no_grad(), pytest.raises(ValueError, match=r"^q: must be on a CUDA device, got cpu"):
        monkeypatch.undo()
        _model("dhp", 0, "cpu")(input_ids=ids, attention_mask=mask)


@needs_gpu
def test_llama_right_padded_batch_matches_sdpa(hf):
    seed = int(torch.randint(0, 2**31, ()))
    lengths = [96, 61, 17, 1]
    S = max(lengths)
    ids = torch.randint(0, 512, (len(lengths), S), device="cuda")
    mask = _mask(lengths, S).cuda()
    logits = {}
    for impl in ("sdpa", "dhp"):
        model = _model(impl, seed)
        assert model.config._attn_implementation == impl
        with torch.no_grad():
            logits[impl] = model(input_ids=ids, attention_mask=mask).logits.float()
    real = mask.bool()
    a, b = logits["dhp"][real], logits["sdpa"][real]
    assert a.abs().max() > 0.1, "logits too small to compare"
    torch.testing.assert_close(a, b, atol=2e-2, rtol=2e-2)


@needs_gpu
def test_llama_decode_step_with_cache_matches_sdpa(hf):
    seed = int(torch.randint(0, 2**31, ()))
    ids = torch.randint(0, 512, (2, 40), device="cuda")
    out = {}
    for impl in ("sdpa", "dhp"):
        model = _model(impl, seed)
        with torch.no_grad():
            pre = model(input_ids=ids[:, :39], use_cache=True)
            out[impl] = model(input_ids=ids[:, 39:], past_key_values=pre.past_key_values).logits.float()
    torch.testing.assert_close(out["dhp"], out["sdpa"], atol=2e-2, rtol=2e-2)


@needs_gpu
def test_llama_left_padding_raises(hf):
    model = _model("dhp", 0)
    ids = torch.randint(0, 512, (2, 16), device="cuda")
    with torch.no_grad(), pytest.raises(ValueError, match="right padding"):
        model(input_ids=ids, attention_mask=_mask([16, 9], 16, left=True).cuda())


@needs_gpu
def test_llama_under_torch_compile_fullgraph(hf):
    torch._dynamo.reset()
    model = _model("dhp", int(torch.randint(0, 2**31, ())))
    ids = torch.randint(0, 512, (2, 64), device="cuda")
    mask = _mask([64, 23], 64).cuda()
    with torch.no_grad():
        eager = model(input_ids=ids, attention_mask=mask).logits
        compiled = torch.compile(model, fullgraph=True)(input_ids=ids, attention_mask=mask).logits
    real = mask.bool()
    torch.testing.assert_close(compiled[real].float(), eager[real].float(), atol=2e-2, rtol=2e-2)
