// Static persistent tile schedule of the Hopper kernel. The grid is at most
// one CTA per SM (G CTAs); the tiles, in a fixed order computed from the
// public shape alone, are dealt in rounds of G, snake-wise: in even rounds
// CTA c takes position c, in odd rounds position G-1-c. No atomics and no
// dynamic queue: which CTA runs which tile never depends on timing or data.
// The snake pairs heavy with light tiles: with causal masking, plain
// round-robin gave CTA c the same query block every round whenever the
// block count divides G (S = 512: 4 blocks, G = 132), 1.47x the mean load on
// the busiest CTA; snake-wise 1.03x (modelled; heavy-first head-major order).
// Orders (TileOrder):
//   kHeadMajor:          query blocks of one (batch, head) adjacent, so the
//                        CTAs running at the same time share K/V in L2;
//   kHeadMajorHeavyFirst: the same with each head's blocks heaviest first
//                        (causal: most key tiles first);
//   kHeavyFirst:         heaviest query block of every head first, then the
//                        next (causal balance across CTAs; poorer L2 reuse);
//   kPartialLast:        head-major over the full query blocks, then the
//                        partial last block of every head (non-causal
//                        192-row tiles whose last block leaves a consumer
//                        warpgroup without a row: those tiles are cheaper,
//                        mainloop.cuh, and dealt last they fill the CTAs
//                        that take one tile more than others).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/forward_args.hpp"
#include "kernels/sm80/forward_kernel.cuh"

namespace dhp::sm90 {

struct Tile {
  int32_t m_block, head, batch;
};

enum TileOrder : int32_t { kHeadMajor = 0, kHeadMajorHeavyFirst = 1, kHeavyFirst = 2, kPartialLast = 3 };

template <int BM>
struct TileScheduler {
  int32_t m_blocks, heads, total;
  int32_t order;

  __host__ __device__ explicit TileScheduler(const kernels::ForwardArgs& a)
      : m_blocks(static_cast<int32_t>((a.seqlen_q + BM - 1) / BM)),
        heads(static_cast<int32_t>(a.heads_q)),
        total(m_blocks * heads * static_cast<int32_t>(a.batch)),
        order(a.tile_order) {}

  // The snake deal: in round r, CTA c takes position snake(r, c, G) of the
  // round; the map is its own inverse (position -> CTA), which the host's
  // load model uses.
  __host__ __device__ static int32_t snake(int32_t r, int32_t i, int32_t grid) {
    return (r & 1) ? grid - 1 - i : i;
  }
  // This CTA's tile in round r (>= total: none; it grows with r, so a CTA's
  // loop runs while it is below the total).
  __device__ __forceinline__ int32_t tile_of(int32_t r) const {
    const int32_t grid = static_cast<int32_t>(gridDim.x);
    return r * grid + snake(r, static_cast<int32_t>(blockIdx.x), grid);
  }

  __host__ __device__ __forceinline__ Tile decode(int32_t t) const {
    Tile x;
    int32_t bh;
    if (order == kHeavyFirst) {
      const int32_t per_block = total / m_blocks;  // heads * batch
      x.m_block = m_blocks - 1 - t / per_block;
      bh = t % per_block;
    } else if (order == kPartialLast) {  // one block per head (none full): head-major
      const int32_t in_full_blocks = total - total / m_blocks;
      x.m_block = t < in_full_blocks ? t % (m_blocks - 1) : m_blocks - 1;
      bh = t < in_full_blocks ? t / (m_blocks - 1) : t - in_full_blocks;
    } else {
      x.m_block = order == kHeadMajorHeavyFirst ? m_blocks - 1 - t % m_blocks : t % m_blocks;
      bh = t / m_blocks;
    }
    x.head = bh % heads;
    x.batch = bh / heads;
    return x;
  }
};

// A CTA's tile in round r, decoded (integer divisions, kernel parameters)
// as the producer and the consumers need it; both decode one round ahead of
// use. t >= sched.total: no tile for this CTA in that round (public).
struct ScheduledTile {
  int32_t t = 0;
  Tile tile{};
  int32_t head_kv = 0, n_end = 0;
};
template <int BM, int BN>
__device__ __forceinline__ ScheduledTile scheduled_tile(const kernels::ForwardArgs& args,
                                                        const TileScheduler<BM>& sched, int32_t r) {
  ScheduledTile p;
  p.t = sched.tile_of(r);
  p.tile = sched.decode(p.t);
  p.head_kv = p.tile.head / args.kv_group;
  p.n_end = sm80::KeyTileRange<BM, BN>(args, p.tile.m_block * BM).n_end;
  return p;
}

// Host: the order for a launch, from the public shape alone. Without causal
// masking every tile weighs the same and kHeadMajor keeps K/V in L2. With
// it, the launcher models the snake deal (load of a CTA = sum over its tiles
// of key tiles + 1 for the epilogue) and keeps kHeadMajorHeavyFirst unless
// its busiest CTA carries > 1.10x the mean, in which case it takes
// kHeavyFirst (near 1.00x; it streams K/V of many heads at once, about 3 %
// slower on a balanced shape, H200). One head spanning about a round of G
// tiles (S = 16k, few heads) is the case that needs it: 1.5-1.8x modelled.
// Without causal masking and with 192-row tiles whose last block leaves a
// whole warpgroup idle (S_q % 192 in 1..128), the partial blocks go last
// (kPartialLast): under the snake deal with head-major order a CTA takes
// the same query block every round whenever the block count divides G (S_q
// = 1024: 6 blocks, G = 132), so some CTAs never get a cheap partial tile
// while others get one in every other round: modelled max / mean load
// 1.105 at S1024, 1.125 at S512 (head-major) against 1.031 (partial last;
// the 3 % is the round that only some CTAs take).
template <int BM, int BN>
int32_t choose_tile_order(const kernels::ForwardArgs& a, int32_t grid) {
  if (!a.causal) {
    const int64_t tail_rows = a.seqlen_q % BM;
    return BM == 192 && a.seqlen_q > BM && tail_rows != 0 && tail_rows <= 128 ? kPartialLast : kHeadMajor;
  }
  kernels::ForwardArgs modelled = a;
  modelled.tile_order = kHeadMajorHeavyFirst;
  const TileScheduler<BM> sched(modelled);
  std::vector<int64_t> load(grid, 0);
  int64_t sum = 0;
  for (int32_t t = 0; t < sched.total; ++t) {
    const int32_t cta = TileScheduler<BM>::snake(t / grid, t % grid, grid);
    // Weight: key tiles visited + 1 for the epilogue.
    const int64_t w = sm80::KeyTileRange<BM, BN>(a, sched.decode(t).m_block * BM).n_end + 1;
    load[cta] += w;
    sum += w;
  }
  int64_t busiest = 0;
  for (int64_t l : load) busiest = l > busiest ? l : busiest;
  return busiest * 100 * grid > sum * 110 ? kHeavyFirst : kHeadMajorHeavyFirst;
}

}  // namespace dhp::sm90
