// Producer warpgroup of the Hopper kernel: one thread issues the TMA copies
// (per tile of the static schedule: Q, then K and V per key tile into a
// kStages ring). With secret key lengths the V rows past L_k must be zero,
// so that padding (NaN included) never meets a zero weight in P*V (0 * NaN
// = NaN): the launcher zeroed them in a copy of V before this kernel
// (padding_scrub.hpp). All coordinates and byte counts are public.
#pragma once

#include <cstdint>

#include "kernels/common/lengths.cuh"
#include "kernels/forward_args.hpp"
#include "kernels/sm80/forward_kernel.cuh"
#include "kernels/sm90/kernel_traits.cuh"
#include "kernels/sm90/scheduler.cuh"
#include "kernels/sm90/timeline_probe.cuh"
#include "kernels/sm90/tma.cuh"

namespace dhp::sm90 {

// One thread of warp 0 issues every copy; the other producer threads walk
// the same loop idle (an early return for them made ptxas spill 8 bytes in
// two consumer instantiations). The tile loop and the ring position (kv: key
// tiles issued so far by this CTA) follow the static schedule, so every
// count is public.
template <typename Traits>
__device__ __forceinline__ void run_producer(SharedStorage<Traits>& st, const kernels::ForwardArgs& args,
                                             const TileScheduler<Traits::kBlockM>& sched, const void* tm_q,
                                             const void* tm_k, const void* tm_v, int ptid) {
  constexpr int BM = Traits::kBlockM, BN = Traits::kBlockN, S = Traits::kStages;
  uint32_t kv = 0, tc = 0;
  timeline::mark(0, 0);
  for (int32_t r = 0; r < sched.rounds(); ++r) {  // public schedule
    const int32_t t = sched.tile_of(r);
    if (t >= sched.total) continue;  // public: no tile for this CTA in the last round
    const Tile tile = sched.decode(t);
    const int32_t m0 = tile.m_block * BM, head_kv = tile.head / args.kv_group;
    const int32_t n_end = sm80::KeyTileRange<BM, BN>(args, m0).n_end;
    if (ptid == 0) {
      // Only this thread needs the lengths; loaded before the wait so that
      // their latency overlaps it.
      int32_t L_q = 0, L_k = 0;
      if constexpr (Traits::kHasLengths) kernels::load_lengths(args, tile.batch, L_q, L_k);
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
      timeline::mark(0, 1);
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
        timeline::mark(0, 2 + 2 * it);
        tma::wait<true>(&st.v_empty[s], phase ^ 1);
        tma::arrive_expect_bytes(&st.v_full[s], Traits::kKVBytes);
#pragma unroll
        for (int cb = 0; cb < Traits::kColBlocks; ++cb)
          tma::load_4d(st.v[s] + cb * BN * 128, tm_v, cb * 64, n * BN, head_kv, tile.batch, &st.v_full[s]);
        timeline::mark(0, 3 + 2 * it);
      }
    }
    ++tc;
  }
}

}  // namespace dhp::sm90
