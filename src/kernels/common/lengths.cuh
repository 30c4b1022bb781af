// Secret sequence lengths of one batch entry, shared by every kernel family:
// values read from public addresses (the pointers and the batch index are
// public) and clamped arithmetically to [0, S_q] and [0, S_k]; without a
// length array, the public S.
#pragma once

#include <cstdint>

#include "kernels/common/ct.cuh"
#include "kernels/forward_args.hpp"

namespace dhp::kernels {

__device__ __forceinline__ void load_lengths(const ForwardArgs& args, int32_t batch, int32_t& lq, int32_t& lk) {
  lq = args.seqlen_q, lk = args.seqlen_k;
  if (args.lens_q != nullptr) lq = ct::ct_clamp(args.lens_q[batch], 0, lq);  // public test
  if (args.lens_k != nullptr) lk = ct::ct_clamp(args.lens_k[batch], 0, lk);  // public test
}

// The Hopper decode kernel's lengths (ForwardArgs::q_pack): with the query
// heads of one position packed as rows (q_pack of them per position), L_q
// is clamped to the positions (S_q / q_pack) and then covers q_pack rows --
// a multiply by a public factor. q_pack = 1: load_lengths.
__device__ __forceinline__ void load_lengths_packed(const ForwardArgs& args, int32_t batch, int32_t& lq,
                                                    int32_t& lk) {
  lq = args.seqlen_q, lk = args.seqlen_k;
  if (args.lens_q != nullptr)  // public test
    lq = ct::ct_clamp(args.lens_q[batch], 0, args.seqlen_q / args.q_pack) * args.q_pack;
  if (args.lens_k != nullptr) lk = ct::ct_clamp(args.lens_k[batch], 0, lk);  // public test
}

}  // namespace dhp::kernels
