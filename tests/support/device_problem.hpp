// For the GPU tests (test_deadline.cpp, test_call_state.cpp): one attention
// problem on the device -- fp16 BSHD, fresh random Q/K/V from a seed, random
// secret key lengths with 0 and S_k among them, checked against the float64
// reference -- and a zeroed deadline state.
#pragma once
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <random>
#include <vector>

#include "harness.hpp"
#include "reference/reference.hpp"

namespace dhp::testing {

// One problem on the device: fresh random Q/K/V, random secret key lengths
// (0 and S_k among them), outputs poisoned before every call.
struct Problem {
  int64_t B, Sq, Sk, Hq, Hkv, D;
  bool causal;
  std::vector<uint16_t> q, k, v;
  std::vector<int32_t> lens_k;
  void *dq = nullptr, *dk = nullptr, *dv = nullptr, *o = nullptr;
  int32_t* dlens = nullptr;
  int64_t nq() const { return B * Sq * Hq * D; }
  int64_t nk() const { return B * Sk * Hkv * D; }
};

inline void make_problem(Problem& p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  p.q.resize(p.nq());
  p.k.resize(p.nk());
  p.v.resize(p.nk());
  for (auto& x : p.q) x = to_bits(normal(rng), DType::kFloat16);
  for (auto& x : p.k) x = to_bits(normal(rng), DType::kFloat16);
  for (auto& x : p.v) x = to_bits(normal(rng), DType::kFloat16);
  p.lens_k.resize(p.B);
  std::uniform_int_distribution<int32_t> len(0, static_cast<int32_t>(p.Sk));
  for (auto& l : p.lens_k) l = len(rng);
  p.lens_k[0] = 0;
  if (p.B > 1) p.lens_k[1] = static_cast<int32_t>(p.Sk);
  ASSERT_EQ(cudaMalloc(&p.dq, p.nq() * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&p.dk, p.nk() * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&p.dv, p.nk() * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&p.o, p.nq() * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&p.dlens, p.B * sizeof(int32_t)), cudaSuccess);
  ASSERT_EQ(cudaSuccess, cudaMemcpy(p.dq, p.q.data(), p.nq() * 2, cudaMemcpyHostToDevice));
  ASSERT_EQ(cudaSuccess, cudaMemcpy(p.dk, p.k.data(), p.nk() * 2, cudaMemcpyHostToDevice));
  ASSERT_EQ(cudaSuccess, cudaMemcpy(p.dv, p.v.data(), p.nk() * 2, cudaMemcpyHostToDevice));
  ASSERT_EQ(cudaSuccess, cudaMemcpy(p.dlens, p.lens_k.data(), p.B * sizeof(int32_t), cudaMemcpyHostToDevice));
}

inline void free_problem(Problem& p) {
  for (void* ptr : {p.dq, p.dk, p.dv, p.o, static_cast<void*>(p.dlens)}) cudaFree(ptr);
}

inline Params params_of(const Problem& p, cudaStream_t stream) {
  Params a = make_params(DType::kFloat16, p.B, p.Sq, p.Sk, p.Hq, p.Hkv, p.D, p.dq, p.dk, p.dv, p.o);
  a.causal = p.causal ? 1 : 0;
  a.seqlens_k = p.dlens;
  a.stream = stream;
  return a;
}

// Relative L2 error of o against the float64 reference of p; NaNs counted apart.
inline double reference_error(const Problem& p, const std::vector<uint16_t>& o, int64_t* nan) {
  ref::Problem rp;
  rp.batch = p.B; rp.seqlen_q = p.Sq; rp.seqlen_k = p.Sk; rp.heads_q = p.Hq; rp.heads_kv = p.Hkv; rp.head_dim = p.D;
  rp.causal = p.causal;
  rp.scale = default_softmax_scale(p.D);
  rp.lens_k = p.lens_k;
  return reference_o_rel_l2(rp, p.q, p.k, p.v, o, DType::kFloat16, nan);
}

// The call's output (p.o) against the float64 reference, with no NaN (nor
// the poison) left in it.
inline void expect_output_matches_reference(const Problem& p) {
  std::vector<uint16_t> o(p.nq());
  ASSERT_EQ(cudaSuccess, cudaMemcpy(o.data(), p.o, p.nq() * 2, cudaMemcpyDeviceToHost));
  int64_t nan = 0;
  EXPECT_LE(reference_error(p, o, &nan), o_tolerance(DType::kFloat16));
  EXPECT_EQ(nan, 0) << "NaN (or the poison) in the output";
}

// A zeroed deadline state in device memory, or nullptr.
inline dhp_deadline_state* new_state() {
  dhp_deadline_state* state = nullptr;
  if (cudaMalloc(&state, sizeof(dhp_deadline_state)) != cudaSuccess) return nullptr;
  if (cudaMemset(state, 0, sizeof(dhp_deadline_state)) != cudaSuccess) {
    cudaFree(state);
    return nullptr;
  }
  return state;
}

}  // namespace dhp::testing
