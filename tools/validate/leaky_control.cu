// TEST-ONLY leaky control (see leaky_control.hpp). Built only with
// -DDHP_BUILD_LEAKY_CONTROL=ON, into dhp_validate alone.
//
// It instantiates the shipped kernel template with traits whose
// kLeakyControl flag is set; that flag enables one hook in
// src/kernels/sm80/forward_kernel.cuh that bounds the key loop by the secret
// L_k. Everything else (masking, softmax, epilogue) is the shipped code, so
// a gate that passes the shipped kernel and fails this one is measuring the
// skipped work, not some unrelated difference.
#include <cstddef>
#include <cstring>

#include "kernels/sm80/launch.cuh"
#include "leaky_control.hpp"

namespace dhp::gates {
namespace {

template <typename T, int D>
struct LeakyTraits : sm80::Sm80Traits<T, D, /*HAS_LENGTHS=*/true> {
  static constexpr bool kLeakyControl = true;
};

// The kernel arguments, as src/api/forward.cpp builds them for the
// shipped kernel (public values only).
kernels::ForwardArgs control_args(const Params& p) {
  kernels::ForwardArgs a{};
  a.q = p.q, a.k = p.k, a.v = p.v, a.o = p.o, a.lse = p.lse;
  // Both structs hold the twelve strides as consecutive int64 in q, k, v, o
  // order (batch, seq, head): copy them as one block.
  static_assert(offsetof(Params, o_stride_head) - offsetof(Params, q_stride_batch) == 11 * 8);
  static_assert(offsetof(kernels::ForwardArgs, o_stride_head) -
                    offsetof(kernels::ForwardArgs, q_stride_batch) == 11 * 8);
  std::memcpy(&a.q_stride_batch, &p.q_stride_batch, 12 * sizeof(int64_t));
  a.batch = static_cast<int32_t>(p.batch);
  a.seqlen_q = static_cast<int32_t>(p.seqlen_q);
  a.seqlen_k = static_cast<int32_t>(p.seqlen_k);
  a.heads_q = static_cast<int32_t>(p.heads_q);
  a.heads_kv = static_cast<int32_t>(p.heads_kv);
  a.kv_group = a.heads_q / a.heads_kv;
  const double scale = p.has_softmax_scale ? p.softmax_scale : default_softmax_scale(p.head_dim);
  a.scale_log2 = static_cast<float>(scale * 1.4426950408889634);
  a.causal = p.causal ? 1 : 0;
  const bool shared = p.seqlens != nullptr;
  const bool separate = !shared && (p.seqlens_q != nullptr || p.seqlens_k != nullptr);
  a.lens_q = shared ? p.seqlens : p.seqlens_q;
  a.lens_k = shared ? p.seqlens : p.seqlens_k;
  a.causal_diagonal_public = separate ? 0 : 1;
  a.causal_offset = shared || separate ? 0 : a.seqlen_k - a.seqlen_q;
  return a;
}

}  // namespace

bool leaky_control_compiled() { return true; }

Status forward_leaky_control(const Params& p) {
  if (Status s = validate(p); !s) return s;
  if (p.head_dim != 64)
    return Status{DHP_ERROR_UNSUPPORTED, "the leaky control is built for head_dim 64 only"};
  const kernels::ForwardArgs a = control_args(p);
  const auto stream = static_cast<cudaStream_t>(p.stream);
  const cudaError_t err = p.dtype == DHP_BFLOAT16
                              ? sm80::launch_forward<LeakyTraits<__nv_bfloat16, 64>>(a, stream)
                              : sm80::launch_forward<LeakyTraits<__half, 64>>(a, stream);
  if (err != cudaSuccess) return Status{DHP_ERROR_CUDA, std::string("leaky control launch: ") + cudaGetErrorString(err)};
  return {};
}

}  // namespace dhp::gates
