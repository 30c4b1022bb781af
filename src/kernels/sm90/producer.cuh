// Producer warpgroup of the Hopper kernel: one thread issues the TMA copies
// (Q once, then K and V per key tile into a kStages ring); with secret
// lengths the whole warpgroup then zeroes the V rows past L_k in every tile
// by select, so that padding (NaN included) never meets a zero weight in
// P*V (0 * NaN = NaN). All coordinates and byte counts are public.
#pragma once

#include <cstdint>

#include "kernels/common/ct.cuh"
#include "kernels/sm90/kernel_traits.cuh"
#include "kernels/sm90/tma.cuh"

namespace dhp::sm90 {

// Zeroes rows >= keys_left of a 128-B-swizzled V tile (rows = BN keys), by
// rewriting every 16-byte chunk: the addresses touched do not depend on the
// secret, only the values written do.
template <int BN, int D>
__device__ __forceinline__ void zero_rows_from(uint8_t* tile, int32_t keys_left, int ptid) {
  constexpr int kChunks = BN * D / 8;
#pragma unroll 4
  for (int c = ptid; c < kChunks; c += 128) {
    const int row = (c % (BN * 8)) / 8;  // a chunk's row: its byte offset in the block / 128
    uint4* p = reinterpret_cast<uint4*>(tile + c * 16);
    uint4 v = *p;
    const ct::Mask keep = ct::ct_mask_lt(row, keys_left);
    v.x &= keep, v.y &= keep, v.z &= keep, v.w &= keep;
    *p = v;
  }
}

template <typename Traits>
__device__ __forceinline__ void run_producer(SharedStorage<Traits>& st, const void* tm_q, const void* tm_k,
                                             const void* tm_v, int32_t m0, int32_t head, int32_t head_kv,
                                             int32_t batch, int32_t n_end, int ptid) {
  constexpr int BM = Traits::kBlockM, BN = Traits::kBlockN, S = Traits::kStages;
  if (ptid == 0) {
    tma::arrive_expect_bytes(&st.q_full, Traits::kQBytes);
#pragma unroll
    for (int cb = 0; cb < Traits::kColBlocks; ++cb)
      tma::load_4d(st.q + cb * BM * 128, tm_q, cb * 64, m0, head, batch, &st.q_full);
  }
  for (int32_t it = 0; it < n_end; ++it) {  // public trip count
    const int s = it % S;
    const uint32_t phase = (it / S) & 1;
    const int32_t n = n_end - 1 - it;  // key tiles last first, as the portable kernel
    if (ptid == 0) {
      tma::wait<Traits::kOverlap>(&st.k_empty[s], phase ^ 1);  // a fresh barrier passes parity 1 at once
      tma::arrive_expect_bytes(&st.k_full[s], Traits::kKVBytes);
#pragma unroll
      for (int cb = 0; cb < Traits::kColBlocks; ++cb)
        tma::load_4d(st.k[s] + cb * BN * 128, tm_k, cb * 64, n * BN, head_kv, batch, &st.k_full[s]);
      tma::wait<Traits::kOverlap>(&st.v_empty[s], phase ^ 1);
      tma::arrive_expect_bytes(&st.v_full[s], Traits::kKVBytes);
#pragma unroll
      for (int cb = 0; cb < Traits::kColBlocks; ++cb)
        tma::load_4d(st.v[s] + cb * BN * 128, tm_v, cb * 64, n * BN, head_kv, batch, &st.v_full[s]);
    }
    if constexpr (Traits::kHasLengths) {
      tma::wait<Traits::kOverlap>(&st.v_full[s], phase);
      int32_t L_k;
      asm volatile("ld.shared.s32 %0, [%1];" : "=r"(L_k) : "r"(static_cast<uint32_t>(__cvta_generic_to_shared(&st.lens[1]))));
      zero_rows_from<BN, Traits::kHeadDim>(st.v[s], L_k - n * BN, ptid);
      // Generic-proxy writes, read next by wgmma through the async proxy.
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
      tma::arrive(&st.v_ready[s]);
    }
  }
}

}  // namespace dhp::sm90
