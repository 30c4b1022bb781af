"""GPU tests of dhp_attention.attention: agreement with a float64 reference and
with SDPA, padding isolation, determinism, torch.compile(fullgraph=True),
torch.library.opcheck, CUDA-graph capture, streams. Skipped without a CUDA
device ("skipped: no CUDA device")."""
from __future__ import annotations

import time

import pytest

import dhp_attention
from conftest import TOL, make_qkv, needs_gpu, rand, reference, rel_l2, torch

pytestmark = needs_gpu

DTYPES = ["float16", "bfloat16"]


def _dt(name):
    return getattr(torch, name)


def _lengths(B, S, device="cuda"):
    # Secret lengths across the whole range, 0 and S included, one past S too (clamped).
    lens = torch.randint(0, S + 2, (B,), device=device, dtype=torch.int32)
    lens[0] = S
    if B > 2:
        lens[1] = 0
    return lens


def _check(o, lse, ref_o, ref_lse, dtype, what):
    err = rel_l2(o, ref_o)
    assert err < TOL[dtype], f"{what}: relative L2 error {err:.3g} >= {TOL[dtype]}"
    assert torch.isfinite(o).all(), f"{what}: non-finite output"
    if lse is not None:
        fin = torch.isfinite(ref_lse)
        assert torch.equal(fin, torch.isfinite(lse)) and (lse[~fin] == float("-inf")).all(), f"{what}: lse -inf rows"
        # The C++ suite measures lse within 2e-6 of the float64 reference
        # (tests/support/harness.hpp); 1e-5 as there.
        torch.testing.assert_close(lse[fin], ref_lse[fin], atol=1e-5, rtol=1e-5, msg=f"{what}: lse")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("D", [64, 128, 256])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("layout", ["bshd", "bhsd"])
def test_matches_float64_reference(dtype, D, causal, layout):
    B, Sq, Sk, Hq, Hkv = 2, 200, 200, 4, 2  # odd length: partial tiles; GQA
    q, k, v = make_qkv(B, Sq, Sk, Hq, Hkv, D, _dt(dtype), layout)
    o, lse = dhp_attention.attention(q, k, v, causal=causal, return_lse=True, layout=layout)
    ro, rlse = reference(q, k, v, causal=causal, layout=layout)
    _check(o, lse, ro, rlse, dtype, f"{dtype} D={D} causal={causal} {layout}")
    _expect_poisoned_into_same(o, lse, q, k, v, dict(causal=causal, layout=layout))


def _expect_poisoned_into_same(o, lse, q, k, v, kw):
    """attention() allocates with torch.empty_strided, whose memory may hold
    an earlier correct result; the same call into NaN-poisoned out / lse
    must write every element, bit for bit as attention() did."""
    out, lse_out = torch.full_like(o, float("nan")), torch.full_like(lse, float("nan"))
    dhp_attention.attention_into(q, k, v, out, lse=lse_out, **kw)
    assert torch.equal(out, o), "attention_into over NaN differs from attention()"
    assert torch.equal(lse_out, lse), "lse over NaN differs from attention()'s"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("mode", ["shared", "separate", "q_only", "k_only"])
def test_secret_lengths_match_reference(dtype, causal, mode):
    B, Hq, Hkv, D = 5, 4, 1, 128  # MQA
    Sq, Sk = (160, 160) if mode == "shared" else (96, 224)
    q, k, v = make_qkv(B, Sq, Sk, Hq, Hkv, D, _dt(dtype))
    kw = {"shared": lambda: dict(seqlens=_lengths(B, Sq)),
          "separate": lambda: dict(seqlens_q=_lengths(B, Sq), seqlens_k=_lengths(B, Sk)),
          "q_only": lambda: dict(seqlens_q=_lengths(B, Sq)),
          "k_only": lambda: dict(seqlens_k=_lengths(B, Sk))}[mode]()
    o, lse = dhp_attention.attention(q, k, v, causal=causal, return_lse=True, **kw)
    ro, rlse = reference(q, k, v, causal=causal, **kw)
    _check(o, lse, ro, rlse, dtype, f"{mode} causal={causal}")
    _expect_poisoned_into_same(o, lse, q, k, v, dict(causal=causal, **kw))
    # Rows with no visible key are exactly zero, never NaN.
    assert torch.equal(o[torch.isinf(rlse).transpose(1, 2)], torch.zeros_like(o[torch.isinf(rlse).transpose(1, 2)]))


def test_padding_contents_never_reach_the_output():
    B, S, H, D = 3, 256, 4, 64
    q, k, v = make_qkv(B, S, S, H, H, D, torch.float16)
    lens = torch.tensor([256, 100, 7], dtype=torch.int32, device="cuda")
    o1 = dhp_attention.attention(q, k, v, seqlens=lens, causal=True)
    ro, _ = reference(q, k, v, seqlens=lens, causal=True)
    assert torch.isfinite(o1).all() and rel_l2(o1, ro) < TOL["float16"]  # not merely equal to itself
    for t in (q, k, v):
        for b, n in enumerate(lens.tolist()):
            t[b, n:] = float("nan")
    o2 = dhp_attention.attention(q, k, v, seqlens=lens, causal=True)
    assert torch.equal(o1, o2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal", [False, True])
def test_matches_sdpa(dtype, causal):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    B, S, Hq, Hkv, D = 2, 1024, 16, 4, 128
    q, k, v = make_qkv(B, S, S, Hq, Hkv, D, _dt(dtype), "bhsd")
    o = dhp_attention.attention(q, k, v, causal=causal, layout="bhsd")
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]):
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
    assert rel_l2(o, ref) < TOL[dtype]


def test_explicit_scale_and_cross_attention_alignment():
    B, Sq, Sk, H, D = 2, 64, 300, 4, 64
    q, k, v = make_qkv(B, Sq, Sk, H, H, D, torch.float16)
    o = dhp_attention.attention(q, k, v, causal=True, scale=0.3)
    ro, _ = reference(q, k, v, causal=True, scale=0.3)  # bottom-right: query i sees keys <= i + 236
    assert rel_l2(o, ro) < TOL["float16"]


def test_deterministic_and_batch_invariant():
    B, S, H, D = 4, 384, 8, 128
    q, k, v = make_qkv(B, S, S, H, H, D, torch.bfloat16)
    lens = _lengths(B, S)
    o1 = dhp_attention.attention(q, k, v, seqlens=lens, causal=True)
    o2 = dhp_attention.attention(q, k, v, seqlens=lens, causal=True)
    ro, _ = reference(q, k, v, seqlens=lens, causal=True)
    assert torch.isfinite(o1).all() and rel_l2(o1, ro) < TOL["bfloat16"]  # not merely equal to itself
    assert torch.equal(o1, o2)
    # Threat model G5: a sequence's output does not depend on its batch neighbours.
    o_alone = dhp_attention.attention(q[2:3], k[2:3], v[2:3], seqlens=lens[2:3], causal=True)
    assert torch.equal(o1[2:3], o_alone)


@pytest.mark.parametrize("D", [64, 128])
@pytest.mark.parametrize("lengths", [False, True])
@pytest.mark.parametrize("Sq,Hq,Hkv", [(1, 32, 8), (1, 8, 8), (2, 32, 8), (2, 8, 8), (4, 16, 8), (7, 8, 8)])
def test_decode_step_matches_reference_alone_or_batched(D, lengths, Sq, Hq, Hkv):
    # One decoding step (S_q = 1; GQA 32/8 and MHA) and causal drafted tokens
    # (S_q 2-7: a group of 4 at S_q 2 and of 2 at S_q 4 packed as 8 rows,
    # MHA unpacked): at most 8 rows per tile, the narrow decode kernel (the
    # 64-row decode kernel at S_q > 1 in a DHP_SM90_NARROW_MULTI_SQ=0 build).
    # Split units at B 9 and, alone, at B 1 -- where the
    # launcher may choose other units (merging, or a different grid) -- give
    # the same bits (threat model G5). S_k not a multiple of any key tile;
    # secret lengths across the range, 0 included (L_q < S_q too).
    B, Sk = 9, 3001 if Sq == 1 else 4099  # MHA S_q > 1 takes the decode path from S_k 4096 (decode.hpp)
    q, k, v = make_qkv(B, Sq, Sk, Hq, Hkv, D, torch.float16)
    kw = dict(seqlens_k=_lengths(B, Sk)) if lengths else {}
    if lengths and Sq > 1:
        kw["seqlens_q"] = _lengths(B, Sq)
    causal = Sq > 1
    o, lse = dhp_attention.attention(q, k, v, causal=causal, return_lse=True, **kw)
    ro, rlse = reference(q, k, v, causal=causal, **kw)
    what = f"decode S_q {Sq} D{D} {Hq}/{Hkv} lengths={lengths}"
    _check(o, lse, ro, rlse, "float16", what)
    for b in (0, 4):
        kb = {n: t[b:b + 1] for n, t in kw.items()}
        o_alone = dhp_attention.attention(q[b:b + 1], k[b:b + 1], v[b:b + 1], causal=causal, **kb)
        assert torch.equal(o[b:b + 1], o_alone), f"{what}: sequence {b} alone differs"


def test_attention_into_with_poisoned_output_writes_every_element():
    B, S, H, D = 2, 130, 4, 64
    q, k, v = make_qkv(B, S, S, H, H, D, torch.float16)
    lens = torch.tensor([130, 50], dtype=torch.int32, device="cuda")
    out = torch.full_like(q, float("nan"))
    lse = torch.full((B, H, S), float("nan"), device="cuda")
    dhp_attention.attention_into(q, k, v, out, lse=lse, seqlens=lens)
    ro, rlse = reference(q, k, v, seqlens=lens)
    assert not torch.isnan(out).any() and not torch.isnan(lse).any()
    _check(out, lse, ro, rlse, "float16", "attention_into")


def test_deadline_pads_the_call_and_keeps_the_bits():
    # The deadline (threat model §8) through attention_into: the call lasts its
    # budget between events, writes the bits of the same call without one over
    # NaN-poisoned outputs, and counts no overrun; a budget below the work
    # counts every call.
    B, Sq, Sk, Hq, Hkv, D = 2, 1, 3000, 32, 8, 128  # a decode step with secret key lengths
    q, k, v = make_qkv(B, Sq, Sk, Hq, Hkv, D, torch.float16)
    lens = torch.tensor([3000, 17], dtype=torch.int32, device="cuda")
    plain = torch.full_like(q, float("nan"))
    dhp_attention.attention_into(q, k, v, plain, seqlens_k=lens)
    state = dhp_attention.deadline_state()
    budget = 2_000_000  # 2 ms, far above the work
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3):
        out = torch.full_like(q, float("nan"))
        start.record()
        dhp_attention.attention_into(q, k, v, out, seqlens_k=lens, time_budget_ns=budget, deadline_state=state)
        end.record()
        end.synchronize()
        assert start.elapsed_time(end) * 1e6 >= budget - 2000, "the call ended before its deadline"
        assert torch.equal(out, plain), "the deadline changed the output"
    start_ns, overruns, work_ns = state.tolist()
    assert overruns == 0 and start_ns > 0 and 0 < work_ns < budget
    ro, _ = reference(q, k, v, seqlens_k=lens)
    _check(plain, None, ro, None, "float16", "decode step")
    for _ in range(2):
        dhp_attention.attention_into(q, k, v, out, seqlens_k=lens, time_budget_ns=1, deadline_state=state)
    torch.cuda.synchronize()
    assert state[1].item() == 2, "a 1 ns budget must count every call as an overrun"
    assert torch.equal(out, plain)


def test_calibrated_budget_covers_the_calls_without_overrun():
    # calibrate_time_budget on the gate's small call (causal, secret lengths):
    # it must not touch the caller's tensors, its budget must lie above the
    # plain call and within reason, and calls under it -- on real random
    # lengths, back to back -- must last at least the budget and not overrun.
    B, S, H, D = 1, 512, 8, 64
    q, k, v = make_qkv(B, S, S, H, H, D, torch.float16)
    lq = torch.randint(0, S + 1, (B,), dtype=torch.int32, device="cuda")
    lk = torch.randint(0, S + 1, (B,), dtype=torch.int32, device="cuda")
    before = [t.clone() for t in (q, k, v, lq, lk)]
    budget = dhp_attention.calibrate_time_budget(q, k, v, causal=True, seqlens_q=lq, seqlens_k=lk)
    assert all(torch.equal(a, b) for a, b in zip(before, (q, k, v, lq, lk))), "calibration changed an input"
    out = torch.empty_like(q)
    state = dhp_attention.deadline_state()

    def timed_calls(n, **deadline):
        # n calls on fresh random lengths (drawn before, one row per call),
        # back to back: the host enqueues them while the GPU sleeps (~50 ms,
        # checked to outlast the enqueueing), so no span holds host time.
        lqs = torch.randint(0, S + 1, (n, B), dtype=torch.int32, device="cuda")
        lks = torch.randint(0, S + 1, (n, B), dtype=torch.int32, device="cuda")
        evs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
        torch.cuda.synchronize()
        torch.cuda._sleep(100_000_000)
        slept = torch.cuda.Event()
        slept.record()
        for i, (a, b) in enumerate(evs):
            a.record()
            dhp_attention.attention_into(q, k, v, out, causal=True, seqlens_q=lqs[i], seqlens_k=lks[i], **deadline)
            b.record()
        assert not slept.query(), "the host enqueued slower than the GPU slept: the spans may hold host time"
        torch.cuda.synchronize()
        return sorted(a.elapsed_time(b) * 1e6 for a, b in evs)

    plain = timed_calls(32)
    assert plain[16] < budget < 10 * plain[16] + 50_000, (budget, plain[16])
    # One untimed deadline call first: the deadline kernels' lazy loading must
    # not delay a timed call's wait past its deadline (session 48).
    dhp_attention.attention_into(q, k, v, out, causal=True, seqlens_q=lq, seqlens_k=lk, time_budget_ns=budget,
                                 deadline_state=state)
    torch.cuda.synchronize()
    before_overruns = state[1].item()
    spans = timed_calls(64, time_budget_ns=budget, deadline_state=state)
    overruns = state[1].item() - before_overruns
    assert overruns == 0, f"{overruns} overruns in 64 calls under the calibrated budget"
    assert min(spans) >= budget - 100, (min(spans), budget)  # 100 ns: the GPU clock's 32 ns tick and event rounding


def _sustained_overruns(q, k, v, lengths, budget, seconds):
    """Overruns and calls of `seconds` of deadline calls back to back (the
    queue never runs dry: three batches of 32 at most), on a fresh state."""
    out, state = torch.empty_like(q), dhp_attention.deadline_state()
    calls, queued, t_end = 0, [], time.perf_counter() + seconds
    while time.perf_counter() < t_end:
        for _ in range(32):
            dhp_attention.attention_into(q, k, v, out, seqlens=lengths, time_budget_ns=budget, deadline_state=state)
        calls += 32
        queued.append(torch.cuda.Event())
        queued[-1].record()
        if len(queued) > 2:
            queued.pop(0).synchronize()
    torch.cuda.synchronize()
    return state[1].item(), calls


def test_calibrated_budget_holds_under_sustained_load():
    # A large call (the benchmark's secret-length shape) run for seconds at
    # full lengths sits at the power cap, its slowest. A budget calibrated with
    # a pause around every batch (the form before session 56) overran on 15 %
    # of such calls (1 225 of 8 176, H200); calibrate_time_budget now measures
    # large calls under sustained load, so none may overrun. The same loop
    # under a budget 20 % lower must count overruns (sessions 56-57: the
    # calibrated budget, 1 084 us, is 8.7 % above the sustained full-length
    # call, 997 us; 0.8 x is 867 us), which shows that the zero above is
    # measured, not a counter that never moves.
    B, S, H, D = 4, 4096, 16, 128
    q, k, v = make_qkv(B, S, S, H, H, D, torch.bfloat16)
    full = torch.full((B,), S, dtype=torch.int32, device="cuda")
    budget = dhp_attention.calibrate_time_budget(q, k, v, seqlens=full, calls=1024)
    overruns, calls = _sustained_overruns(q, k, v, full, budget, 4.0)
    assert overruns == 0, f"{overruns} overruns in {calls} full-length calls under the calibrated budget {budget} ns"
    tight = int(budget * 0.8)
    overruns, calls = _sustained_overruns(q, k, v, full, tight, 2.0)
    print(f"budget {budget} ns: 0 overruns; {tight} ns: {overruns} of {calls} calls overran")
    # An overrun waits to two budgets, and the pause lets the clock rise for
    # the next call, so not every call overruns: a tenth at least.
    assert overruns >= calls // 10, f"only {overruns} of {calls} calls overran a budget of {tight} ns (calibrated {budget})"


def test_graph_calibrated_budget_holds_in_graph_replay():
    # calibrate_time_budget(graph=N) measures the calls as a CUDA graph of N
    # replays them (a decode loop's form): on the gate's small call its budget
    # must be smaller than the stream's (session 57: 12.4 against 20.4 us),
    # and graphs of 20 deadline calls, each call with its own random lengths,
    # replayed back to back for 2 s, must not overrun, and last on average at
    # least a budget per call.
    B, S, H, D, N = 1, 512, 8, 64, 20
    q, k, v = make_qkv(B, S, S, H, H, D, torch.float16)
    lq = torch.randint(0, S + 1, (N, B), dtype=torch.int32, device="cuda")
    lk = torch.randint(0, S + 1, (N, B), dtype=torch.int32, device="cuda")
    budget = dhp_attention.calibrate_time_budget(q, k, v, causal=True, seqlens_q=lq[0], seqlens_k=lk[0], graph=N,
                                                 calls=4096, warm_s=0.5)
    streamed = dhp_attention.calibrate_time_budget(q, k, v, causal=True, seqlens_q=lq[0], seqlens_k=lk[0], calls=4096)
    print(f"budget from graphs of {N}: {budget} ns; from the stream: {streamed} ns")
    assert budget < streamed, (budget, streamed)
    out, state = torch.empty_like(q), dhp_attention.deadline_state()
    dhp_attention.attention_into(q, k, v, out, causal=True, seqlens_q=lq[0], seqlens_k=lk[0],
                                 time_budget_ns=budget, deadline_state=state)  # outside the capture: first-call work
    torch.cuda.synchronize()
    state.zero_()
    g, side = torch.cuda.CUDAGraph(), torch.cuda.Stream()
    with torch.cuda.stream(side), torch.cuda.graph(g, stream=side):
        for i in range(N):
            dhp_attention.attention_into(q, k, v, out, causal=True, seqlens_q=lq[i], seqlens_k=lk[i],
                                         time_budget_ns=budget, deadline_state=state, stream=side)
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    replays, t_end = 0, time.perf_counter() + 2.0
    e0.record()
    while time.perf_counter() < t_end:
        g.replay()
        replays += 1
        if replays % 64 == 0:
            torch.cuda.synchronize()
    e1.record()
    torch.cuda.synchronize()
    calls = replays * N
    assert state[1].item() == 0, f"{state[1].item()} overruns in {calls} graph-replayed calls under {budget} ns"
    per_call_ns = e0.elapsed_time(e1) * 1e6 / calls
    assert per_call_ns >= budget - 100, (per_call_ns, budget)


class _DLPackOnly:
    """Exposes a tensor through DLPack alone (no torch type, no CUDA array interface)."""

    def __init__(self, t):
        self._t = t

    def __dlpack__(self, **kw):
        return self._t.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._t.__dlpack_device__()


def test_attention_into_through_dlpack():
    q, k, v = make_qkv(2, 192, 192, 4, 2, 128, torch.bfloat16)
    out = torch.full_like(q, float("nan"))
    lens = _lengths(2, 192)
    torch.cuda.synchronize()  # the DLPack export orders the legacy default stream; start from a clean state
    dhp_attention.attention_into(*(_DLPackOnly(t) for t in (q, k, v, out)), seqlens=_DLPackOnly(lens),
                                 causal=True, stream=torch.cuda.current_stream())
    torch.cuda.synchronize()
    ro, _ = reference(q, k, v, seqlens=lens, causal=True)
    assert rel_l2(out, ro) < TOL["bfloat16"]


def test_attention_into_with_cupy_arrays():
    cp = pytest.importorskip("cupy", reason="skipped: CuPy not installed")
    q, k, v = make_qkv(1, 256, 256, 8, 8, 64, torch.float16)
    cq, ck, cv = (cp.asarray(t) for t in (q, k, v))  # through __cuda_array_interface__, shared memory
    cout = cp.full(cq.shape, cp.nan, dtype=cp.float16)
    stream = cp.cuda.Stream(non_blocking=True)
    torch.cuda.synchronize()
    dhp_attention.attention_into(cq, ck, cv, cout, causal=True, stream=stream)
    stream.synchronize()
    ro, _ = reference(q, k, v, causal=True)
    assert rel_l2(torch.as_tensor(cout, device="cuda"), ro) < TOL["float16"]


def test_gpu_argument_errors():
    q, k, v = make_qkv(2, 64, 64, 4, 4, 64, torch.float16)
    with pytest.raises(ValueError, match=r"^seqlens: must be on q's device|^seqlens: must be on a CUDA device"):
        dhp_attention.attention(q, k, v, seqlens=torch.tensor([3, 4], dtype=torch.int32))
    with pytest.raises(TypeError, match=r"^seqlens_q: dtype must be int32, got int64"):
        dhp_attention.attention(q, k, v, seqlens_q=torch.tensor([3, 4], device="cuda"))
    with pytest.raises(ValueError, match=r"^k: the last dimension \(head_dim\) must be contiguous"):
        dhp_attention.attention(q, k.transpose(1, 3).contiguous().transpose(1, 3), v)
    with pytest.raises(ValueError, match=r"^q: must be 4-dimensional"):
        dhp_attention.attention(q[0], k, v)


def test_runs_on_the_current_stream():
    # Captured into a CUDA graph on a side stream: a launch on any other
    # stream would either break the capture (the legacy default stream) or
    # not be captured (so the replay would not write o). Bitwise equal to an
    # eager call on the current stream (the same kernel, reproducible).
    q, k, v = make_qkv(2, 512, 512, 8, 8, 128, torch.float16)
    ref = dhp_attention.attention(q, k, v, causal=True)  # also the warm-up outside capture
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        o = dhp_attention.attention(q, k, v, causal=True)
    o.fill_(float("nan"))  # poisoned: only the replay writes it
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(o, ref)


def test_torch_compile_fullgraph():
    torch._dynamo.reset()

    def block(x, w, lens):
        q, k, v = (x @ w).chunk(3, dim=-1)
        B, S, _ = x.shape
        q, k, v = (t.reshape(B, S, 4, 64) for t in (q, k, v))
        o, lse = dhp_attention.attention(q, k, v, causal=True, seqlens=lens, return_lse=True)
        return o.reshape(B, S, -1) * 2, lse

    x = rand(2, 256, 256)
    w = rand(256, 768) * 0.05
    lens = torch.tensor([256, 131], dtype=torch.int32, device="cuda")
    compiled = torch.compile(block, fullgraph=True)
    o_c, lse_c = compiled(x, w, lens)
    o_e, lse_e = block(x, w, lens)
    torch.testing.assert_close(o_c, o_e, atol=2e-3, rtol=2e-3)
    torch.testing.assert_close(lse_c, lse_e, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("kw", [dict(), dict(causal=True, return_lse=True), dict(layout="bhsd", scale=0.2),
                                dict(lens="shared"), dict(lens="separate", causal=True)])
def test_opcheck(kw):
    kw = dict(kw)
    layout, lens = kw.pop("layout", "bshd"), kw.pop("lens", None)
    B, S, D = 2, 128, 64
    q, k, v = make_qkv(B, S, S, 4, 2, D, torch.float16, layout)
    L = torch.tensor([128, 77], dtype=torch.int32, device="cuda")
    seq = dict(seqlens=L if lens == "shared" else None, seqlens_q=L if lens == "separate" else None,
               seqlens_k=L.flip(0) if lens == "separate" else None)
    args = (q, k, v, seq["seqlens"], seq["seqlens_q"], seq["seqlens_k"], kw.get("causal", False),
            kw.get("scale"), kw.get("return_lse", False), layout)
    torch.library.opcheck(torch.ops.dhp.attention.default, args)


def test_cuda_graph_capture_and_replay():
    B, S, H, D = 1, 512, 8, 64
    q, k, v = make_qkv(B, S, S, H, H, D, torch.float16)
    lens = torch.tensor([300], dtype=torch.int32, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm-up outside the capture (module load, kernel attributes)
        dhp_attention.attention(q, k, v, seqlens=lens, causal=True)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        o = dhp_attention.attention(q, k, v, seqlens=lens, causal=True)
    for _ in range(2):  # new inputs and lengths, same buffers
        for t in (q, k, v):
            t.copy_(rand(*t.shape))
        lens.fill_(int(torch.randint(1, S, ())))
        g.replay()
        torch.cuda.synchronize()
        assert torch.equal(o, dhp_attention.attention(q, k, v, seqlens=lens, causal=True))


# Run in a process of its own (below): the library's one-time host work
# (the scratch pool, kernel attributes, plans) happens once per process, and
# this test needs it to happen inside the capture.
_COLD_CAPTURE = """
import sys, torch, dhp_attention
torch.manual_seed(int(sys.argv[2]))
cases = {"decode, key lengths": (3, 1, 1531, 8, 2, 64, False), "prefill, key lengths, causal": (2, 389, 389, 6, 2, 128, True)}
saved = {}
for name, (B, Sq, Sk, Hq, Hkv, D, causal) in cases.items():
    q = torch.randn(B, Sq, Hq, D, device="cuda", dtype=torch.float16)
    k, v = (torch.randn(B, Sk, Hkv, D, device="cuda", dtype=torch.float16) for _ in range(2))
    lens_k = torch.tensor([Sk, Sk // 3, 0][:B], dtype=torch.int32, device="cuda")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):  # torch's default: a global-mode capture
        o = dhp_attention.attention(q, k, v, seqlens_k=lens_k, causal=causal)
    o.fill_(float("nan"))  # poisoned: only the replay writes it
    g.replay()
    torch.cuda.synchronize()
    eager = dhp_attention.attention(q, k, v, seqlens_k=lens_k, causal=causal)
    saved[name] = dict(q=q, k=k, v=v, lens_k=lens_k, causal=causal, o=o, eager=eager)
torch.save({n: {a: (t.cpu() if torch.is_tensor(t) else t) for a, t in c.items()} for n, c in saved.items()}, sys.argv[1])
"""


def test_cuda_graph_captures_a_shapes_first_call(tmp_path):
    # No warm-up: in a fresh process each shape's first call is inside the
    # capture, the first of them creating the scratch pool (key lengths: V's
    # zero-padded copy). Session 52: that work broke the capture; now
    # attention_forward relaxes the thread's capture mode for the call.
    import subprocess
    import sys

    path = tmp_path / "cold_capture.pt"
    seed = int(torch.randint(0, 2**31 - 1, ()))
    r = subprocess.run([sys.executable, "-c", _COLD_CAPTURE, str(path), str(seed)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, f"seed {seed}: {r.stderr[-2000:]}"
    for name, c in torch.load(path).items():
        q, k, v, lens_k, o = (c[a].cuda() for a in ("q", "k", "v", "lens_k", "o"))
        ro, _ = reference(q, k, v, seqlens_k=lens_k, causal=c["causal"])
        assert torch.isfinite(o).all() and rel_l2(o, ro) < TOL["float16"], f"{name}, seed {seed}"
        assert torch.equal(o, c["eager"].cuda()), f"{name}, seed {seed}: the replay differs from an eager call"


def test_direct_eager_path_equals_the_operator():
    from dhp_attention import _torch_ops

    q, k, v = make_qkv(2, 300, 300, 8, 2, 128, torch.bfloat16, "bhsd")
    lens = _lengths(2, 300)
    assert _torch_ops.direct_ok(q, k, v)
    a = dhp_attention.attention(q, k, v, seqlens=lens, causal=True, return_lse=True, layout="bhsd")
    b = torch.ops.dhp.attention(q, k, v, lens, None, None, True, None, True, "bhsd")
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) and a[0].stride() == b[0].stride()
    q.requires_grad_(True)
    assert not _torch_ops.direct_ok(q, k, v)  # autograd must see the operator
    with torch.no_grad():
        assert _torch_ops.direct_ok(q, k, v)


def test_eager_plans_keep_only_public_checks():
    """attention()'s eager path keeps _core.check's answer per public metadata
    (_torch_ops._PLANS). A call that differs only in its addresses must still
    meet the library's address checks, and a call with other metadata must
    be checked afresh: each bad call below follows a good one with the same
    shapes, and must raise."""
    from dhp_attention import _torch_ops

    q, k, v = make_qkv(2, 200, 200, 4, 4, 64, torch.float16)
    good = dhp_attention.attention(q, k, v)
    assert any(key[0][0] == q.shape for key in _torch_ops._PLANS)  # the good call made a plan
    assert rel_l2(good, reference(q, k, v)[0]) < TOL["float16"]
    # Same shape and strides, base 2 bytes past a 16-byte boundary: only the
    # library's own (per-call) check can see it.
    buf = rand(q.numel() + 1, dtype=torch.float16)
    q_off = buf[1:].view(q.shape)
    assert _torch_ops._meta(q_off) == _torch_ops._meta(q)
    with pytest.raises(ValueError, match="q: pointer must be 16-byte aligned"):
        dhp_attention.attention(q_off, k, v)
    with pytest.raises(TypeError, match="k: dtype must match"):
        dhp_attention.attention(q, k.to(torch.bfloat16), v)
    with pytest.raises(ValueError, match="k: must be on q's device"):
        dhp_attention.attention(q, k.cpu(), v)
    with pytest.raises(ValueError, match="v: the last dimension"):
        dhp_attention.attention(q, k, torch.empty_strided(v.shape, (v.stride(0), v.stride(1), 1, v.size(2)),
                                                          dtype=v.dtype, device=v.device))
    lens = _lengths(2, 200)
    o, lse = dhp_attention.attention(q, k, v, seqlens=lens, return_lse=True)  # a new plan, lse allocated
    assert lse.shape == (2, 4, 200) and lse.dtype == torch.float32
    _check(o, lse, *reference(q, k, v, seqlens=lens), "float16", "eager plan with lengths")
    with pytest.raises(TypeError, match="seqlens: dtype must be int32"):
        dhp_attention.attention(q, k, v, seqlens=lens.long(), return_lse=True)
    with pytest.raises(ValueError, match="seqlens: must be on a CUDA device"):
        dhp_attention.attention(q, k, v, seqlens=lens.cpu(), return_lse=True)
    strided = torch.zeros(4, dtype=torch.int32, device="cuda")[::2]
    with pytest.raises(ValueError, match="seqlens: must be contiguous"):
        dhp_attention.attention(q, k, v, seqlens=strided, return_lse=True)
    dhp_attention.attention(q, k, v, scale=1.0)  # a plan for scale 1.0; True == 1.0 and hashes alike
    with pytest.raises(TypeError, match="scale: must be a float"):
        _torch_ops.forward_eager(q, k, v, None, None, None, False, True, False, "bshd")
    with pytest.raises(TypeError, match="causal, return_lse: must be bools"):  # 1 == False is False, 1 == True
        _torch_ops.forward_eager(q, k, v, None, None, None, 1, None, False, "bshd")


def test_forward_only_backward_raises():
    q, k, v = make_qkv(1, 64, 64, 2, 2, 64, torch.float16)
    q.requires_grad_(True)
    o = dhp_attention.attention(q, k, v)
    assert o.requires_grad
    with pytest.raises(NotImplementedError, match="backward pass is not implemented"):
        o.sum().backward()
