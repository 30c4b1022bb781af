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

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <utility>
#include <vector>

#include "kernels/forward_args.hpp"
#include "kernels/sm80/forward_kernel.cuh"

namespace dhp::sm90 {

struct Tile {
  int32_t m_block, head, batch;
  int32_t split = 0;  // the key-range chunk (decode kernel; 0 elsewhere)
};

enum TileOrder : int32_t { kHeadMajor = 0, kHeadMajorHeavyFirst = 1, kHeavyFirst = 2, kPartialLast = 3 };

// SPLIT (the decode kernel, sm90/decode.hpp): every query tile is
// ForwardArgs::kv_splits work units, one per chunk of its key range,
// numbered with the query block fastest, then the chunk, the head and the
// batch entry; the snake deal, no order, no lists.
template <int BM, bool SPLIT = false>
struct TileScheduler {
  int32_t m_blocks, heads, total;
  int32_t order;
  const int32_t* schedule;  // balanced_schedule's lists, or null (public)
  int32_t splits;

  __host__ __device__ explicit TileScheduler(const kernels::ForwardArgs& a)
      : m_blocks(static_cast<int32_t>((a.seqlen_q + BM - 1) / BM)),
        heads(static_cast<int32_t>(a.heads_q)),
        total(m_blocks * heads * static_cast<int32_t>(a.batch) * units_per_tile(a)),
        order(SPLIT ? kHeadMajor : a.tile_order),
        schedule(SPLIT ? nullptr : a.schedule),
        splits(units_per_tile(a)) {}

  // Work units per query tile: one per chunk in the decode kernel's split
  // units; one where a unit merges its own chunks (ForwardArgs::decode_local,
  // decode_local.cuh) and in the dense kernels.
  __host__ __device__ static int32_t units_per_tile(const kernels::ForwardArgs& a) {
    return SPLIT && !a.decode_local ? a.kv_splits : 1;
  }

  // The snake deal: in round r, CTA c takes position snake(r, c, G) of the
  // round; the map is its own inverse (position -> CTA), which the host's
  // load model uses.
  __host__ __device__ static int32_t snake(int32_t r, int32_t i, int32_t grid) {
    return (r & 1) ? grid - 1 - i : i;
  }
  // This CTA's tile in round r (>= total: none; a CTA's loop runs while it
  // is below the total). With a schedule (public data, loaded through the
  // read-only path): the r-th entry of this CTA's list, `total` past its
  // end. Without: the snake deal, which grows with r.
  __device__ __forceinline__ int32_t tile_of(int32_t r) const {
    const int32_t grid = static_cast<int32_t>(gridDim.x);
    if (schedule != nullptr) {  // public
      const int32_t begin = __ldg(schedule + blockIdx.x), end = __ldg(schedule + blockIdx.x + 1);
      return r < end - begin ? __ldg(schedule + grid + 1 + begin + r) : total;  // public
    }
    return r * grid + snake(r, static_cast<int32_t>(blockIdx.x), grid);
  }

  __host__ __device__ __forceinline__ Tile decode(int32_t t) const {
    Tile x;
    int32_t bh;
    if constexpr (SPLIT) {
      x.m_block = t % m_blocks;
      const int32_t unit = t / m_blocks;
      x.split = unit % splits;
      bh = unit / splits;
    } else if (order == kHeavyFirst) {
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
// Its key tiles are [n_begin, n_end): the whole range of the query tile
// (sm80::KeyTileRange), or with SPLIT its chunk's part of it -- empty
// (n_end = n_begin) for a chunk wholly past the range (a causal diagonal
// that ends before it), which then takes the no-key-tile path (O = 0, lse =
// -inf: weight 0 in the combine). Public: positions only.
struct KeyChunk {
  int32_t n_begin, n_end;
};
// Host too (tests): chunk `split` of a key range [0, n_end), chunks of
// `per_chunk` key tiles; empty past the range.
__host__ __device__ __forceinline__ KeyChunk key_chunk(int32_t n_end, int32_t split, int32_t per_chunk) {
  const int32_t begin = split * per_chunk;
  const int32_t end = n_end < begin + per_chunk ? n_end : begin + per_chunk;
  return KeyChunk{begin, end > begin ? end : begin};
}
struct ScheduledTile {
  int32_t t = 0;
  Tile tile{};
  int32_t head_kv = 0, n_end = 0, n_begin = 0;
};
template <int BM, int BN, bool SPLIT>
__device__ __forceinline__ ScheduledTile scheduled_tile(const kernels::ForwardArgs& args,
                                                        const TileScheduler<BM, SPLIT>& sched, int32_t r) {
  ScheduledTile p;
  p.t = sched.tile_of(r);
  p.tile = sched.decode(p.t);
  p.head_kv = p.tile.head / args.kv_group;
  p.n_end = sm80::KeyTileRange<BM, BN>(args, p.tile.m_block * BM).n_end;
  if constexpr (SPLIT) {
    if (!args.decode_local) {  // public: a merging unit walks the whole range
      const KeyChunk c = key_chunk(p.n_end, p.tile.split, args.split_key_tiles);
      p.n_begin = c.n_begin, p.n_end = c.n_end;
    }
  }
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
// Where a kHeavyFirst round reads more K/V than L2 holds, the balanced lists
// usually replace it (take_lists, snake_round_kv_bytes; session 54).
// Without causal masking and with 192-row tiles whose last block leaves a
// whole warpgroup idle (S_q % 192 in 1..128), the partial blocks go last
// (kPartialLast): under the snake deal with head-major order a CTA takes
// the same query block every round whenever the block count divides G (S_q
// = 1024: 6 blocks, G = 132), so some CTAs never get a cheap partial tile
// while others get one in every other round: modelled max / mean load
// 1.105 at S1024, 1.125 at S512 (head-major) against 1.031 (partial last;
// the 3 % is the round that only some CTAs take).
// Host: what a 192-row block whose rows below S_q fill only one or two of
// its three consumer warpgroups costs, in hundredths of a full block (the
// idle ones run no GEMM: mainloop.cuh, run_idle_tile; the live ones lose
// their ping-pong partners, so the cost is above the rows' share). 100 / 100:
// not modelled (session 29's causal lists; DHP_SM90_CAUSAL_PARTIAL_COST=100,100).
struct PartialCost {
  int32_t one_live = 100, two_live = 100;
};
// The launcher's model for 192-row tiles, in both kinds of lists (launch.cuh;
// measured: docs/perf-log.md, session 29 non-causal, session 30 causal).
constexpr int32_t kPartialCostOneLive = 70, kPartialCostTwoLive = 85;
// Host: "ONE,TWO" (each 1-1000) from an experiment knob, else `fallback`.
inline PartialCost partial_cost_from(const char* text, PartialCost fallback) {
  int one = 0, two = 0;
  if (text != nullptr && std::sscanf(text, "%d,%d", &one, &two) == 2 && one >= 1 && one <= 1000 && two >= 1 &&
      two <= 1000)
    return PartialCost{one, two};
  return fallback;
}

// Host: the load model's weight of query block m: its key tiles + 1 (the
// epilogue), times the partial cost where its rows leave warpgroups idle;
// in hundredths.
template <int BM, int BN>
int64_t block_weight(const kernels::ForwardArgs& a, int32_t m, const PartialCost& pc) {
  const int64_t w = 100 * (sm80::KeyTileRange<BM, BN>(a, m * BM).n_end + 1);
  if (BM != 192) return w;
  const int64_t live = (static_cast<int64_t>(a.seqlen_q) - static_cast<int64_t>(m) * BM + 63) / 64;
  return live >= 3 ? w : w * (live == 2 ? pc.two_live : pc.one_live) / 100;
}

// Host: the load model of the snake deal in `order` (block_weight) as the
// busiest CTA's load and the total.
struct SnakeLoad {
  int64_t busiest, sum;
};
template <int BM, int BN>
SnakeLoad snake_load(const kernels::ForwardArgs& a, int32_t grid, int32_t order, const PartialCost& pc = {}) {
  kernels::ForwardArgs modelled = a;
  modelled.tile_order = order;
  const TileScheduler<BM> sched(modelled);
  std::vector<int64_t> load(grid, 0);
  SnakeLoad r{0, 0};
  for (int32_t t = 0; t < sched.total; ++t) {
    const int32_t cta = TileScheduler<BM>::snake(t / grid, t % grid, grid);
    const int64_t w = block_weight<BM, BN>(a, sched.decode(t).m_block, pc);
    load[cta] += w;
    r.sum += w;
  }
  for (int64_t l : load) r.busiest = std::max(r.busiest, l);
  return r;
}

template <int BM, int BN>
int32_t choose_tile_order(const kernels::ForwardArgs& a, int32_t grid) {
  if (!a.causal) {
    const int64_t tail_rows = a.seqlen_q % BM;
    return BM == 192 && a.seqlen_q > BM && tail_rows != 0 && tail_rows <= 128 ? kPartialLast : kHeadMajor;
  }
  const SnakeLoad m = snake_load<BM, BN>(a, grid, kHeadMajorHeavyFirst);
  return m.busiest * 100 * grid > m.sum * 110 ? kHeavyFirst : kHeadMajorHeavyFirst;
}

// Host: a balanced static schedule for shapes whose tiles weigh unequally
// (causal; non-causal 192-row tiles with a partial last block, weighed by
// `pc`), from the public shape alone. Tiles are numbered as in
// kHeadMajorHeavyFirst; they are taken in windows of about two rounds of
// heads (keeping the CTAs that run at the same time on nearby heads, whose
// K/V they share in L2), each window's tiles heaviest first, each tile given
// to the CTA with the least load so far (weights: key tiles + 1, as in
// choose_tile_order; ties to the lower CTA). Longest-first within windows
// brings the busiest CTA to 1.00-1.03x the mean load where the snake deal
// leaves 1.03-1.08x (docs/perf-log.md, session 15). `window_scale` widens
// the windows (A/B, DHP_SM90_LIST_WINDOW: x4 measured mixed against x1,
// session 54). Layout: grid + 1 list starts, then the lists (int32). Returns
// the modelled busiest / mean load in *balance (and in *layout_taken which
// layout: 0 plain, 1 short window first, 2 merged).
//
// Where the heads do not fill the last window, that short window is dealt
// last and has too few light tiles to even the loads out (D64 causal B1 H32
// S8192: 1.092 modelled, against the snake's 1.013). With `window_layouts`
// 3 (timed on seven rows in session 54, the default since session 55) two more
// layouts are modelled and the best taken, ties to the earlier: the short
// window first, and the short window merged into the one before (1.010
// there). Over a sweep of 2 220 shapes the better of the three is ahead of
// the plain layout by more than 1 % on 441 (perf-log, session 54). The
// launcher models all three (kListLayouts; DHP_SM90_LIST_LAYOUTS=1 keeps
// the plain one, A/B): measured in session 55 with the suites and the
// benchmark command each way, +1.7 to +3.2 % on six grid rows, no row down.
inline constexpr int32_t kListLayouts = 3;
template <int BM, int BN>
std::vector<int32_t> balanced_schedule(const kernels::ForwardArgs& a, int32_t grid, double* balance,
                                       const PartialCost& pc = {}, int32_t window_scale = 1,
                                       int32_t window_layouts = kListLayouts, int32_t* layout_taken = nullptr) {
  kernels::ForwardArgs shape = a;
  shape.tile_order = kHeadMajorHeavyFirst;
  const TileScheduler<BM> sched(shape);
  const int32_t mb = sched.m_blocks, total = sched.total, pairs = total / mb;
  std::vector<int64_t> weight_of_block(mb);
  for (int32_t m = 0; m < mb; ++m) weight_of_block[m] = block_weight<BM, BN>(a, m, pc);
  auto weight = [&](int32_t t) { return weight_of_block[sched.decode(t).m_block]; };
  const int32_t heads_per_window =
      std::min<int32_t>(pairs, std::max<int32_t>(1, 2 * grid / mb) * std::max<int32_t>(1, window_scale));
  auto later = [](const std::pair<int64_t, int32_t>& x, const std::pair<int64_t, int32_t>& y) { return x > y; };
  // Deals the tiles in windows of `widths` heads, in that order; returns
  // the lists and the busiest CTA's load.
  auto deal = [&](const std::vector<int32_t>& widths, std::vector<std::vector<int32_t>>& lists) {
    lists.assign(grid, {});
    std::vector<std::pair<int64_t, int32_t>> heap;  // (load, cta) min-heap
    for (int32_t c = 0; c < grid; ++c) heap.emplace_back(0, c);
    std::vector<int32_t> window;
    int32_t t0 = 0;
    for (int32_t width : widths) {
      const int32_t t1 = t0 + width * mb;
      window.clear();
      for (int32_t t = t0; t < t1; ++t) window.push_back(t);
      std::stable_sort(window.begin(), window.end(), [&](int32_t x, int32_t y) { return weight(x) > weight(y); });
      for (int32_t t : window) {
        std::pop_heap(heap.begin(), heap.end(), later);
        auto& least = heap.back();
        least.first += weight(t);
        lists[least.second].push_back(t);
        std::push_heap(heap.begin(), heap.end(), later);
      }
      t0 = t1;
    }
    int64_t busiest = 0;
    for (const auto& [l, c] : heap) busiest = std::max(busiest, l);
    return busiest;
  };
  std::vector<int32_t> widths;
  for (int32_t h = 0; h < pairs; h += heads_per_window) widths.push_back(std::min(heads_per_window, pairs - h));
  std::vector<std::vector<int32_t>> lists, other;
  int64_t busiest = deal(widths, lists);
  int32_t taken = 0;  // 0 plain, 1 short window first, 2 merged
  if (window_layouts == 3 && widths.size() > 1 && widths.back() < heads_per_window) {
    std::vector<int32_t> short_first(widths.rbegin(), widths.rend());
    std::vector<int32_t> merged(widths.begin(), widths.end() - 1);
    merged.back() += widths.back();
    for (int32_t k = 1; k <= 2; ++k)
      if (const int64_t b = deal(k == 1 ? short_first : merged, other); b < busiest)
        busiest = b, lists.swap(other), taken = k;
  }
  if (layout_taken != nullptr) *layout_taken = taken;
  std::vector<int32_t> out;
  out.reserve(grid + 1 + total);
  int32_t start = 0;
  for (int32_t c = 0; c < grid; ++c) out.push_back(start), start += static_cast<int32_t>(lists[c].size());
  out.push_back(start);
  for (const auto& l : lists) out.insert(out.end(), l.begin(), l.end());
  int64_t sum = 0;  // every (batch, head) has each block once
  for (int64_t w : weight_of_block) sum += w * pairs;
  if (balance != nullptr) *balance = sum > 0 ? static_cast<double>(busiest) * grid / static_cast<double>(sum) : 1.0;
  return out;
}

// Host: which balanced lists the launcher considers for a call planned as
// `shape` (tile_shape.hpp, planning_shape), dealt in `order` by default.
// Causal shapes from S_q = 2048 (everywhere with `table_mode` 2): there the
// lists measured 0 to +2.2 %, at S_q 512 / 1024 they lost 1-4.5 % (session
// 15). Non-causal shapes dealt partial-last (192-row tiles, a partial last
// block) up to S_q = 1024, unless `partial_off`: +8.5 % at S512, +3.9 % at
// S1024, nothing or worse from S2048 (session 29). None with a forced
// order, `table_mode` 0, no more tiles than CTAs, or lists too long to
// count (tiles x key tiles past 2^30). Public values only.
enum ListKind : int32_t { kNoLists = 0, kCausalLists = 1, kPartialLists = 2 };
constexpr int64_t kPartialListsMaxSq = 1024;
inline int32_t list_kind(const kernels::ForwardArgs& shape, int32_t order, int64_t tiles, int64_t grid,
                         int64_t key_tiles, bool order_forced, int table_mode, bool partial_off,
                         int64_t partial_max_s = kPartialListsMaxSq) {
  if (order_forced || table_mode == 0 || tiles <= grid || tiles * key_tiles > (int64_t{1} << 30)) return kNoLists;
  if (shape.causal) return shape.seqlen_q >= 2048 || table_mode == 2 ? kCausalLists : kNoLists;
  return order == kPartialLast && shape.seqlen_q <= partial_max_s && !partial_off ? kPartialLists : kNoLists;
}

// Host: the weights a launch's lists are made with: the model's, unless
// the list kind's knob (DHP_SM90_PARTIAL_COST for the non-causal lists,
// DHP_SM90_CAUSAL_PARTIAL_COST for the causal ones; launch.cuh) sets others.
inline PartialCost list_partial_cost(int32_t kind, const char* partial_knob, const char* causal_knob) {
  return partial_cost_from(kind == kCausalLists ? causal_knob : partial_knob,
                           PartialCost{kPartialCostOneLive, kPartialCostTwoLive});
}

// The smaller Hopper L2, the H100's 50 MiB (the H200 has 60 MiB; the
// FA3-grid rounds this changes read 128 MiB): a round reading more than
// this streams K/V from memory instead of sharing it in L2.
constexpr int64_t kL2Bytes = int64_t{50} << 20;
// How much worse (modelled) the causal lists may be and still replace a
// snake deal that streams K/V past L2: the load model counts no memory
// traffic. Session 54 (H200), the five FA3-grid causal rows per dtype this
// changes (D64 / D256 at S8192 and S16k, D128 at S16k): the kHeavyFirst
// snake read 0.65-2.7 GB per call from HBM, the lists 0.20-0.21 GB; the
// lists, modelled 0 to +1.45 % worse, measured 0.5-5.8 % faster in
// dhp_bench and 1-10 % faster back to back and at the power cap
// (docs/perf-log.md).
constexpr double kStreamingListsTolerance = 0.03;

// Host: whether the lists (modelled busiest / mean load `lists`) replace
// the snake deal (`snake`, whose rounds read `snake_kv_bytes` of K/V,
// snake_round_kv_bytes): causal lists where the model finds them better by
// more than 0.5 %, or not worse by more than kStreamingListsTolerance when
// the snake streams K/V past L2; partial-block lists unless it finds them
// worse by more than 0.5 % (what they gain, K/V read from L2 instead of
// memory, is not in the model); always with `table_mode` 2 (tests).
inline bool take_lists(int32_t kind, double lists, double snake, int table_mode, int64_t snake_kv_bytes = 0) {
  if (kind == kNoLists) return false;
  if (table_mode == 2) return true;
  if (kind == kPartialLists) return lists <= snake + 0.005;
  return lists + 0.005 < snake || (snake_kv_bytes > kL2Bytes && lists <= snake + kStreamingListsTolerance);
}

// Host: one more than the highest (batch, kv head) pair that a tile of the
// closed-form deal's first round reads (tiles 0 .. grid - 1 of a.tile_order;
// not for schedule lists). With the head-major orders later rounds read
// later pairs, so V's copy beside the attention (padding_scrub.hpp) copies
// pairs [0, this) first, with the whole GPU, and the rest in order.
template <int BM>
int64_t first_round_pairs(const kernels::ForwardArgs& a, int64_t grid) {
  const TileScheduler<BM> sched(a);
  int64_t pairs = 0;
  for (int32_t t = 0; t < grid && t < sched.total; ++t) {
    const Tile x = sched.decode(t);
    pairs = std::max<int64_t>(pairs, static_cast<int64_t>(x.batch) * a.heads_kv + x.head / a.kv_group + 1);
  }
  return pairs;
}

// Host: the K/V bytes that one round of the snake deal in `order` reads:
// with kHeavyFirst a round takes the heaviest block of up to `grid` query
// heads at once, each reading nearly all its keys, so the (batch, kv head)
// pairs of the first round (first_round_pairs; with grouped-query heads
// fewer than the query heads) times a pair's K and V. The head-major orders
// keep a round on a few pairs (12-30 MiB modelled, dhp_schedule_model),
// counted here as 0. 16-bit K and V. Public values only.
template <int BM>
int64_t snake_round_kv_bytes(const kernels::ForwardArgs& a, int32_t grid, int32_t order, int head_dim) {
  if (order != kHeavyFirst) return 0;
  kernels::ForwardArgs in_order = a;
  in_order.tile_order = order;
  in_order.schedule = nullptr;
  return first_round_pairs<BM>(in_order, grid) * a.seqlen_k * head_dim * 2 * 2;
}

// Host: the snake deal's modelled busiest / mean load for `order`.
template <int BM, int BN>
double snake_balance(const kernels::ForwardArgs& a, int32_t grid, int32_t order, const PartialCost& pc = {}) {
  const SnakeLoad m = snake_load<BM, BN>(a, grid, order, pc);
  return m.sum > 0 ? static_cast<double>(m.busiest) * grid / static_cast<double>(m.sum) : 1.0;
}

}  // namespace dhp::sm90
