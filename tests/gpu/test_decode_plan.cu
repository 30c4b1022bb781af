// The decode path's host-side rules (src/kernels/sm90/decode.hpp), on the
// CPU: the plan never follows the batch (batch invariance) and its chunks
// cover each key range once; packed rows address the call's heads; which
// shapes take the decode path, the narrow kernel and merging units; and
// when the combine is launched with PDL. Split from test_schedule.cu (the
// dense tile schedule), which kept the helpers of its own.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/forward_args.hpp"
#include "kernels/sm90/decode.hpp"
#include "kernels/sm90/scheduler.cuh"
#include "kernels/sm90/split_combine.hpp"
#include "kernels/sm90/tensor_map.hpp"

using dhp::kernels::ForwardArgs;
namespace sm90 = dhp::sm90;

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
  // A longer shortest chunk (DHP_SM90_DECODE_MIN_CHUNK): D256's 80-key tiles
  // at S_k 4096 are 52, 4 chunks of 13 instead of 13 of 4; a chunk longer
  // than the key range is the range; 0 or less counts as 1.
  a.seqlen_k = 4096;
  EXPECT_EQ(sm90::decode_plan(a, 64, 80, 0, true).splits, 13);
  const sm90::DecodePlan longer = sm90::decode_plan(a, 64, 80, 0, true, 13);
  EXPECT_EQ(longer.splits, 4);
  EXPECT_EQ(longer.split_key_tiles, 13);
  EXPECT_EQ(sm90::decode_plan(a, 64, 80, 0, true, 100).splits, 1);
  EXPECT_EQ(sm90::decode_plan(a, 64, 80, 0, true, 0).splits, sm90::decode_plan(a, 64, 80, 0, true, 1).splits);
}

// At D256 the plan aims at 64 units per batch entry instead of 128
// (decode_units_target), on either decode kernel: GQA 32/8 S_q 1 at the
// 64-row kernel's 80-key tiles, 8 packed heads, so 8 chunks where the
// 4-tile floor allows -- S_k 4096 7-tile chunks (52 tiles), 8192 13 (103),
// 16384 26 (205) -- and S_k 2048's 26 tiles still in 4-tile chunks -- and at
// the narrow kernel's 64-key tiles S_k 4096 8 chunks of 8 (16 of 4 at 128
// units) -- but never one chunk where the 128-unit plan cuts two: MHA with
// 64 heads keeps 2 chunks of 26 (one, on the dense kernels, was 6 % slower
// at B1 and B8), 128 heads one either way.
TEST(Decode, D256PlanAimsAtHalfTheUnits) {
  ForwardArgs a{};
  a.seqlen_q = 1, a.heads_q = 32, a.heads_kv = 8, a.kv_group = 4, a.batch = 5;
  const int64_t d256 = sm90::decode_units_target(256);
  EXPECT_EQ(d256, 64);
  EXPECT_EQ(sm90::decode_units_target(128), 128);
  EXPECT_EQ(sm90::decode_units_target(64), 128);
  struct Row { int32_t sk, chunk, splits; };
  for (const Row& r : {Row{2048, 4, 7}, Row{4096, 7, 8}, Row{8192, 13, 8}, Row{16384, 26, 8}}) {
    a.seqlen_k = r.sk;
    const sm90::DecodePlan p = sm90::decode_plan(a, 64, 80, 0, true, sm90::kDecodeMinChunkTiles, d256);
    EXPECT_EQ(p.split_key_tiles, r.chunk) << r.sk;
    EXPECT_EQ(p.splits, r.splits) << r.sk;
  }
  a.seqlen_k = 4096;
  EXPECT_EQ(sm90::decode_plan(a, 64, 80, 0, true).split_key_tiles, 4) << "the merged target: 13 chunks of 4";
  EXPECT_EQ(sm90::decode_plan(a, 64, 64, 0, true, sm90::kDecodeMinChunkTiles, d256).split_key_tiles, 8)
      << "the narrow kernel: 8 chunks of 8";
  EXPECT_EQ(sm90::decode_plan(a, 64, 64, 0, true).split_key_tiles, 4) << "the 128-unit target: 16 chunks of 4";
  a.heads_q = a.heads_kv = 32, a.kv_group = 1;
  EXPECT_EQ(sm90::decode_plan(a, 64, 80, 0, true, sm90::kDecodeMinChunkTiles, d256).splits, 2);
  a.heads_q = a.heads_kv = 64;
  EXPECT_EQ(sm90::decode_plan(a, 64, 80, 0, true, sm90::kDecodeMinChunkTiles, d256).splits, 2);
  EXPECT_TRUE(sm90::takes_decode_path(a, 64, 80, true, false, d256)) << "64 heads: 2 chunks, the decode path";
  a.heads_q = a.heads_kv = 128;
  EXPECT_EQ(sm90::decode_plan(a, 64, 80, 0, true, sm90::kDecodeMinChunkTiles, d256).splits, 1);
  EXPECT_EQ(sm90::decode_plan(a, 64, 80, 0, true).splits, 1);
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

// The combine with PDL wherever it has at most one CTA per SM (its CTAs
// then spread one to an SM; decode.hpp, combine_spreads), and otherwise
// only where the attention units leave free CTA slots that hold its CTAs
// four per SM's worth (combine_with_pdl): the rows sessions 44 and 47
// measured in both launch modes (132 SMs), each with the mode that was
// faster.
TEST(Decode, CombineWithPdlWhereItSpreadsOrFreeSlotsHoldIt) {
  EXPECT_TRUE(sm90::combine_with_pdl(64, 132, 1, 8)) << "B1 S_q 1 D128: 8.9 against 9.2 us";
  EXPECT_TRUE(sm90::combine_with_pdl(104, 132, 1, 8)) << "B1 D256: 15.1 against 15.9";
  EXPECT_TRUE(sm90::combine_with_pdl(64, 132, 1, 32)) << "B1 S_q 4 S_k 4096: 11.3 against 12.1";
  EXPECT_TRUE(sm90::combine_with_pdl(128, 132, 1, 8)) << "B1 S_k 32768: 35.5 against 36.0";
  EXPECT_TRUE(sm90::combine_with_pdl(128, 132, 1, 16)) << "B1 S_q 2 S_k 8192: 13.9 against 14.1";
  EXPECT_TRUE(sm90::combine_with_pdl(256, 132, 2, 16)) << "B2 D64 S_k 8192, two CTAs per SM: 26.2 against 27.4";
  // At most one combine CTA per SM: PDL with the CTAs spread one to an SM
  // (session 47), however many rounds the attention units take.
  EXPECT_TRUE(sm90::combine_with_pdl(512, 132, 1, 64)) << "B8 D128, several rounds: 36.6 against 37.1";
  EXPECT_TRUE(sm90::combine_with_pdl(512, 132, 1, 64) && sm90::combine_spreads(64, 132));
  EXPECT_TRUE(sm90::combine_with_pdl(1024, 132, 1, 128)) << "B16 D256: 131.2 against 131.9";
  EXPECT_TRUE(sm90::combine_with_pdl(132, 132, 1, 1)) << "no slot free, one combine CTA: spread";
  EXPECT_TRUE(sm90::combine_with_pdl(128, 132, 1, 32)) << "B1 S_q 4 S_k 8192: 14.9 spread against 15.6 in stream order";
  // More combine CTAs than SMs: session 44's rule.
  EXPECT_FALSE(sm90::combine_spreads(133, 132));
  EXPECT_FALSE(sm90::combine_with_pdl(512, 132, 1, 256)) << "several rounds, two combine CTAs per SM";
  EXPECT_TRUE(sm90::combine_with_pdl(64, 132, 1, 200)) << "one round, 68 SMs free hold 200 at 4 per SM";
  EXPECT_FALSE(sm90::combine_with_pdl(64, 0, 1, 8)) << "no SM count";
  EXPECT_FALSE(sm90::combine_spreads(8, 0));
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
