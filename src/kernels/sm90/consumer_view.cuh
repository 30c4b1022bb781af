// A consumer warpgroup's view of its tile in the Hopper kernel: where its
// query rows, Q and the tile's lengths live, the ring position of the tile's
// key tiles, and the select-based mask of an S tile. The wgmma accumulator
// fragment of one warp is the mma.sync m16n8 C fragment over BN/8 (or D/8)
// column blocks, so the portable kernel's mask and softmax code applies
// unchanged to it viewed as [1][N/8][4] (as_frag).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "kernels/forward_args.hpp"
#include "kernels/sm80/forward_kernel.cuh"
#include "kernels/sm80/mask.cuh"
#include "kernels/sm80/softmax.cuh"
#include "kernels/sm80/warp_mma.cuh"
#include "kernels/sm90/kernel_traits.cuh"
#include "kernels/sm90/tma.cuh"
#include "kernels/sm90/wgmma.cuh"

namespace dhp::sm90 {

template <int N>
__device__ __forceinline__ float (&as_frag(float (&x)[N / 2]))[1][N / 8][4] {
  return *reinterpret_cast<float(*)[1][N / 8][4]>(&x);
}

template <typename T>
constexpr DType dtype_of() {
  return std::is_same_v<T, __half> ? DType::F16 : DType::BF16;
}

// DHP_SM90_SAME_ROWS_MASK (default 1): the secret-length kernels without
// causal masking make one set of visibility words for both of a thread's
// rows (sm80/mask.cuh, mask_scores_same_rows) instead of one per row; 0
// keeps the per-row form (A/B; docs/perf-log.md, session 27).
#ifndef DHP_SM90_SAME_ROWS_MASK
#define DHP_SM90_SAME_ROWS_MASK 1
#endif

// A consumer thread's place in the tile, shared by both main loops: its
// first query row, where Q and the lengths live, and the select-based mask
// of an S tile (in every tile when lengths are secret, else only where the
// public structure needs it).
template <typename Traits>
struct ConsumerView {
  using T = typename Traits::T;
  static constexpr DType DT = dtype_of<T>();
  static constexpr int BM = Traits::kBlockM, BN = Traits::kBlockN, D = Traits::kHeadDim, S = Traits::kStages;
  using Range = sm80::KeyTileRange<BM, BN>;

  SharedStorage<Traits>& st;
  const kernels::ForwardArgs& args;
  const Range& range;
  int g, warp, lane;  // warpgroup, warp in it, lane
  int32_t m0, first_row;
  uint32_t lens_addr;
  int q_buf;         // this tile's Q buffer (st.q[q_buf], q_full/q_empty[q_buf])
  uint32_t q_base;   // shared address of this warpgroup's 64 rows of it
  uint32_t kv0;      // key tiles this CTA consumed before this tile (ring position)
  uint32_t q_phase;  // parity of this tile's q_full phase
  uint32_t tc;       // tiles this CTA ran before this one

  __device__ __forceinline__ ConsumerView(SharedStorage<Traits>& st_, const kernels::ForwardArgs& args_,
                                          const Range& range_, int32_t m0_, int g_, int wtid, uint32_t kv0_,
                                          uint32_t tile_count)
      : st(st_),
        args(args_),
        range(range_),
        g(g_),
        warp(wtid / 32),
        lane(wtid % 32),
        m0(m0_),
        first_row(Traits::kHalfRows ? m0_ + 8 * (wtid / 32) + (wtid % 32) / 4  // the slab's first half only
                                    : m0_ + 64 * g_ + 16 * (wtid / 32) + (wtid % 32) / 4),
        lens_addr(static_cast<uint32_t>(__cvta_generic_to_shared(st_.lens[tile_count % Traits::kLensSlots]))),
        q_buf(tile_count % Traits::kQStages),
        q_base(static_cast<uint32_t>(__cvta_generic_to_shared(st_.q[q_buf])) + 64 * g_ * 128),
        kv0(kv0_),
        q_phase((tile_count / Traits::kQStages) & 1),
        tc(tile_count) {}

  // The barrier the P·V of the tile's it-th key tile waits on: with V's
  // padding zeroed in shared memory (kVReady, ForwardArgs::v_zero_band:
  // producer.cuh) v_ready, which warps 1-3 complete for every V tile (those
  // in a tile's band zeroed first), so that every phase has its waiters
  // (compute-sanitizer synccheck rejects a phase nobody waits for); else the
  // TMA's v_full. An offset, not a select of two addresses (dhp-audit reads
  // a select that ptxas makes two guarded writes as a join with the old
  // value).
  __device__ __forceinline__ uint64_t* v_landed(int32_t it) const {
    uint64_t* full = &st.v_full[stage(it)];
    if constexpr (Traits::kVReady)
      return full + (args.v_zero_band != 0 ? 1 : 0) * static_cast<int>(&st.vr.ready[0] - &st.v_full[0]);  // public
    else
      return full;
  }

  // Ring slot and barrier parity of the tile's it-th key tile.
  __device__ __forceinline__ int stage(int32_t it) const { return (kv0 + it) % S; }
  __device__ __forceinline__ uint32_t parity(int32_t it) const { return ((kv0 + it) / S) & 1; }

  template <int NT>
  __device__ __forceinline__ void mask(float (&s3)[1][NT][4], int32_t n) const {
    int32_t L_q = args.seqlen_q, L_k = args.seqlen_k;
    if constexpr (Traits::kHasLengths)  // secret, re-read at a fixed address
      asm volatile("ld.shared.v2.s32 {%0, %1}, [%2];" : "=r"(L_q), "=r"(L_k) : "r"(lens_addr));
    constexpr int kHalves = Traits::kHalfRows ? 1 : 2;
#if DHP_SM90_SAME_ROWS_MASK
    if constexpr (Traits::kHasLengths) {
      if (args.causal == 0) {  // public
        sm80::mask_scores_same_rows<1, NT, kHalves>(s3, n * Traits::kBlockN + 2 * (lane % 4), L_k - 1);
        return;
      }
    }
#endif
    if constexpr (Traits::kPackedRows) {
      // Packed rows at S_q > 1 (decode.hpp): row r is position r >> q_shift,
      // and L_q counts rows (L_q q_pack), so the diagonal is
      // (r >> q_shift) + L_k - (L_q >> q_shift) per row half. The public
      // skip (public lengths) asks about the tile's first position.
      if (args.q_shift != 0 && args.causal != 0) {  // public
        const int32_t shift = args.q_shift;
        if (Traits::kHasLengths || range.needs_mask(args, n, m0 >> shift)) {  // public unless kHasLengths
          const int32_t lag = L_k - (L_q >> shift);  // secret with lengths: a shift by a public amount
          int32_t diag[kHalves];
#pragma unroll
          for (int hh = 0; hh < kHalves; ++hh) diag[hh] = ((first_row + 8 * hh) >> shift) + lag;
          sm80::mask_scores_halves<NT, kHalves>(s3, n * Traits::kBlockN + 2 * (lane % 4), L_k - 1, diag);
        }
        return;
      }
    }
    if (Traits::kHasLengths || range.needs_mask(args, n, m0)) {  // public unless kHasLengths
      sm80::RowLimits<1> rows;
      rows.init(first_row, L_q, L_k, args.causal != 0);
      sm80::mask_scores<1, NT, kHalves>(s3, n * Traits::kBlockN + 2 * (lane % 4), rows);
    }
  }
};

}  // namespace dhp::sm90
