// The forward pass captured in a CUDA graph: with secret key lengths the
// Hopper path allocates scratch memory (the zero-padded copy of V,
// src/kernels/sm90/padding_scrub.hpp) and runs two kernels per call (three
// operations with the copy beside the attention: the counters' reset, the
// copy, the attention -- taken here when the GPU scripts force it with
// DHP_SM90_V_COPY=beside, so that each replay must reset the counters);
// under stream capture that must become graph nodes, and a replay must give the
// same bits as a direct call, NaN padding included -- and read the inputs
// and lengths as they are at replay time (new ones between replays), and
// match the float64 reference.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "captured_graph.hpp"
#include "harness.hpp"
#include "require_gpu.hpp"
#include "reference/reference.hpp"

namespace dhp::testing {
namespace {

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

TEST(ForwardGraph, ReplayWithSecretLengthsMatchesDirectCallAndReference) {
  DHP_REQUIRE_GPU();
  const int64_t B = 4, S = 300, H = 4, D = 128;
  const int64_t n = B * S * H * D;
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  // Two input sets; the graph captured on the first replays on the second.
  struct Inputs {
    std::vector<int32_t> lens_q, lens_k;
    std::vector<uint16_t> q, k, v;
  } in[2];
  in[0].lens_k = {1, 217, 300, 0};
  in[0].lens_q = {300, 5, 160, 77};
  in[1].lens_k = {300, 0, 45, 299};
  in[1].lens_q = {1, 300, 300, 0};
  for (Inputs& x : in) {
    x.q.resize(n);
    x.k.resize(n);
    x.v.resize(n);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t b = i / (S * H * D), s = (i / (H * D)) % S;
      x.q[i] = to_bits(normal(rng), DType::kFloat16);
      x.k[i] = to_bits(normal(rng), DType::kFloat16);
      // NaN in V's padding: a kernel that let it reach P·V would put NaN in O.
      x.v[i] = s >= x.lens_k[b] ? 0x7e00 : to_bits(normal(rng), DType::kFloat16);
    }
  }
  void *dq, *dk, *dv, *o_direct, *o_graph;
  int32_t* lens;
  CUDA_OK(cudaMalloc(&dq, n * 2));
  CUDA_OK(cudaMalloc(&dk, n * 2));
  CUDA_OK(cudaMalloc(&dv, n * 2));
  CUDA_OK(cudaMalloc(&o_direct, n * 2));
  CUDA_OK(cudaMalloc(&o_graph, n * 2));
  CUDA_OK(cudaMalloc(&lens, 2 * B * sizeof(int32_t)));
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  auto upload = [&](const Inputs& x) {
    CUDA_OK(cudaMemcpy(dq, x.q.data(), n * 2, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(dk, x.k.data(), n * 2, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(dv, x.v.data(), n * 2, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(lens, x.lens_q.data(), B * sizeof(int32_t), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(lens + B, x.lens_k.data(), B * sizeof(int32_t), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(o_direct, 0xff, n * 2));  // poison: 0xffff is a NaN
    CUDA_OK(cudaMemset(o_graph, 0xff, n * 2));
  };
  Params p = make_params(DType::kFloat16, B, S, S, H, H, D, dq, dk, dv, o_direct);
  p.seqlens_q = lens;
  p.seqlens_k = lens + B;
  p.stream = stream;

  upload(in[0]);
  Params pg = p;
  pg.o = o_graph;
  const CapturedGraph graph(stream, [&] { return attention_forward(pg); });
  ASSERT_EQ(graph.error(), "");

  for (int set = 0; set < 2; ++set) {
    SCOPED_TRACE("input set " + std::to_string(set));
    if (set > 0) upload(in[set]);
    ASSERT_TRUE(attention_forward(p)) << "direct call";
    for (int replay = 0; replay < 3; ++replay) CUDA_OK(graph.launch(stream));
    CUDA_OK(cudaStreamSynchronize(stream));
    std::vector<uint16_t> a(n), g(n);
    CUDA_OK(cudaMemcpy(a.data(), o_direct, n * 2, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(g.data(), o_graph, n * 2, cudaMemcpyDeviceToHost));
    // The float64 reference of this set.
    const Inputs& x = in[set];
    ref::Problem rp;
    rp.batch = B; rp.seqlen_q = S; rp.seqlen_k = S; rp.heads_q = H; rp.heads_kv = H; rp.head_dim = D;
    rp.scale = default_softmax_scale(D);
    rp.lens_q = x.lens_q;
    rp.lens_k = x.lens_k;
    int64_t differ = 0, nan = 0;
    for (int64_t i = 0; i < n; ++i) differ += a[i] != g[i];
    const double err = reference_o_rel_l2(rp, x.q, x.k, x.v, a, DType::kFloat16, &nan);
    EXPECT_EQ(differ, 0) << "graph replay differs from the direct call";
    EXPECT_EQ(nan, 0) << "NaN padding (or the poison) reached the output";
    EXPECT_LE(err, o_tolerance(DType::kFloat16)) << "direct call against the reference";
  }

  cudaStreamDestroy(stream);
  for (void* ptr : {dq, dk, dv, o_direct, o_graph, static_cast<void*>(lens)}) cudaFree(ptr);
}

}  // namespace
}  // namespace dhp::testing
