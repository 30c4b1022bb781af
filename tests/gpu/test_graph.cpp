// The forward pass captured in a CUDA graph: with secret key lengths the
// Hopper path allocates scratch memory (the zero-padded copy of V,
// src/kernels/sm90/padding_scrub.hpp) and runs two kernels per call; under
// stream capture that must become graph nodes, and a replay must give the
// same bits as a direct call, NaN padding included.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "harness.hpp"

namespace dhp::testing {
namespace {

TEST(ForwardGraph, ReplayWithSecretLengthsMatchesDirectCall) {
  if (!cuda_device_available()) GTEST_SKIP() << "skipped: no CUDA device";
  const int64_t B = 3, S = 300, H = 4, D = 128;
  const int64_t n = B * S * H * D;
  std::mt19937_64 rng(std::random_device{}());
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const std::vector<int32_t> lens_k = {1, 217, 300}, lens_q = {300, 5, 160};
  std::vector<uint16_t> q(n), k(n), v(n);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t b = i / (S * H * D), s = (i / (H * D)) % S;
    q[i] = to_bits(normal(rng), DType::kFloat16);
    k[i] = to_bits(normal(rng), DType::kFloat16);
    // NaN in V's padding: a kernel that let it reach P·V would put NaN in O.
    v[i] = s >= lens_k[b] ? 0x7e00 : to_bits(normal(rng), DType::kFloat16);
  }
  void *dq, *dk, *dv, *o_direct, *o_graph;
  int32_t* lens;
  ASSERT_EQ(cudaMalloc(&dq, n * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dk, n * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dv, n * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&o_direct, n * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&o_graph, n * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&lens, 2 * B * sizeof(int32_t)), cudaSuccess);
  cudaMemcpy(dq, q.data(), n * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(dk, k.data(), n * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(dv, v.data(), n * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(lens, lens_q.data(), B * sizeof(int32_t), cudaMemcpyHostToDevice);
  cudaMemcpy(lens + B, lens_k.data(), B * sizeof(int32_t), cudaMemcpyHostToDevice);
  cudaMemset(o_direct, 0xff, n * 2);  // poison: 0xffff is a NaN
  cudaMemset(o_graph, 0xff, n * 2);

  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  Params p = make_params(DType::kFloat16, B, S, S, H, H, D, dq, dk, dv, o_direct);
  p.seqlens_q = lens;
  p.seqlens_k = lens + B;
  p.stream = stream;
  ASSERT_TRUE(attention_forward(p)) << "direct call";

  p.o = o_graph;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  const Status captured = attention_forward(p);
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  ASSERT_TRUE(captured) << captured.message;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int replay = 0; replay < 3; ++replay) ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);

  std::vector<uint16_t> a(n), g(n);
  cudaMemcpy(a.data(), o_direct, n * 2, cudaMemcpyDeviceToHost);
  cudaMemcpy(g.data(), o_graph, n * 2, cudaMemcpyDeviceToHost);
  int64_t differ = 0, nan = 0;
  for (int64_t i = 0; i < n; ++i) {
    differ += a[i] != g[i];
    nan += std::isnan(from_bits(a[i], DType::kFloat16)) ? 1 : 0;
  }
  EXPECT_EQ(differ, 0) << "graph replay differs from the direct call";
  EXPECT_EQ(nan, 0) << "NaN padding (or the poison) reached the output";

  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  for (void* ptr : {dq, dk, dv, o_direct, o_graph, static_cast<void*>(lens)}) cudaFree(ptr);
}

}  // namespace
}  // namespace dhp::testing
