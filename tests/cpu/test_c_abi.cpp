// Tests of the plain C ABI (src/api/c_api.cpp): struct initialisation, status
// codes identical to the C++ API, safe message truncation, and that forward
// validates before it touches a device.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "dhp/attention.h"
#include "dhp/attention.hpp"
#include "harness.hpp"
#include "reference/reference.hpp"

namespace {

const void* fake(uintptr_t addr) { return reinterpret_cast<const void*>(addr); }

dhp_attention_params valid_c_params() {
  dhp_attention_params p;
  // Bases 2^40 bytes apart: the output overlaps no input (validation checks).
  dhp_attention_params_init_bshd(&p, DHP_FLOAT16, 2, 64, 96, 8, 2, 128, fake(uintptr_t{1} << 40),
                                 fake(uintptr_t{2} << 40), fake(uintptr_t{3} << 40),
                                 reinterpret_cast<void*>(uintptr_t{4} << 40));
  return p;
}

// A few params, each broken in a different way (plus one valid), to compare
// the two front ends on.
std::vector<dhp_attention_params> assorted_params() {
  std::vector<dhp_attention_params> v(7, valid_c_params());
  const int bad_dtype = 5;  // written as a C caller would; a C++ cast would be UB
  std::memcpy(&v[1].dtype, &bad_dtype, sizeof(bad_dtype));
  v[2].q = nullptr;
  v[3].head_dim = 96;
  v[4].has_softmax_scale = 1, v[4].softmax_scale = std::numeric_limits<float>::quiet_NaN();
  v[5].seqlens = reinterpret_cast<const int32_t*>(0x60000);  // S_q != S_k
  v[6].k_stride_seq = 12;
  return v;
}

TEST(CAbi, InitBshdFillsContiguousStrides) {
  dhp_attention_params p;
  std::memset(&p, 0xAB, sizeof(p));  // garbage that init must overwrite
  dhp_attention_params_init_bshd(&p, DHP_BFLOAT16, 3, 5, 7, 6, 2, 64, fake(0x100), fake(0x200),
                                 fake(0x300), reinterpret_cast<void*>(0x400));
  EXPECT_EQ(p.dtype, DHP_BFLOAT16);
  EXPECT_EQ(p.batch, 3);
  EXPECT_EQ(p.seqlen_q, 5);
  EXPECT_EQ(p.seqlen_k, 7);
  EXPECT_EQ(p.heads_q, 6);
  EXPECT_EQ(p.heads_kv, 2);
  EXPECT_EQ(p.head_dim, 64);
  EXPECT_EQ(p.q, fake(0x100));
  EXPECT_EQ(p.k, fake(0x200));
  EXPECT_EQ(p.v, fake(0x300));
  EXPECT_EQ(p.o, reinterpret_cast<void*>(0x400));
  // q/o: [B, 5, 6, 64]; k/v: [B, 7, 2, 64].
  for (const int64_t* s : {&p.q_stride_batch, &p.o_stride_batch}) EXPECT_EQ(*s, 5 * 6 * 64);
  for (const int64_t* s : {&p.q_stride_seq, &p.o_stride_seq}) EXPECT_EQ(*s, 6 * 64);
  for (const int64_t* s : {&p.q_stride_head, &p.o_stride_head}) EXPECT_EQ(*s, 64);
  for (const int64_t* s : {&p.k_stride_batch, &p.v_stride_batch}) EXPECT_EQ(*s, 7 * 2 * 64);
  for (const int64_t* s : {&p.k_stride_seq, &p.v_stride_seq}) EXPECT_EQ(*s, 2 * 64);
  for (const int64_t* s : {&p.k_stride_head, &p.v_stride_head}) EXPECT_EQ(*s, 64);
  // Documented defaults: no lse, default scale, non-causal, no lengths, default stream.
  EXPECT_EQ(p.lse, nullptr);
  EXPECT_EQ(p.has_softmax_scale, 0);
  EXPECT_EQ(p.causal, 0);
  EXPECT_EQ(p.seqlens, nullptr);
  EXPECT_EQ(p.seqlens_q, nullptr);
  EXPECT_EQ(p.seqlens_k, nullptr);
  EXPECT_EQ(p.stream, nullptr);
  // Same strides as the C++ helper.
  const dhp::Strides s = dhp::bshd_strides(5, 6, 64);
  EXPECT_EQ(p.q_stride_batch, s.batch);
  EXPECT_EQ(p.q_stride_seq, s.seq);
  EXPECT_EQ(p.q_stride_head, s.head);
  dhp_attention_params_init_bshd(nullptr, DHP_FLOAT16, 1, 1, 1, 1, 1, 64, nullptr, nullptr, nullptr,
                                 nullptr);  // must not crash
}

// Sizes whose stride products overflow int64 (signed overflow is undefined
// behaviour): init saturates them, and validation rejects the size that
// caused it by name (every size is checked before any stride).
TEST(CAbi, InitSaturatesOverflowingStridesAndValidationNamesTheSize) {
  dhp_attention_params p;
  const int64_t big = int64_t{1} << 40;
  dhp_attention_params_init_bshd(&p, DHP_FLOAT16, 1, big, 64, int64_t{1} << 20, 1, 1 << 10, fake(0x100),
                                 fake(0x200), fake(0x300), reinterpret_cast<void*>(0x400));
  EXPECT_EQ(p.q_stride_batch, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(p.o_stride_batch, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(p.q_stride_seq, int64_t{1} << 30);  // 2^20 * 2^10 fits
  char buf[256];
  EXPECT_EQ(dhp_attention_validate(&p, buf, sizeof(buf)), DHP_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(buf).find("seqlen_q"), std::string::npos) << buf;
  // The C++ helpers saturate the same way.
  EXPECT_EQ(dhp::bshd_strides(big, big, 256).batch, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(dhp::bhsd_strides(big, big, 256).batch, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(dhp::bhsd_strides(big, 2, 256).head, big * 256);
}

TEST(CAbi, ValidateMatchesCppApi) {
  const auto all = assorted_params();
  std::set<dhp_status> seen;
  for (size_t n = 0; n < all.size(); ++n) {
    const dhp::Status cpp = dhp::validate(all[n]);
    char buf[512];
    std::memset(buf, 'X', sizeof(buf));
    const dhp_status c = dhp_attention_validate(&all[n], buf, sizeof(buf));
    EXPECT_EQ(c, cpp.code) << "case " << n;
    EXPECT_EQ(std::string(buf), cpp.message) << "case " << n;  // NUL-terminated, same text
    seen.insert(c);
  }
  // The set above really mixes outcomes (guards against every case being OK).
  EXPECT_EQ(seen, (std::set<dhp_status>{DHP_OK, DHP_ERROR_INVALID_ARGUMENT, DHP_ERROR_UNSUPPORTED}));
}

TEST(CAbi, SuccessWritesEmptyMessage) {
  const auto p = valid_c_params();
  char buf[16];
  std::memset(buf, 'X', sizeof(buf));
  EXPECT_EQ(dhp_attention_validate(&p, buf, sizeof(buf)), DHP_OK);
  EXPECT_EQ(buf[0], '\0');
}

TEST(CAbi, MessageTruncationIsSafe) {
  auto p = valid_c_params();
  p.q = nullptr;
  const std::string full = dhp::validate(p).message;
  ASSERT_GT(full.size(), 8u);

  char buf[32];
  for (size_t size : {size_t{1}, size_t{8}}) {
    std::memset(buf, 'X', sizeof(buf));
    EXPECT_EQ(dhp_attention_validate(&p, buf, size), DHP_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(std::string(buf), full.substr(0, size - 1)) << "size " << size;
    for (size_t x = size; x < sizeof(buf); ++x) ASSERT_EQ(buf[x], 'X') << "wrote past size " << size;
  }
  // size 0: nothing may be written at all.
  std::memset(buf, 'X', sizeof(buf));
  EXPECT_EQ(dhp_attention_validate(&p, buf, 0), DHP_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(buf[0], 'X');
  // No buffer: the code alone still comes back.
  EXPECT_EQ(dhp_attention_validate(&p, nullptr, 64), DHP_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(dhp_attention_forward(&p, nullptr, 64), DHP_ERROR_INVALID_ARGUMENT);
}

TEST(CAbi, NullParams) {
  char buf[128] = {};
  EXPECT_EQ(dhp_attention_validate(nullptr, buf, sizeof(buf)), DHP_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(buf).find("params"), std::string::npos) << buf;
  std::memset(buf, 0, sizeof(buf));
  EXPECT_EQ(dhp_attention_forward(nullptr, buf, sizeof(buf)), DHP_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(buf).find("params"), std::string::npos) << buf;
  EXPECT_EQ(dhp_attention_validate(nullptr, nullptr, 0), DHP_ERROR_INVALID_ARGUMENT);
}

TEST(CAbi, StatusStrings) {
  const dhp_status codes[] = {DHP_OK, DHP_ERROR_INVALID_ARGUMENT, DHP_ERROR_UNSUPPORTED,
                              DHP_ERROR_NO_DEVICE, DHP_ERROR_CUDA, DHP_ERROR_INTERNAL};
  std::set<std::string> texts;
  for (dhp_status c : codes) {
    const char* s = dhp_status_string(c);
    ASSERT_NE(s, nullptr) << c;
    EXPECT_GT(std::strlen(s), 0u) << c;
    texts.insert(s);
  }
  EXPECT_EQ(texts.size(), 6u) << "each code needs its own description";
  EXPECT_STREQ(dhp_status_string(DHP_OK), "ok");
  // 7 is unknown yet inside dhp_status's value range (0..7), so the cast is defined.
  const char* unknown = dhp_status_string(static_cast<dhp_status>(7));
  ASSERT_NE(unknown, nullptr);
  EXPECT_EQ(texts.count(unknown), 0u) << "an unknown code must not pass for a known one";
}

// Forward validates first: an invalid argument comes back exactly as from
// validate (never DHP_ERROR_NO_DEVICE / DHP_ERROR_CUDA), and since the fake
// pointers would fault if used, nothing was launched.
TEST(CAbi, ForwardRejectsInvalidBeforeLaunch) {
  const auto all = assorted_params();
  for (size_t n = 1; n < all.size(); ++n) {  // [0] is the valid one
    char vbuf[512], fbuf[512];
    const dhp_status v = dhp_attention_validate(&all[n], vbuf, sizeof(vbuf));
    const dhp_status f = dhp_attention_forward(&all[n], fbuf, sizeof(fbuf));
    ASSERT_NE(v, DHP_OK) << "case " << n;
    EXPECT_EQ(f, v) << "case " << n;
    EXPECT_STREQ(fbuf, vbuf) << "case " << n;
    const dhp::Status cpp = dhp::attention_forward(all[n]);
    EXPECT_EQ(cpp.code, v) << "case " << n;
  }
  // With a device, a launch on the fake pointers would have faulted: the
  // context must still be clean.
  int count = 0;
  if (cudaGetDeviceCount(&count) == cudaSuccess && count > 0) {
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  } else {
    (void)cudaGetLastError();
  }
}

// Valid parameters through the C ABI: without a device the call reports
// DHP_ERROR_NO_DEVICE; with one it runs on fresh random inputs, returns
// DHP_OK with an empty message, writes every element of the poisoned output
// and matches the float64 reference. Either way the test asserts.
TEST(CAbi, ForwardWithValidParams) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  char buf[256];
  std::memset(buf, 'X', sizeof(buf));
  if (err != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    const auto p = valid_c_params();
    EXPECT_EQ(dhp_attention_forward(&p, buf, sizeof(buf)), DHP_ERROR_NO_DEVICE);
    EXPECT_NE(std::string(buf).find("no CUDA device"), std::string::npos) << buf;
    const dhp::Status s = dhp::attention_forward(p);
    EXPECT_EQ(s.code, DHP_ERROR_NO_DEVICE);
    EXPECT_NE(s.message.find("no CUDA device"), std::string::npos) << s.message;
    return;
  }
  int major = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
  if (major < 8) GTEST_SKIP() << "skipped: no CUDA device of compute capability >= 8.0";
  const int64_t B = 1, S = 70, H = 2, D = 64, n = B * S * H * D;
  const uint64_t seed = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<std::vector<uint16_t>> host(3, std::vector<uint16_t>(static_cast<size_t>(n)));
  std::vector<std::vector<double>> wide(3, std::vector<double>(static_cast<size_t>(n)));
  for (int t = 0; t < 3; ++t)
    for (int64_t i = 0; i < n; ++i) {
      host[t][i] = dhp::testing::to_bits(normal(rng), dhp::DType::kFloat16);
      wide[t][i] = dhp::testing::from_bits(host[t][i], dhp::DType::kFloat16);
    }
  void* buffers[4] = {};
  for (int t = 0; t < 4; ++t) {
    ASSERT_EQ(cudaMalloc(&buffers[t], n * 2), cudaSuccess);
    if (t < 3) ASSERT_EQ(cudaMemcpy(buffers[t], host[t].data(), n * 2, cudaMemcpyHostToDevice), cudaSuccess);
  }
  ASSERT_EQ(cudaMemset(buffers[3], 0xFF, n * 2), cudaSuccess);  // poison: a NaN no kernel writes
  dhp_attention_params p;
  dhp_attention_params_init_bshd(&p, DHP_FLOAT16, B, S, S, H, H, D, buffers[0], buffers[1],
                                 buffers[2], buffers[3]);
  p.causal = 1;
  EXPECT_EQ(dhp_attention_forward(&p, buf, sizeof(buf)), DHP_OK) << buf;
  EXPECT_STREQ(buf, "");
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<uint16_t> out(static_cast<size_t>(n));
  ASSERT_EQ(cudaMemcpy(out.data(), buffers[3], n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  for (void* b : buffers) cudaFree(b);
  dhp::ref::Problem rp;
  rp.seqlen_q = rp.seqlen_k = S;
  rp.heads_q = rp.heads_kv = H;
  rp.head_dim = D;
  rp.scale = dhp::default_softmax_scale(D);
  rp.causal = true;
  std::vector<double> ref_o(static_cast<size_t>(n)), ref_lse(static_cast<size_t>(H * S));
  dhp::ref::attention(rp, wide[0].data(), wide[1].data(), wide[2].data(), ref_o.data(), ref_lse.data());
  double diff2 = 0, ref2 = 0;
  int64_t unwritten = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (out[i] == 0xFFFF) { ++unwritten; continue; }
    const double o = dhp::testing::from_bits(out[i], dhp::DType::kFloat16);
    diff2 += (o - ref_o[i]) * (o - ref_o[i]);
    ref2 += ref_o[i] * ref_o[i];
  }
  EXPECT_EQ(unwritten, 0) << "seed " << seed;
  EXPECT_LE(std::sqrt(diff2 / ref2), dhp::testing::o_tolerance(dhp::DType::kFloat16)) << "seed " << seed;  // NaN fails
}

}  // namespace
