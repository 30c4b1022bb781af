// The decode kernel's second step (sm90/decode.hpp): the partial results of
// the chunks of a query row's key range, merged into its O and lse.
//
// Chunk c of row i left O_c (normalised by its own softmax sum, fp32) and
// lse_c (natural log of that sum, in the scores' scale; -inf for a chunk
// that saw no key). The row's result is
//   O = sum_c exp(lse_c) O_c / sum_c exp(lse_c),  lse = log(sum_c exp(lse_c)),
// computed streaming (a running max and rescale, chunk_merge.cuh) over c =
// splits - 1, ..., 0 in that order whatever the data: the chunks are a
// function of S_k alone (decode_plan), so a sequence gets the same bits
// alone or in any batch (threat model G5), and the order and operations are
// those of the decode units that merge their own chunks (decode_local.cuh),
// so it gets the same bits from either.
//
// Constant time: one warp per output row, every chunk read, loops to the
// public chunk count; exp2 / rcp / log2 by MUFU (kernels/common/ct.cuh),
// the empty row (every chunk -inf: sum 0) set to O = 0, lse = -inf by
// select. A NaN lse (NaN inputs) makes its weight, and so the row, NaN;
// max ignores it (ct_fmax), so the other chunks' m is still finite.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace dhp::sm90 {

struct CombineArgs {
  const float* o_partial;    // [splits, B, part_heads, part_seqlen, D]
  const float* lse_partial;  // [splits, B, part_heads, part_seqlen]
  void* o;                   // the call's output (its strides, elements)
  float* lse;                // [B, H_q, S_q] or null
  int64_t o_stride_batch, o_stride_seq, o_stride_head;
  int32_t splits, batch, heads_q, seqlen_q;
  // Query heads packed as rows (ForwardArgs::q_pack): position-major rows
  // of partial head h / q_pack (packed_partial_row). 1: rows and heads as the call's.
  int32_t q_pack;
  int32_t part_heads, part_seqlen;
};

// Where the decode kernel left query head h at position s of batch entry b,
// as a row of one chunk's partials [B, part_heads, part_seqlen]: partial
// head h / q_pack, row s q_pack + h % q_pack (the decode kernel's packed
// rows are position-major: decode.hpp; its causal mask takes row >> q_shift
// as the position). q_pack = 1: head h, row s. Public arithmetic.
__host__ __device__ __forceinline__ int64_t packed_partial_row(const CombineArgs& a, int32_t b, int32_t s, int32_t h) {
  return (static_cast<int64_t>(b) * a.part_heads + h / a.q_pack) * a.part_seqlen + static_cast<int64_t>(s) * a.q_pack +
         h % a.q_pack;
}

// The combine's grid: a warp per query head, kCombineWarpsPerBlock heads
// per CTA, (heads, S_q, B) CTAs. launch_decode weighs its CTA count against
// the CTA slots the attention kernel leaves free (decode.hpp,
// combine_with_pdl).
constexpr int kCombineWarpsPerBlock = 4;
inline int64_t combine_ctas(const CombineArgs& a) {
  return static_cast<int64_t>((a.heads_q + kCombineWarpsPerBlock - 1) / kCombineWarpsPerBlock) * a.seqlen_q * a.batch;
}

// One launch; `bf16` selects the output type, head_dim 64, 128 or 256.
// `overlap`: launched with PDL (its CTAs may start while the attention
// kernel ends; they wait for it before reading the partials); otherwise
// after it in stream order. The kernel and its bits are the same either way.
// `reserve_smem`: bytes of dynamic shared memory each CTA reserves and does
// not use (A/B knob DHP_SM90_COMBINE_SMEM, launch.cuh): fewer of its CTAs
// share an SM.
cudaError_t launch_split_combine(const CombineArgs& a, bool bf16, int head_dim, bool overlap, cudaStream_t stream,
                                 int reserve_smem = 0);

}  // namespace dhp::sm90
