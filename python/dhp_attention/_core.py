"""Framework-neutral core: read arrays, check public arguments, call the C ABI.

Every check here looks at public metadata only (shapes, strides, dtypes,
devices, addresses); the contents of the tensors and of the length arrays are
secret and are never read on the host (docs/threat-model.md).
"""
from __future__ import annotations

import math
import struct
from typing import Any, NamedTuple, Optional

try:
    import torch
except ImportError:  # the torch-free parts (attention_into, checks) still work
    torch = None

try:
    from . import _C
    _C_ERROR: Optional[BaseException] = None
except ImportError as e:  # not built, or no CUDA runtime library on the loader path
    _C = None
    _C_ERROR = e

LAYOUTS = ("bshd", "bhsd")
HEAD_DIMS = (64, 128, 256)
_DTYPE_CODES = {"float16": 0, "bfloat16": 1}  # dhp_dtype values (include/dhp/attention.h)


class ArrayInfo(NamedTuple):
    """Public metadata of one array. `ptr` is None for fake (traced) tensors;
    `device_index` None means "the current CUDA device" (CUDA array interface)."""

    ptr: Optional[int]
    shape: tuple
    strides: tuple  # in elements
    dtype: str  # "float16", "bfloat16", "int32", ... or a producer's own spelling
    device_type: str  # "cuda", "cpu", ...
    device_index: Optional[int]
    # __cuda_array_interface__ v3 "stream": the stream the producer's work on
    # the array is ordered on (1 legacy default, 2 per-thread default), or None.
    stream: Optional[int] = None

    def device_str(self) -> str:
        return self.device_type if self.device_index is None else f"{self.device_type}:{self.device_index}"


class Problem(NamedTuple):
    """The validated public parameters of one call (BSHD view of every tensor)."""

    dtype: str
    batch: int
    seqlen_q: int
    seqlen_k: int
    heads_q: int
    heads_kv: int
    head_dim: int
    strides: tuple  # q, k, v: (batch, seq, head) each, 9 values
    device_index: Optional[int]


# --------------------------------------------------------------------------
# Reading arrays

_CAI_TYPES = {"<f2": "float16", "<f4": "float32", "<f8": "float64", "<i4": "int32", "<i8": "int64",
              "<u4": "uint32", "<u8": "uint64", "|b1": "bool", "|i1": "int8", "|u1": "uint8", "<i2": "int16"}
_DLPACK_TYPES = {(2, 16): "float16", (4, 16): "bfloat16", (2, 32): "float32", (2, 64): "float64",
                 (0, 32): "int32", (0, 64): "int64", (1, 32): "uint32", (1, 64): "uint64", (6, 8): "bool", (0, 8): "int8",
                 (1, 8): "uint8", (0, 16): "int16"}
# DLPack device types: managed memory is reachable from kernels, pinned host memory is not.
_DLPACK_DEVICES = {1: "cpu", 2: "cuda", 3: "cuda_host", 4: "opencl", 7: "vulkan", 8: "metal",
                   10: "rocm", 13: "cuda", 14: "oneapi"}


_TORCH_DTYPES = {} if torch is None else {
    torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32", torch.int32: "int32",
    torch.int64: "int64"}


def _torch_dtype_name(dtype) -> str:
    name = _TORCH_DTYPES.get(dtype)
    return name if name is not None else str(dtype).replace("torch.", "")


def torch_info(t, with_ptr: bool = True) -> ArrayInfo:
    dev = t.device
    return ArrayInfo(t.data_ptr() if with_ptr else None, tuple(t.shape), tuple(t.stride()),
                     _torch_dtype_name(t.dtype), dev.type, dev.index)


def describe(x: Any, name: str) -> ArrayInfo:
    """Metadata of a torch tensor, a __cuda_array_interface__ object or a
    DLPack producer. Torch tensors are read through their Python attributes:
    their __dlpack__() without a stream argument would make torch order the
    legacy default stream after the current one, which breaks CUDA-graph
    capture and costs an event per call."""
    if torch is not None and isinstance(x, torch.Tensor):
        return torch_info(x)
    cai = getattr(x, "__cuda_array_interface__", None) if not isinstance(x, type) else None
    if isinstance(cai, dict):
        return _cai_info(cai, name)
    if hasattr(x, "__dlpack__") and not isinstance(x, type):
        if _C is None:
            raise ImportError(f"dhp_attention._C is not available ({_C_ERROR}); it is needed to read {name} "
                              "through DLPack")
        try:
            ptr, shape, strides, (code, bits, lanes), (dev_type, dev_id) = _C.dlpack_info(x)
        except TypeError as e:
            raise TypeError(f"{name}: could not be read through DLPack ({e})") from None
        dtype = _DLPACK_TYPES.get((code, bits), f"dlpack(code={code}, bits={bits})") if lanes == 1 else "vector"
        dev = _DLPACK_DEVICES.get(dev_type, f"dlpack_device_{dev_type}")
        return ArrayInfo(ptr, tuple(shape), tuple(strides), dtype, dev, dev_id if dev == "cuda" else None)
    raise TypeError(f"{name}: expected a CUDA tensor (torch.Tensor, or an array with __cuda_array_interface__ "
                    f"or __dlpack__), got {type(x).__module__}.{type(x).__qualname__}")


def _cai_info(cai: dict, name: str) -> ArrayInfo:
    shape = tuple(int(s) for s in cai["shape"])
    typestr = cai["typestr"]
    itemsize = int(typestr[2:]) if typestr[2:].isdigit() else 1
    if cai.get("strides") is None:  # C-contiguous
        strides, acc = [], 1
        for s in reversed(shape):
            strides.append(acc)
            acc *= s
        strides = tuple(reversed(strides))
    else:
        byte_strides = tuple(int(s) for s in cai["strides"])
        if any(s % itemsize for s in byte_strides):
            raise ValueError(f"{name}: strides {byte_strides} (bytes) are not multiples of the element size {itemsize}")
        strides = tuple(s // itemsize for s in byte_strides)
    ptr = int(cai["data"][0])
    stream = cai.get("stream")
    stream = int(stream) if isinstance(stream, int) and not isinstance(stream, bool) else None
    return ArrayInfo(ptr, shape, strides, _CAI_TYPES.get(typestr, typestr), "cuda", None, stream)


def producer_stream(infos) -> int:
    """The stream to launch on when the caller names none and the arrays are
    not torch tensors: the one their __cuda_array_interface__ names (v3
    "stream"), so that the kernel is ordered after the producer's writes;
    else the legacy default stream (0). Arrays naming different streams are
    an error: which one to wait on is the caller's choice."""
    named = sorted({i.stream for i in infos if i is not None and i.stream is not None})
    if len(named) > 1:
        raise ValueError(f"stream: the arrays' __cuda_array_interface__ name different streams {named}; "
                         "pass stream= explicitly (ordered after all of their producers)")
    return named[0] if named else 0


# --------------------------------------------------------------------------
# Checks

def _check_flag(value, name: str) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name}: must be a bool, got {type(value).__name__}")


def check_scale(scale) -> None:
    """The C ABI's rules on softmax_scale, named `scale`, checked on the
    float32 value the library receives (c_public_args passes it on as one)."""
    if scale is None:
        return
    if isinstance(scale, bool) or not isinstance(scale, (int, float)):
        raise TypeError(f"scale: must be a float or None, got {type(scale).__name__}")
    try:
        value = float(scale)  # an int past the double range raises OverflowError
    except OverflowError:
        value = math.inf
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"scale: must be finite and > 0, got {scale}")
    # The kernels fold log2(e) into the scale in fp32 (the C ABI's rule too).
    if value * 1.4426950408889634 > 3.4028234663852886e38:
        raise ValueError(f"scale: must be at most FLT_MAX / log2(e) = 2.3587e38 (scale * log2(e) must be a "
                         f"finite float), got {scale}")
    if struct.unpack("f", struct.pack("f", value))[0] == 0.0:
        raise ValueError(f"scale: must be > 0 as a float32 (the library's precision), got {scale}, which rounds "
                         "to 0")


def _bshd(info: ArrayInfo, name: str, layout: str):
    """(B, S, H, D) sizes and (batch, seq, head) strides of a 4-D array."""
    if len(info.shape) != 4:
        dims = "[B, S, H, D]" if layout == "bshd" else "[B, H, S, D]"
        raise ValueError(f"{name}: must be 4-dimensional {dims} (layout={layout!r}), got shape {info.shape}")
    if info.strides[3] != 1:
        raise ValueError(f"{name}: the last dimension (head_dim) must be contiguous (stride 1), "
                         f"got stride {info.strides[3]}; call .contiguous() first")
    if layout == "bshd":
        (B, S, H, D), (sb, ss, sh, _) = info.shape, info.strides
    else:
        (B, H, S, D), (sb, sh, ss, _) = info.shape, info.strides
    return (B, S, H, D), (sb, ss, sh)


def _check_lengths(info: Optional[ArrayInfo], name: str, batch: int, device: ArrayInfo, cuda: tuple) -> None:
    if info is None:
        return
    if info.dtype != "int32":
        raise TypeError(f"{name}: dtype must be int32, got {info.dtype}")
    if info.device_type not in cuda:
        raise ValueError(f"{name}: must be on a CUDA device (like q, {device.device_str()}), got {info.device_str()}")
    if info.device_index is not None and device.device_index is not None and info.device_index != device.device_index:
        raise ValueError(f"{name}: must be on q's device {device.device_str()}, got {info.device_str()}")
    if info.shape != (batch,):
        raise ValueError(f"{name}: must have shape (B,) = ({batch},), got {info.shape}")
    if batch > 1 and info.strides[0] != 1:
        raise ValueError(f"{name}: must be contiguous, got stride {info.strides[0]}")


def check(q: ArrayInfo, k: ArrayInfo, v: ArrayInfo, *, layout: str, causal, scale,
          seqlens: Optional[ArrayInfo] = None, seqlens_q: Optional[ArrayInfo] = None,
          seqlens_k: Optional[ArrayInfo] = None, fake: bool = False) -> Problem:
    """Checks every public argument the C ABI cannot see (dtypes, devices,
    shapes, layout) and names the Python argument in the error. fake: shape
    propagation only (torch's fake implementation), meta tensors allowed."""
    cuda = ("cuda", "meta") if fake else ("cuda",)
    if not isinstance(layout, str) or layout not in LAYOUTS:
        raise ValueError(f"layout: must be 'bshd' or 'bhsd', got {layout!r}")
    _check_flag(causal, "causal")
    check_scale(scale)
    if q.dtype not in _DTYPE_CODES:
        raise TypeError(f"q: dtype must be float16 or bfloat16, got {q.dtype}")
    for info, name in ((k, "k"), (v, "v")):
        if info.dtype != q.dtype:
            raise TypeError(f"{name}: dtype must match q's ({q.dtype}), got {info.dtype}")
    if q.device_type not in cuda:
        raise ValueError(f"q: must be on a CUDA device, got {q.device_str()}")
    for info, name in ((k, "k"), (v, "v")):
        if info.device_type != q.device_type or (info.device_index is not None and q.device_index is not None
                                          and info.device_index != q.device_index):
            raise ValueError(f"{name}: must be on q's device {q.device_str()}, got {info.device_str()}")
    (B, Sq, Hq, D), qs = _bshd(q, "q", layout)
    (Bk, Sk, Hkv, Dk), ks = _bshd(k, "k", layout)
    vshape, vs = _bshd(v, "v", layout)
    if D not in HEAD_DIMS:
        raise ValueError(f"q: head_dim (last dimension) must be 64, 128 or 256, got {D}")
    if (Bk, Dk) != (B, D):
        raise ValueError(f"k: batch and head_dim must equal q's ({B}, {D}), got ({Bk}, {Dk}) "
                         f"(q shape {q.shape}, k shape {k.shape}, layout={layout!r})")
    if vshape != (Bk, Sk, Hkv, Dk):
        raise ValueError(f"v: shape must equal k's {k.shape}, got {v.shape}")
    if min(B, Sq, Sk, Hq, Hkv) < 1:
        raise ValueError(f"q, k: every dimension must be >= 1, got q {q.shape}, k {k.shape}")
    if Hq % Hkv != 0:
        raise ValueError(f"q: number of heads ({Hq}) must be a multiple of k's ({Hkv}) (GQA/MQA)")
    if seqlens is not None and (seqlens_q is not None or seqlens_k is not None):
        raise ValueError("seqlens: cannot be combined with seqlens_q or seqlens_k (give one shared tensor "
                         "for self-attention, or separate ones)")
    if seqlens is not None and Sq != Sk:
        raise ValueError(f"seqlens: shared lengths require equal query and key lengths, got S_q={Sq}, "
                         f"S_k={Sk}; use seqlens_q/seqlens_k")
    for info, name in ((seqlens, "seqlens"), (seqlens_q, "seqlens_q"), (seqlens_k, "seqlens_k")):
        _check_lengths(info, name, B, q, cuda)
    return Problem(q.dtype, B, Sq, Sk, Hq, Hkv, D, qs + ks + vs, q.device_index)


def check_out(o: ArrayInfo, p: Problem, q: ArrayInfo, layout: str, name: str = "out") -> tuple:
    """Checks a caller-provided output like q; returns its (batch, seq, head) strides."""
    if o.dtype != p.dtype:
        raise TypeError(f"{name}: dtype must match q's ({p.dtype}), got {o.dtype}")
    if o.device_type != "cuda" or (o.device_index is not None and p.device_index is not None
                                   and o.device_index != p.device_index):
        raise ValueError(f"{name}: must be on q's device {q.device_str()}, got {o.device_str()}")
    if o.shape != q.shape:
        raise ValueError(f"{name}: shape must equal q's {q.shape}, got {o.shape}")
    return _bshd(o, name, layout)[1]


def check_lse(lse: ArrayInfo, p: Problem, name: str = "lse") -> None:
    want = (p.batch, p.heads_q, p.seqlen_q)
    if lse.dtype != "float32":
        raise TypeError(f"{name}: dtype must be float32, got {lse.dtype}")
    if lse.device_type != "cuda" or (lse.device_index is not None and p.device_index is not None
                                     and lse.device_index != p.device_index):
        raise ValueError(f"{name}: must be on q's CUDA device (index {p.device_index}), got {lse.device_str()}")
    if lse.shape != want:
        raise ValueError(f"{name}: shape must be (B, H_q, S_q) = {want}, got {lse.shape}")
    if lse.strides != (p.heads_q * p.seqlen_q, p.seqlen_q, 1):
        raise ValueError(f"{name}: must be contiguous, got strides {lse.strides}")


# --------------------------------------------------------------------------
# Launch

def require_C():
    if _C is None:
        raise ImportError(f"dhp_attention._C could not be loaded: {_C_ERROR}")
    return _C


def c_public_args(p: Problem, o_strides: tuple, causal: bool, scale) -> tuple:
    """The C ABI forward()'s public arguments, in its order (python/src/module.cpp):
    (dtype and sizes: before the pointers; the 12 strides; has_scale, scale,
    causal: after lse). The one place that builds them; launch() and the eager
    path (_torch_ops.forward_eager) put the pointers, stream and device around them."""
    shape = (_DTYPE_CODES[p.dtype], p.batch, p.seqlen_q, p.seqlen_k, p.heads_q, p.heads_kv, p.head_dim)
    flags = (scale is not None, float(scale) if scale is not None else 0.0, causal)
    return shape, list(p.strides) + list(o_strides), flags


# The library's largest deadline budget (include/dhp/attention.h); its own
# check is the rule, Python repeats it only to word its int64 overflow the same.
MAX_TIME_BUDGET_NS = 10_000_000_000


def check_deadline(time_budget_ns, state: Optional[ArrayInfo], q: ArrayInfo) -> None:
    """The deadline's arguments as far as the C ABI cannot see them: the
    budget's type, and the state's dtype, shape and device (the library
    writes 24 bytes there). The budget's range, and which of the two needs
    the other, are the library's rules (include/dhp/attention.h)."""
    if not isinstance(time_budget_ns, int) or isinstance(time_budget_ns, bool):
        raise TypeError(f"time_budget_ns: must be an int (nanoseconds), got {type(time_budget_ns).__name__}")
    if not -2 ** 63 <= time_budget_ns < 2 ** 63:
        raise ValueError(f"time_budget_ns: must be 0 (no deadline) or 1 .. {MAX_TIME_BUDGET_NS} ns "
                         f"(got {time_budget_ns})")
    if state is None:
        return
    if state.dtype not in ("int64", "uint64"):
        raise TypeError(f"deadline_state: dtype must be int64 or uint64, got {state.dtype}")
    if state.shape != (3,) or state.strides[0] != 1:
        raise ValueError(f"deadline_state: must be a contiguous array of shape (3,) (start_ns, overruns, "
                         f"last_work_ns), got shape {state.shape}, strides {state.strides}")
    if state.device_type != "cuda" or (state.device_index is not None and q.device_index is not None
                                       and state.device_index != q.device_index):
        raise ValueError(f"deadline_state: must be on q's device {q.device_str()}, got {state.device_str()}")


def launch(p: Problem, q: ArrayInfo, k: ArrayInfo, v: ArrayInfo, o_ptr: int, o_strides: tuple, *,
           lse_ptr: int = 0, causal: bool, scale, seqlens: Optional[ArrayInfo] = None,
           seqlens_q: Optional[ArrayInfo] = None, seqlens_k: Optional[ArrayInfo] = None,
           time_budget_ns: int = 0, deadline_state: Optional[ArrayInfo] = None,
           stream: int = 0, launch: bool = True) -> None:
    """Validates in the library (alignment, stride rules, overlap) and, if
    `launch`, enqueues the kernel on `stream`. ValueError on a bad argument."""
    shape, strides, flags = c_public_args(p, o_strides, causal, scale)
    require_C().forward(
        *shape, q.ptr, k.ptr, v.ptr, o_ptr, strides, lse_ptr, *flags,
        seqlens.ptr if seqlens is not None else 0, seqlens_q.ptr if seqlens_q is not None else 0,
        seqlens_k.ptr if seqlens_k is not None else 0, time_budget_ns,
        deadline_state.ptr if deadline_state is not None else 0, stream,
        -1 if p.device_index is None else p.device_index, launch)


def stream_handle(stream) -> int:
    """A cudaStream_t as an int, from an int, a torch.cuda.Stream (.cuda_stream)
    or a CuPy stream (.ptr)."""
    if isinstance(stream, int) and not isinstance(stream, bool):
        return stream
    for attr in ("cuda_stream", "ptr"):
        h = getattr(stream, attr, None)
        if isinstance(h, int):
            return h
    raise TypeError(f"stream: must be an int (cudaStream_t), a torch.cuda.Stream or a CuPy stream, "
                    f"got {type(stream).__name__}")
