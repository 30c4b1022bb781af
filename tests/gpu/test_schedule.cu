// The Hopper kernel's static tile schedule (src/kernels/sm90/scheduler.cuh),
// on the CPU: every order must visit every (query block, head, batch) tile
// exactly once -- a tile visited twice or never would be a wrong answer --
// and the launcher's order choice must follow its documented rule. The
// snake deal's balance is checked on the case that motivated kPartialLast.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/forward_args.hpp"
#include "kernels/sm90/decode.hpp"
#include "kernels/sm90/kernel_traits.cuh"
#include "kernels/sm90/padding_scrub.hpp"
#include "kernels/sm90/scheduler.cuh"
#include "kernels/sm90/split_combine.hpp"
#include "kernels/sm90/tensor_map.hpp"
#include "kernels/sm90/tile_shape.hpp"

namespace {

using dhp::kernels::ForwardArgs;
namespace sm90 = dhp::sm90;

ForwardArgs shape(int32_t batch, int32_t heads, int32_t s, bool causal) {
  ForwardArgs a{};
  a.batch = batch;
  a.heads_q = a.heads_kv = heads;
  a.kv_group = 1;
  a.seqlen_q = a.seqlen_k = s;
  a.causal = causal;
  a.causal_diagonal_public = 1;
  a.causal_offset = 0;
  return a;
}

template <int BM>
void expect_each_tile_once(ForwardArgs a, int32_t order) {
  a.tile_order = order;
  const sm90::TileScheduler<BM> sched(a);
  std::vector<int> seen(static_cast<size_t>(sched.total), 0);
  for (int32_t t = 0; t < sched.total; ++t) {
    const sm90::Tile x = sched.decode(t);
    ASSERT_TRUE(x.m_block >= 0 && x.m_block < sched.m_blocks && x.head >= 0 && x.head < a.heads_q && x.batch >= 0 &&
                x.batch < a.batch)
        << "order " << order << " tile " << t;
    ++seen[static_cast<size_t>((x.batch * a.heads_q + x.head) * sched.m_blocks + x.m_block)];
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), sched.total) << "order " << order << ", S " << a.seqlen_q;
}

TEST(Schedule, EveryOrderVisitsEveryTileOnce) {
  for (int32_t s : {100, 192, 300, 512, 1024, 2048})
    for (int32_t order = 0; order < 4; ++order) {  // S <= 192: one block per head, kPartialLast included
      expect_each_tile_once<192>(shape(3, 5, s, false), order);
      expect_each_tile_once<128>(shape(2, 7, s, true), order);
    }
}

TEST(Schedule, PartialLastOnlyWhereAWarpgroupIsIdle) {
  const int32_t grid = 132;
  for (int32_t s : {512, 1024, 2048, 4096, 16384})  // S % 192 = 128 or 64: one or two warpgroups idle
    EXPECT_EQ((sm90::choose_tile_order<192, 128>(shape(16384 / s, 32, s, false), grid)), sm90::kPartialLast) << s;
  EXPECT_EQ((sm90::choose_tile_order<192, 128>(shape(4, 32, 384, false), grid)), sm90::kHeadMajor);  // 2 x 192
  EXPECT_EQ((sm90::choose_tile_order<192, 128>(shape(4, 32, 350, false), grid)), sm90::kHeadMajor);  // 158 rows
  EXPECT_EQ((sm90::choose_tile_order<128, 128>(shape(16, 32, 1000, false), grid)), sm90::kHeadMajor);
  EXPECT_NE((sm90::choose_tile_order<192, 128>(shape(8, 32, 2048, true), grid)), sm90::kPartialLast);  // causal
}

// The snake deal's busiest CTA, weighting a tile by its active warpgroups
// (an idle one's share of the tile taken as 0.4 of a third): S = 1024,
// 6 blocks per head on 132 CTAs. Head-major gives some CTAs the partial
// block in every other round and others never.
double busiest_over_mean(ForwardArgs a, int32_t order, int32_t grid) {
  a.tile_order = order;
  const sm90::TileScheduler<192> sched(a);
  std::vector<double> load(static_cast<size_t>(grid), 0.0);
  double sum = 0;
  for (int32_t t = 0; t < sched.total; ++t) {
    const int32_t cta = sm90::TileScheduler<192>::snake(t / grid, t % grid, grid);
    const int32_t rows = std::min(192, a.seqlen_q - sched.decode(t).m_block * 192);
    const int idle = (192 - rows) / 64;
    const double w = 1.0 - idle * 0.2;
    load[static_cast<size_t>(cta)] += w;
    sum += w;
  }
  return *std::max_element(load.begin(), load.end()) * grid / sum;
}

TEST(Schedule, PartialLastBalancesTheSnakeDeal) {
  const ForwardArgs a = shape(16, 32, 1024, false);
  const double head_major = busiest_over_mean(a, sm90::kHeadMajor, 132);
  const double partial_last = busiest_over_mean(a, sm90::kPartialLast, 132);
  EXPECT_GT(head_major, 1.09);
  EXPECT_LT(partial_last, 1.04);
}

// The balanced schedule (launcher, causal shapes): every tile in exactly one
// CTA's list, the list starts consistent, and the modelled busiest CTA no
// worse than the snake deal's -- better on the grid rows it is for.
template <int BM, int BN>
double expect_valid_balanced(const ForwardArgs& a, int32_t grid) {
  double balanced = 0;
  const std::vector<int32_t> s = sm90::balanced_schedule<BM, BN>(a, grid, &balanced);
  const sm90::TileScheduler<BM> sched(a);
  EXPECT_EQ(s.size(), static_cast<size_t>(grid + 1 + sched.total));
  EXPECT_EQ(s[0], 0);
  EXPECT_EQ(s[grid], sched.total);
  std::vector<int> seen(static_cast<size_t>(sched.total), 0);
  for (int32_t c = 0; c < grid; ++c) {
    EXPECT_LE(s[c], s[c + 1]);
    for (int32_t i = s[c]; i < s[c + 1]; ++i) {
      const int32_t t = s[grid + 1 + i];
      EXPECT_TRUE(t >= 0 && t < sched.total) << t;
      if (t >= 0 && t < sched.total) ++seen[static_cast<size_t>(t)];
    }
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), sched.total);
  EXPECT_LE(balanced, (sm90::snake_balance<BM, BN>(a, grid, sm90::kHeadMajorHeavyFirst)) + 1e-9);
  return balanced;
}

TEST(Schedule, BalancedListsCoverEveryTileOnceAndBalance) {
  for (int32_t s : {300, 1000, 2048})
    for (int32_t grid : {7, 132}) {
      expect_valid_balanced<128, 128>(shape(3, 5, s, true), grid);
      expect_valid_balanced<192, 128>(shape(2, 9, s, true), grid);
      expect_valid_balanced<128, 80>(shape(4, 3, s, true), grid);
    }
  // The FA3 grid's causal D128 rows: 1.031x the mean on the snake deal.
  const ForwardArgs s1024 = shape(16, 16, 1024, true), s4096 = shape(4, 16, 4096, true);
  EXPECT_GT((sm90::snake_balance<128, 128>(s1024, 132, sm90::kHeadMajorHeavyFirst)), 1.025);
  EXPECT_LT((expect_valid_balanced<128, 128>(s1024, 132)), 1.015);
  EXPECT_LT((expect_valid_balanced<128, 128>(s4096, 132)), 1.01);
}

// Non-causal 192-row tiles whose last block leaves warpgroups idle: the
// launcher's lists weigh that block by its live warpgroups (scheduler.cuh,
// block_weight, PartialCost); they still hold every tile once, and at S512
// (128 live rows) the model finds them better balanced than the snake deal
// with the partial blocks last, so the launcher's rule takes them.
TEST(Schedule, PartialBlocksWeighedByLiveWarpgroups) {
  const sm90::PartialCost pc{sm90::kPartialCostOneLive, sm90::kPartialCostTwoLive};
  const ForwardArgs s1024 = shape(16, 32, 1024, false), s512 = shape(32, 32, 512, false);
  EXPECT_EQ((sm90::block_weight<192, 128>(s1024, 0, pc)), 900);  // 8 key tiles + 1, x 100
  EXPECT_EQ((sm90::block_weight<192, 128>(s1024, 5, pc)), 900 * sm90::kPartialCostOneLive / 100);  // 64 rows
  EXPECT_EQ((sm90::block_weight<192, 128>(s512, 2, pc)), 500 * sm90::kPartialCostTwoLive / 100);    // 128 rows
  EXPECT_EQ((sm90::block_weight<192, 128>(s1024, 5, sm90::PartialCost{})), 900);  // PartialCost{}: not modelled
  EXPECT_EQ((sm90::block_weight<128, 128>(shape(16, 32, 1000, false), 7, pc)), 900);  // 128-row tiles: no idle warpgroup
  for (const ForwardArgs& a : {s512, s1024, shape(8, 8, 1000, false), shape(12, 8, 600, false)}) {
    double balanced = 0;
    const std::vector<int32_t> s = sm90::balanced_schedule<192, 128>(a, 132, &balanced, pc);
    ForwardArgs numbered = a;
    numbered.tile_order = sm90::kHeadMajorHeavyFirst;
    const sm90::TileScheduler<192> sched(numbered);
    ASSERT_GT(sched.total, 132) << a.seqlen_q;  // more tiles than CTAs: shapes the launcher gives lists
    ASSERT_EQ(s.size(), static_cast<size_t>(133 + sched.total)) << a.seqlen_q;
    std::vector<int> seen(static_cast<size_t>(sched.total), 0);
    for (int32_t i = s[0]; i < s[132]; ++i) ++seen.at(static_cast<size_t>(s[133 + i]));
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), sched.total) << a.seqlen_q;
  }
  double lists512 = 0;
  sm90::balanced_schedule<192, 128>(s512, 132, &lists512, pc);
  EXPECT_LT(lists512 + 0.005, (sm90::snake_balance<192, 128>(s512, 132, sm90::kPartialLast, pc)));
}

// The causal lists weigh partial 192-row blocks by their live warpgroups
// too (scheduler.cuh, list_partial_cost; docs/perf-log.md, session 30): at
// the FA3 grid's causal D64 S4096 (each head's last block 64 rows) lists
// made with the weights are balanced to 1.01 under them, where lists that
// weigh the block as a full one come to 1.04; the knobs override per kind.
TEST(Schedule, CausalListsWeighPartialBlocks) {
  const sm90::PartialCost model{sm90::kPartialCostOneLive, sm90::kPartialCostTwoLive};
  for (int32_t kind : {sm90::kCausalLists, sm90::kPartialLists}) {
    const sm90::PartialCost pc = sm90::list_partial_cost(kind, nullptr, nullptr);
    EXPECT_EQ(pc.one_live, model.one_live) << kind;
    EXPECT_EQ(pc.two_live, model.two_live) << kind;
  }
  EXPECT_EQ(sm90::list_partial_cost(sm90::kCausalLists, "50,60", "100,100").one_live, 100);
  EXPECT_EQ(sm90::list_partial_cost(sm90::kPartialLists, "50,60", "100,100").one_live, 50);
  EXPECT_EQ(sm90::list_partial_cost(sm90::kCausalLists, nullptr, "0,2000").one_live, model.one_live);  // out of range
  const ForwardArgs a = shape(4, 32, 4096, true);
  ForwardArgs numbered = a;
  numbered.tile_order = sm90::kHeadMajorHeavyFirst;
  const sm90::TileScheduler<192> sched(numbered);
  // Busiest / mean CTA load of lists made with `made_with`, weighed by the model.
  auto balance_under_model = [&](const sm90::PartialCost& made_with) {
    const std::vector<int32_t> s = sm90::balanced_schedule<192, 128>(a, 132, nullptr, made_with);
    int64_t busiest = 0, sum = 0;
    for (int32_t c = 0; c < 132; ++c) {
      int64_t load = 0;
      for (int32_t i = s[c]; i < s[c + 1]; ++i)
        load += sm90::block_weight<192, 128>(a, sched.decode(s[133 + i]).m_block, model);
      busiest = std::max(busiest, load);
      sum += load;
    }
    return static_cast<double>(busiest) * 132 / static_cast<double>(sum);
  };
  EXPECT_LT(balance_under_model(sm90::list_partial_cost(sm90::kCausalLists, nullptr, nullptr)), 1.012);
  EXPECT_GT(balance_under_model(sm90::PartialCost{}), 1.035);
  // and the launcher still takes the lists there (the snake deal: 1.06).
  double lists = 0;
  sm90::balanced_schedule<192, 128>(a, 132, &lists, model);
  EXPECT_TRUE(sm90::take_lists(sm90::kCausalLists, lists,
                               sm90::snake_balance<192, 128>(a, 132, sm90::choose_tile_order<192, 128>(a, 132), model), 1));
}

// Where the launcher considers lists (scheduler.cuh, list_kind) and when it
// takes them (take_lists), on the shapes the rule was measured on: the
// FA3 grid's D64 non-causal S512 / S1024 (partial-block lists), not S2048;
// causal from S2048; a causal call with separate lengths planned as
// non-causal; never with a forced order, table mode 0, or one round.
TEST(Schedule, ListsWhereMeasured) {
  auto kind = [](ForwardArgs a, int32_t order, bool forced = false, int mode = 1, bool off = false) {
    const sm90::TileScheduler<192> sched(a);
    return sm90::list_kind(a, order, sched.total, 132, (a.seqlen_k + 127) / 128, forced, mode, off);
  };
  EXPECT_EQ(kind(shape(32, 32, 512, false), sm90::kPartialLast), sm90::kPartialLists);
  EXPECT_EQ(kind(shape(16, 32, 1024, false), sm90::kPartialLast), sm90::kPartialLists);
  EXPECT_EQ(kind(shape(8, 32, 2048, false), sm90::kPartialLast), sm90::kNoLists);
  EXPECT_EQ(kind(shape(16, 32, 1024, false), sm90::kHeadMajor), sm90::kNoLists);  // no partial block
  EXPECT_EQ(kind(shape(16, 32, 1024, false), sm90::kPartialLast, true), sm90::kNoLists);
  EXPECT_EQ(kind(shape(16, 32, 1024, false), sm90::kPartialLast, false, 0), sm90::kNoLists);
  EXPECT_EQ(kind(shape(16, 32, 1024, false), sm90::kPartialLast, false, 1, true), sm90::kNoLists);
  EXPECT_EQ(kind(shape(1, 4, 1024, false), sm90::kPartialLast), sm90::kNoLists);  // 24 tiles: one round
  EXPECT_EQ(kind(shape(4, 32, 4096, true), sm90::kHeadMajorHeavyFirst), sm90::kCausalLists);
  EXPECT_EQ(kind(shape(16, 32, 1024, true), sm90::kHeadMajorHeavyFirst), sm90::kNoLists);
  EXPECT_EQ(kind(shape(16, 32, 1024, true), sm90::kHeadMajorHeavyFirst, false, 2), sm90::kCausalLists);
  ForwardArgs secret = shape(16, 32, 1024, true);
  secret.causal_diagonal_public = 0;
  EXPECT_EQ(kind(sm90::planning_shape(secret), sm90::kPartialLast), sm90::kPartialLists);
  // Partial-block lists unless modelled worse by more than 0.5 %; causal
  // lists only where modelled better by more than that.
  EXPECT_TRUE(sm90::take_lists(sm90::kPartialLists, 1.0312, 1.0312, 1));
  EXPECT_FALSE(sm90::take_lists(sm90::kPartialLists, 1.3026, 1.1579, 1));
  EXPECT_FALSE(sm90::take_lists(sm90::kCausalLists, 1.0312, 1.0312, 1));
  EXPECT_TRUE(sm90::take_lists(sm90::kCausalLists, 1.01, 1.031, 1));
  EXPECT_TRUE(sm90::take_lists(sm90::kCausalLists, 1.2, 1.0, 2));
  EXPECT_FALSE(sm90::take_lists(sm90::kNoLists, 1.0, 2.0, 2));
}

// TileHeights (test_tile_heights.cpp) compares a sequence run alone (B = 1)
// with the same sequence at position 5 of a batch of 8, and is only a test
// of batch invariance if the two take different D = 64 tile heights. On the
// 132-SM H100 / H200 they must, for every shape it uses (else it would
// compare a kernel with itself and pass whatever the kernels did).
TEST(TileHeights, ItsShapesTakeDifferentHeightsOn132Sms) {
  struct Shape {
    int32_t sq, sk, h;
    bool causal, lengths, separate = false;
  };
  const Shape shapes[] = {
      {600, 600, 4, false, false}, {600, 600, 4, false, true, true}, {600, 600, 4, true, false},
      {600, 600, 4, true, true, true},  // separate lengths: planned as non-causal (192 rows in the batch)
      {1100, 1100, 4, true, false}, {1100, 1300, 4, true, false}, {1300, 1100, 4, true, false},
      {1100, 1100, 4, true, true},  // shared lengths
      {600, 600, 2, false, false}, {1000, 777, 2, false, false}, {1100, 1100, 2, true, false},
      {1100, 1300, 2, true, false}, {1300, 1100, 2, true, false}, {1100, 1100, 4, false, false}};
  for (const Shape& sh : shapes) {
    ForwardArgs alone = shape(1, sh.h, sh.sq, sh.causal);
    alone.seqlen_k = sh.sk;
    alone.causal_diagonal_public = sh.separate ? 0 : 1;
    alone = sm90::planning_shape(alone);  // what the launcher plans by
    ForwardArgs batch = alone;
    batch.batch = 8;
    const int a = sm90::d64_tile_rows(alone, sh.lengths, 132), b = sm90::d64_tile_rows(batch, sh.lengths, 132);
    EXPECT_NE(a, b) << "S_q " << sh.sq << " S_k " << sh.sk << " H " << sh.h << (sh.causal ? " causal" : "")
                    << (sh.lengths ? " lengths" : "") << ": both " << a << " rows";
    EXPECT_TRUE(a == 32 || a == 64) << a;  // one consumer warpgroup alone,
    EXPECT_TRUE(b == 128 || b == 192) << b;  // two or three in the batch
  }
  // The rule itself: a grid that fills the GPU at 128 rows keeps them.
  EXPECT_EQ(sm90::d64_tile_rows(shape(16, 32, 1024, true), false, 132), 128);
  EXPECT_EQ(sm90::d64_tile_rows(shape(16, 32, 1024, false), false, 132), 192);
  EXPECT_EQ(sm90::d64_tile_rows(shape(1, 8, 512, false), false, 132), 32);  // the small call
  EXPECT_EQ(sm90::d64_tile_rows(shape(1, 8, 512, false), true, 132), 64);   // with secret lengths
}

// The persistent grid (tile_shape.hpp, persistent_ctas): one CTA per SM but
// for D = 128 without causal masking, where it is the fewest CTAs that keep
// the number of rounds; never more CTAs or more rounds than one per SM.
TEST(PersistentGrid, FewestCtasWithTheSameRoundsForD128NonCausal) {
  EXPECT_EQ(sm90::persistent_ctas(shape(16, 16, 1024, false), 2048, 132, 128), 128);  // 16 rounds either way
  EXPECT_EQ(sm90::persistent_ctas(shape(16, 16, 1024, true), 2048, 132, 128), 132);   // causal: one per SM
  EXPECT_EQ(sm90::persistent_ctas(shape(16, 32, 1024, false), 3072, 132, 64), 132);   // D = 64: one per SM
  EXPECT_EQ(sm90::persistent_ctas(shape(8, 8, 2048, false), 1024, 132, 256), 132);    // D = 256: one per SM
  // With V's padded copy (secret key lengths) D = 256 takes the fewest CTAs
  // too, leaving SMs for the copy beside; D = 64 (unequal 192-row tiles) and
  // causal grids still one per SM.
  EXPECT_EQ(sm90::persistent_ctas(shape(16, 32, 1024, false), 3072, 132, 64, true), 132);
  EXPECT_EQ(sm90::persistent_ctas(shape(8, 8, 2048, false), 1024, 132, 256, true), 128);
  EXPECT_EQ(sm90::persistent_ctas(shape(8, 8, 2048, true), 1024, 132, 256, true), 132);
  EXPECT_EQ(sm90::fewest_ctas_same_rounds(1000, 132), 125);
  EXPECT_EQ(sm90::fewest_ctas_same_rounds(133, 132), 67);
  EXPECT_EQ(sm90::fewest_ctas_same_rounds(100, 132), 100);  // below one round: the tiles
  EXPECT_EQ(sm90::fewest_ctas_same_rounds(0, 132), 0);
  for (int64_t tiles = 1; tiles < 20000; tiles += 7) {
    const int64_t ctas = sm90::fewest_ctas_same_rounds(tiles, 132);
    const int64_t rounds = (tiles + 131) / 132, rounds_here = (tiles + ctas - 1) / ctas;
    ASSERT_LE(ctas, 132) << tiles;
    ASSERT_EQ(rounds_here, rounds) << tiles;
    if (ctas > 1) ASSERT_GT((tiles + ctas - 2) / (ctas - 1), rounds) << tiles;  // one CTA fewer: one round more
  }
}

// A causal call with separate length arrays (secret diagonal: every query
// tile visits every key tile) is planned as a non-causal one
// (tile_shape.hpp, planning_shape): its tiles weigh the same. A public
// diagonal keeps the causal plan, and the plan never clears anything but
// the causal flag.
TEST(PlanningShape, SecretDiagonalPlannedAsNonCausal) {
  ForwardArgs secret = shape(4, 16, 4096, true);
  secret.causal_diagonal_public = 0;
  const ForwardArgs plan = sm90::planning_shape(secret);
  EXPECT_EQ(plan.causal, 0);
  EXPECT_EQ(sm90::planning_shape(secret, /*as_causal=*/true).causal, 1);
  EXPECT_EQ(sm90::planning_shape(shape(4, 16, 4096, true)).causal, 1);  // public diagonal
  EXPECT_EQ(sm90::planning_shape(shape(4, 16, 4096, false)).causal, 0);
  EXPECT_EQ(plan.causal_diagonal_public, 0);
  EXPECT_EQ(plan.seqlen_q, secret.seqlen_q);
  // What that plan gives: the non-causal grid with V's copy beside (D128:
  // 2 048 tiles in 16 rounds of 128), the non-causal D64 height at S1024,
  // and the partial-last order of 192-row tiles.
  EXPECT_EQ(sm90::persistent_ctas(plan, 2048, 132, 128, true), 128);
  EXPECT_EQ(sm90::persistent_ctas(secret, 2048, 132, 128, true), 132);
  ForwardArgs s1024 = shape(16, 32, 1024, true);
  s1024.causal_diagonal_public = 0;
  EXPECT_EQ(sm90::d64_tile_rows(sm90::planning_shape(s1024), true, 132), 192);
  EXPECT_EQ(sm90::d64_tile_rows(s1024, true, 132), 128);
  EXPECT_EQ((sm90::choose_tile_order<192, 128>(sm90::planning_shape(s1024), 132)), sm90::kPartialLast);
}

// D = 256's main loop (tile_shape.hpp, d256_one_gemm): chosen from the
// public shape, never the batch, and never the one-GEMM kernel with secret
// lengths (not built).
TEST(D256MainLoop, OneGemmForShortAndShortCausalOnly) {
  EXPECT_TRUE(sm90::d256_one_gemm(shape(32, 8, 512, false), false));
  EXPECT_TRUE(sm90::d256_one_gemm(shape(16, 8, 1024, true), false));
  EXPECT_FALSE(sm90::d256_one_gemm(shape(16, 8, 1024, false), false));
  EXPECT_FALSE(sm90::d256_one_gemm(shape(8, 8, 2048, true), false));
  EXPECT_FALSE(sm90::d256_one_gemm(shape(1, 8, 16384, false), false));
  EXPECT_FALSE(sm90::d256_one_gemm(shape(32, 8, 512, false), true));  // secret lengths
  for (int32_t s : {100, 512, 513, 1000, 1024, 1025, 4096})
    for (bool causal : {false, true}) {
      ForwardArgs one = shape(1, 8, s, causal), many = shape(64, 8, s, causal);
      EXPECT_EQ(sm90::d256_one_gemm(one, false), sm90::d256_one_gemm(many, false)) << s;
    }
}

// Causal, one shared length L (diagonal public, offset 0): V's padding (keys
// >= L) may meet a valid row (< L) only inside the query tile's band
// (kernel_traits.cuh, v_band_tiles), where the kernel zeroes it; P·V of any
// other key tile multiplies every row of the query tile by every key of the
// tile. Brute force over tile shapes, lengths and every valid row: a key
// tile outside the band that holds a padding key while the query tile holds
// a valid row would let NaN padding through. `shrink` takes one tile off the
// band: the check must then fail somewhere (it can fail).
template <int BM, int BN>
int64_t band_violations(int32_t shrink) {
  int64_t violations = 0;
  for (int32_t S : {1, 80, 127, 128, 200, 300, 641}) {
    ForwardArgs a = shape(1, 1, S, true);
    for (int32_t m0 = 0; m0 < S; m0 += BM) {
      const int32_t n_end = dhp::sm80::KeyTileRange<BM, BN>(a, m0).n_end;
      const int32_t band = std::max(0, dhp::sm90::v_band_tiles<BN>(1, m0, n_end) - shrink);
      EXPECT_LE(band, n_end);
      EXPECT_EQ((dhp::sm90::v_band_tiles<BN>(0, m0, n_end)), 0);  // off: no band
      for (int32_t L = 0; L <= S; ++L)
        for (int32_t it = band; it < n_end; ++it) {  // outside the band
          const int32_t n = n_end - 1 - it, last_key = std::min((n + 1) * BN, S) - 1;
          const bool padding_key = last_key >= L, valid_row = m0 < L;
          violations += padding_key && valid_row ? 1 : 0;
        }
    }
  }
  return violations;
}

TEST(VBand, PaddingMeetsValidRowsOnlyInTheBand) {
  EXPECT_EQ((band_violations<128, 128>(0)), 0);
  EXPECT_EQ((band_violations<128, 80>(0)), 0);
  EXPECT_EQ((band_violations<64, 128>(0)), 0);
  EXPECT_EQ((band_violations<192, 128>(0)), 0);
  EXPECT_EQ((band_violations<128, 160>(0)), 0);
  // A band one tile short lets padding through: the check can fail.
  EXPECT_GT((band_violations<128, 128>(1)), 0);
  EXPECT_GT((band_violations<128, 80>(1)), 0);
}

}  // namespace

// V's copy beside the attention (padding_scrub.hpp, plan_copy_beside): the
// issue's secret-length shape (B4 H16 S_max 4096 D128, non-causal) and the
// two GPU-suite shapes written for it (test_forward.cpp) take it on a
// 132-SM H100 / H200, with the first round's pairs first; a grid of one CTA
// per SM (D = 64 at S1024) and a shape whose first round reads every pair
// copy before the attention.
namespace {
struct BesideCase {
  int32_t batch, heads_q, heads_kv, s_q, s_k;
  int64_t first_pairs;  // expected; 0: copy before
};
}  // namespace
TEST(VCopyBeside, TakenWhereTheGridLeavesSmsIdleAndLaterRoundsReadNewPairs) {
  const int sms = 132;
  const BesideCase cases[] = {{4, 16, 16, 4096, 4096, 4}, {4, 34, 34, 128, 700, 68}, {2, 72, 36, 128, 1000, 36},
                              {16, 8, 8, 128, 300, 0} /* 128 tiles: one round reads every pair */};
  for (const BesideCase& c : cases) {
    ForwardArgs a = shape(c.batch, c.heads_q, c.s_q, false);
    a.heads_kv = c.heads_kv, a.kv_group = c.heads_q / c.heads_kv, a.seqlen_k = c.s_k;
    const int64_t tiles = sm90::query_tiles(a, 128);
    const int64_t grid = std::min<int64_t>(tiles, sm90::persistent_ctas(a, tiles, sms, 128));
    a.tile_order = sm90::choose_tile_order<128, 128>(a, static_cast<int32_t>(grid));
    const int64_t first = sm90::first_round_pairs<128>(a, grid);
    const sm90::CopyBesidePlan p = sm90::plan_copy_beside(a, 128, grid, sms, first, false);
    if (c.first_pairs == 0) {
      EXPECT_EQ(p.beside_ctas, 0) << c.batch << "x" << c.heads_q << " S" << c.s_q;
      continue;
    }
    EXPECT_EQ(first, c.first_pairs) << c.batch << "x" << c.heads_q << " S" << c.s_q;
    EXPECT_EQ(p.beside_ctas, sm90::kCopyBesideMaxCtas);
    EXPECT_EQ(p.first_pairs, c.first_pairs);
    EXPECT_EQ(p.chunk_rows, 256);  // 64 KB of 128 16-bit columns
    EXPECT_EQ(p.chunks_per_pair, (c.s_k + 255) / 256);
  }
  // One CTA per SM leaves none idle: before, unless forced (then on one CTA).
  ForwardArgs d64 = shape(16, 32, 1024, false);
  EXPECT_EQ(sm90::plan_copy_beside(d64, 64, sms, sms, 20, false).beside_ctas, 0);
  EXPECT_EQ(sm90::plan_copy_beside(d64, 64, sms, sms, 20, true).beside_ctas, 1);
  // In the head-major orders every later round reads pairs at or past the first round's.
  ForwardArgs a = shape(4, 16, 4096, false);
  a.tile_order = sm90::kHeadMajor;
  const sm90::TileScheduler<128> sched(a);
  int64_t highest = 0;
  for (int32_t t = 0; t < sched.total; ++t) {
    const sm90::Tile x = sched.decode(t);
    const int64_t pair = static_cast<int64_t>(x.batch) * a.heads_kv + x.head;
    EXPECT_GE(pair, highest) << t;
    highest = std::max(highest, pair);
  }
}

// The copy beside's deal (padding_scrub.hpp, CopyDeal: the copy kernel's own
// code) takes every item exactly once over the copy grid (copy_beside_grid),
// the whole-grid first part before the beside part in each CTA, and the
// beside part in increasing order on the first beside_ctas CTAs only.
TEST(VCopyBeside, EveryChunkCopiedOnce) {
  struct Shape { int32_t pairs, chunks, first_pairs, beside; int sms; };
  const Shape shapes[] = {{64, 16, 4, 4, 132}, {136, 3, 68, 4, 132}, {72, 4, 36, 4, 132}, {3, 1, 1, 1, 132},
                          {5, 2, 5, 4, 132},   {200, 16, 100, 4, 132}, {7, 3, 2, 8, 16},  {1, 1, 1, 1, 132}};
  for (const Shape& sh : shapes) {
    sm90::CopyBesidePlan p;
    p.chunks_per_pair = sh.chunks, p.first_pairs = sh.first_pairs, p.beside_ctas = sh.beside;
    const int32_t items = sh.pairs * sh.chunks, first = sh.first_pairs * sh.chunks;
    const int64_t grid = sm90::copy_beside_grid(p, sh.sms);
    ASSERT_GE(grid, sh.beside);
    std::vector<int> taken(static_cast<size_t>(items), 0);
    for (int32_t cta = 0; cta < grid; ++cta) {
      const sm90::CopyDeal deal(cta, static_cast<int32_t>(grid), first, sh.beside, items);
      int32_t last = -1;
      for (int32_t k = 0; k < deal.count(); ++k) {
        const int32_t i = deal.item(k);
        ASSERT_GE(i, 0);
        ASSERT_LT(i, items);
        EXPECT_GT(i, last) << "items in order";
        if (i >= first) EXPECT_LT(cta, sh.beside) << "only the beside CTAs take the rest";
        last = i;
        ++taken[static_cast<size_t>(i)];
      }
    }
    for (int32_t i = 0; i < items; ++i) EXPECT_EQ(taken[static_cast<size_t>(i)], 1) << "item " << i << " of " << items;
  }
}

// The decode plan (sm90/decode.hpp) on the CPU: it must not depend on the
// batch size (batch invariance: the chunks fix the reduction order), must
// pack exactly the query heads of a kv head at S_q = 1, and its chunks
// (scheduler.cuh, key_chunk) must cover every key tile of a query tile
// exactly once, the last ones empty where a range ends early (causal).
TEST(Decode, PlanIsBatchFreeAndChunksCoverTheKeyRangeOnce) {
  struct Shape { int32_t sq, sk, hq, hkv; };
  const Shape shapes[] = {{1, 4096, 32, 8}, {1, 32768, 32, 8}, {1, 100, 8, 8},  {1, 16384, 8, 8},
                          {1, 3001, 66, 1}, {16, 8192, 32, 8}, {64, 777, 4, 2}, {1, 1, 2, 1}};
  for (const Shape& sh : shapes) {
    ForwardArgs a{};
    a.seqlen_q = sh.sq, a.seqlen_k = sh.sk, a.heads_q = sh.hq, a.heads_kv = sh.hkv, a.kv_group = sh.hq / sh.hkv;
    a.batch = 1;
    const sm90::DecodePlan p1 = sm90::decode_plan(a, 64, 128, 0, false);
    a.batch = 37;
    const sm90::DecodePlan p37 = sm90::decode_plan(a, 64, 128, 0, false);
    const sm90::DecodePlan packed1 = sm90::decode_plan(a, 64, 128, 0, true);
    a.batch = 1;
    const sm90::DecodePlan packed37 = sm90::decode_plan(a, 64, 128, 0, true);
    EXPECT_EQ(p1.splits, p37.splits);
    EXPECT_EQ(p1.split_key_tiles, p37.split_key_tiles);
    EXPECT_EQ(packed1.splits, packed37.splits);
    EXPECT_EQ(packed1.split_key_tiles, packed37.split_key_tiles);
    EXPECT_EQ(p1.q_pack, sh.sq == 1 ? sh.hq / sh.hkv : 1);
    EXPECT_EQ(p1.heads * p1.q_pack, sh.hq);
    const int32_t key_tiles = (sh.sk + 127) / 128;
    EXPECT_GE(p1.split_key_tiles, std::min(key_tiles, sm90::kDecodeMinChunkTiles));
    EXPECT_GE(static_cast<int64_t>(p1.splits) * p1.split_key_tiles, key_tiles);
    EXPECT_LT(static_cast<int64_t>(p1.splits - 1) * p1.split_key_tiles, key_tiles) << "no chunk wholly past S_k";
    // Every key tile of ranges that end at the last tile or earlier once.
    for (int32_t n_end : {key_tiles, key_tiles / 2, 1, 0}) {
      std::vector<int> seen(static_cast<size_t>(key_tiles), 0);
      for (int32_t c = 0; c < p1.splits; ++c) {
        const sm90::KeyChunk ch = sm90::key_chunk(n_end, c, p1.split_key_tiles);
        EXPECT_LE(ch.n_begin, ch.n_end);
        for (int32_t n = ch.n_begin; n < ch.n_end; ++n) ++seen[static_cast<size_t>(n)];
      }
      for (int32_t n = 0; n < key_tiles; ++n) EXPECT_EQ(seen[static_cast<size_t>(n)], n < n_end ? 1 : 0);
    }
  }
  // Enough work units for one sequence of a long decode (GQA 32 / 8, S_k
  // 32k: 8 packed heads x 16 chunks), and the split scheduler's units each
  // once.
  ForwardArgs a{};
  a.seqlen_q = 1, a.seqlen_k = 32768, a.heads_q = 32, a.heads_kv = 8, a.kv_group = 4, a.batch = 3;
  const sm90::DecodePlan p = sm90::decode_plan(a, 64, 128, 0, true);
  EXPECT_EQ(p.heads * p.splits, 128);
  const ForwardArgs d = sm90::decode_args(a, p);
  const sm90::TileScheduler<64, true> sched(d);
  ASSERT_EQ(sched.total, 3 * 8 * p.splits);
  std::vector<int> seen(static_cast<size_t>(sched.total), 0);
  for (int32_t t = 0; t < sched.total; ++t) {
    const sm90::Tile x = sched.decode(t);
    ASSERT_EQ(x.m_block, 0);
    ++seen[static_cast<size_t>((x.batch * 8 + x.head) * p.splits + x.split)];
  }
  for (int v : seen) EXPECT_EQ(v, 1);
}

// The decode kernel's view of a call (decode_args): packed, query head
// g + q_pack h' is row g of head h' -- its address must be the call's --
// and the causal flag is dropped only where it hides nothing (S_q = 1).
TEST(Decode, PackedViewAddressesTheCallsHeads) {
  ForwardArgs a{};
  a.batch = 3, a.seqlen_q = 1, a.seqlen_k = 5000, a.heads_q = 32, a.heads_kv = 8, a.kv_group = 4;
  a.causal = 1, a.causal_diagonal_public = 1, a.causal_offset = a.seqlen_k - 1;
  a.q_stride_batch = 32 * 128 + 64, a.q_stride_seq = 32 * 128 + 64, a.q_stride_head = 136;  // padded
  a.o_stride_batch = 32 * 128, a.o_stride_seq = 32 * 128, a.o_stride_head = 128;
  const sm90::DecodePlan p = sm90::decode_plan(a, 64, 128, 0, true);
  const ForwardArgs d = sm90::decode_args(a, p);
  ASSERT_EQ(p.q_pack, 4);
  EXPECT_EQ(d.heads_q, 8);
  EXPECT_EQ(d.seqlen_q, 4);
  EXPECT_EQ(d.kv_group, 1);
  EXPECT_EQ(d.causal, 0);
  EXPECT_EQ(d.q_pack, 4);
  EXPECT_EQ(d.kv_splits, p.splits);
  for (int32_t b = 0; b < a.batch; ++b)
    for (int32_t h = 0; h < a.heads_q; ++h) {
      const int32_t hp = h / 4, r = h % 4;  // the packed head and row
      EXPECT_EQ(b * d.q_stride_batch + r * d.q_stride_seq + hp * d.q_stride_head,
                b * a.q_stride_batch + h * a.q_stride_head);
      EXPECT_EQ(b * d.o_stride_batch + r * d.o_stride_seq + hp * d.o_stride_head,
                b * a.o_stride_batch + h * a.o_stride_head);
      EXPECT_EQ(hp / d.kv_group, h / a.kv_group) << "the same kv head";
    }
  // More than one query row with S_q > 1 packing off (DHP_SM90_DECODE_PACK_SQ=0):
  // nothing packed, the causal mask kept.
  a.seqlen_q = 16, a.causal_offset = a.seqlen_k - 16;
  const ForwardArgs e = sm90::decode_args(a, sm90::decode_plan(a, 64, 128, 0, false));
  EXPECT_EQ(e.q_pack, 1);
  EXPECT_EQ(e.heads_q, 32);
  EXPECT_EQ(e.causal, 1);
  EXPECT_EQ(e.q_stride_head, a.q_stride_head);
}

// S_q > 1 packed (DHP_SM90_DECODE_PACK_SQ, decode.hpp): only power-of-two
// groups that divide the 64-row tile; rows s q_pack + g, whose position the
// causal mask takes as row >> q_shift; the call's strides left for the 5-D
// map; the causal mask and the plan's batch freedom kept.
TEST(Decode, PackedRowsAboveOneQueryRowArePositionMajor) {
  ForwardArgs a{};
  a.batch = 2, a.seqlen_q = 7, a.seqlen_k = 5000, a.heads_q = 32, a.heads_kv = 8, a.kv_group = 4;
  a.causal = 1, a.causal_diagonal_public = 1, a.causal_offset = a.seqlen_k - a.seqlen_q;
  a.q_stride_batch = 7 * 32 * 128, a.q_stride_seq = 32 * 128, a.q_stride_head = 128;
  const sm90::DecodePlan p = sm90::decode_plan(a, 64, 128, 0, true);
  ASSERT_EQ(p.q_pack, 4);
  EXPECT_EQ(p.q_shift, 2);
  EXPECT_EQ(p.heads, 8);
  EXPECT_EQ(p.rows, 28);
  const ForwardArgs d = sm90::decode_args(a, p);
  EXPECT_EQ(d.heads_q, 8);
  EXPECT_EQ(d.seqlen_q, 28);
  EXPECT_EQ(d.kv_group, 1);
  EXPECT_EQ(d.causal, 1);
  EXPECT_EQ(d.q_shift, 2);
  EXPECT_EQ(d.q_stride_head, a.q_stride_head);
  EXPECT_EQ(d.q_stride_seq, a.q_stride_seq);
  // The three places that relate a query (b, s, h) to a packed row agree:
  // the combine reads its partial row (packed_partial_row), that row's
  // position in the causal mask is row >> q_shift, and the Q tensor map
  // loads that row (tile row r = m0 + i is box element (g = i % q_pack,
  // position (m0 >> q_shift) + i / q_pack) of head h') from Q[b, s, h].
  const auto spec = sm90::packed_rows_spec(a.seqlen_q, p.q_pack, a.heads_kv, a.batch, 128, a.q_stride_seq,
                                           a.q_stride_head, a.q_stride_batch, 64, false);
  sm90::CombineArgs c{};  // as launch_decode fills it
  c.q_pack = p.q_pack, c.part_heads = p.heads, c.part_seqlen = p.rows;
  for (int32_t b = 0; b < a.batch; ++b)
    for (int32_t s = 0; s < a.seqlen_q; ++s)
      for (int32_t h = 0; h < a.heads_q; ++h) {
        const int64_t prow = sm90::packed_partial_row(c, b, s, h);
        const int64_t row = prow % p.rows, head = prow / p.rows % p.heads;
        EXPECT_EQ(prow / p.rows / p.heads, b);
        EXPECT_EQ(row >> d.q_shift, s) << "the mask's position of the combine's row";
        const int64_t m0 = row / 64 * 64, i = row % 64;
        const uint64_t loaded = (i % p.q_pack) * spec.strides_bytes[0] +
                                ((m0 >> d.q_shift) + i / p.q_pack) * spec.strides_bytes[1] +
                                head * spec.strides_bytes[2] + b * spec.strides_bytes[3];
        EXPECT_EQ(loaded, uint64_t(2 * (b * a.q_stride_batch + s * a.q_stride_seq + h * a.q_stride_head)))
            << "b " << b << " s " << s << " h " << h;
      }
  a.batch = 41;
  EXPECT_EQ(sm90::decode_plan(a, 64, 128, 0, true).splits, p.splits);
  // Not packed: off, a group that is no power of two or does not divide the tile.
  EXPECT_EQ(sm90::decode_plan(a, 64, 128, 0, false).q_pack, 1);
  a.heads_q = 24, a.heads_kv = 4, a.kv_group = 6;
  EXPECT_EQ(sm90::decode_plan(a, 64, 128, 0, true).q_pack, 1);
  a.heads_q = 128, a.heads_kv = 1, a.kv_group = 128;
  EXPECT_EQ(sm90::decode_plan(a, 64, 128, 0, true).q_pack, 1);
  a.heads_q = 64, a.heads_kv = 1, a.kv_group = 64;
  EXPECT_EQ(sm90::decode_plan(a, 64, 128, 0, true).q_shift, 6);
  // S_q = 1 packs any group, with no shift (causal dropped there).
  a.seqlen_q = 1, a.heads_q = 66, a.kv_group = 66;
  const sm90::DecodePlan one = sm90::decode_plan(a, 64, 128, 0, true);
  EXPECT_EQ(one.q_pack, 66);
  EXPECT_EQ(one.q_shift, 0);
}

// The longest S_q on the decode path (decode_max_seqlen_q): 64 where S_q > 1
// packs the group (a power of two dividing the tile) or where merging units
// exist (D <= 128), 32 otherwise -- a function of the heads, the tile and
// the kernel, never of the batch or S_k.
TEST(Decode, LongestQueryOnTheDecodePathFollowsThePacking) {
  ForwardArgs a{};
  a.batch = 1, a.seqlen_q = 40, a.seqlen_k = 8192, a.heads_q = 32, a.heads_kv = 8, a.kv_group = 4;
  for (bool merging : {false, true}) {
    EXPECT_EQ(sm90::decode_max_seqlen_q(a, 64, true, merging), sm90::kDecodeMaxSqPacked);
  }
  EXPECT_EQ(sm90::decode_max_seqlen_q(a, 64, false, false), sm90::kDecodeMaxSqUnpacked) << "packing off";
  EXPECT_EQ(sm90::decode_max_seqlen_q(a, 64, false, true), sm90::kDecodeMaxSqMerging) << "packing off, merging";
  a.batch = 4096, a.seqlen_k = 3;
  EXPECT_EQ(sm90::decode_max_seqlen_q(a, 64, true, false), sm90::kDecodeMaxSqPacked) << "batch or S_k changed it";
  a.heads_kv = 32, a.kv_group = 1;
  EXPECT_EQ(sm90::decode_max_seqlen_q(a, 64, true, false), sm90::kDecodeMaxSqUnpacked) << "MHA";
  EXPECT_EQ(sm90::decode_max_seqlen_q(a, 64, true, true), sm90::kDecodeMaxSqMerging) << "MHA, merging units";
  a.heads_q = 48, a.heads_kv = 8, a.kv_group = 6;
  EXPECT_EQ(sm90::decode_max_seqlen_q(a, 64, true, false), sm90::kDecodeMaxSqUnpacked) << "a group of 6";
  a.heads_q = 128, a.heads_kv = 1, a.kv_group = 128;
  EXPECT_EQ(sm90::decode_max_seqlen_q(a, 64, true, false), sm90::kDecodeMaxSqUnpacked) << "a group above the tile";
  static_assert(sm90::kDecodeMaxSqUnpacked < sm90::kDecodeMaxSqPacked);
  static_assert(sm90::kDecodeMaxSqUnpacked < sm90::kDecodeMaxSqMerging);
}

// Merging units (the D <= 128 decode kernel) only where the tiles fill
// the grid and whole rounds of them cost at most 3/2 the split units'
// rounds of chunks; never with one chunk.
TEST(Decode, MergingUnitsWhereTilesFillTheGrid) {
  EXPECT_TRUE(sm90::merging_units_pay(256, 4, 132)) << "B8 GQA 32/8 S_q 64: 8 rounds either way";
  EXPECT_TRUE(sm90::merging_units_pay(1024, 4, 132)) << "B32: 32 and 32";
  EXPECT_TRUE(sm90::merging_units_pay(192, 6, 132)) << "12 against 9";
  EXPECT_FALSE(sm90::merging_units_pay(144, 6, 132)) << "12 against 7";
  EXPECT_FALSE(sm90::merging_units_pay(64, 4, 132)) << "fewer tiles than SMs";
  EXPECT_FALSE(sm90::merging_units_pay(131, 8, 132));
  EXPECT_TRUE(sm90::merging_units_pay(132, 8, 132));
  EXPECT_FALSE(sm90::merging_units_pay(4096, 1, 132)) << "one chunk: nothing to merge";
  EXPECT_FALSE(sm90::merging_units_pay(4096, 4, 0));
}

// The combine with PDL only where the attention units leave free CTA slots
// that hold its CTAs four per SM's worth (decode.hpp, combine_with_pdl):
// the rows session 44 measured in both launch modes (132 SMs), each with
// the mode that was faster.
TEST(Decode, CombineWithPdlOnlyWhereFreeSlotsHoldIt) {
  EXPECT_TRUE(sm90::combine_with_pdl(64, 132, 1, 8)) << "B1 S_q 1 D128: 8.9 against 9.2 us";
  EXPECT_TRUE(sm90::combine_with_pdl(104, 132, 1, 8)) << "B1 D256: 15.1 against 15.9";
  EXPECT_TRUE(sm90::combine_with_pdl(64, 132, 1, 32)) << "B1 S_q 4 S_k 4096: 11.3 against 12.1";
  EXPECT_TRUE(sm90::combine_with_pdl(128, 132, 1, 8)) << "B1 S_k 32768: 35.5 against 36.0";
  EXPECT_TRUE(sm90::combine_with_pdl(128, 132, 1, 16)) << "B1 S_q 2 S_k 8192: 13.9 against 14.1";
  EXPECT_TRUE(sm90::combine_with_pdl(256, 132, 2, 16)) << "B2 D64 S_k 8192, two CTAs per SM: 26.2 against 27.4";
  EXPECT_FALSE(sm90::combine_with_pdl(128, 132, 1, 32)) << "B1 S_q 4 S_k 8192: 15.2 against 16.6";
  EXPECT_FALSE(sm90::combine_with_pdl(512, 132, 1, 64)) << "B8 D128, several rounds: 37.9 against 38.5";
  EXPECT_FALSE(sm90::combine_with_pdl(832, 132, 1, 64)) << "B8 D256: 76.1 against 80.3";
  EXPECT_FALSE(sm90::combine_with_pdl(132, 132, 1, 1)) << "no slot free";
  EXPECT_FALSE(sm90::combine_with_pdl(64, 0, 1, 8)) << "no SM count";
}

// A decode call's public shape: B, S_q, H_q, H_kv, S_k.
ForwardArgs decode_shape(int32_t B, int32_t sq, int32_t hq, int32_t hkv, int32_t sk) {
  ForwardArgs a{};
  a.batch = B, a.seqlen_q = sq, a.seqlen_k = sk, a.heads_q = hq, a.heads_kv = hkv, a.kv_group = hq / hkv;
  return a;
}

// The narrow decode kernel (decode_narrow.cuh) where a decode tile holds at
// most 8 rows at one query position: MHA, GQA groups up to 8; not a group
// of 16 (16 rows), a pack wider than a tile; S_q > 1 where the plan's rows
// are at most 8 (not in a DHP_SM90_NARROW_MULTI_SQ=0 build). Never the batch, and
// at S_q = 1 the same answer with S_q > 1 packing off (at S_q = 1 the group
// is always packed).
TEST(Decode, NarrowKernelForAtMostEightRowsAtOnePosition) {
  constexpr int BM = 64, BN = 128;
  for (int32_t B : {1, 7, 4096})
    for (bool pack : {true, false}) {
      auto narrow = [&](int32_t sq, int32_t hq, int32_t hkv, int32_t sk) {
        return sm90::takes_narrow_kernel(decode_shape(B, sq, hq, hkv, sk), BM, BN, pack);
      };
      EXPECT_TRUE(narrow(1, 32, 8, 4096)) << "GQA 32/8: 4 rows";
      EXPECT_TRUE(narrow(1, 32, 32, 4096)) << "MHA: 1 row";
      EXPECT_TRUE(narrow(1, 64, 8, 100)) << "a group of 8: 8 rows";
      EXPECT_TRUE(narrow(1, 48, 8, 33000)) << "a group of 6";
      EXPECT_FALSE(narrow(1, 32, 2, 4096)) << "a group of 16: 16 rows";
      EXPECT_FALSE(narrow(1, 66, 1, 1000)) << "66 rows in two tiles";
#if DHP_SM90_NARROW_MULTI_SQ
      // S_q > 1 (decode.hpp): the plan's rows decide, so packing
      // matters there (unpacked, each query head is a tile of S_q rows).
      EXPECT_TRUE(narrow(2, 16, 4, 4096)) << "S_q 2: 8 packed rows, or 2 unpacked";
      EXPECT_TRUE(narrow(7, 32, 32, 4096)) << "MHA S_q 7: 7 rows";
      EXPECT_FALSE(narrow(9, 32, 32, 4096)) << "MHA S_q 9: 9 rows";
      EXPECT_EQ(narrow(3, 16, 4, 4096), !pack) << "S_q 3, group 4: 12 packed rows, 3 unpacked";
#else
      EXPECT_FALSE(narrow(2, 16, 4, 4096)) << "S_q 2: 8 packed rows, S_q 1 only in this build";
      EXPECT_FALSE(narrow(7, 32, 32, 4096)) << "MHA S_q 7";
#endif
    }
}

// Within decode_max_seqlen_q the decode path is taken where GQA packing
// at least halves the K/V streams (any S_k), or else where the split's gain
// at B1 outweighs its cost from B8 on against the 64-row dense tiles (S_q =
// 1 from two chunks; S_q > 1 from S_k 4096): the shapes measured in
// docs/perf-log.md, sessions 35-36. Never the batch.
TEST(Decode, PathTakenWherePackingOrSplitPays) {
  constexpr int BM = 64, BN = 128;
  auto decode = [](const ForwardArgs& a) { return sm90::takes_decode_path(a, BM, BN, true, false); };
  auto merging = [](const ForwardArgs& a) { return sm90::takes_decode_path(a, BM, BN, true, true); };
  // Streams at least halved: S_q 1-32 with a group of 4, any S_k (S_q 16
  // S_k 256 B32: 0.76x the dense time).
  EXPECT_TRUE(decode(decode_shape(32, 16, 32, 8, 64)));
  EXPECT_TRUE(decode(decode_shape(32, 1, 32, 8, 64)));
  EXPECT_TRUE(decode(decode_shape(8, 32, 32, 8, 64)));
  EXPECT_TRUE(decode(decode_shape(2, 9, 64, 1, 100))) << "MQA: 9 x 64 rows in 9 tiles, not 64";
  // Fewer saved (S_q 33-48: 3 tiles for 4, S_q 49-64: none): the split
  // must pay, from S_k 4096 (S_q 40 S_k 1024: B8 1.18x, B32 1.15x).
  EXPECT_FALSE(decode(decode_shape(32, 48, 32, 8, 256))) << "3 tiles for 4, one chunk";
  EXPECT_FALSE(decode(decode_shape(32, 40, 32, 8, 1024))) << "3 tiles for 4, two chunks";
  EXPECT_FALSE(sm90::takes_decode_path(decode_shape(8, 48, 32, 8, 512), BM, 80, true, false)) << "D256 tiles";
  for (int32_t sk : {64, 256, 1024, 2048, 4095}) {
    EXPECT_FALSE(decode(decode_shape(8, 64, 32, 8, sk))) << sk;
    EXPECT_FALSE(decode(decode_shape(8, 40, 32, 8, sk))) << sk;
  }
  EXPECT_TRUE(decode(decode_shape(8, 64, 32, 8, 4096)));
  EXPECT_TRUE(decode(decode_shape(8, 40, 32, 8, 4096)));
  EXPECT_FALSE(decode(decode_shape(8, 49, 32, 8, 1024))) << "196 rows: 4 tiles";
  // MHA: S_q 1 from two chunks (S_k > 4 key tiles), S_q 32 from S_k 4096.
  EXPECT_FALSE(decode(decode_shape(8, 1, 32, 32, 512)));
  EXPECT_TRUE(decode(decode_shape(8, 1, 32, 32, 513)));
  EXPECT_FALSE(decode(decode_shape(8, 32, 32, 32, 4095)));
  EXPECT_TRUE(decode(decode_shape(8, 32, 32, 32, 4096)));
  EXPECT_FALSE(decode(decode_shape(8, 33, 32, 32, 8192))) << "above decode_max_seqlen_q unpacked";
  // With merging units (D <= 128) MHA S_q 33-64 joins from S_k 4096 (B1 S_q
  // 64 S_k 8192: 0.53x the dense time; B8 S_k 4096: 1.02x); the packed
  // shapes answer as before.
  for (int32_t sq : {33, 48, 64}) {
    EXPECT_TRUE(merging(decode_shape(8, sq, 32, 32, 4096))) << sq;
    EXPECT_FALSE(merging(decode_shape(8, sq, 32, 32, 4095))) << sq;
    EXPECT_TRUE(merging(decode_shape(1, sq, 48, 8, 8192))) << "a group of 6, S_q " << sq;
  }
  EXPECT_FALSE(merging(decode_shape(8, 65, 32, 32, 8192))) << "above decode_max_seqlen_q";
  for (int32_t sk : {64, 1024, 4096, 33000})
    for (int32_t sq : {1, 8, 16, 32, 40, 64})
      EXPECT_EQ(merging(decode_shape(8, sq, 32, 8, sk)), decode(decode_shape(8, sq, 32, 8, sk))) << sq << " " << sk;
  // Packing off: group 4 at S_q 16 shares nothing.
  EXPECT_FALSE(sm90::takes_decode_path(decode_shape(8, 16, 32, 8, 1024), BM, BN, false, false));
  // Along S_k the answer changes at most once, from dense to decode.
  for (int bn : {128, 80})
    for (bool merge : {false, true})
      for (int32_t hkv : {32, 16, 8, 4, 2})
        for (int32_t sq : {1, 2, 8, 17, 32, 33, 40, 48, 56, 64}) {
          bool was = false;
          int changes = 0;
          for (int32_t sk = 1; sk <= 9000; ++sk) {
            const bool now = sm90::takes_decode_path(decode_shape(1, sq, 32, hkv, sk), BM, bn, true, merge);
            changes += now != was && sk > 1;
            EXPECT_FALSE(was && !now) << "decode to dense at S_k " << sk << ", S_q " << sq << ", 32/" << hkv;
            was = now;
          }
          EXPECT_LE(changes, 1) << "S_q " << sq << ", 32/" << hkv << ", " << bn << "-key tiles";
        }
  // The batch never enters.
  for (int32_t B : {1, 7, 4096})
    for (int32_t sk : {64, 1024, 4096, 33000})
      for (int32_t sq : {1, 8, 32, 64})
        for (int32_t hkv : {8, 32}) {
          EXPECT_EQ(decode(decode_shape(B, sq, 32, hkv, sk)), decode(decode_shape(1, sq, 32, hkv, sk)))
              << B << " " << sq << " " << sk;
          EXPECT_EQ(merging(decode_shape(B, sq, 32, hkv, sk)), merging(decode_shape(1, sq, 32, hkv, sk)))
              << B << " " << sq << " " << sk;
        }
}
