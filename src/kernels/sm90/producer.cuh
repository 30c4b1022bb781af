// Producer warpgroup of the Hopper kernel: one thread issues the TMA copies
// (per tile of the static schedule: Q, then K and V per key tile into a
// kStages ring). With secret key lengths the V rows past L_k must be zero,
// so that padding (NaN included) never meets a zero weight in P*V (0 * NaN
// = NaN): the launcher zeroed them in a copy of V before this kernel
// (padding_scrub.hpp), or, causal with one shared length array
// (ForwardArgs::v_zero_band), warps 1-3 zero them in shared memory in each
// query tile's diagonal band (run_v_zeroing). All coordinates and byte
// counts are public.
#pragma once

#include <cstdint>

#include "kernels/common/ct.cuh"
#include "kernels/common/lengths.cuh"
#include "kernels/forward_args.hpp"
#include "kernels/sm80/forward_kernel.cuh"
#include "kernels/sm90/kernel_traits.cuh"
#include "kernels/sm90/scheduler.cuh"
#include "kernels/sm90/timeline_probe.cuh"
#include "kernels/sm90/tma.cuh"

namespace dhp::sm90 {

// Warp 0 of the producer warpgroup issues every copy: its lane 0 alone
// announces the bytes and issues the copies, and (D64, D128) all 32 of its
// lanes run the ring waits with it. When lane 0 waited alone, lanes 1-31 ran
// ahead through the whole tile loop (≈ 1 200 cycles of tile decode each),
// and lane 0, asleep in an empty-slot wait, was not run again until they had
// finished: ≈ 36 000 cycles lost at the first tile at D64 causal S1024. A
// __syncwarp after each step instead was as fast but ran a timing-dependent
// amount of reconvergence code, which gate 1 per instruction rejects; D256
// keeps lane 0 alone (that form measured -3 % there). The switch
// DHP_SM90_PRODUCER_WARP_WAITS is a mask by head dim (head_dim_bit,
// kernel_traits.cuh); docs/perf-log.md, session 13. Warps 1-3 walk the same loop idle (an early
// return for idle warps made ptxas spill 8 bytes in two consumer instantiations), unless
// ForwardArgs::v_zero_band gives them run_v_zeroing below, a loop of their own.
// The tile loop and the ring position (kv: key tiles issued so far by this
// CTA) follow the static schedule, so every count is public.
// The producer waits for the previous grid (programmatic dependent launch)
// itself, after decoding its first tile: the decode (≈ 1000 cycles of
// parameter loads and divisions, measured with DHP_SM90_TIMELINE) then runs
// while the previous kernel finishes instead of before the first TMA copy.
// Each later tile is decoded at the end of the round before it.
#ifndef DHP_SM90_PRODUCER_WARP_WAITS
#define DHP_SM90_PRODUCER_WARP_WAITS 3
#endif
template <int D>
inline constexpr bool kWarpWaits = (DHP_SM90_PRODUCER_WARP_WAITS & head_dim_bit(D)) != 0;

// V's padding in one landed V tile (ForwardArgs::v_zero_band): thread t of
// warps 1-3 loads every 96th 16-byte chunk and stores it back, kept or
// zeroed by a mask (key < L_k: ct_mask_lt), so the accesses and their count
// are the same for every length. Chunk i lies in row (i / 8) % BN of its
// 64-column block: the 128-byte swizzle moves chunks within a row only.
template <typename Traits>
__device__ __forceinline__ void zero_v_padding(uint8_t* tile, int32_t key0, int32_t L_k, int t) {
  constexpr int BN = Traits::kBlockN, kChunks = Traits::kKVBytes / 16;
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(tile));
#pragma unroll 2
  for (int i = t; i < kChunks; i += 96) {  // public trip count
    uint32_t x0, x1, x2, x3;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(x0), "=r"(x1), "=r"(x2), "=r"(x3)
                 : "r"(base + 16 * i));
    const ct::Mask keep = ct::ct_mask_lt(key0 + (i / 8) % BN, L_k);  // secret L_k: a select
    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(base + 16 * i), "r"(ct::ct_and_mask(keep, x0)),
                 "r"(ct::ct_and_mask(keep, x1)), "r"(ct::ct_and_mask(keep, x2)), "r"(ct::ct_and_mask(keep, x3))
                 : "memory");
  }
}

// A tile's lengths (secret, clamped): with query heads packed as rows in
// the decode kernel, L_q covers ForwardArgs::q_pack rows per position.
template <typename Traits>
__device__ __forceinline__ void load_lengths_of(const kernels::ForwardArgs& args, int32_t batch, int32_t& L_q,
                                                int32_t& L_k) {
  if constexpr (Traits::kDecode)
    kernels::load_lengths_packed(args, batch, L_q, L_k);
  else
    kernels::load_lengths(args, batch, L_q, L_k);
}

// ForwardArgs::v_zero_band: warps 1-3 (thread t of 96) follow the CTA's
// tiles and ring as the copy-issuing warp does, wait for each V tile to
// land, zero V's padding in it where it lies in the tile's band
// (v_band_tiles), and release it on v_ready. A loop of their own, which
// warp 0 never runs: in a shared one, ptxas reused the zeroing's registers
// in warp 0's copy coordinates, which dhp-audit (no path sensitivity on the
// warp index) read as secret addresses.
template <typename Traits>
__device__ __forceinline__ void run_v_zeroing(SharedStorage<Traits>& st, const kernels::ForwardArgs& args,
                                              const TileScheduler<Traits::kBlockM, Traits::kDecode>& sched, int t) {
  constexpr int BM = Traits::kBlockM, BN = Traits::kBlockN, S = Traits::kStages;
  uint32_t kv = 0;
  pdl::wait_for_previous_grid();  // the lengths: global memory
  for (int32_t r = 0;; ++r) {  // public schedule
    const ScheduledTile cur = scheduled_tile<BM, BN>(args, sched, r);
    if (cur.t >= sched.total) break;  // public
    const int32_t m0 = cur.tile.m_block * BM, n_end = cur.n_end;
    // Key tiles n_end - 1 - it, last first; the band counts from n_end.
    const int32_t band = v_band_tiles<BN>(args.v_zero_band, m0, n_end);
    int32_t L_q = 0, L_k = 0;
    load_lengths_of<Traits>(args, cur.tile.batch, L_q, L_k);
    for (int32_t it = 0; it < n_end - cur.n_begin; ++it, ++kv) {  // public trip count
      const int s = kv % S;
      tma::wait<true>(&st.v_full[s], (kv / S) & 1);
      if (it < band) {  // public: position
        zero_v_padding<Traits>(st.v[s], (n_end - 1 - it) * BN, L_k, t);
        tma::fence_generic_to_async();  // the consumers' wgmma read it through the async proxy
      }
      tma::arrive(&st.vr.ready[s]);
    }
  }
}

// The copy beside the attention (ForwardArgs::v_ready; padding_scrub.hpp):
// spins until the pair's counter of copied chunks reaches `count` (acquire,
// GPU scope), then orders what it saw before the TMA reads that follow
// (async proxy). A wait-retry loop like the barrier waits: how often it
// turns depends on the copy's progress, never on data (the counter's value
// is public: public_pointers.audit; tools/validate/per_pc.py exempts the
// loop by its shape).
__device__ __forceinline__ void wait_pair_copied(const uint32_t* counter, uint32_t count) {
  uint32_t copied;
  do {
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(copied) : "l"(counter) : "memory");
  } while (copied < count);  // public: progress
  tma::fence_proxy_global();
}

template <typename Traits>
__device__ __forceinline__ void run_producer(SharedStorage<Traits>& st, const kernels::ForwardArgs& args,
                                             const TileScheduler<Traits::kBlockM, Traits::kDecode>& sched,
                                             const void* tm_q, const void* tm_k, const void* tm_v, int ptid) {
  constexpr int BM = Traits::kBlockM, BN = Traits::kBlockN, S = Traits::kStages;
  if constexpr (Traits::kVReady) {
    if (ptid >= 32 && args.v_zero_band != 0) {  // public: warp index, the launcher's choice
      run_v_zeroing<Traits>(st, args, sched, ptid - 32);
      return;
    }
  }
  uint32_t kv = 0, tc = 0;
  timeline::mark(0, 0);
  // This CTA's tiles are tile_of(0), tile_of(1), ... while below the total
  // (tile_of grows with the round), so the loop needs no division for its
  // trip count. The first tile is decoded before the wait.
  ScheduledTile cur = scheduled_tile<BM, BN>(args, sched, 0);
  // Keeps the compiler front end from sinking the decode below the wait (an
  // empty volatile asm that uses it; volatile asm keeps its order). ptxas
  // sees no instruction here, so the SASS is what confirms it: the decode's
  // MUFU.RCP sit before ACQBULK (docs/perf-log.md).
  asm volatile("" ::"r"(cur.t), "r"(cur.tile.m_block), "r"(cur.tile.head), "r"(cur.tile.batch), "r"(cur.head_kv),
               "r"(cur.n_end));
  // With the copy beside (v_ready), no wait for the copy kernel: the
  // counters say when each pair is ready (public: the launcher's choice).
  if (!Traits::kHasLengths || args.v_ready == nullptr) pdl::wait_for_previous_grid();
  timeline::cta_time(1);
  for (int32_t r = 0; cur.t < sched.total; ++r) {  // public schedule
    const Tile tile = cur.tile;
    const int32_t m0 = tile.m_block * BM, head_kv = cur.head_kv;
    const int32_t n_end = cur.n_end, n_tiles = cur.n_end - cur.n_begin;
    timeline::mark(0, 40);
    timeline::tile(0, tc, 0);
    // Public: thread index (kWarpWaits above).
    // The decode kernels and every one-consumer kernel always: at D = 256
    // lane 0 waiting alone let lanes 1-31 run ahead of it or not depending
    // on whether its first waits blocked, and the loop's instruction counts
    // varied between identical launches (gate 1 per instruction; the decode
    // kernel in docs/perf-log.md, session 32, the dense 64-row one in
    // session 36: +0-8 on 256 loop-head executions, B2 H4 S_q 64 S_k 500).
    constexpr bool kAllLanesWait = kWarpWaits<Traits::kHeadDim> || Traits::kDecode || Traits::kConsumers == 1;
    const bool waits = kAllLanesWait ? ptid < 32 : ptid == 0, issues = ptid == 0;
    if (waits) {
      // Only the issuing thread needs the lengths; loaded before the q_empty
      // wait so that their latency overlaps it.
      int32_t L_q = 0, L_k = 0;
      if constexpr (Traits::kHasLengths)
        if (issues) load_lengths_of<Traits>(args, tile.batch, L_q, L_k);
      // Q buffer b was last used by tile tc - kQStages: its consumers are
      // done with it (with two buffers, epilogue -- O staged there --
      // included, or with an O buffer of its own (kOBuffer) its last S GEMM;
      // with one, its last S GEMM, O being staged in the ring).
      // Either way this Q and the K/V issued after it load while the
      // previous tile still runs.
      const int b = tc % Traits::kQStages;
      tma::wait<true>(&st.q_empty[b], ((tc / Traits::kQStages) & 1) ^ 1);  // a fresh barrier passes parity 1 at once
      timeline::mark(0, 41);
      timeline::tile(0, tc, 1);
      if (issues) {
        if constexpr (Traits::kHasLengths) {  // published by q_full's arrive (release)
          // Tile tc - kLensSlots read this slot: done (q_empty above).
          st.lens[tc % Traits::kLensSlots][0] = L_q;
          st.lens[tc % Traits::kLensSlots][1] = L_k;
        }
        tma::arrive_expect_bytes(&st.q_full[b], Traits::kQLoadBytes);
        timeline::mark(0, 42);
        constexpr int QR = Traits::kQRows;
        if constexpr (Traits::kHalfRows) {
          // Tile rows 8i .. 8i + 7 into buffer rows 16i .. 16i + 7 (8-row
          // boxes: the tensor map's, launch.cuh); rows 16i + 8 .. 16i + 15
          // are never loaded, and their scores never used.
#pragma unroll
          for (int i = 0; i < 4; ++i)
            tma::load_4d(st.q[b] + 16 * i * 128, tm_q, 0, m0 + 8 * i, tile.head, tile.batch, &st.q_full[b]);
        } else {
#pragma unroll
          for (int cb = 0; cb < Traits::kColBlocks; ++cb) {
            if constexpr (Traits::kPackedRows) {
              // S_q > 1 packed (decode.hpp): the 5-D map (d, g, position,
              // kv head, batch); rows m0 .. m0 + 63 are positions m0 >> q_shift
              // on, every g of each (q_pack divides 64).
              if (args.q_shift != 0) {  // public
                tma::load_5d(st.q[b] + cb * QR * 128, tm_q, cb * 64, 0, m0 >> args.q_shift, tile.head, tile.batch,
                             &st.q_full[b]);
                continue;
              }
            }
            tma::load_4d(st.q[b] + cb * QR * 128, tm_q, cb * 64, m0, tile.head, tile.batch, &st.q_full[b]);
          }
        }
      }
      timeline::mark(0, 1);
      timeline::tile(0, tc, 2);
    }
    // One K or V tile into its ring slot once the consumers have released it.
    auto load_kv = [&](uint8_t* dst, const void* map, uint64_t* empty, uint64_t* full, uint32_t phase, int32_t n) {
      tma::wait<true>(empty, phase ^ 1);
      if (issues) {
        tma::arrive_expect_bytes(full, Traits::kKVBytes);
#pragma unroll
        for (int cb = 0; cb < Traits::kColBlocks; ++cb)
          tma::load_4d(dst + cb * BN * 128, map, cb * 64, n * BN, head_kv, tile.batch, full);
      }
    };
    for (int32_t it = 0; it < n_tiles; ++it, ++kv) {  // public trip count
      const int s = kv % S;
      const uint32_t phase = (kv / S) & 1;
      const int32_t n = n_end - 1 - it;  // key tiles last first, as the portable kernel
      if (waits) {
        load_kv(st.k[s], tm_k, &st.k_empty[s], &st.k_full[s], phase, n);
        timeline::mark(0, 2 + 2 * it);
        if (it == 0) timeline::tile(0, tc, 3);
        // (Not in the narrow decode kernel: the decode path copies V before
        // the attention, never beside it (launch.cuh), and there ptxas
        // reloaded the load's descriptor inside this wait's loop, a form
        // tools/validate/per_pc.py does not exempt.)
        if constexpr (Traits::kHasLengths && !Traits::kNarrow)
          if (it == 0 && args.v_ready != nullptr)  // public: position, the launcher's choice
            wait_pair_copied(args.v_ready + tile.batch * args.heads_kv + head_kv, args.v_ready_count);
        load_kv(st.v[s], tm_v, &st.v_empty[s], &st.v_full[s], phase, n);
        timeline::mark(0, 3 + 2 * it);
        if (it == n_tiles - 1) timeline::tile(0, tc, 4);
      }
    }
    ++tc;
    cur = scheduled_tile<BM, BN>(args, sched, r + 1);  // while the consumers work on this tile
  }
  // With the copy beside, the kernel read the copy's output under its
  // counters without waiting for the copy grid; the PTX ISA asks a dependent
  // grid to wait (griddepcontrol.wait) all the same, so that its completion
  // implies the copy's. By now every pair's counter this CTA read is
  // complete, and the copy has finished or is finishing. One thread, the
  // copy-issuing one, which leaves the loop last: a wait in the threads
  // that leave it early (lanes 1-31 at D = 256) blocked their warp's lane 0
  // until the copy grid had completed (-41 % at D = 256, H100; perf-log
  // session 28). Public: thread index, the launcher's choice.
  if constexpr (Traits::kHasLengths)
    if (ptid == 0 && args.v_ready != nullptr) pdl::wait_for_previous_grid();
}

}  // namespace dhp::sm90
