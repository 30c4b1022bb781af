// Cluster units of the narrow decode kernel (ForwardArgs::decode_cluster;
// the launcher's choice, launch.cuh): the combine kernel's merge, done
// inside the attention kernel by one CTA of a thread-block cluster.
//
// Split units leave each chunk's fp32 partial (x_c = O_c / l_c and lse_c)
// in scratch memory and a second kernel (split_combine.cu) merges them:
// that kernel waits for the whole attention grid, and on an H200 the call
// ended 3.4-3.8 us after the attention kernel at B8 GQA 32/8 S_k 4096 D128
// (docs/perf-log.md, sessions 43-44). A cluster's CTAs are resident
// together, so they can wait for one another inside one kernel: the
// cluster takes one query tile per round (scheduler.cuh, cluster_unit),
// each CTA writes its chunks' partials exactly as a split unit does, then
// arrives on the gather barrier of the round's merging CTA (rank round %
// cluster, so that the merges spread over the cluster's CTAs); that CTA
// waits for all of them and merges the tile's chunks with the combine
// kernel's arithmetic, in its order (chunk_merge.cuh, chunks last first),
// one warp per two rows and E = D / 32 columns per lane as the combine's
// warp per row. A row gets the same bits as from the combine kernel or a
// merging unit, so the launcher may choose by the batch (threat model G5).
//
// Memory order: each thread fences its partial stores at cluster scope, the
// warpgroup meets at a barrier, then one thread arrives (release, cluster
// scope) on the merging CTA's barrier; there every thread waits with
// acquire at cluster scope and reads the partials from L2 (ld.global.cg:
// no L1 line of an earlier call can be read).
//
// Constant time: the merging CTA, the rounds, the chunk count and every
// address are public (block index, schedule, shape); the wait's phase
// completes by arrivals, never by data; the merge is chunk_merge's selects
// and fixed-latency MUFU.
#pragma once

#include <cstdint>

#include "kernels/common/ct.cuh"
#include "kernels/forward_args.hpp"
#include "kernels/sm90/chunk_merge.cuh"
#include "kernels/sm90/decode_local.cuh"
#include "kernels/sm90/kernel_traits.cuh"
#include "kernels/sm90/mainloop.cuh"
#include "kernels/sm90/scheduler.cuh"
#include "kernels/sm90/tma.cuh"

namespace dhp::sm90::decode_cluster {

// Where a CTA's r-th unit stands in its cluster's rounds (public).
struct Round {
  int32_t index;       // the cluster's round (one query tile each)
  bool last_of_tile;   // the CTA's last chunk of that tile
  uint32_t merger;     // the rank that merges the round's tile
  uint32_t phase;      // the parity of that merge on the merger's gather barrier
};
__device__ __forceinline__ Round round_of(int32_t r, int32_t splits, int32_t cluster) {
  const int32_t per_cta = splits / cluster;
  Round x;
  x.index = r / per_cta;
  x.last_of_tile = r - x.index * per_cta == per_cta - 1;
  x.merger = static_cast<uint32_t>(x.index % cluster);
  x.phase = static_cast<uint32_t>(x.index / cluster) & 1;  // the merger's count of merges so far
  return x;
}

// After the CTA's last partial of a tile: every consumer thread fences its
// stores, the warpgroup meets, one thread arrives on the merger's barrier.
__device__ __forceinline__ void hand_in(uint64_t* gather, uint32_t merger, int wtid) {
  cluster::fence_writes();
  consumer_warpgroup_sync(0);
  if (wtid == 0) cluster::arrive_at(gather, merger);  // public: thread index
}

// A lane's E consecutive fp32 values of one partial row, from L2.
template <int E>
__device__ __forceinline__ void load_partial_cg(const float* src, float (&x)[E]) {
  if constexpr (E == 2) {
    const float2 v = __ldcg(reinterpret_cast<const float2*>(src));
    x[0] = v.x, x[1] = v.y;
  } else {
#pragma unroll
    for (int i = 0; i < E / 4; ++i) {
      const float4 v = __ldcg(reinterpret_cast<const float4*>(src) + i);
      x[4 * i] = v.x, x[4 * i + 1] = v.y, x[4 * i + 2] = v.z, x[4 * i + 3] = v.w;
    }
  }
}

// The merger: waits for the cluster's partials of `tile`, merges each of
// its rows (warp w: rows 2w and 2w + 1, both folds in one loop), writes O
// and lse. Rows at or past the view's S_q (public) read row S_q - 1 in
// their place and store nothing.
template <typename Traits>
__device__ __forceinline__ void merge_tile(SharedStorage<Traits>& st, const kernels::ForwardArgs& args,
                                           const Tile& tile, uint32_t phase, int wtid) {
  using T = typename Traits::T;
  constexpr int D = Traits::kHeadDim, E = D / 32;
  cluster::wait_acquire(&st.narrow.gather, phase);
  const int lane = wtid % 32, w = wtid / 32;
  const int32_t rows_q = args.seqlen_q;  // the view's rows (public)
  const int64_t row0 = (static_cast<int64_t>(tile.batch) * args.heads_q + tile.head) * rows_q;
  const int64_t unit = static_cast<int64_t>(args.batch) * args.heads_q * rows_q;  // rows per chunk
  int32_t q[2];
  chunk_merge::Row row[2];
  float acc[2][E];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    q[h] = 2 * w + h;
    row[h] = chunk_merge::start();
#pragma unroll
    for (int e = 0; e < E; ++e) acc[h][e] = 0.0f;
  }
  for (int32_t c = args.kv_splits - 1; c >= 0; --c) {  // public trip count, the combine's order
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t prow = c * unit + row0 + (q[h] < rows_q ? q[h] : rows_q - 1);  // public
      const chunk_merge::Step k = chunk_merge::step(row[h], __ldcg(args.lse_partial + prow));
      float x[E];
      load_partial_cg<E>(args.o_partial + prow * D + lane * E, x);
#pragma unroll
      for (int e = 0; e < E; ++e) acc[h][e] = chunk_merge::fold(acc[h][e], k, x[e]);
    }
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    if (q[h] >= rows_q) continue;  // public: position
    const ct::Mask kept = chunk_merge::keep(row[h]);
    const float inv_l = ct::ct_rcp(row[h].l);
    float out[E];
#pragma unroll
    for (int e = 0; e < E; ++e) out[e] = chunk_merge::out(acc[h][e], inv_l, kept);
    const decode_local::CallRow to = decode_local::call_row(args, tile.batch, tile.head, q[h]);
    chunk_merge::store_row<T, E>(static_cast<T*>(args.o) + to.o_offset + lane * E, out);
    if (args.lse != nullptr && lane == 0)  // public
      args.lse[to.lse_index] = chunk_merge::lse(row[h], kept);
  }
}

}  // namespace dhp::sm90::decode_cluster
