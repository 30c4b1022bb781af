// Static persistent tile schedule of the Hopper kernel. The grid is at most
// one CTA per SM; CTA c works on tiles c, c + gridDim.x, c + 2·gridDim.x, ...
// of a fixed order computed from the public shape alone (no atomics, no
// dynamic queue: which CTA runs which tile never depends on timing or data).
//   non-causal: query blocks of one (batch, head) are adjacent, so the CTAs
//               running at the same time share K/V in L2;
//   causal:     heaviest query blocks (most key tiles) first, all heads of
//               one block together, so the light blocks fill the tail.
#pragma once

#include <cstdint>

#include "kernels/forward_args.hpp"

namespace dhp::sm90 {

struct Tile {
  int32_t m_block, head, batch;
};

template <int BM>
struct TileScheduler {
  int32_t m_blocks, heads, total;
  bool causal;

  __host__ __device__ explicit TileScheduler(const kernels::ForwardArgs& a)
      : m_blocks(static_cast<int32_t>((a.seqlen_q + BM - 1) / BM)),
        heads(static_cast<int32_t>(a.heads_q)),
        total(m_blocks * heads * static_cast<int32_t>(a.batch)),
        causal(a.causal != 0) {}

  __device__ __forceinline__ Tile decode(int32_t t) const {
    Tile x;
    int32_t bh;
    if (causal) {
      const int32_t per_block = total / m_blocks;  // heads * batch
      x.m_block = m_blocks - 1 - t / per_block;
      bh = t % per_block;
    } else {
      x.m_block = t % m_blocks;
      bh = t / m_blocks;
    }
    x.head = bh % heads;
    x.batch = bh / heads;
    return x;
  }
};

}  // namespace dhp::sm90
