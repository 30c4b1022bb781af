// The Hopper (sm_90a) constant-time attention forward kernel: persistent
// (at most one CTA per SM, tiles from the static schedule in scheduler.cuh),
// TMA loads into a shared-memory ring (kernel_traits.cuh: one to three K/V
// stages), wgmma for both GEMMs, one producer and two or three consumer
// warpgroups (warp specialisation with setmaxnreg), ping-pong between the
// consumers (mainloop.cuh). Same
// contract as the portable kernel: the key loop's trip count is public,
// masking is by select (in every tile when lengths are secret), every output
// row < S_q is written; the epilogue's arithmetic (1/l, empty rows, lse) is
// the portable kernel's, its stores are TMA stores (sm90/epilogue.cuh) --
// in the decode kernel fp32 partials, or with merging units (decode_local.cuh)
// O and lse by plain stores.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "kernels/common/ct.cuh"
#include "kernels/common/opaque.cuh"
#include "kernels/forward_args.hpp"
#include "kernels/sm80/epilogue.cuh"
#include "kernels/sm80/forward_kernel.cuh"
#include "kernels/sm90/kernel_traits.cuh"
#include "kernels/sm90/consumer_view.cuh"
#include "kernels/sm90/decode_local.cuh"
#include "kernels/sm90/decode_narrow.cuh"
#include "kernels/sm90/epilogue.cuh"
#include "kernels/sm90/mainloop.cuh"
#include "kernels/sm90/producer.cuh"
#include "kernels/sm90/scheduler.cuh"
#include "kernels/sm90/timeline_probe.cuh"
#include "kernels/sm90/tma.cuh"

#ifndef DHP_SM90_CYCLE_PROBE
#define DHP_SM90_CYCLE_PROBE 0
#endif
// TEST-ONLY builds must say so (scripts/length-timing-diag.sh,
// scripts/timeline-run.sh): a shipped build cannot carry this by accident.
#if DHP_SM90_CYCLE_PROBE && !defined(DHP_TEST_ONLY_BUILD)
#error "DHP_SM90_CYCLE_PROBE is a TEST-ONLY diagnostic (it prints secret lengths); define DHP_TEST_ONLY_BUILD to build it"
#endif

namespace dhp::sm90 {

// Where a tile's O is staged for its TMA store when not in the ring: the O
// buffer (kernel_traits.cuh, kOBuffer) or the tile's own Q buffer.
template <typename Traits>
__device__ __forceinline__ uint8_t* o_staging(SharedStorage<Traits>& st, int q_buf) {
  if constexpr (Traits::kOBuffer)
    return st.ostage.o;
  else
    return st.q[q_buf];
}

#if DHP_SM90_CYCLE_PROBE
__device__ __forceinline__ uint64_t globaltimer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
#endif

// A tile's key tiles: the query tile's range (sm80::KeyTileRange), or in
// the decode kernel its chunk of it (scheduled_tile).
template <typename Traits>
__device__ __forceinline__ sm80::KeyTileRange<Traits::kBlockM, Traits::kBlockN> key_range(
    const kernels::ForwardArgs& args, int32_t m0, const ScheduledTile& cur) {
  sm80::KeyTileRange<Traits::kBlockM, Traits::kBlockN> range(args, m0);
  if constexpr (Traits::kDecode) range.n_begin = cur.n_begin, range.n_end = cur.n_end;
  return range;
}

template <typename Traits>
__global__ void __launch_bounds__(Traits::kThreads, Traits::kCtasPerSm)
    attention_forward_sm90(const __grid_constant__ kernels::ForwardArgs args,
                           const __grid_constant__ CUtensorMap tm_q, const __grid_constant__ CUtensorMap tm_k,
                           const __grid_constant__ CUtensorMap tm_v, const __grid_constant__ CUtensorMap tm_o) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using T = typename Traits::T;
  constexpr int BM = Traits::kBlockM, BN = Traits::kBlockN, D = Traits::kHeadDim, S = Traits::kStages;
  extern __shared__ uint8_t smem_raw[];
  // Tiles need 1024-byte alignment (128-B swizzle atoms); the launch adds slack.
  auto& st = *reinterpret_cast<SharedStorage<Traits>*>(
      (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~static_cast<uintptr_t>(1023));

  const int tid = threadIdx.x, wg_index = tid / 128;
  const TileScheduler<BM, Traits::kDecode> sched(args);

  timeline::mark(3, 0);  // TEST-ONLY probe (no code by default): kernel entry
  timeline::cta_time(0);
  if (tid == 0) {
    // The tensor maps are kernel parameters, not data of an earlier kernel:
    // their descriptors can be fetched before the dependency wait below.
    tma::prefetch_map(&tm_q);
    tma::prefetch_map(&tm_k);
    tma::prefetch_map(&tm_v);
    tma::prefetch_map(&tm_o);
#pragma unroll
    for (int b = 0; b < Traits::kQStages; ++b) {
      tma::barrier_init(&st.q_full[b], 1);
      tma::barrier_init(&st.q_empty[b], Traits::kConsumerThreads);
    }
#pragma unroll
    for (int s = 0; s < S; ++s) {
      tma::barrier_init(&st.k_full[s], 1);
      tma::barrier_init(&st.v_full[s], 1);
      if constexpr (Traits::kVReady) tma::barrier_init(&st.vr.ready[s], 96);  // producer warps 1-3
      tma::barrier_init(&st.k_empty[s], Traits::kConsumerThreads);
      tma::barrier_init(&st.v_empty[s], Traits::kConsumerThreads);
    }
    tma::barrier_init_fence();
  }
  __syncthreads();
  // Programmatic dependent launch (launch.cuh): the set-up above may overlap
  // the previous kernel in the stream; no thread touches global memory an
  // earlier kernel may write before that kernel has completed and its
  // writes are visible: each role waits (griddepcontrol.wait) before its
  // first such access -- the producer after decoding its first tile
  // (producer.cuh), the consumers before their epilogue's stores. The first
  // tile's decode may read the schedule lists (ForwardArgs::schedule) before
  // the wait: public, uploaded synchronously once per shape and never
  // written by a kernel (schedule_cache.cpp). Except behind V's copy beside the
  // attention (ForwardArgs::v_ready): everything before that copy kernel
  // had completed when it started (an ordinary launch), its own output is
  // read under its counters, and the producer waits for it at the end.
  // The next kernel may start its own set-up now (it waits the same way,
  // so this is safe however early). The same instructions in every launch.
  pdl::allow_next_grid();

  if (wg_index == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Traits::kProducerRegs));
    run_producer<Traits>(st, args, sched, &tm_q, &tm_k, &tm_v, tid);
    return;
  }
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Traits::kConsumerRegs));
#if DHP_SM90_CYCLE_PROBE  // TEST-ONLY diagnostic build (scripts/length-timing-diag.sh), never shipped
  pdl::wait_for_previous_grid();  // the interval starts after the previous kernel, as in its recorded runs
  const uint64_t probe_cycles0 = clock64(), probe_ns0 = globaltimer_ns();
#endif
  // The warpgroup index through a lane-0 broadcast: ptxas then knows it is
  // warp-uniform and builds what derives from it (the Q descriptors) with
  // uniform instructions, instead of moving each descriptor from vector to
  // uniform registers (R2UR) before every wgmma: 15-31 fewer R2UR per kernel,
  // +1-3 % on every D64 row and the small call in an interleaved A/B
  // (docs/perf-log.md, session 7). Not at D = 256, where the same A/B read
  // -2 % at S1024; that kernel is left as it was (SASS-identical).
  const int g = Traits::kHeadDim <= 128 ? __shfl_sync(0xffffffffu, wg_index - 1, 0) : wg_index - 1;
  const int wtid = tid - 128 * wg_index;
  if constexpr (Traits::kNarrow) {  // the narrow decode kernel's own consumer loop (decode_narrow.cuh)
    narrow::run_consumer_loop<Traits>(st, args, sched, wtid);
    return;
  }
  // The thread's index in its warpgroup, read again from the special
  // register (volatile asm: the compiler cannot reuse an earlier read); the
  // one-GEMM kernel takes it so per tile and in its epilogue.
  auto lane_of_warpgroup_now = [&] {
    if constexpr (Traits::kOneGemm) {
      uint32_t t;
      asm volatile("mov.u32 %0, %%tid.x;" : "=r"(t));
      return static_cast<int>(t % 128);
    } else {
      return wtid;
    }
  };
  pingpong::begin<Traits::kConsumers>(g);
  // Tiles as in the producer: tile_of(r) grows with r, so the loop runs
  // while it is below the total, and the next tile is decoded during this
  // one (under the tail's P·V).
  ScheduledTile cur = scheduled_tile<BM, BN>(args, sched, 0), next;
  uint32_t kv = 0, tc = 0;
  for (int32_t r = 0; cur.t < sched.total; ++r) {  // public schedule
    timeline::tile(1 + g, tc, 0);
    const Tile tile = cur.tile;
    const int32_t m0 = cur.tile.m_block * BM;
    const sm80::KeyTileRange<BM, BN> range = key_range<Traits>(args, m0, cur);
    // Per-thread row offsets are the same in every tile. With three consumer
    // warpgroups they are rebuilt per tile from an opaque copy of the thread
    // index (kernels/common/opaque.cuh: no register to hold them through the
    // main loop); with one GEMM in flight (mainloop.cuh, kOneGemm: 128-key
    // tiles at D = 256) from the thread index read again per tile, which
    // took that kernel from 24 bytes of spills to none (the epilogue's
    // staging addresses had been hoisted out of the tile loop). Elsewhere
    // that would move their arithmetic into the main loop, so they stay.
    constexpr bool kRebuild = Traits::kConsumers == 3 || Traits::kOneGemm;
    const int wtid_here = Traits::kOneGemm ? lane_of_warpgroup_now()
                          : kRebuild       ? kernels::opaque_copy(wtid)
                                           : wtid;
    // The warp's first row in the Q buffer (where O is staged) and in the
    // tile (half-row tiles: 8 rows per warp, kernel_traits.cuh).
    const int warp_row0 = 64 * g + 16 * (wtid_here / 32);
    const int tile_row0 = Traits::kHalfRows ? 8 * (wtid_here / 32) : warp_row0;
    // With two Q buffers, the previous tile's buffer is released here, while
    // this tile's first S GEMM runs: its O stores have had a whole GEMM to
    // read the staging rows, and the producer needs the buffer only for the
    // tile after this one. (One buffer: released at the end of its tile,
    // below, as the next tile's Q loads into it. An O buffer of its own,
    // kOBuffer: each Q buffer is released at its tile's last S GEMM,
    // mainloop.cuh, and this does nothing.)
    auto release_previous_q = [&] {
      if constexpr (Traits::kQStages == 2 && !Traits::kOBuffer) {  // with an O buffer: at the last S GEMM
        if (tc > 0) {  // public
          epilogue::wait_staging_free(wtid % 32);
          tma::arrive(&st.q_empty[(tc - 1) % 2]);
        }
      }
    };
    auto decode_next = [&] { next = scheduled_tile<BM, BN>(args, sched, r + 1); };
    if constexpr (Traits::kMergeChunks) {
      if (args.decode_local) {  // public: the launcher's choice (decode_local.cuh)
        decode_local::run_merging_unit<Traits>(st, args, cur, g, wtid_here, kv, tc, release_previous_q, decode_next);
        ++tc;
        cur = next;
        continue;
      }
    }
    const ConsumerView<Traits> view(st, args, range, m0, g, wtid_here, kv, tc);
    timeline::tile(1 + g, tc, 1);
    float o[D / 2];
    sm80::OnlineSoftmax<1> sm;
    run_consumer<Traits>(view, o, sm, release_previous_q, decode_next);
    kv += range.n_end - range.n_begin;

    int32_t L_q = args.seqlen_q;
    if constexpr (Traits::kHasLengths)
      asm volatile("ld.shared.s32 %0, [%1];" : "=r"(L_q) : "r"(view.lens_addr));
    // This warpgroup's S GEMMs, the only readers of its 64 rows of Q, are
    // complete in all four of its warps (the barrier): its warps stage O
    // there. The other warpgroup may still be computing on its own rows.
    // (With an O buffer each warp stages into rows only it uses: no barrier.)
    // (An O buffer, or the decode kernel's stores from registers: no staging in Q.)
    if constexpr (!Traits::kOBuffer && !Traits::kDecode) consumer_warpgroup_sync(g);
    timeline::tile(1 + g, tc, 4);
    // The consumers' only global accesses are the epilogue's stores: they
    // wait here (at once after the first tile), so their own tile decode
    // above overlaps the previous kernel too.
    if (!Traits::kHasLengths || args.v_ready == nullptr) pdl::wait_for_previous_grid();  // public
    const int64_t lse_row0 = (static_cast<int64_t>(tile.batch) * args.heads_q + tile.head) * args.seqlen_q + m0;
    if constexpr (Traits::kDecode) {
      // The work unit's rows of the partials (chunk-major), fp32 O straight
      // from registers (no staging): rows below S_q only.
      const int64_t unit_row0 =
          static_cast<int64_t>(tile.split) * args.batch * args.heads_q * args.seqlen_q + lse_row0;
      if constexpr (Traits::kMergeChunks) {  // the merging units' arithmetic (decode_local.cuh)
        float lse[2];
        decode_local::chunk_result<D>(as_frag<D>(o), sm, L_q, args.scale_log2, m0 + tile_row0, lse, wtid_here % 32);
        decode_local::store_chunk<D>(as_frag<D>(o), lse, args.lse_partial + unit_row0, args.o_partial + unit_row0 * D,
                                     tile_row0, m0 + tile_row0, args.seqlen_q, wtid_here % 32);
      } else {
        sm80::finalize_rows<1, D / 8, 2>(as_frag<D>(o), sm, L_q, args.scale_log2, tile_row0, m0 + tile_row0,
                                         args.seqlen_q, args.lse_partial + unit_row0, wtid_here % 32);
        epilogue::store_rows_fp32<D>(as_frag<D>(o), args.o_partial + unit_row0 * D, tile_row0, m0 + tile_row0,
                                     args.seqlen_q, wtid_here % 32);
      }
    } else {
      sm80::finalize_rows<1, D / 8, Traits::kHalfRows ? 1 : 2>(as_frag<D>(o), sm, L_q, args.scale_log2, tile_row0,
                                                                m0 + tile_row0, args.seqlen_q,
                                                                args.lse != nullptr ? args.lse + lse_row0 : nullptr,
                                                                wtid_here % 32);
      timeline::tile(1 + g, tc, 5);
      if (Traits::kStageOInRing && range.n_end > 0) {  // public
        // O staged in the last key tile's ring slot (kernel_traits.cuh): this
        // warpgroup's half of it once the other warpgroup no longer reads it
        // (mainloop.cuh), 64 rows in the compact 64-row layout; the half is
        // released to the producer once the stores have read it.
        const int s_last = static_cast<int>((kv - 1) % S);
        if (g == 0)  // public: warpgroup index
          ring_handoff::k_free_wait();
        else
          ring_handoff::v_free_wait();
        // K half + g * (V half - K half): an add, not a select (ptxas made
        // the select two predicated writes, which dhp-audit reads as a
        // possibly-secret address: a guarded write joins the old value).
        const uint8_t* stage = st.k[s_last] + g * static_cast<int>(st.v[0] - st.k[0]);
        epilogue::store_rows_tma<T, 64, D, kRebuild>(as_frag<D>(o), stage, warp_row0 - 64 * g, &tm_o, m0 + warp_row0,
                                                     tile.head, tile.batch, wtid_here % 32);
        timeline::mark(1 + g, 42);
        timeline::tile(1 + g, tc, 6);
        epilogue::wait_staging_free(lane_of_warpgroup_now() % 32);
        tma::arrive(&st.k_empty[s_last] + g * static_cast<int>(&st.v_empty[0] - &st.k_empty[0]));
      } else {
        const int q_buf_here = kRebuild ? kernels::opaque_copy(view.q_buf) : view.q_buf;
        // An O buffer's previous stores (the last tile's) were issued a tile ago.
        if constexpr (Traits::kOBuffer) epilogue::wait_staging_free(wtid_here % 32);
        epilogue::store_rows_tma<T, Traits::kQRows, D, kRebuild>(as_frag<D>(o), o_staging(st, q_buf_here), warp_row0,
                                                                 &tm_o, m0 + tile_row0, tile.head, tile.batch,
                                                                 wtid_here % 32);
        timeline::mark(1 + g, 42);
        timeline::tile(1 + g, tc, 6);
        if constexpr (Traits::kQStages == 1) {
          // The next Q lands in these bytes (TMA): this warp's stores must have
          // read them before its threads release the buffer.
          epilogue::wait_staging_free(lane_of_warpgroup_now() % 32);
          tma::arrive(&st.q_empty[0]);
        }
      }
    }
    timeline::tile(1 + g, tc, 7);
    timeline::cta_time(2);
    ++tc;
    cur = next;
  }
  pingpong::end<Traits::kConsumers>(g);
  epilogue::wait_staging_free(lane_of_warpgroup_now() % 32);  // shared memory outlives the last stores' reads
#if DHP_SM90_CYCLE_PROBE
  // SM cycles and nanoseconds of CTA 0's consumer work, and the (secret)
  // first two key lengths so that the analysis can tell the classes apart.
  if (blockIdx.x == 0 && tid == 128)
    printf("dhp-cycles %d %d %llu %llu\n", args.lens_k ? args.lens_k[0] : -1,
           args.lens_k && args.batch > 1 ? args.lens_k[1] : -1,
           static_cast<unsigned long long>(clock64() - probe_cycles0),
           static_cast<unsigned long long>(globaltimer_ns() - probe_ns0));
#endif
#endif
}

}  // namespace dhp::sm90
