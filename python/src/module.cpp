// dhp_attention._C: the Python binding of the C ABI (include/dhp/attention.h).
//
// Tensors cross this boundary as raw device addresses plus public metadata
// (the Python layer reads them from torch tensors, __cuda_array_interface__
// or DLPack), so the module never links against PyTorch's C++ ABI and one
// build serves every torch version. `dlpack_info` is the DLPack reader for
// arrays that are neither torch tensors nor CUDA-array-interface objects.
#include <cuda_runtime.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <string>
#include <vector>

#include "dhp/attention.h"

namespace nb = nanobind;

namespace {

template <class T>
T* as_ptr(uintptr_t address) {
  return reinterpret_cast<T*>(address);
}

// Makes `device` current for the call and restores the caller's device after:
// the library launches on the runtime's current device, which need not be the
// device the tensors live on (torch switches devices lazily).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    if (device < 0) return;
    if (cudaGetDevice(&previous_) != cudaSuccess) {
      (void)cudaGetLastError();
      previous_ = -1;
      return;
    }
    if (previous_ == device) return;
    if (cudaSetDevice(device) == cudaSuccess)
      switched_ = true;
    else
      (void)cudaGetLastError();  // our own failure's record only: an error the caller left pending stays theirs
  }
  ~DeviceGuard() {
    if (switched_) (void)cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
  bool switched_ = false;
};

// Raises the Python exception that matches a status: ValueError for a bad
// public argument (the message names it), RuntimeError otherwise.
void raise_status(dhp_status s, const char* message) {
  const std::string text = std::string("dhp_attention: ") + message;
  switch (s) {
    case DHP_OK:
      return;
    case DHP_ERROR_INVALID_ARGUMENT:
    case DHP_ERROR_UNSUPPORTED:
      throw nb::value_error(text.c_str());
    default:
      throw std::runtime_error(text);
  }
}

// Argument order of `forward`/`validate`; the Python layer builds it in one
// place (dhp_attention/_core.py, c_public_args).
struct Args {
  int32_t dtype;
  int64_t batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim;
  uintptr_t q, k, v, o;
  std::vector<int64_t> strides;  // q, k, v, o: batch, seq, head (12 values)
  uintptr_t lse;
  bool has_scale;
  float scale;
  bool causal;
  uintptr_t seqlens, seqlens_q, seqlens_k;
  int64_t time_budget_ns;
  uintptr_t deadline_state;
  uintptr_t stream;
};

dhp_attention_params make_params(const Args& a) {
  if (a.strides.size() != 12) throw nb::value_error("dhp_attention: strides must hold 12 values");
  dhp_attention_params p;
  dhp_attention_params_init_bshd(&p, static_cast<dhp_dtype>(a.dtype), a.batch, a.seqlen_q,
                                 a.seqlen_k, a.heads_q, a.heads_kv, a.head_dim,
                                 as_ptr<const void>(a.q), as_ptr<const void>(a.k),
                                 as_ptr<const void>(a.v), as_ptr<void>(a.o));
  p.dtype = a.dtype;  // unknown values must reach validation unchanged
  const int64_t* s = a.strides.data();
  p.q_stride_batch = s[0]; p.q_stride_seq = s[1]; p.q_stride_head = s[2];
  p.k_stride_batch = s[3]; p.k_stride_seq = s[4]; p.k_stride_head = s[5];
  p.v_stride_batch = s[6]; p.v_stride_seq = s[7]; p.v_stride_head = s[8];
  p.o_stride_batch = s[9]; p.o_stride_seq = s[10]; p.o_stride_head = s[11];
  p.lse = as_ptr<float>(a.lse);
  p.has_softmax_scale = a.has_scale ? 1 : 0;
  p.softmax_scale = a.scale;
  p.causal = a.causal ? 1 : 0;
  p.seqlens = as_ptr<const int32_t>(a.seqlens);
  p.seqlens_q = as_ptr<const int32_t>(a.seqlens_q);
  p.seqlens_k = as_ptr<const int32_t>(a.seqlens_k);
  p.time_budget_ns = a.time_budget_ns;
  p.deadline_state = as_ptr<dhp_deadline_state>(a.deadline_state);
  p.stream = as_ptr<void>(a.stream);
  return p;
}

void run(const Args& a, int device, bool launch) {
  const dhp_attention_params p = make_params(a);
  char message[512] = {0};
  dhp_status s;
  if (!launch) {
    s = dhp_attention_validate(&p, message, sizeof message);
  } else {
    // The launch is asynchronous and short on the host: keep the GIL, which
    // saves a release/acquire pair (about a microsecond) per call.
    DeviceGuard guard(device);
    s = dhp_attention_forward(&p, message, sizeof message);
  }
  raise_status(s, message);
}

}  // namespace

NB_MODULE(_C, m) {
  m.doc() = "Low-level binding of the DHP-Safe FlashAttention C ABI (use dhp_attention.attention).";
  m.attr("DHP_FLOAT16") = static_cast<int>(DHP_FLOAT16);
  m.attr("DHP_BFLOAT16") = static_cast<int>(DHP_BFLOAT16);

  // forward(dtype, B, S_q, S_k, H_q, H_kv, D, q, k, v, o, strides[12], lse, has_scale, scale,
  //         causal, seqlens, seqlens_q, seqlens_k, time_budget_ns, deadline_state, stream,
  //         device, launch)
  m.def(
      "forward",
      [](int32_t dtype, int64_t B, int64_t Sq, int64_t Sk, int64_t Hq, int64_t Hkv, int64_t D,
         uintptr_t q, uintptr_t k, uintptr_t v, uintptr_t o, std::vector<int64_t> strides,
         uintptr_t lse, bool has_scale, float scale, bool causal, uintptr_t seqlens,
         uintptr_t seqlens_q, uintptr_t seqlens_k, int64_t time_budget_ns, uintptr_t deadline_state,
         uintptr_t stream, int device, bool launch) {
        run(Args{dtype, B, Sq, Sk, Hq, Hkv, D, q, k, v, o, std::move(strides), lse, has_scale,
                 scale, causal, seqlens, seqlens_q, seqlens_k, time_budget_ns, deadline_state, stream},
            device, launch);
      },
      "Validates the public arguments and, if launch, enqueues the forward pass on `stream`.\n"
      "Raises ValueError naming the argument on invalid input; nothing is launched then.");

  // (address, shape, strides in elements, (dtype code, bits, lanes), (device type, id)) of
  // any object that exports DLPack. Strides of a compact array are filled in.
  m.def(
      "dlpack_info",
      [](nb::ndarray<nb::ro> a) {
        std::vector<int64_t> shape(a.ndim()), strides(a.ndim());
        int64_t compact = 1;
        for (size_t i = a.ndim(); i-- > 0;) {
          shape[i] = static_cast<int64_t>(a.shape(i));
          strides[i] = a.stride_ptr() ? a.stride(i) : compact;
          compact *= shape[i];
        }
        const auto dt = a.dtype();
        return nb::make_tuple(reinterpret_cast<uintptr_t>(a.data()), shape, strides,
                              nb::make_tuple(static_cast<int>(dt.code), static_cast<int>(dt.bits),
                                             static_cast<int>(dt.lanes)),
                              nb::make_tuple(a.device_type(), a.device_id()));
      },
      nb::arg("array"), "Reads an array's address and metadata through DLPack (no copy).");

  m.def(
      "device_count",
      []() {
        int n = 0;
        if (cudaGetDeviceCount(&n) != cudaSuccess) {
          (void)cudaGetLastError();
          return 0;
        }
        return n;
      },
      "Number of CUDA devices the library sees (0 without a driver or GPU).");
}
