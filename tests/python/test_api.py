"""Import and argument tests: run on any machine (no GPU, with or without
PyTorch). Bad arguments must raise TypeError/ValueError naming the argument,
before anything is launched: the fake arrays below carry made-up device
addresses, so a launch would fault; every case here is rejected first."""
from __future__ import annotations

import numpy as np
import pytest

import dhp_attention
from dhp_attention import _core
from conftest import needs_torch, torch


class FakeCudaArray:
    """An array that only describes itself through __cuda_array_interface__."""

    _next = 0x7F0000000000

    def __init__(self, shape, typestr="<f2", strides=None, ptr=None):
        itemsize = int(typestr[2:])
        if ptr is None:
            FakeCudaArray._next += 1 << 30
            ptr = FakeCudaArray._next
        self.__cuda_array_interface__ = {
            "shape": tuple(shape), "typestr": typestr, "data": (ptr, False), "version": 3,
            "strides": None if strides is None else tuple(s * itemsize for s in strides)}


def byte_strides(arr, strides):
    """`arr` with its __cuda_array_interface__ strides set in bytes as given."""
    arr.__cuda_array_interface__["strides"] = tuple(strides)
    return arr


def qkv(B=2, Sq=64, Sk=64, Hq=8, Hkv=8, D=64, typestr="<f2"):
    return (FakeCudaArray((B, Sq, Hq, D), typestr), FakeCudaArray((B, Sk, Hkv, D), typestr),
            FakeCudaArray((B, Sk, Hkv, D), typestr), FakeCudaArray((B, Sq, Hq, D), typestr))


def lengths(B=2, typestr="<i4"):
    return FakeCudaArray((B,), typestr)


def raises(exc, match, fn, *args, **kw):
    with pytest.raises(exc, match=match):
        fn(*args, **kw)


def test_import_and_version():
    assert isinstance(dhp_attention.__version__, str) and dhp_attention.__version__
    assert dhp_attention.HEAD_DIMS == (64, 128, 256) and dhp_attention.LAYOUTS == ("bshd", "bhsd")
    assert isinstance(dhp_attention.is_available(), bool)


def test_compiled_module_loads():
    assert _core._C is not None, f"dhp_attention._C did not load: {_core._C_ERROR}"
    assert _core._C.device_count() >= 0


@pytest.mark.parametrize("case, exc, match", [
    (dict(q="not an array"), TypeError, r"^q: expected a CUDA tensor"),
    (dict(k=[1, 2, 3]), TypeError, r"^k: expected a CUDA tensor"),
    (dict(q=np.ones((2, 64, 8, 64), np.float16)), ValueError, r"^q: must be on a CUDA device, got cpu"),
    (dict(dtype="<f4"), TypeError, r"^q: dtype must be float16 or bfloat16, got float32"),
    (dict(k=FakeCudaArray((2, 64, 8, 64), "<f4")), TypeError, r"^k: dtype must match q's \(float16\)"),
    (dict(layout="sbhd"), ValueError, r"^layout: must be 'bshd' or 'bhsd'"),
    (dict(q=FakeCudaArray((2, 64, 512))), ValueError, r"^q: must be 4-dimensional"),
    (dict(D=96), ValueError, r"^q: head_dim \(last dimension\) must be 64, 128 or 256, got 96"),
    (dict(Hq=6, Hkv=4), ValueError, r"^q: number of heads \(6\) must be a multiple of k's \(4\)"),
    (dict(v=FakeCudaArray((2, 32, 8, 64))), ValueError, r"^v: shape must equal k's"),
    (dict(k=FakeCudaArray((3, 64, 8, 64))), ValueError, r"^k: batch and head_dim must equal q's"),
    (dict(q=FakeCudaArray((2, 64, 8, 64), strides=(64 * 8 * 128, 8 * 128, 128, 2))), ValueError,
     r"^q: the last dimension \(head_dim\) must be contiguous"),
    (dict(causal=1), TypeError, r"^causal: must be a bool"),
    (dict(scale=float("nan")), ValueError, r"^scale: must be finite and > 0"),
    (dict(scale=-0.5), ValueError, r"^scale: must be finite and > 0"),
    (dict(scale=3.0e38), ValueError, r"^scale: must be at most FLT_MAX / log2\(e\)"),
    (dict(scale="0.1"), TypeError, r"^scale: must be a float or None"),
    (dict(scale=float("inf")), ValueError, r"^scale: must be finite and > 0"),
    (dict(scale=0.0), ValueError, r"^scale: must be finite and > 0"),
    (dict(scale=10 ** 400), ValueError, r"^scale: must be finite and > 0"),  # past the double range
    (dict(scale=1e-50), ValueError, r"^scale: must be > 0 as a float32"),  # rounds to 0 in the library
    (dict(Sq=0), ValueError, r"^q, k: every dimension must be >= 1"),
    (dict(Hkv=0), ValueError, r"^q, k: every dimension must be >= 1"),
    (dict(q=FakeCudaArray((0, 64, 8, 64)), k=FakeCudaArray((0, 64, 8, 64)), v=FakeCudaArray((0, 64, 8, 64))),
     ValueError, r"^q, k: every dimension must be >= 1"),
    (dict(lse=FakeCudaArray((2, 8, 64), "<f4", strides=(1024, 64, 1))), ValueError, r"^lse: must be contiguous"),
    (dict(seqlens=FakeCudaArray((2,), "<i4", strides=(2,))), ValueError, r"^seqlens: must be contiguous"),
    (dict(q=byte_strides(FakeCudaArray((2, 64, 8, 64)), (65537, 1024, 128, 2))), ValueError,
     r"^q: strides .* are not multiples of the element size 2"),
    (dict(seqlens=lengths(typestr="<i8")), TypeError, r"^seqlens: dtype must be int32, got int64"),
    (dict(seqlens_k=np.array([3, 4], np.int32)), ValueError, r"^seqlens_k: must be on a CUDA device"),
    (dict(seqlens_q=lengths(B=3)), ValueError, r"^seqlens_q: must have shape \(B,\) = \(2,\), got \(3,\)"),
    (dict(seqlens=lengths(), seqlens_k=lengths()), ValueError, r"^seqlens: cannot be combined"),
    (dict(Sk=128, seqlens=lengths()), ValueError, r"^seqlens: shared lengths require equal query and key"),
    (dict(out=FakeCudaArray((2, 64, 8, 128))), ValueError, r"^out: shape must equal q's"),
    (dict(out=FakeCudaArray((2, 64, 8, 64), "<f4")), TypeError, r"^out: dtype must match q's"),
    (dict(lse=FakeCudaArray((2, 8, 64), "<f2")), TypeError, r"^lse: dtype must be float32"),
    (dict(lse=FakeCudaArray((2, 64, 8), "<f4")), ValueError, r"^lse: shape must be \(B, H_q, S_q\)"),
    (dict(stream="default"), TypeError, r"^stream: must be an int"),
    # The deadline: what the C ABI cannot see (the state's dtype, shape, device; the budget's type).
    (dict(time_budget_ns=1.5e5), TypeError, r"^time_budget_ns: must be an int \(nanoseconds\), got float"),
    (dict(time_budget_ns=True), TypeError, r"^time_budget_ns: must be an int"),
    (dict(time_budget_ns=2 ** 64), ValueError, r"^time_budget_ns: must be 0 \(no deadline\) or 1 \.\. 10000000000"),
    (dict(time_budget_ns=1000, deadline_state=FakeCudaArray((3,), "<i4")), TypeError,
     r"^deadline_state: dtype must be int64 or uint64, got int32"),
    (dict(time_budget_ns=1000, deadline_state=FakeCudaArray((2,), "<i8")), ValueError,
     r"^deadline_state: must be a contiguous array of shape \(3,\)"),
    (dict(time_budget_ns=1000, deadline_state=FakeCudaArray((3,), "<i8", strides=(2,))), ValueError,
     r"^deadline_state: must be a contiguous array of shape \(3,\)"),
    (dict(time_budget_ns=1000, deadline_state=np.zeros(3, np.int64)), ValueError,
     r"^deadline_state: must be on q's device"),
])
def test_argument_errors_name_the_argument(case, exc, match):
    B, Sq, Sk, Hq, Hkv, D = 2, case.pop("Sq", 64), case.pop("Sk", 64), case.pop("Hq", 8), case.pop("Hkv", 8), \
        case.pop("D", 64)
    q, k, v, out = qkv(B, Sq, Sk, Hq, Hkv, D, case.pop("dtype", "<f2"))
    args = dict(q=q, k=k, v=v, out=out)
    args.update({n: case.pop(n) for n in list(case) if n in args})
    raises(exc, match, dhp_attention.attention_into, args["q"], args["k"], args["v"], args["out"], **case)


@pytest.mark.parametrize("case, match", [
    # Rules only the library knows: its validation runs before any launch.
    (dict(q=FakeCudaArray((2, 64, 8, 64), ptr=0x7E0000000002)), r"q: pointer must be 16-byte aligned"),
    (dict(k=FakeCudaArray((2, 64, 8, 64), strides=(64 * 516, 516, 64, 1))), r"k_stride_seq: must be a multiple of 8"),
    (dict(out=FakeCudaArray((2, 64, 8, 64), strides=(64 * 512, 0, 64, 1))), r"o_stride_seq: output rows overlap"),
    (dict(q=FakeCudaArray((2, 64, 8, 64), strides=(-64 * 512, 512, 64, 1))), r"q_stride_batch: must be >= 0"),
    (dict(out=FakeCudaArray((2, 64, 8, 64), strides=(64 * 256, 512, 64, 1))), r"o_stride_batch: output rows overlap"),
])
def test_library_validation_runs_before_launch(case, match):
    q, k, v, out = qkv()
    args = dict(q=q, k=k, v=v, out=out)
    args.update(case)
    raises(ValueError, match, dhp_attention.attention_into, args["q"], args["k"], args["v"], args["out"])


@pytest.mark.parametrize("case, match", [
    # The deadline's rules are the library's (include/dhp/attention.h).
    (dict(time_budget_ns=-5, deadline_state=FakeCudaArray((3,), "<i8")),
     r"time_budget_ns: must be 0 \(no deadline\) or 1 \.\. 10000000000 ns \(got -5\)"),
    (dict(time_budget_ns=10 ** 10 + 1, deadline_state=FakeCudaArray((3,), "<u8")), r"got 10000000001"),
    (dict(time_budget_ns=250_000), r"deadline_state: required when time_budget_ns > 0"),
    (dict(deadline_state=FakeCudaArray((3,), "<i8")), r"deadline_state: given without a deadline"),
    (dict(time_budget_ns=250_000, deadline_state=FakeCudaArray((3,), "<i8", ptr=0x7E0000000004)),
     r"deadline_state: pointer must be 8-byte aligned"),
])
def test_library_checks_the_deadline_before_launch(case, match):
    q, k, v, out = qkv()
    raises(ValueError, match, dhp_attention.attention_into, q, k, v, out, **case)


@needs_torch
@pytest.mark.parametrize("case, exc, match", [
    # calibrate_time_budget (the deadline's budget on public inputs): its own
    # arguments, then the library's checks of the shapes it was given, all
    # before it allocates or launches anything.
    (dict(q=FakeCudaArray((2, 64, 8, 64))), TypeError, r"^q: calibrate_time_budget takes torch tensors"),
    (dict(seqlens_k=np.full(2, 64, np.int32)), TypeError, r"^seqlens_k: calibrate_time_budget takes torch tensors"),
    (dict(calls=0), ValueError, r"^calls: must be an int in 1 \.\. 1000000 \(got 0\)"),
    (dict(calls=2.5), ValueError, r"^calls: must be an int"),
    (dict(margin=-0.01), ValueError, r"^margin: must be a fraction in 0 \.\. 10"),
    (dict(slack_ns=1.5), ValueError, r"^slack_ns: must be an int of ns"),
    (dict(warm_s=-1.0), ValueError, r"^warm_s: must be seconds in 0 \.\. 60 \(got -1\.0\)"),
    (dict(warm_s=True), ValueError, r"^warm_s: must be seconds"),
    (dict(graph=-1), ValueError, r"^graph: must be an int of calls per CUDA graph in 0 \.\. 1024, 0 for none \(got -1\)"),
    (dict(graph=1025), ValueError, r"^graph: must be an int of calls per CUDA graph"),
    (dict(graph=True), ValueError, r"^graph: must be an int of calls per CUDA graph"),
    (dict(stream=0), TypeError, r"^stream: calibrate_time_budget takes None or a torch\.cuda\.Stream"),
    (dict(), ValueError, r"^q: must be on a CUDA device, got cpu"),
])
def test_calibration_checks_its_arguments_first(case, exc, match):
    q = case.pop("q", None)
    if q is None:
        q = torch.empty(2, 64, 8, 64, dtype=torch.float16)  # CPU: the library's device rule rejects it
    k = v = torch.empty(2, 64, 8, 64, dtype=torch.float16)
    raises(exc, match, dhp_attention.calibrate_time_budget, q, k, v, **case)


def test_calibration_without_torch_says_so(monkeypatch):
    from dhp_attention import _deadline
    monkeypatch.setattr(_deadline, "torch", None)
    raises(ImportError, r"calibrate_time_budget needs PyTorch", dhp_attention.calibrate_time_budget, *qkv()[:3])
    raises(ImportError, r"deadline_state needs PyTorch", dhp_attention.deadline_state)


def test_library_limits_and_overlaps_run_before_launch():
    # Sizes past the library's limits (Python has none of its own).
    q, k, v, out = qkv(B=70000)
    raises(ValueError, r"batch: must be <= 65535", dhp_attention.attention_into, q, k, v, out)
    # Outputs sharing memory with an input or with each other.
    base = 0x7D0000000000
    q = FakeCudaArray((2, 64, 8, 64), ptr=base)
    k, v = FakeCudaArray((2, 64, 8, 64)), FakeCudaArray((2, 64, 8, 64))
    raises(ValueError, r"o: output memory overlaps q", dhp_attention.attention_into, q, k, v,
           FakeCudaArray((2, 64, 8, 64), ptr=base + 4096))
    out = FakeCudaArray((2, 64, 8, 64))
    lse = FakeCudaArray((2, 8, 64), "<f4", ptr=out.__cuda_array_interface__["data"][0] + 256)
    raises(ValueError, r"o: output memory overlaps lse", dhp_attention.attention_into, q, k, v, out, lse=lse)


def test_bhsd_layout_reads_the_right_dimensions():
    # [B, H, S, D]: H_q=8 is dimension 1; a k with 3 heads cannot serve 8 query heads.
    q = FakeCudaArray((2, 8, 64, 64))
    k = FakeCudaArray((2, 3, 64, 64))
    raises(ValueError, r"number of heads \(8\) must be a multiple of k's \(3\)", dhp_attention.attention_into,
           q, k, k, FakeCudaArray((2, 8, 64, 64)), layout="bhsd")


@pytest.mark.skipif(_core._C is not None and _core._C.device_count() > 0,
                    reason="checks the no-device error; a device is present")
def test_valid_call_without_a_device_reports_no_device():
    q, k, v, out = qkv()
    raises(RuntimeError, r"no CUDA device", dhp_attention.attention_into, q, k, v, out)


def test_dlpack_reader():
    a = np.arange(2 * 3 * 8, dtype=np.float16).reshape(2, 3, 8)[:, ::2]
    info = _core.describe(a, "q")
    assert info.device_type == "cpu" and info.dtype == "float16"
    assert info.shape == (2, 2, 8) and info.strides == (24, 16, 1)
    assert info.ptr == a.__array_interface__["data"][0]


def test_attention_rejects_non_torch_arrays_with_a_pointer_to_attention_into():
    q, k, v, _ = qkv()
    raises(TypeError, r"attention_into", dhp_attention.attention, q, k, v)


# -- PyTorch on the CPU: the operator's checks and its fake implementation ----

@needs_torch
def test_torch_cpu_tensors_are_rejected_by_name():
    t = torch.randn(1, 128, 4, 64).half()
    raises(ValueError, r"^q: must be on a CUDA device, got cpu", dhp_attention.attention, t, t, t)
    raises(TypeError, r"^q: dtype must be float16 or bfloat16, got float32", dhp_attention.attention,
           t.float(), t, t)
    raises(TypeError, r"^k: expected a torch.Tensor like q", dhp_attention.attention, t, t.numpy(), t)
    raises(TypeError, r"^seqlens: expected an int32 torch.Tensor", dhp_attention.attention, t, t, t, seqlens=[1])
    raises(TypeError, r"^return_lse: must be a bool", dhp_attention.attention, t, t, t, return_lse=None)


@needs_torch
@pytest.mark.parametrize("layout", ["bshd", "bhsd"])
def test_fake_impl_shapes_and_strides(layout):
    B, S, Sk, H, Hkv, D = 2, 48, 80, 8, 2, 128
    shape = lambda s, h: (B, s, h, D) if layout == "bshd" else (B, h, s, D)  # noqa: E731
    q = torch.empty(shape(S, H), dtype=torch.bfloat16, device="meta")
    k = torch.empty(shape(Sk, Hkv), dtype=torch.bfloat16, device="meta")
    o, lse = dhp_attention.attention(q, k, k, causal=True, return_lse=True, layout=layout)
    assert o.shape == q.shape and o.dtype == torch.bfloat16 and lse.shape == (B, H, S)
    # BSHD memory order for both layouts (like SDPA's flash backend).
    assert o.permute(0, 2, 1, 3).is_contiguous() if layout == "bhsd" else o.is_contiguous()
    raises(ValueError, r"^q: head_dim", dhp_attention.attention, q[..., :96], k[..., :96], k[..., :96],
           layout=layout)
    lens = torch.empty(B, dtype=torch.int64, device="meta")
    raises(TypeError, r"^seqlens_k: dtype must be int32", dhp_attention.attention, q, k, k, seqlens_k=lens,
           layout=layout)


@needs_torch
def test_operator_is_registered():
    assert hasattr(torch.ops.dhp, "attention")
    schema = str(torch.ops.dhp.attention.default._schema)
    assert "Tensor? seqlens" in schema and "bool causal" in schema, schema



def test_outputs_on_another_device_are_rejected():
    # Two devices cannot be had here: the checks on the metadata directly
    # (q on cuda:0; out and lse on cuda:1). Before session 21 lse was only
    # required to be on *a* CUDA device.
    p = _core.Problem("float16", 2, 64, 64, 8, 8, 64, (0,) * 9, 0)
    q = _core.ArrayInfo(1 << 40, (2, 64, 8, 64), (64 * 8 * 64, 8 * 64, 64, 1), "float16", "cuda", 0)
    out = q._replace(device_index=1)
    lse = _core.ArrayInfo(1 << 41, (2, 8, 64), (8 * 64, 64, 1), "float32", "cuda", 1)
    raises(ValueError, r"^out: must be on q's device cuda:0, got cuda:1", _core.check_out, out, p, q, "bshd")
    raises(ValueError, r"^lse: must be on q's CUDA device \(index 0\), got cuda:1", _core.check_lse, lse, p)
    _core.check_lse(lse._replace(device_index=0), p)  # same device: accepted
    _core.check_lse(lse._replace(device_index=None), p)  # "the current device" (array interface): accepted


def test_cuda_array_interface_stream_orders_the_launch():
    # v3 "stream": the producer's stream. Without stream=, a call on such
    # arrays launches on it (after the producer's writes); arrays naming
    # different streams are refused before any launch.
    a = FakeCudaArray((2, 64, 8, 64))
    a.__cuda_array_interface__["stream"] = 0x1234
    info = _core.describe(a, "q")
    assert info.stream == 0x1234
    plain = _core.describe(FakeCudaArray((2, 64, 8, 64)), "k")
    assert plain.stream is None
    assert _core.producer_stream([info, plain, None]) == 0x1234
    assert _core.producer_stream([plain, None]) == 0  # none named: the legacy default stream
    other = info._replace(stream=0x5678)
    raises(ValueError, r"^stream: the arrays' __cuda_array_interface__ name different streams",
           _core.producer_stream, [info, other])
    q, k, v, out = qkv()
    k.__cuda_array_interface__["stream"] = 0x5678
    q.__cuda_array_interface__["stream"] = 0x1234
    raises(ValueError, r"^stream: the arrays' __cuda_array_interface__ name different streams",
           dhp_attention.attention_into, q, k, v, out)
