// The kernel-side arguments of one forward call, built from validated
// public parameters. Shared by the dispatcher (src/api/forward.cpp) and the
// test-only leaky control (tools/validate/leaky_control.cu), so that the
// control runs on exactly the arguments the shipped kernels get.
#pragma once

#include "api/limits.hpp"
#include "dhp/attention.hpp"
#include "kernels/forward_args.hpp"

namespace dhp {

inline kernels::ForwardArgs make_forward_args(const Params& p) {
  kernels::ForwardArgs a{};
  a.q = p.q; a.k = p.k; a.v = p.v; a.o = p.o; a.lse = p.lse;
  a.q_stride_batch = p.q_stride_batch; a.q_stride_seq = p.q_stride_seq; a.q_stride_head = p.q_stride_head;
  a.k_stride_batch = p.k_stride_batch; a.k_stride_seq = p.k_stride_seq; a.k_stride_head = p.k_stride_head;
  a.v_stride_batch = p.v_stride_batch; a.v_stride_seq = p.v_stride_seq; a.v_stride_head = p.v_stride_head;
  a.o_stride_batch = p.o_stride_batch; a.o_stride_seq = p.o_stride_seq; a.o_stride_head = p.o_stride_head;
  a.batch = static_cast<int32_t>(p.batch);
  a.seqlen_q = static_cast<int32_t>(p.seqlen_q);
  a.seqlen_k = static_cast<int32_t>(p.seqlen_k);
  a.heads_q = static_cast<int32_t>(p.heads_q);
  a.heads_kv = static_cast<int32_t>(p.heads_kv);
  a.kv_group = static_cast<int32_t>(p.heads_q / p.heads_kv);
  const double scale = p.has_softmax_scale ? p.softmax_scale : default_softmax_scale(p.head_dim);
  a.scale_log2 = static_cast<float>(scale * limits::kLog2e);
  a.causal = p.causal ? 1 : 0;
  if (p.seqlens != nullptr) {
    // Shared lengths (S_q == S_k validated): L_k - L_q = 0 for every
    // sequence, so the causal diagonal j <= i is public.
    a.lens_q = a.lens_k = p.seqlens;
    a.causal_diagonal_public = 1;
    a.causal_offset = 0;
  } else if (p.seqlens_q != nullptr || p.seqlens_k != nullptr) {
    // Separate lengths: the diagonal's offset L_k - L_q is secret.
    a.lens_q = p.seqlens_q;
    a.lens_k = p.seqlens_k;
    a.causal_diagonal_public = 0;
    a.causal_offset = 0;
  } else {
    a.causal_diagonal_public = 1;
    a.causal_offset = a.seqlen_k - a.seqlen_q;
  }
  return a;
}

}  // namespace dhp
