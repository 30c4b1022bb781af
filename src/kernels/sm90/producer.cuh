// Producer warpgroup of the Hopper kernel: one thread issues the TMA copies
// (per tile of the static schedule: Q, then K and V per key tile into a
// kStages ring); with secret lengths warps 1-3 then zero the V rows past
// L_k in every tile by select, so that padding (NaN included) never meets
// a zero weight in P*V (0 * NaN = NaN). All coordinates and byte counts are public.
#pragma once

#include <cstdint>

#include "kernels/common/ct.cuh"
#include "kernels/common/lengths.cuh"
#include "kernels/forward_args.hpp"
#include "kernels/sm80/forward_kernel.cuh"
#include "kernels/sm90/kernel_traits.cuh"
#include "kernels/sm90/scheduler.cuh"
#include "kernels/sm90/tma.cuh"

namespace dhp::sm90 {

inline constexpr int kZeroThreads = 96;  // producer warps 1-3

// Zeroes rows >= keys_left of a 128-B-swizzled V tile (rows = BN keys), by
// rewriting every 16-byte chunk: the addresses touched do not depend on the
// secret, only the values written do. `tile` is a shared-window address, so
// the accesses are LDS/STS, not generic loads and stores.
template <int BN, int D, int THREADS>
__device__ __forceinline__ void zero_rows_from(uint32_t tile, int32_t keys_left, int ztid) {
  constexpr int kChunks = BN * D / 8;
#pragma unroll 4
  for (int c = ztid; c < kChunks; c += THREADS) {
    const int row = (c % (BN * 8)) / 8;  // a chunk's row: its byte offset in the block / 128
    const uint32_t addr = tile + c * 16;
    uint32_t x, y, z, w;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(x), "=r"(y), "=r"(z), "=r"(w) : "r"(addr));
    const ct::Mask keep = ct::ct_mask_lt(row, keys_left);
    x &= keep, y &= keep, z &= keep, w &= keep;
    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(x), "r"(y), "r"(z), "r"(w) : "memory");
  }
}

// One thread of warp 0 issues every copy; with secret lengths warps 1-3
// zero V (kZeroThreads), so the next copies are never queued behind a
// zeroing pass. The tile loop and the ring position (kv: key tiles issued so far
// by this CTA) follow the static schedule, so every count is public.
template <typename Traits>
__device__ __forceinline__ void run_producer(SharedStorage<Traits>& st, const kernels::ForwardArgs& args,
                                             const TileScheduler<Traits::kBlockM>& sched, const void* tm_q,
                                             const void* tm_k, const void* tm_v, int ptid) {
  constexpr int BM = Traits::kBlockM, BN = Traits::kBlockN, S = Traits::kStages;
  uint32_t kv = 0, tc = 0;
  for (int32_t r = 0; r < sched.rounds(); ++r) {  // public schedule
    const int32_t t = sched.tile_of(r);
    if (t >= sched.total) continue;  // public: no tile for this CTA in the last round
    const Tile tile = sched.decode(t);
    const int32_t m0 = tile.m_block * BM, head_kv = tile.head / args.kv_group;
    const int32_t n_end = sm80::KeyTileRange<BM, BN>(args, m0).n_end;
    int32_t L_q = 0, L_k = 0;
    if constexpr (Traits::kHasLengths) kernels::load_lengths(args, tile.batch, L_q, L_k);
    if (ptid == 0) {
      // The consumers are done with the previous tile's Q (and, without a
      // separate O buffer, with its epilogue).
      tma::wait<true>(&st.q_empty, (tc & 1) ^ 1);  // a fresh barrier passes parity 1 at once
      if constexpr (Traits::kHasLengths) {  // published by q_full's arrive (release)
        st.lens[tc & 1][0] = L_q;
        st.lens[tc & 1][1] = L_k;
      }
      tma::arrive_expect_bytes(&st.q_full, Traits::kQBytes);
#pragma unroll
      for (int cb = 0; cb < Traits::kColBlocks; ++cb)
        tma::load_4d(st.q + cb * BM * 128, tm_q, cb * 64, m0, tile.head, tile.batch, &st.q_full);
    }
    for (int32_t it = 0; it < n_end; ++it, ++kv) {  // public trip count
      const int s = kv % S;
      const uint32_t phase = (kv / S) & 1;
      const int32_t n = n_end - 1 - it;  // key tiles last first, as the portable kernel
      if (ptid == 0) {
        tma::wait<true>(&st.k_empty[s], phase ^ 1);
        tma::arrive_expect_bytes(&st.k_full[s], Traits::kKVBytes);
#pragma unroll
        for (int cb = 0; cb < Traits::kColBlocks; ++cb)
          tma::load_4d(st.k[s] + cb * BN * 128, tm_k, cb * 64, n * BN, head_kv, tile.batch, &st.k_full[s]);
        tma::wait<true>(&st.v_empty[s], phase ^ 1);
        tma::arrive_expect_bytes(&st.v_full[s], Traits::kKVBytes);
#pragma unroll
        for (int cb = 0; cb < Traits::kColBlocks; ++cb)
          tma::load_4d(st.v[s] + cb * BN * 128, tm_v, cb * 64, n * BN, head_kv, tile.batch, &st.v_full[s]);
      }
      if (Traits::kHasLengths && ptid >= 32) {  // public: warps 1-3
        tma::wait<true>(&st.v_full[s], phase);
        zero_rows_from<BN, Traits::kHeadDim, kZeroThreads>(
            static_cast<uint32_t>(__cvta_generic_to_shared(st.v[s])), L_k - n * BN, ptid - 32);
        // Generic-proxy writes, read next by wgmma through the async proxy.
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        tma::arrive(&st.v_ready[s]);
      }
    }
    ++tc;
  }
}

}  // namespace dhp::sm90
