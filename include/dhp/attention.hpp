// DHP-Safe FlashAttention: C++ API.
//
// A thin, exception-free C++ face over the same parameter struct as the C ABI
// (include/dhp/attention.h), so that both front ends validate and dispatch
// through one code path. See README.md for an example and
// docs/threat-model.md for what is public and what is secret.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "dhp/attention.h"

namespace dhp {

using Params = dhp_attention_params;

enum class DType { kFloat16 = DHP_FLOAT16, kBFloat16 = DHP_BFLOAT16 };

// Result of a call: a code and, on failure, a message naming the argument
// and the rule it broke.
struct Status {
  dhp_status code = DHP_OK;
  std::string message;
  bool ok() const { return code == DHP_OK; }
  explicit operator bool() const { return ok(); }
};

// Element strides of one [B, S, H, D] tensor.
struct Strides {
  int64_t batch, seq, head;
};

namespace detail {
// a * b * c, or INT64_MAX where the product overflows int64 (signed overflow
// would be undefined behaviour). Only sizes past the validated limits can
// overflow, and validation rejects those sizes, naming them, before it
// looks at strides.
inline int64_t mul_saturating(int64_t a, int64_t b, int64_t c = 1) {
  int64_t ab = 0, abc = 0;
  if (__builtin_mul_overflow(a, b, &ab) || __builtin_mul_overflow(ab, c, &abc)) return INT64_MAX;
  return abc;
}
}  // namespace detail

// Strides for a contiguous [B, S, H, D] (BSHD) tensor.
inline Strides bshd_strides(int64_t S, int64_t H, int64_t D) {
  return {detail::mul_saturating(S, H, D), detail::mul_saturating(H, D), D};
}
// Strides for a contiguous [B, H, S, D] (BHSD) tensor viewed as [B, S, H, D].
inline Strides bhsd_strides(int64_t S, int64_t H, int64_t D) {
  return {detail::mul_saturating(H, S, D), D, detail::mul_saturating(S, D)};
}

// Builder with the common defaults: BSHD strides, default scale, no lengths.
inline Params make_params(DType dtype, int64_t batch, int64_t seqlen_q, int64_t seqlen_k,
                          int64_t heads_q, int64_t heads_kv, int64_t head_dim, const void* q,
                          const void* k, const void* v, void* o) {
  Params p;
  dhp_attention_params_init_bshd(&p, static_cast<dhp_dtype>(dtype), batch, seqlen_q, seqlen_k,
                                 heads_q, heads_kv, head_dim, q, k, v, o);
  return p;
}

inline void set_q_strides(Params& p, Strides s) {
  p.q_stride_batch = s.batch; p.q_stride_seq = s.seq; p.q_stride_head = s.head;
}
inline void set_k_strides(Params& p, Strides s) {
  p.k_stride_batch = s.batch; p.k_stride_seq = s.seq; p.k_stride_head = s.head;
}
inline void set_v_strides(Params& p, Strides s) {
  p.v_stride_batch = s.batch; p.v_stride_seq = s.seq; p.v_stride_head = s.head;
}
inline void set_o_strides(Params& p, Strides s) {
  p.o_stride_batch = s.batch; p.o_stride_seq = s.seq; p.o_stride_head = s.head;
}

// Checks every public argument; launches nothing.
DHP_API Status validate(const Params& p);

// Validates, then enqueues softmax(Q K^T * scale) V on p.stream (CUDA graph
// capture and pending errors: as dhp_attention_forward in attention.h).
DHP_API Status attention_forward(const Params& p);

// The scale used when none is given: 1/sqrt(head_dim), computed on the host
// (public), so the device never runs a square root or a division.
inline float default_softmax_scale(int64_t head_dim) {
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
}

}  // namespace dhp
