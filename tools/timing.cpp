#include "timing.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <random>
#include <vector>

namespace dhp::tools {

double attention_flops(const testing::Case& c) {
  const double f = 4.0 * c.batch * c.heads_q * c.seqlen_q * c.seqlen_k * c.head_dim;
  return c.causal ? f / 2 : f;
}

Timing time_case(const testing::Case& c, int warmup, int iters, int graph_launches) {
  Timing t;
  const int64_t nq = c.batch * c.seqlen_q * c.heads_q * c.head_dim;
  const int64_t nk = c.batch * c.seqlen_k * c.heads_kv * c.head_dim;
  // Random 16-bit inputs (normal distribution). Drawing ~10^8 samples per
  // case made the benchmark host-bound, so one pool per dtype is drawn per
  // process (fresh each run) and every tensor copies a slice at a random offset.
  static std::vector<uint16_t> pools[2];
  std::mt19937_64 rng(std::random_device{}());
  std::vector<uint16_t>& pool = pools[c.dtype == DType::kFloat16 ? 0 : 1];
  const size_t need = static_cast<size_t>(2 * std::max(nq, nk));
  if (pool.size() < need) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    pool.resize(need);
    for (auto& x : pool) x = testing::to_bits(normal(rng), c.dtype);
  }
  void *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
  float* lse = nullptr;
  int32_t* lens = nullptr;
  auto fail = [&](const char* what, cudaError_t e) {
    t.error = std::string(what) + ": " + cudaGetErrorString(e);
  };
  cudaError_t e;
  if ((e = cudaMalloc(&q, nq * 2)) || (e = cudaMalloc(&k, nk * 2)) || (e = cudaMalloc(&v, nk * 2)) ||
      (e = cudaMalloc(&o, nq * 2)) || (e = cudaMalloc(&lse, c.batch * c.heads_q * c.seqlen_q * 4))) {
    fail("cudaMalloc", e);
  } else {
    for (void* dst : {q, k, v}) {
      const int64_t n = dst == q ? nq : nk;
      const size_t offset = std::uniform_int_distribution<size_t>(0, pool.size() - n)(rng);
      cudaMemcpy(dst, pool.data() + offset, n * 2, cudaMemcpyHostToDevice);
    }
    Params p = make_params(c.dtype, c.batch, c.seqlen_q, c.seqlen_k, c.heads_q, c.heads_kv,
                           c.head_dim, q, k, v, o);
    p.causal = c.causal;
    p.lse = lse;
    if (c.lengths != testing::Lengths::kNone) {
      // Secret lengths, uniform in [1, S] per sequence (the work stays S_max).
      std::vector<int32_t> lq(c.batch), lk(c.batch);
      for (int64_t b = 0; b < c.batch; ++b) {
        lq[b] = std::uniform_int_distribution<int32_t>(1, static_cast<int32_t>(c.seqlen_q))(rng);
        lk[b] = c.lengths == testing::Lengths::kShared
                    ? lq[b]
                    : std::uniform_int_distribution<int32_t>(1, static_cast<int32_t>(c.seqlen_k))(rng);
      }
      if ((e = cudaMalloc(&lens, 2 * c.batch * sizeof(int32_t))) != cudaSuccess) {
        fail("cudaMalloc", e);
      } else {
        cudaMemcpy(lens, lq.data(), c.batch * sizeof(int32_t), cudaMemcpyHostToDevice);
        cudaMemcpy(lens + c.batch, lk.data(), c.batch * sizeof(int32_t), cudaMemcpyHostToDevice);
        if (c.lengths == testing::Lengths::kShared) p.seqlens = lens;
        else p.seqlens_q = lens, p.seqlens_k = lens + c.batch;
      }
    }
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    std::vector<float> ms;
    cudaStream_t stream = nullptr;
    cudaGraphExec_t graph = nullptr;
    if (graph_launches > 0 && t.error.empty()) {
      // graph_launches calls captured into one CUDA graph; a sample is one
      // replay divided by graph_launches (launch overhead as a serving loop sees it).
      cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
      p.stream = stream;
      cudaGraph_t g = nullptr;
      cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
      for (int i = 0; i < graph_launches; ++i) {
        const Status s = attention_forward(p);
        if (!s) { t.error = s.message; break; }
      }
      if ((e = cudaStreamEndCapture(stream, &g)) != cudaSuccess) fail("graph capture", e);
      else if ((e = cudaGraphInstantiate(&graph, g, 0)) != cudaSuccess) fail("graph instantiate", e);
      if (g) cudaGraphDestroy(g);
    }
    for (int i = 0; i < warmup + iters && t.error.empty(); ++i) {
      cudaEventRecord(start, stream);
      if (graph != nullptr) {
        if ((e = cudaGraphLaunch(graph, stream)) != cudaSuccess) { fail("graph launch", e); break; }
      } else if (const Status s = attention_forward(p); !s) {
        t.error = s.message;
        break;
      }
      cudaEventRecord(stop, stream);
      if ((e = cudaEventSynchronize(stop)) != cudaSuccess) { fail("kernel", e); break; }
      float elapsed = 0;
      cudaEventElapsedTime(&elapsed, start, stop);
      if (i >= warmup) ms.push_back(graph != nullptr ? elapsed / graph_launches : elapsed);
    }
    if (graph) cudaGraphExecDestroy(graph);
    if (stream) cudaStreamDestroy(stream);
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    if (t.error.empty() && !ms.empty()) {
      std::sort(ms.begin(), ms.end());
      t.median_ms = ms[ms.size() / 2];
      t.min_ms = ms.front();
      t.max_ms = ms.back();
      t.tflops = attention_flops(c) / (t.median_ms * 1e-3) / 1e12;
    }
  }
  cudaFree(q); cudaFree(k); cudaFree(v); cudaFree(o); cudaFree(lse); cudaFree(lens);
  return t;
}

}  // namespace dhp::tools
