// The decode kernel's chunk results (decode.hpp), D <= 128
// (kernel_traits.cuh, kMergeChunks):
//  * every unit computes its chunk's x and lse with chunk_merge.cuh's
//    arithmetic (chunk_result);
//  * a split unit (one chunk) writes them as fp32 partials for the combine
//    (store_chunk);
//  * a merging unit (ForwardArgs::decode_local: a whole query tile) runs its
//    chunks one after another -- the last chunk first, as the producer
//    loads the key tiles (last first) and as the combine reads them --,
//    folds each into a running O in shared memory (MergedO) with the
//    combine's own steps, and writes O and lse at the end (run_merging_unit).
// The two give a row the same bits: the same chunks (decode_plan: S_k and
// the heads, never the batch), the same order, the same operations. So the
// launcher may pick merging units where the batch fills the GPU (no fp32
// partials, no combine kernel) and split units where it does not, by the
// batch size, without a sequence's bits depending on its batch (G5).
// Every loop runs to a public count (chunks: kv_splits); masking is by
// select (chunk_merge.cuh); stores are guarded by public positions only.
#pragma once

#include <cstdint>

#include "kernels/common/ct.cuh"
#include "kernels/forward_args.hpp"
#include "kernels/sm80/softmax.cuh"
#include "kernels/sm80/warp_mma.cuh"
#include "kernels/sm90/chunk_merge.cuh"
#include "kernels/sm90/consumer_view.cuh"
#include "kernels/sm90/epilogue.cuh"
#include "kernels/sm90/kernel_traits.cuh"
#include "kernels/sm90/mainloop.cuh"
#include "kernels/sm90/scheduler.cuh"

namespace dhp::sm90::decode_local {

// O (fp32 accumulator, [1][D/8][4]: rows lane/4 and lane/4 + 8 of the warp's
// 16) normalised in place into the chunk's x, and the chunk's lse per row
// (natural log; -inf for padding rows and rows that saw no key).
template <int D>
__device__ __forceinline__ void chunk_result(float (&o)[1][D / 8][4], const sm80::OnlineSoftmax<1>& sm, int32_t L_q,
                                             float scale_log2, int32_t first_row, float (&lse)[2], int lane) {
  const int g = lane / 4;
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const float l = sm80::quad_allreduce_sum(sm.row_sum[0][hh]);
    const int32_t row = first_row + hh * 8 + g;
    const ct::Mask keep = ct::ct_mask_and(ct::ct_mask_lt(row, L_q), ct::ct_mask_not(ct::ct_mask_eq_f(l, 0.0f)));
    const float inv_l = ct::ct_rcp(l);
#pragma unroll
    for (int j = 0; j < D / 8; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) o[0][j][2 * hh + e] = chunk_merge::chunk_x(o[0][j][2 * hh + e], inv_l, keep);
    lse[hh] = chunk_merge::chunk_lse(sm.row_max[0][hh], l, keep, scale_log2);
  }
}

// A split unit's chunk as partials: lse per row (one lane of each quad) and
// x (epilogue::store_rows_fp32); rows at or past S_q (public) not written.
template <int D>
__device__ __forceinline__ void store_chunk(const float (&x)[1][D / 8][4], const float (&lse)[2], float* lse_rows,
                                            float* o_rows, int warp_row0, int32_t first_row, int32_t seqlen_q,
                                            int lane) {
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int hh = 0; hh < 2; ++hh)
    if (t == 0 && first_row + hh * 8 + g < seqlen_q)  // public: lane, position
      lse_rows[warp_row0 + hh * 8 + g] = lse[hh];
  epilogue::store_rows_fp32<D>(x, o_rows, warp_row0, first_row, seqlen_q, lane);
}

// Where row r (of the kernel's view, decode.hpp decode_args) of view head h
// at batch entry b is in the call: O's element offset and lse's index.
// Packed at S_q > 1 (q_shift > 0): position r >> q_shift, head h q_pack +
// (r & (q_pack - 1)), the call's strides. Packed at S_q = 1: the view's
// strides already reach head h q_pack + r (decode_args); position 0.
// Unpacked: position r, head h. Public arithmetic.
struct CallRow {
  int64_t o_offset, lse_index;
};
__device__ __forceinline__ CallRow call_row(const kernels::ForwardArgs& a, int32_t b, int32_t h, int32_t r) {
  const int32_t qp = a.q_pack;
  const bool by_shift = a.q_shift > 0, by_heads = qp > 1 && a.q_shift == 0;  // public
  const int32_t pos = by_shift ? r >> a.q_shift : by_heads ? 0 : r;
  const int32_t gq = by_shift ? r & (qp - 1) : by_heads ? r : 0;
  const int32_t heads_call = a.heads_q * qp;
  const int32_t seqlen_call = by_shift ? a.seqlen_q >> a.q_shift : by_heads ? 1 : a.seqlen_q;
  CallRow c;
  c.o_offset = by_shift ? static_cast<int64_t>(b) * a.o_stride_batch + static_cast<int64_t>(pos) * a.o_stride_seq +
                              (static_cast<int64_t>(h) * qp + gq) * a.o_stride_head
                        : static_cast<int64_t>(b) * a.o_stride_batch + static_cast<int64_t>(r) * a.o_stride_seq +
                              static_cast<int64_t>(h) * a.o_stride_head;
  c.lse_index = (static_cast<int64_t>(b) * heads_call + static_cast<int64_t>(h) * qp + gq) * seqlen_call + pos;
  return c;
}

// One query tile as a merging unit: its chunks c = kv_splits - 1 .. 0 (the
// key range [0, cur.n_end) cut by key_chunk, an empty chunk past the range
// included, as the split units would), each through run_consumer with fresh
// state, folded into MergedO; then O (as T, 4-byte stores, rows below S_q)
// and lse. kv: the ring position, advanced by the tile's key tiles.
// release_previous_q runs at the first chunk's first S GEMM and
// decode_next under the last chunk's tail (run_consumer: once per call).
template <typename Traits, typename ReleaseQ, typename DecodeNext>
__device__ __forceinline__ void run_merging_unit(SharedStorage<Traits>& st, const kernels::ForwardArgs& args,
                                                 const ScheduledTile& cur, int g, int wtid, uint32_t& kv,
                                                 uint32_t tc, ReleaseQ&& release_previous_q,
                                                 DecodeNext&& decode_next) {
  static_assert(Traits::kMergeChunks && Traits::kConsumers == 1, "one consumer warpgroup with a merged O");
  using T = typename Traits::T;
  constexpr int BM = Traits::kBlockM, BN = Traits::kBlockN, D = Traits::kHeadDim;
  const Tile tile = cur.tile;
  const int32_t m0 = tile.m_block * BM;
  const int lane = wtid % 32, warp_row0 = 16 * (wtid / 32);
  const int32_t first_row = m0 + warp_row0;
  // This thread's running O: element i at byte i * 512 from here (shared
  // state space explicitly: through the generic pointer ptxas emitted
  // generic LD / ST, 64-bit addresses).
  const uint32_t acc = static_cast<uint32_t>(__cvta_generic_to_shared(&st.merged.acc[0][wtid]));
  chunk_merge::Row rows[2] = {chunk_merge::start(), chunk_merge::start()};
  float o[D / 2];
  const int32_t splits = args.kv_splits;
  for (int32_t c = splits - 1; c >= 0; --c) {  // public trip count
    const KeyChunk chunk = key_chunk(cur.n_end, c, args.split_key_tiles);
    sm80::KeyTileRange<BM, BN> range(args, m0);
    range.n_begin = chunk.n_begin, range.n_end = chunk.n_end;
    const ConsumerView<Traits> view(st, args, range, m0, g, wtid, kv, tc);
    sm80::OnlineSoftmax<1> sm;
    run_consumer<Traits>(
        view, o, sm,
        [&] {
          if (c == splits - 1) release_previous_q();  // public
        },
        [&] {
          if (c == 0) decode_next();  // public
        });
    kv += static_cast<uint32_t>(chunk.n_end - chunk.n_begin);
    int32_t L_q = args.seqlen_q;
    if constexpr (Traits::kHasLengths) asm volatile("ld.shared.s32 %0, [%1];" : "=r"(L_q) : "r"(view.lens_addr));
    float lse[2];
    chunk_result<D>(as_frag<D>(o), sm, L_q, args.scale_log2, first_row, lse, lane);
    const chunk_merge::Step k0 = chunk_merge::step(rows[0], lse[0]);
    const chunk_merge::Step k1 = chunk_merge::step(rows[1], lse[1]);
    const bool first = c == splits - 1, last = c == 0;  // public
#pragma unroll
    for (int i = 0; i < D / 2; ++i) {
      const chunk_merge::Step k = (i % 4) < 2 ? k0 : k1;  // element i: row half (i % 4) / 2
      float before = 0.0f;
      if (!first)  // public: chunk index
        asm volatile("ld.shared.f32 %0, [%1];" : "=f"(before) : "r"(acc + 512u * i));
      o[i] = chunk_merge::fold(before, k, o[i]);
      if (!last)  // public
        asm volatile("st.shared.f32 [%0], %1;" ::"r"(acc + 512u * i), "f"(o[i]) : "memory");
    }
  }
  // The merged rows: O = acc / l, lse; rows at or past S_q (public) not
  // written. The consumers' first global stores: after the previous grid
  // (programmatic dependent launch, as forward_kernel.cuh's epilogue).
  if (!Traits::kHasLengths || args.v_ready == nullptr) pdl::wait_for_previous_grid();  // public
  const int gr = lane / 4, t = lane % 4;
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const ct::Mask kept = chunk_merge::keep(rows[hh]);
    const float inv_l = ct::ct_rcp(rows[hh].l);
    const int32_t r = first_row + hh * 8 + gr;
    if (r < args.seqlen_q) {  // public: position
      const CallRow at = call_row(args, tile.batch, tile.head, r);
      T* dst = static_cast<T*>(args.o) + at.o_offset + 2 * t;
#pragma unroll
      for (int j = 0; j < D / 8; ++j)
        *reinterpret_cast<uint32_t*>(dst + 8 * j) =
            chunk_merge::out_pair<T>(chunk_merge::out(o[4 * j + 2 * hh], inv_l, kept),
                                     chunk_merge::out(o[4 * j + 2 * hh + 1], inv_l, kept));
      if (args.lse != nullptr && t == 0)  // public
        args.lse[at.lse_index] = chunk_merge::lse(rows[hh], kept);
    }
  }
}

}  // namespace dhp::sm90::decode_local
