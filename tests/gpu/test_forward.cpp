// GPU correctness of the forward pass against the float64 reference: fresh
// random inputs every run (seed printed on failure), poisoned outputs, sizes
// that are not tile multiples, GQA, causal with S_q != S_k, secret lengths
// (0, 1, random, S_max), BSHD, BHSD and padded strides, a caller's scale,
// NaN handling; every output row on its own, and nothing written outside o
// and lse (guard bands, O's stride gaps).
// Without a usable device every test prints "skipped: no CUDA device".
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <vector>

#include "harness.hpp"
#include "require_gpu.hpp"

namespace dhp::testing {
namespace {

void expect_pass(const Case& c) {
  const Errors e = run_case(c);
  EXPECT_TRUE(passes(e, c.dtype)) << c.name() << ": " << e.describe();
}

class Forward : public ::testing::TestWithParam<Case> {};
TEST_P(Forward, MatchesReference) {
  DHP_REQUIRE_GPU();
  expect_pass(GetParam());
}

Case make(DType dt, int64_t B, int64_t Sq, int64_t Sk, int64_t Hq, int64_t Hkv, int64_t D,
          bool causal, Lengths lens = Lengths::kNone, Layout layout = Layout::kBSHD) {
  Case c;
  c.dtype = dt; c.batch = B; c.seqlen_q = Sq; c.seqlen_k = Sk; c.heads_q = Hq; c.heads_kv = Hkv;
  c.head_dim = D; c.causal = causal; c.lengths = lens; c.layout = layout;
  return c;
}

std::vector<Case> all_cases() {
  std::vector<Case> cs;
  const DType kF16 = DType::kFloat16, kBF16 = DType::kBFloat16;
  // Every dtype x head dim x causal, at a size that is not a tile multiple.
  for (DType dt : {kF16, kBF16})
    for (int64_t D : {64, 128, 256})
      for (bool causal : {false, true}) cs.push_back(make(dt, 2, 1000, 1000, 4, 2, D, causal));
  // Tiny and odd sizes.
  for (int64_t S : {1, 17})
    for (int64_t D : {64, 128, 256}) cs.push_back(make(kF16, 3, S, S, 2, 1, D, S == 17));
  // S_q != S_k, causal on and off (bottom-right alignment).
  for (bool causal : {false, true}) {
    cs.push_back(make(kF16, 2, 17, 1000, 4, 4, 128, causal));
    cs.push_back(make(kBF16, 2, 1000, 17, 4, 4, 128, causal));
    cs.push_back(make(kF16, 1, 1, 4097, 2, 2, 64, causal));
    cs.push_back(make(kF16, 1, 300, 777, 2, 1, 256, causal));
  }
  // Long sequence.
  for (bool causal : {false, true}) cs.push_back(make(kF16, 1, 4097, 4097, 2, 2, 128, causal));
  // D = 128 non-causal with S_k >= 2048 (the Hopper kernel's 160-key tiles),
  // secret lengths and a partial last key tile.
  cs.push_back(make(kBF16, 2, 2100, 2100, 2, 2, 128, false, Lengths::kSeparate));
  cs.push_back(make(kF16, 2, 100, 3000, 4, 2, 128, false, Lengths::kOnlyK));
  // Several tiles per CTA of the persistent Hopper grid (>= 3 x 132 tiles),
  // short key ranges: each Q buffer (two at D64/D128, one at D256) and each
  // lengths slot is reused several times, quickly, with O staged in it.
  // (Non-causal D = 128: 512 tiles in 4 rounds of 128 CTAs, not 132 --
  // tile_shape.hpp, persistent_ctas; B8 S257 below: 192 tiles on 96.)
  cs.push_back(make(kF16, 8, 1000, 96, 8, 2, 128, false));
  cs.push_back(make(kBF16, 12, 600, 200, 8, 2, 64, false, Lengths::kSeparate));  // 192-row tiles
  // The two-consumer D64 kernel (128-row tiles: causal S_q <= 2048 with a
  // public diagonal, or non-causal below 512), which stages O in a buffer of
  // its own and releases each Q buffer at the tile's last S GEMM: 4-5 tiles
  // per CTA.
  cs.push_back(make(kF16, 8, 1100, 1100, 8, 2, 64, true, Lengths::kShared));
  cs.push_back(make(kF16, 16, 400, 400, 8, 2, 64, true, Lengths::kSeparate));  // planned non-causal: S < 512
  // Causal with separate lengths (secret diagonal) is planned as non-causal
  // (tile_shape.hpp, planning_shape): the causal mask then runs in the
  // 160-key D128 tiles (V's copy beside on a 132-SM GPU) and in 192-row D64
  // tiles dealt by the partial-block lists (384 tiles; scheduler.cuh,
  // list_kind); GQA, S_q != S_k.
  cs.push_back(make(kF16, 2, 2100, 2300, 4, 2, 128, true, Lengths::kSeparate));
  cs.push_back(make(kBF16, 8, 1000, 1000, 8, 4, 64, true, Lengths::kSeparate));
  cs.push_back(make(kBF16, 12, 300, 300, 16, 4, 64, false, Lengths::kShared));
  cs.push_back(make(kF16, 6, 700, 160, 8, 8, 256, true, Lengths::kSeparate));
  // D = 256 stages O in the ring slot of a tile's last key tile and releases
  // Q after the last S GEMM: many tiles per CTA without lengths and with a
  // partial last key tile; and causal S_q > S_k, where the top row blocks
  // have no key tile (O staged in Q as before) beside tiles that do.
  cs.push_back(make(kBF16, 6, 700, 250, 8, 4, 256, false));
  cs.push_back(make(kF16, 8, 600, 100, 4, 2, 256, true));
  // D = 256 non-causal over two rounds of the grid, with secret lengths,
  // GQA and a partial key tile (O staged in the ring, lengths slots reused).
  cs.push_back(make(kF16, 8, 512, 300, 8, 2, 256, false, Lengths::kSeparate));
  // Batch 8 and GQA ratios 1, 4, 8.
  cs.push_back(make(kF16, 8, 257, 257, 8, 8, 128, false));
  cs.push_back(make(kBF16, 8, 257, 257, 8, 2, 64, true));
  cs.push_back(make(kF16, 4, 200, 200, 8, 1, 128, false));
  // Secret lengths: shared, separate, only q, only k; causal and not.
  for (bool causal : {false, true}) {
    cs.push_back(make(kF16, 8, 300, 300, 4, 2, 128, causal, Lengths::kShared));
    cs.push_back(make(kBF16, 8, 300, 300, 4, 4, 64, causal, Lengths::kShared));
    cs.push_back(make(kF16, 8, 250, 333, 4, 1, 128, causal, Lengths::kSeparate));
    cs.push_back(make(kF16, 4, 333, 250, 2, 2, 256, causal, Lengths::kSeparate));
    cs.push_back(make(kBF16, 4, 200, 200, 2, 2, 128, causal, Lengths::kOnlyQ));
    cs.push_back(make(kF16, 4, 200, 300, 2, 2, 64, causal, Lengths::kOnlyK));
  }
  // BHSD strides.
  cs.push_back(make(kF16, 2, 300, 300, 4, 2, 128, true, Lengths::kNone, Layout::kBHSD));
  cs.push_back(make(kBF16, 4, 200, 260, 4, 4, 64, false, Lengths::kSeparate, Layout::kBHSD));
  // Garbage (NaN) in the padding must not reach any output.
  for (int64_t D : {64, 128, 256}) {
    Case c = make(kF16, 8, 200, 200, 2, 2, D, D == 128, Lengths::kShared);
    c.poison_padding = true;
    cs.push_back(c);
  }
  {
    Case c = make(kBF16, 4, 150, 190, 2, 1, 128, true, Lengths::kSeparate);
    c.poison_padding = true;
    cs.push_back(c);
  }
  // Causal with shared lengths: V's padding zeroed in shared memory only in
  // each query tile's band of key tiles (sm90 kernel_traits.cuh,
  // v_band_tiles), no copy of V: several query tiles per sequence, every
  // head dim, a partial last tile.
  for (int64_t D : {64, 128, 256}) {
    Case c = make(D == 128 ? kBF16 : kF16, 6, 700, 700, 4, 2, D, true, Lengths::kShared);
    c.poison_padding = true;
    cs.push_back(c);
  }
  // V's copy beside the attention (secret key lengths, non-causal D = 128
  // with a grid that leaves SMs idle; sm90 padding_scrub.hpp): two rounds of
  // tiles, the second reading pairs the first does not, so its producers
  // wait on the copy's counters; NaN in the padding. MHA and GQA; on a
  // 132-SM GPU both take it (VCopyBeside in test_schedule.cu).
  for (int i = 0; i < 2; ++i) {
    Case c = i == 0 ? make(kF16, 4, 128, 700, 34, 34, 128, false, Lengths::kSeparate)
                    : make(kBF16, 2, 128, 1000, 72, 36, 128, false, Lengths::kOnlyK);
    c.poison_padding = true;
    cs.push_back(c);
  }
  // A caller's softmax scale (the exp2 fold of scale * log2(e)), small and
  // large, every head dim; lse checked.
  {
    const double scales[] = {0.3, 1.7, 0.05, 2.5};
    const int64_t dims[] = {64, 128, 256, 64};
    for (int i = 0; i < 4; ++i) {
      Case c = make(i % 2 ? kBF16 : kF16, 3, 257, 300, 4, 2, dims[i], i % 2 == 0,
                    i == 3 ? Lengths::kSeparate : Lengths::kNone);
      c.scale = scales[i];
      cs.push_back(c);
    }
  }
  // Padded strides: gaps after every head, row and batch entry. Q/K/V gaps
  // hold NaN (never read); O's gaps must stay untouched (never written).
  cs.push_back(make(kF16, 3, 300, 300, 4, 2, 128, true, Lengths::kSeparate, Layout::kPadded));
  cs.push_back(make(kBF16, 2, 257, 190, 4, 4, 64, false, Lengths::kNone, Layout::kPadded));
  cs.push_back(make(kF16, 2, 260, 260, 2, 1, 256, false, Lengths::kShared, Layout::kPadded));
  // Zero strides: K and V broadcast over their heads (head stride 0), which
  // validation allows for inputs.
  for (int64_t D : {64, 256}) {
    Case c = make(D == 64 ? kF16 : kBF16, 2, 300, 333, 4, 4, D, D == 64, D == 64 ? Lengths::kSeparate : Lengths::kNone);
    c.broadcast_kv_heads = true;
    cs.push_back(c);
  }
  // Causal grids with S_q >= 2048 and more tiles than SMs: the Hopper
  // launcher's per-CTA schedule lists where its load model prefers them
  // (sm90/launch.cuh; DHP_SM90_SCHEDULE_TABLE=2 forces them, as the GPU
  // scripts do in a second run), with and without secret lengths.
  for (int64_t D : {64, 128}) {
    cs.push_back(make(kF16, 4, 2100, 2100, 4, 2, D, true));
    cs.push_back(make(kBF16, 4, 2100, 2100, 4, 4, D, true, Lengths::kShared));
  }
  // Without lse.
  {
    Case c = make(kF16, 2, 100, 100, 2, 2, 128, false);
    c.with_lse = false;
    cs.push_back(c);
  }
  // Decoding, S_q = 1 (the Hopper decode path, sm90/decode.hpp; every head
  // dim, D = 64 since session 38): key ranges split into chunks merged by the combine
  // kernel, and with GQA the query heads of a kv head packed as one tile's
  // rows. Every head dim and dtype,
  // key lengths that are not tile or chunk multiples, causal (a no-op at
  // S_q = 1 that the path drops), every length mode, BHSD and padded
  // strides, a pack wider than a 64-row tile (66 heads on one kv head: two
  // query blocks), NaN in the padding, and a long LLM shape (GQA 32 / 8,
  // S_k 33 000, 17 chunks of 16 key tiles). With at most 8 rows per tile
  // (S_q = 1, groups up to 8, MHA) the narrow decode kernel since session 39.
  cs.push_back(make(kF16, 3, 1, 5000, 8, 2, 128, false));
  cs.push_back(make(kBF16, 2, 1, 3001, 32, 8, 64, true, Lengths::kSeparate));
  cs.push_back(make(kF16, 4, 1, 2000, 4, 4, 256, false, Lengths::kOnlyK));
  cs.push_back(make(kBF16, 2, 1, 700, 66, 1, 64, false));
  cs.push_back(make(kF16, 5, 1, 1500, 16, 4, 128, true, Lengths::kOnlyQ, Layout::kBHSD));
  cs.push_back(make(kBF16, 3, 1, 999, 8, 4, 256, false, Lengths::kSeparate, Layout::kPadded));
  cs.push_back(make(kF16, 2, 1, 33000, 32, 8, 128, false));
  cs.push_back(make(kBF16, 1, 1, 100, 8, 1, 128, true));
  // MHA at S_q = 1 on the narrow decode kernel (decode_narrow.cuh: one live
  // row of its 8; the decode path from two chunks of keys on).
  cs.push_back(make(kF16, 3, 1, 2300, 6, 6, 64, false, Lengths::kSeparate));
  cs.push_back(make(kBF16, 2, 1, 4100, 4, 4, 128, true, Lengths::kOnlyK));
  {
    Case c = make(kF16, 6, 1, 2500, 8, 2, 128, true, Lengths::kSeparate);
    c.poison_padding = true;
    cs.push_back(c);
    Case d = make(kBF16, 4, 1, 1200, 4, 2, 64, false, Lengths::kOnlyK);
    d.poison_padding = true;
    d.with_lse = false;
    cs.push_back(d);
  }
  // A few query rows against a long key range (checking drafted tokens,
  // S_q 2-64): the decode path up to decode_max_seqlen_q (decode.hpp: 64
  // packed, 32 not; takes_decode_path: where the packing saves fewer than
  // half the tiles, as at S_q 40 and 64, only from S_k 4096, hence the long
  // key ranges below), causal kept (bottom-right: row s sees keys <= s + L_k
  // - L_q); the power-of-two groups packed as rows s q_pack + g: 4 (28
  // rows; 160 rows in three 64-row tiles, the last partial), 64 (MQA: one
  // position per 64-row block), 2 (BHSD, secret L_q at S_q 5; 128 rows at
  // S_q 64, no lengths), 8 at D = 64;
  // a group of 6 stays unpacked (decode at S_q 3, dense at 64 below S_k
  // 4096); MHA decode at S_q 32, dense at 33 below S_k 4096, decode at S_q
  // 48 from it (merging units' decode_max_seqlen_q at D128). (The GQA S_q 17 cases above take the decode
  // path too; scripts/decode-run.sh runs the suite again with it off, so that
  // the dense kernels keep their small-S_q coverage.)
  cs.push_back(make(kF16, 3, 7, 3000, 32, 8, 128, true, Lengths::kSeparate));
  cs.push_back(make(kF16, 2, 9, 1500, 64, 1, 128, true));
  cs.push_back(make(kBF16, 4, 5, 2100, 16, 8, 256, true, Lengths::kOnlyQ, Layout::kBHSD));
  cs.push_back(make(kBF16, 2, 16, 999, 8, 1, 64, true, Lengths::kOnlyK, Layout::kPadded));
  cs.push_back(make(kBF16, 3, 3, 4100, 24, 4, 128, true, Lengths::kSeparate));
  cs.push_back(make(kF16, 2, 12, 777, 8, 2, 256, false, Lengths::kSeparate));
  cs.push_back(make(kF16, 3, 40, 4100, 32, 8, 128, true, Lengths::kSeparate));
  cs.push_back(make(kBF16, 2, 64, 4200, 16, 8, 256, true, Lengths::kNone, Layout::kBHSD));
  cs.push_back(make(kF16, 2, 64, 1000, 12, 2, 128, true, Lengths::kSeparate));
  cs.push_back(make(kBF16, 2, 32, 4500, 8, 8, 128, false, Lengths::kSeparate));
  cs.push_back(make(kF16, 2, 33, 1500, 8, 8, 128, true));
  cs.push_back(make(kBF16, 3, 48, 4100, 6, 6, 128, true, Lengths::kSeparate));
  return cs;
}

INSTANTIATE_TEST_SUITE_P(Grid, Forward, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return "case" + std::to_string(info.index);
                         });

// Explicit extreme lengths: every sequence empty, every sequence full; and
// the extremes side by side in one batch for every kernel.
TEST(ForwardLengths, AllZeroAndAllFull) {
  DHP_REQUIRE_GPU();
  for (int32_t len : {0, 1, 255, 256}) {
    Case c = make(DType::kFloat16, 4, 256, 256, 2, 2, 128, false, Lengths::kShared);
    c.lens_q = std::vector<int32_t>(4, len);
    expect_pass(c);
  }
  // Every head dim, dtype and mask, at a size that is not a tile multiple:
  // lengths 0, 1, S - 1 and S side by side, shared and separate (a key
  // length 0 beside a query length S, and the reverse).
  for (DType dt : {DType::kFloat16, DType::kBFloat16})
    for (int64_t D : {64, 128, 256})
      for (bool causal : {false, true}) {
        Case s = make(dt, 4, 257, 257, 2, 1, D, causal, Lengths::kShared);
        s.lens_q = {0, 1, 256, 257};
        expect_pass(s);
        Case sep = make(dt, 4, 257, 300, 2, 2, D, causal, Lengths::kSeparate);
        sep.lens_q = {257, 0, 1, 256};
        sep.lens_k = {0, 300, 299, 1};
        expect_pass(sep);
      }
  // Out-of-range lengths are clamped, not rejected.
  Case c = make(DType::kFloat16, 4, 128, 128, 2, 2, 64, true, Lengths::kSeparate);
  c.lens_q = {-5, 1000, 64, 2147483647};
  c.lens_k = {7, -2147483647 - 1, 300, 128};
  expect_pass(c);
  // Decoding (S_q = 1; GQA packed): a query length of 0 empties all of a
  // pack's rows, 1 or more (clamped) none; key lengths 0, 1, one key in the
  // last chunk, S_k; causal and not.
  for (DType dt : {DType::kFloat16, DType::kBFloat16})
    for (bool causal : {false, true}) {
      Case d = make(dt, 6, 1, 2100, 8, 2, dt == DType::kFloat16 ? 128 : 64, causal, Lengths::kSeparate);
      d.lens_q = {1, 0, 1, 7, -3, 1};
      d.lens_k = {0, 2100, 1, 2049, 2100, 2099};
      expect_pass(d);
    }
  // A few query rows (S_q 7 and 40, the decode path; packed rows
  // s q_pack + g, over several tiles at 40, which takes the decode path
  // from S_k 4096: takes_decode_path): query lengths 0, 1, S_q and
  // beyond, a key length shorter than the query length (causal: the first
  // rows see nothing), 0 and S_k; every length class in one batch.
  for (DType dt : {DType::kFloat16, DType::kBFloat16})
    for (int64_t sq : {7, 40}) {
      const int32_t sk = sq == 7 ? 1500 : 4100;
      Case e = make(dt, 6, sq, sk, 16, 4, dt == DType::kFloat16 ? 128 : 256, true, Lengths::kSeparate);
      e.lens_q = {0, 1, int32_t(sq), 3, 100, int32_t(sq)};
      e.lens_k = {sk, 0, 4, sk, 1, 1029};
      expect_pass(e);
    }
}

// NaN in one visible query row propagates to that row (as in the reference)
// and nowhere else.
TEST(ForwardNaN, VisibleNaNPropagatesOnlyToItsRow) {
  DHP_REQUIRE_GPU();
  Case c = make(DType::kFloat16, 1, 100, 100, 1, 1, 64, false);
  c.nan_query_row = 37;
  expect_pass(c);
  // Decoding with GQA: head 0's one row shares a tile with heads 1-3 (the
  // pack) and its chunks with the combine: only head 0 may turn NaN.
  Case d = make(DType::kFloat16, 2, 1, 3000, 8, 2, 128, false);
  d.nan_query_row = 0;
  expect_pass(d);
}

// The comparison must be able to fail: against a reference computed with the
// causal flag flipped, the same kernel output is rejected.
TEST(ForwardHarness, DetectsAWrongResult) {
  DHP_REQUIRE_GPU();
  const Case c = make(DType::kFloat16, 2, 200, 200, 2, 2, 128, true);
  const Errors e = run_case(c, 0, /*wrong_reference=*/true);
  EXPECT_FALSE(passes(e, c.dtype)) << "a wrong reference was accepted: " << e.describe();
}

// One row 10 % off among 8 000 passes the whole-output L2 error but not the
// per-row one; one element written past o's end is caught by its guard band.
TEST(ForwardHarness, DetectsOneWrongRowAndAWritePastTheEnd) {
  DHP_REQUIRE_GPU();
  Case c = make(DType::kBFloat16, 2, 1000, 1000, 4, 2, 128, false);
  c.corrupt_row = 517;
  const Errors e = run_case(c);
  EXPECT_LE(e.o_rel_l2, o_tolerance(c.dtype)) << "the whole-output error alone would have caught it: " << e.describe();
  EXPECT_FALSE(passes(e, c.dtype)) << "a row 10 % off was accepted: " << e.describe();
  Case g = make(DType::kFloat16, 2, 100, 100, 2, 2, 64, false);
  g.corrupt_past_end = true;
  const Errors eg = run_case(g);
  EXPECT_GT(eg.out_of_bounds, 0) << eg.describe();
  EXPECT_FALSE(passes(eg, g.dtype)) << "a write past o's end was accepted: " << eg.describe();
}

// Invalid arguments launch nothing even with a device present: the fake
// pointers would fault if a kernel ran, so the device must still be clean
// after a synchronisation.
TEST(ForwardArgs, InvalidHeadDimIsRejectedBeforeLaunch) {
  DHP_REQUIRE_GPU();
  Params p = make_params(DType::kFloat16, 1, 16, 16, 1, 1, 96, reinterpret_cast<void*>(0x1000),
                         reinterpret_cast<void*>(0x1000), reinterpret_cast<void*>(0x1000),
                         reinterpret_cast<void*>(0x1000));
  const Status s = attention_forward(p);
  EXPECT_EQ(s.code, DHP_ERROR_UNSUPPORTED);
  EXPECT_NE(s.message.find("head_dim"), std::string::npos) << s.message;
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// Pointers the device cannot use as its global memory -- unregistered host
// memory, pinned host memory -- are refused by name (forward.cpp,
// check_memory), nothing is launched (the poisoned output stays as it was),
// and the CUDA context stays usable. Managed memory is accepted and gives
// the same bits as device memory (same kernel, same inputs).
TEST(ForwardArgs, HostMemoryIsRejectedAndManagedMemoryAccepted) {
  DHP_REQUIRE_GPU();
  const int64_t B = 2, S = 200, H = 2, D = 64, n = B * S * H * D;
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<uint16_t> host(3 * n);
  for (auto& x : host) x = to_bits(u(rng), DType::kFloat16);
  const std::vector<uint16_t> poison(n, 0x7e00);  // fp16 NaN
  uint16_t *dev = nullptr, *managed = nullptr, *pinned = nullptr, *out = nullptr;
  int32_t* dev_lens = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, 3 * n * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&out, n * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dev_lens, B * 4), cudaSuccess);
  ASSERT_EQ(cudaMallocManaged(&managed, 4 * n * 2), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(&pinned, n * 2), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dev, host.data(), 3 * n * 2, cudaMemcpyHostToDevice), cudaSuccess);
  std::copy(host.begin(), host.end(), managed);
  const int32_t lens[2] = {150, 200};
  ASSERT_EQ(cudaMemcpy(dev_lens, lens, sizeof(lens), cudaMemcpyHostToDevice), cudaSuccess);
  auto params = [&](const uint16_t* base, uint16_t* o) {
    return make_params(DType::kFloat16, B, S, S, H, H, D, base, base + n, base + 2 * n, o);
  };
  std::vector<uint16_t> host_o(n);
  struct Bad {
    const char* name;
    std::function<void(Params&)> mutate;
    const char* what;
  } bad[] = {
      {"q", [&](Params& p) { p.q = host.data(); }, "host memory not known to CUDA"},
      {"o", [&](Params& p) { p.o = pinned; }, "pinned host memory"},
      {"v", [&](Params& p) { p.v = pinned; }, "pinned host memory"},
      {"seqlens", [&](Params& p) { p.seqlens = lens; }, "host memory not known to CUDA"},
  };
  for (const Bad& b : bad) {
    ASSERT_EQ(cudaMemcpy(out, poison.data(), n * 2, cudaMemcpyHostToDevice), cudaSuccess);
    Params p = params(dev, out);
    b.mutate(p);
    const Status s = attention_forward(p);
    EXPECT_EQ(s.code, DHP_ERROR_INVALID_ARGUMENT) << b.name << ": " << s.message;
    EXPECT_EQ(s.message.rfind(std::string(b.name) + ":", 0), 0u) << s.message;
    EXPECT_NE(s.message.find(b.what), std::string::npos) << s.message;
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess) << b.name;
    EXPECT_EQ(cudaGetLastError(), cudaSuccess) << b.name;
    ASSERT_EQ(cudaMemcpy(host_o.data(), out, n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(host_o, poison) << b.name << ": the output was written, so something was launched";
  }
  // Managed memory: the same call as on device memory, bitwise; with the
  // device's lengths too.
  for (const int32_t* l : {static_cast<const int32_t*>(nullptr), static_cast<const int32_t*>(dev_lens)}) {
    std::fill(managed + 3 * n, managed + 4 * n, uint16_t{0x7e00});
    Params pd = params(dev, out), pm = params(managed, managed + 3 * n);
    pd.seqlens = pm.seqlens = l;
    ASSERT_TRUE(attention_forward(pd).ok());
    const Status sm = attention_forward(pm);
    ASSERT_TRUE(sm.ok()) << sm.message;
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(host_o.data(), out, n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_TRUE(std::equal(host_o.begin(), host_o.end(), managed + 3 * n)) << (l ? "with lengths" : "dense");
    EXPECT_EQ(std::count(host_o.begin(), host_o.end(), uint16_t{0x7e00}), 0);
  }
  cudaFree(dev), cudaFree(out), cudaFree(dev_lens), cudaFree(managed), cudaFreeHost(pinned);
}

}  // namespace
}  // namespace dhp::testing
