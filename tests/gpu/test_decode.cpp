// The Hopper decode path (src/kernels/sm90/decode.hpp) and batch
// invariance (threat model G5): a decoding call (S_q = 1, GQA) splits each
// key range into chunks -- by S_k and the heads, never by the batch size --
// and merges them in a fixed order, so one sequence must give the same bits
// alone and at any position of a batch, with other content and lengths
// beside it. Checked here with fresh random inputs, secret key lengths and
// a key length that is not a chunk multiple; o and lse bit for bit. Also on
// other devices and kernels, where it checks determinism. The comparison
// can fail: a changed V element of the sequence must change its o.
// Correctness against the float64 reference is in test_forward.cpp.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "env_setting.hpp"
#include "harness.hpp"
#include "require_gpu.hpp"

namespace dhp::testing {
namespace {

struct Shape {
  DType dt;
  int64_t sk, hq, hkv, d;
  bool causal, lengths;
  int64_t sq = 1;
};

struct Out {
  std::vector<uint16_t> o;
  std::vector<uint32_t> lse;
};

std::string label(const Shape& s) {
  return "S_q " + std::to_string(s.sq) + " S_k " + std::to_string(s.sk) + " H " + std::to_string(s.hq) + "/" +
         std::to_string(s.hkv) + " D " + std::to_string(s.d);
}

// Two whole calls' outputs compared element by element: o and lse bits
// that differ, and elements that either left as the poison (unwritten).
struct Comparison {
  int64_t o_diff = 0, lse_diff = 0, unwritten = 0;
};
Comparison compare(const Out& a, const Out& b) {
  Comparison c;
  for (size_t i = 0; i < a.o.size(); ++i) {
    c.o_diff += a.o[i] != b.o[i];
    c.unwritten += (a.o[i] == 0xFFFF) + (b.o[i] == 0xFFFF);
  }
  for (size_t i = 0; i < a.lse.size(); ++i) {
    c.lse_diff += a.lse[i] != b.lse[i];
    c.unwritten += (a.lse[i] == 0xFFFFFFFFu) + (b.lse[i] == 0xFFFFFFFFu);
  }
  return c;
}

// One decoding call on BSHD host inputs [B, S_q or S_k, H, D]; lse [B, H, S_q].
Out decode(const Shape& s, int64_t B, const uint16_t* q, const uint16_t* k, const uint16_t* v,
           const std::vector<int32_t>& lens_k) {
  const int64_t nq = B * s.sq * s.hq * s.d, nk = B * s.sk * s.hkv * s.d, nl = B * s.hq * s.sq;
  void *dq = nullptr, *dk = nullptr, *dv = nullptr, *dout = nullptr, *dlse = nullptr, *dlk = nullptr;
  EXPECT_EQ(cudaMalloc(&dq, nq * 2), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&dk, nk * 2), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&dv, nk * 2), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&dout, nq * 2), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&dlse, nl * 4), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(dq, q, nq * 2, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(dk, k, nk * 2, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(dv, v, nk * 2, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemset(dout, 0xFF, nq * 2), cudaSuccess);  // poison
  EXPECT_EQ(cudaMemset(dlse, 0xFF, nl * 4), cudaSuccess);
  Params p = make_params(s.dt, B, s.sq, s.sk, s.hq, s.hkv, s.d, dq, dk, dv, dout);
  p.causal = s.causal;
  p.lse = static_cast<float*>(dlse);
  if (s.lengths) {
    EXPECT_EQ(cudaMalloc(&dlk, B * 4), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(dlk, lens_k.data(), B * 4, cudaMemcpyHostToDevice), cudaSuccess);
    p.seqlens_k = static_cast<const int32_t*>(dlk);
  }
  const Status st = attention_forward(p);
  EXPECT_TRUE(static_cast<bool>(st)) << st.message;
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  Out r;
  r.o.resize(nq);
  r.lse.resize(nl);
  EXPECT_EQ(cudaMemcpy(r.o.data(), dout, nq * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(r.lse.data(), dlse, nl * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  for (void* ptr : {dq, dk, dv, dout, dlse, dlk}) cudaFree(ptr);
  return r;
}

// Fresh random inputs for a batch of B (a new seed every run), random key
// lengths where the shape has them; sequence `odd` gets a length that is
// not a tile or chunk multiple.
struct Batch {
  uint64_t seed;
  std::vector<uint16_t> q, k, v;
  std::vector<int32_t> lk;
};
Batch random_batch(const Shape& s, int64_t B, int64_t odd) {
  Batch r;
  r.seed = fresh_seed();
  std::mt19937_64 rng(r.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  r.q.resize(B * s.sq * s.hq * s.d);
  r.k.resize(B * s.sk * s.hkv * s.d);
  r.v.resize(r.k.size());
  for (auto* x : {&r.q, &r.k, &r.v})
    for (auto& e : *x) e = to_bits(normal(rng), s.dt);
  r.lk.assign(B, static_cast<int32_t>(s.sk));
  std::uniform_int_distribution<int32_t> len(0, static_cast<int32_t>(s.sk));
  if (s.lengths)
    for (auto& l : r.lk) l = len(rng);
  r.lk[odd] = static_cast<int32_t>(s.sk * 7 / 10 + 3);
  return r;
}

void expect_alone_equals_in_batch(const Shape& s, int64_t B, int64_t pos) {
  const int64_t per_q = s.sq * s.hq * s.d, per_k = s.sk * s.hkv * s.d, per_l = s.hq * s.sq;
  const Batch in = random_batch(s, B, pos);
  const uint64_t seed = in.seed;
  const auto& q = in.q;
  const auto& k = in.k;
  const auto& v = in.v;
  const std::vector<int32_t>& lk = in.lk;
  const Out batch = decode(s, B, q.data(), k.data(), v.data(), lk);
  const std::vector<int32_t> lk1{lk[pos]};
  const Out alone = decode(s, 1, q.data() + pos * per_q, k.data() + pos * per_k, v.data() + pos * per_k, lk1);
  int64_t o_diff = 0, lse_diff = 0, unwritten = 0;
  for (int64_t i = 0; i < per_q; ++i) {
    o_diff += batch.o[pos * per_q + i] != alone.o[i];
    unwritten += alone.o[i] == 0xFFFF;
  }
  for (int64_t i = 0; i < per_l; ++i) lse_diff += batch.lse[pos * per_l + i] != alone.lse[i];
  for (const uint16_t x : batch.o) unwritten += x == 0xFFFF;  // every sequence of the batch written
  EXPECT_EQ(unwritten, 0) << "seed " << seed;
  EXPECT_EQ(o_diff, 0) << "o differs alone vs at position " << pos << " of " << B << " (seed " << seed << ")";
  EXPECT_EQ(lse_diff, 0) << "lse differs alone vs at position " << pos << " of " << B << " (seed " << seed << ")";
  // The comparison can fail: V of key 1 (inside every length here) + 8.
  std::vector<uint16_t> v1(v.begin() + pos * per_k, v.begin() + (pos + 1) * per_k);
  v1[s.hkv * s.d] = to_bits(from_bits(v1[s.hkv * s.d], s.dt) + 8.0f, s.dt);
  const Out changed = decode(s, 1, q.data() + pos * per_q, k.data() + pos * per_k, v1.data(), lk1);
  int64_t changed_o = 0;
  for (int64_t i = 0; i < per_q; ++i) changed_o += changed.o[i] != alone.o[i];
  EXPECT_GT(changed_o, 0) << "a changed V left o bitwise equal: the comparison cannot fail (seed " << seed << ")";
}

TEST(Decode, SequenceAloneMatchesItInABatchBitwise) {
  DHP_REQUIRE_GPU();
  const Shape shapes[] = {{DType::kFloat16, 9000, 32, 8, 128, false, true},
                          {DType::kBFloat16, 5000, 8, 1, 64, true, false},
                          {DType::kFloat16, 3000, 4, 4, 256, false, true}};
  for (const Shape& s : shapes) {
    SCOPED_TRACE(label(s));
    expect_alone_equals_in_batch(s, 6, 4);
    expect_alone_equals_in_batch(s, 3, 0);
  }
}

class LocalSetting : public EnvSetting {
 public:
  explicit LocalSetting(const char* value) : EnvSetting("DHP_SM90_DECODE_LOCAL", value) {}
};

// One batch on merging units (sm90/decode_local.cuh: each query tile's
// chunks merged in its unit) and on split units (partials, then the
// combine): o and lse must agree bit for bit at every position, both fully
// written; and the last sequence alone (split units) must equal its place
// in the merged batch (the batch terms of the output addresses). The
// comparison can fail: the same batch with one V element changed.
void expect_merging_equals_split(const Shape& s, int64_t B) {
  const int64_t per_q = s.sq * s.hq * s.d, per_k = s.sk * s.hkv * s.d, per_l = s.hq * s.sq;
  const Batch in = random_batch(s, B, B - 1);
  const uint64_t seed = in.seed;
  const auto& q = in.q;
  const auto& k = in.k;
  const auto& v = in.v;
  const std::vector<int32_t>& lk = in.lk;
  Out merged, split;
  {
    LocalSetting on("1");
    merged = decode(s, B, q.data(), k.data(), v.data(), lk);
  }
  {
    LocalSetting off("0");
    split = decode(s, B, q.data(), k.data(), v.data(), lk);
  }
  const Comparison c = compare(merged, split);
  EXPECT_EQ(c.unwritten, 0) << "seed " << seed;
  EXPECT_EQ(c.o_diff, 0) << "o: merging units against split units, B " << B << " (seed " << seed << ")";
  EXPECT_EQ(c.lse_diff, 0) << "lse: merging units against split units, B " << B << " (seed " << seed << ")";
  const int64_t last = B - 1;
  const std::vector<int32_t> lk1{lk[last]};
  Out alone;
  {
    LocalSetting off("0");
    alone = decode(s, 1, q.data() + last * per_q, k.data() + last * per_k, v.data() + last * per_k, lk1);
  }
  int64_t alone_diff = 0;
  for (int64_t i = 0; i < per_q; ++i) alone_diff += merged.o[last * per_q + i] != alone.o[i];
  for (int64_t i = 0; i < per_l; ++i) alone_diff += merged.lse[last * per_l + i] != alone.lse[i];
  EXPECT_EQ(alone_diff, 0) << "the last sequence alone against its place in the merged batch (seed " << seed << ")";
  std::vector<uint16_t> v1 = v;
  v1[last * per_k + s.hkv * s.d] = to_bits(from_bits(v1[last * per_k + s.hkv * s.d], s.dt) + 8.0f, s.dt);
  Out changed;
  {
    LocalSetting off("0");
    changed = decode(s, B, q.data(), k.data(), v1.data(), lk);
  }
  EXPECT_GT(compare(changed, merged).o_diff, 0) << "a changed V left o bitwise equal: the comparison cannot fail (seed " << seed << ")";
}

// Merging units against split units (D = 128 and 64, the decode kernel's
// kMergeChunks; D = 64 since session 38): every way the kernel's rows map back to
// the call's -- packed at S_q = 1 (GQA 128/32: four heads as the rows of
// one), unpacked (MHA, 64 heads at S_q 1; 16 heads at S_q 48, which only
// merging units' decode_max_seqlen_q lets onto the decode path, causal,
// secret lengths), packed at S_q > 1 (GQA 128/32 at S_q 16, one 64-row tile
// per kv head; GQA 32/8 at S_q 40 over three tiles, the last partial,
// causal, secret lengths) -- at B > 1, so that the batch terms of the
// addresses count. Every shape takes the decode path by the shipped rule
// (S_k >= 4096 or packing), so the test does not set DHP_SM90_DECODE_MAX_SQ.
TEST(Decode, MergingUnitsMatchSplitUnitsBitwise) {
  DHP_REQUIRE_GPU();
  const Shape shapes[] = {{DType::kFloat16, 5000, 128, 32, 128, false, true},
                          {DType::kFloat16, 5000, 64, 64, 128, false, true},
                          {DType::kBFloat16, 4500, 128, 32, 128, true, false, 16},
                          {DType::kFloat16, 6000, 32, 8, 128, true, true, 40},
                          {DType::kBFloat16, 4100, 16, 16, 128, true, true, 48},
                          {DType::kFloat16, 5000, 64, 16, 64, false, true},
                          {DType::kBFloat16, 4200, 32, 8, 64, true, true, 40}};
  for (const Shape& s : shapes) {
    SCOPED_TRACE(label(s));
    expect_merging_equals_split(s, 3);
  }
}

// The narrow kernel at D = 256 (64-key tiles; the default since session
// 46, set explicitly here so that the test holds under the A/B knob): its merging
// units against its split units, as above -- GQA 32/8 at S_q 1 (four rows),
// MHA (one row), and GQA 8/4 drafting at S_q 4 (eight packed rows, causal).
TEST(Decode, NarrowD256MergingUnitsMatchSplitUnitsBitwise) {
  DHP_REQUIRE_GPU();
  EnvSetting narrow256("DHP_SM90_NARROW256", "1");
  const Shape shapes[] = {{DType::kFloat16, 5000, 32, 8, 256, false, true},
                          {DType::kBFloat16, 4100, 16, 16, 256, false, false},
                          {DType::kFloat16, 4500, 8, 4, 256, true, true, 4}};
  for (const Shape& s : shapes) {
    SCOPED_TRACE(label(s));
    expect_merging_equals_split(s, 3);
  }
}

// The combine launched in stream order (DHP_SM90_COMBINE_PDL=0) against its
// PDL launch (=1; by default combine_with_pdl, decode.hpp, picks one), split
// units forced: the same kernel on the same partials, so o and lse must
// agree bit for bit, both fully written. The comparison can fail: a changed
// V element must change o.
void expect_combine_modes_agree(const Shape& s) {
  constexpr int64_t B = 3;
  const Batch in = random_batch(s, B, 1);
  LocalSetting split("0");
  Out pdl;
  {
    EnvSetting with_pdl("DHP_SM90_COMBINE_PDL", "1");
    pdl = decode(s, B, in.q.data(), in.k.data(), in.v.data(), in.lk);
  }
  Out ordered;
  {
    EnvSetting no_pdl("DHP_SM90_COMBINE_PDL", "0");
    ordered = decode(s, B, in.q.data(), in.k.data(), in.v.data(), in.lk);
  }
  const Comparison c = compare(pdl, ordered);
  EXPECT_EQ(c.unwritten, 0) << "seed " << in.seed;
  EXPECT_EQ(c.o_diff, 0) << "o: the combine in stream order against PDL (seed " << in.seed << ")";
  EXPECT_EQ(c.lse_diff, 0) << "lse: the combine in stream order against PDL (seed " << in.seed << ")";
  // Key 1 of sequence 1, whose length (0.7 S_k + 3, random_batch) keeps it.
  std::vector<uint16_t> v1 = in.v;
  const int64_t at = s.sk * s.hkv * s.d + s.hkv * s.d;
  v1[at] = to_bits(from_bits(v1[at], s.dt) + 8.0f, s.dt);
  const Out changed = decode(s, B, in.q.data(), in.k.data(), v1.data(), in.lk);
  EXPECT_GT(compare(changed, pdl).o_diff, 0) << "a changed V left o bitwise equal: the comparison cannot fail (seed " << in.seed << ")";
}

// D128 GQA with secret lengths, D64, and D256 causal (split units only).
TEST(Decode, CombineInStreamOrderMatchesPdlBitwise) {
  DHP_REQUIRE_GPU();
  for (const Shape& s : {Shape{DType::kFloat16, 5000, 32, 8, 128, false, true},
                         Shape{DType::kBFloat16, 4500, 16, 4, 64, false, false},
                         Shape{DType::kFloat16, 4200, 8, 2, 256, true, true}}) {
    SCOPED_TRACE(label(s));
    expect_combine_modes_agree(s);
  }
}
}  // namespace
}  // namespace dhp::testing
