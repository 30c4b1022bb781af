#include "harness.hpp"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <thread>

#include "reference/reference.hpp"

namespace dhp::testing {
namespace {

constexpr uint16_t kPoison16 = 0xFFFF;      // a NaN no kernel writes (they write 0x7FFF/0x7FC0)
constexpr uint32_t kPoison32 = 0xFFFFFFFFu;  // likewise for lse

#define HARNESS_CUDA(call)                                                              \
  do {                                                                                  \
    cudaError_t err_ = (call);                                                          \
    if (err_ != cudaSuccess) {                                                          \
      e.status = std::string(#call) + ": " + cudaGetErrorString(err_);                  \
      return e;                                                                         \
    }                                                                                   \
  } while (0)

// Device buffer freed on scope exit.
struct DeviceBuffer {
  void* ptr = nullptr;
  ~DeviceBuffer() { if (ptr) cudaFree(ptr); }
};

std::vector<int32_t> make_lengths(int64_t B, int64_t S, int shift, std::mt19937_64& rng) {
  std::vector<int32_t> lens(static_cast<size_t>(B));
  std::uniform_int_distribution<int64_t> any(1, S);
  for (int64_t b = 0; b < B; ++b) {
    switch ((b + shift) % 4) {
      case 0: lens[b] = static_cast<int32_t>(S); break;      // S_max
      case 1: lens[b] = static_cast<int32_t>(any(rng)); break;  // random
      case 2: lens[b] = 1; break;
      default: lens[b] = 0; break;
    }
  }
  return lens;
}

int64_t offset(Layout l, int64_t S, int64_t H, int64_t D, int64_t b, int64_t s, int64_t h) {
  return l == Layout::kBSHD ? ((b * S + s) * H + h) * D : ((b * H + h) * S + s) * D;
}

}  // namespace

uint16_t to_bits(float x, DType d) {
  if (d == DType::kFloat16) {
    const __half h = __float2half_rn(x);
    uint16_t b;
    std::memcpy(&b, &h, 2);
    return b;
  }
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if (std::isnan(x)) return 0x7FC0;
  u += 0x7FFF + ((u >> 16) & 1);  // round to nearest even
  return static_cast<uint16_t>(u >> 16);
}

float from_bits(uint16_t b, DType d) {
  if (d == DType::kFloat16) {
    __half h;
    std::memcpy(&h, &b, 2);
    return __half2float(h);
  }
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

bool cuda_device_available() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    (void)cudaGetLastError();
    return false;
  }
  int major = 0;
  return cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) == cudaSuccess &&
         major >= 8;
}

std::string device_description() {
  if (!cuda_device_available()) return "none";
  cudaDeviceProp prop{};
  int dev = 0, driver = 0;
  cudaGetDevice(&dev);
  cudaGetDeviceProperties(&prop, dev);
  cudaDriverGetVersion(&driver);
  std::ostringstream os;
  os << prop.name << ", cc " << prop.major << "." << prop.minor << ", " << prop.multiProcessorCount
     << " SMs, CUDA driver " << driver / 1000 << "." << (driver % 1000) / 10;
  return os.str();
}

std::string Case::name() const {
  static const char* kLens[] = {"none", "shared", "separate", "only_q", "only_k"};
  std::ostringstream os;
  os << (dtype == DType::kFloat16 ? "fp16" : "bf16") << " B" << batch << " Sq" << seqlen_q << " Sk"
     << seqlen_k << " Hq" << heads_q << " Hkv" << heads_kv << " D" << head_dim
     << (causal ? " causal" : "") << " lens=" << kLens[static_cast<int>(lengths)]
     << (layout == Layout::kBHSD ? " bhsd" : " bshd") << (poison_padding ? " nan-padding" : "")
     << (nan_query_row >= 0 ? " nan-row" : "");
  return os.str();
}

std::string Errors::describe() const {
  std::ostringstream os;
  os << "seed=" << seed << " o_rel_l2=" << o_rel_l2 << " lse_max_rel=" << lse_max_rel
     << " nan_mismatch=" << nan_mismatch << " inf_mismatch=" << inf_mismatch
     << " unwritten=" << unwritten;
  if (!status.empty()) os << " status=\"" << status << "\"";
  return os.str();
}

double o_tolerance(DType d) { return d == DType::kFloat16 ? 2e-3 : 1e-2; }

bool passes(const Errors& e, DType d) {
  return e.status.empty() && e.unwritten == 0 && e.nan_mismatch == 0 && e.inf_mismatch == 0 &&
         e.o_rel_l2 <= o_tolerance(d) && e.lse_max_rel <= kLseTolerance &&
         !std::isnan(e.o_rel_l2) && !std::isnan(e.lse_max_rel);
}

Errors run_case(const Case& c, uint64_t seed, bool wrong_reference) {
  Errors e;
  e.seed = seed != 0 ? seed : (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  std::mt19937_64 rng(e.seed);
  const int64_t B = c.batch, Sq = c.seqlen_q, Sk = c.seqlen_k, Hq = c.heads_q, Hkv = c.heads_kv,
                D = c.head_dim;

  // Lengths (secret inputs).
  std::vector<int32_t> lens_q, lens_k;
  const bool want_q = c.lengths == Lengths::kShared || c.lengths == Lengths::kSeparate || c.lengths == Lengths::kOnlyQ;
  const bool want_k = c.lengths == Lengths::kShared || c.lengths == Lengths::kSeparate || c.lengths == Lengths::kOnlyK;
  if (want_q) lens_q = !c.lens_q.empty() ? c.lens_q : make_lengths(B, Sq, 0, rng);
  if (want_k) lens_k = c.lengths == Lengths::kShared ? lens_q
                       : (!c.lens_k.empty() ? c.lens_k : make_lengths(B, Sk, 1, rng));

  // Random inputs, rounded to 16 bits; logical BSHD order.
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto fill = [&](std::vector<uint16_t>& x, int64_t S, int64_t H, const std::vector<int32_t>& lens) {
    x.resize(static_cast<size_t>(B * S * H * D));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t s = 0; s < S; ++s) {
        const bool pad = c.poison_padding && !lens.empty() && s >= ref::clamp_length(lens[b], S);
        for (int64_t i = 0; i < H * D; ++i)
          x[((b * S + s) * H) * D + i] =
              to_bits(pad ? std::numeric_limits<float>::quiet_NaN() : normal(rng), c.dtype);
      }
  };
  std::vector<uint16_t> q, k, v;
  fill(q, Sq, Hq, lens_q);
  fill(k, Sk, Hkv, lens_k);
  fill(v, Sk, Hkv, lens_k);
  if (c.nan_query_row >= 0) q[(c.nan_query_row * Hq) * D] = to_bits(std::numeric_limits<float>::quiet_NaN(), c.dtype);

  // Device copies in the requested layout.
  auto to_layout = [&](const std::vector<uint16_t>& x, int64_t S, int64_t H) {
    std::vector<uint16_t> y(x.size());
    for (int64_t b = 0; b < B; ++b)
      for (int64_t s = 0; s < S; ++s)
        for (int64_t h = 0; h < H; ++h)
          std::memcpy(&y[offset(c.layout, S, H, D, b, s, h)], &x[((b * S + s) * H + h) * D], D * 2);
    return y;
  };
  DeviceBuffer dq, dk, dv, dout, dlse, dlq, dlk;
  const size_t nq = q.size(), nk = k.size();
  HARNESS_CUDA(cudaMalloc(&dq.ptr, nq * 2));
  HARNESS_CUDA(cudaMalloc(&dk.ptr, nk * 2));
  HARNESS_CUDA(cudaMalloc(&dv.ptr, nk * 2));
  HARNESS_CUDA(cudaMalloc(&dout.ptr, nq * 2));
  HARNESS_CUDA(cudaMalloc(&dlse.ptr, B * Hq * Sq * 4));
  HARNESS_CUDA(cudaMemcpy(dq.ptr, to_layout(q, Sq, Hq).data(), nq * 2, cudaMemcpyHostToDevice));
  HARNESS_CUDA(cudaMemcpy(dk.ptr, to_layout(k, Sk, Hkv).data(), nk * 2, cudaMemcpyHostToDevice));
  HARNESS_CUDA(cudaMemcpy(dv.ptr, to_layout(v, Sk, Hkv).data(), nk * 2, cudaMemcpyHostToDevice));
  HARNESS_CUDA(cudaMemset(dout.ptr, 0xFF, nq * 2));           // poison: kPoison16
  HARNESS_CUDA(cudaMemset(dlse.ptr, 0xFF, B * Hq * Sq * 4));  // poison: kPoison32
  if (want_q) {
    HARNESS_CUDA(cudaMalloc(&dlq.ptr, B * 4));
    HARNESS_CUDA(cudaMemcpy(dlq.ptr, lens_q.data(), B * 4, cudaMemcpyHostToDevice));
  }
  if (want_k && c.lengths != Lengths::kShared) {
    HARNESS_CUDA(cudaMalloc(&dlk.ptr, B * 4));
    HARNESS_CUDA(cudaMemcpy(dlk.ptr, lens_k.data(), B * 4, cudaMemcpyHostToDevice));
  }

  Params p = make_params(c.dtype, B, Sq, Sk, Hq, Hkv, D, dq.ptr, dk.ptr, dv.ptr, dout.ptr);
  auto strides = c.layout == Layout::kBSHD ? bshd_strides : bhsd_strides;
  set_q_strides(p, strides(Sq, Hq, D));
  set_o_strides(p, strides(Sq, Hq, D));
  set_k_strides(p, strides(Sk, Hkv, D));
  set_v_strides(p, strides(Sk, Hkv, D));
  p.causal = c.causal;
  p.lse = c.with_lse ? static_cast<float*>(dlse.ptr) : nullptr;
  if (c.lengths == Lengths::kShared) p.seqlens = static_cast<const int32_t*>(dlq.ptr);
  else {
    p.seqlens_q = static_cast<const int32_t*>(dlq.ptr);
    p.seqlens_k = static_cast<const int32_t*>(dlk.ptr);
  }
  const Status st = attention_forward(p);
  if (!st) { e.status = st.message; return e; }
  HARNESS_CUDA(cudaDeviceSynchronize());
  HARNESS_CUDA(cudaGetLastError());

  std::vector<uint16_t> out_l(nq);
  std::vector<uint32_t> lse_bits(static_cast<size_t>(B * Hq * Sq));
  HARNESS_CUDA(cudaMemcpy(out_l.data(), dout.ptr, nq * 2, cudaMemcpyDeviceToHost));
  HARNESS_CUDA(cudaMemcpy(lse_bits.data(), dlse.ptr, lse_bits.size() * 4, cudaMemcpyDeviceToHost));

  // Reference, one batch entry per task, spread over the host's cores.
  std::vector<double> ref_o(nq), ref_lse(lse_bits.size());
  auto widen = [&](const std::vector<uint16_t>& x) {
    std::vector<double> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = from_bits(x[i], c.dtype);
    return y;
  };
  const std::vector<double> qd = widen(q), kd = widen(k), vd = widen(v);
  const double scale = default_softmax_scale(D);
  auto ref_batch = [&](int64_t b) {
    ref::Problem rp;
    rp.batch = 1; rp.seqlen_q = Sq; rp.seqlen_k = Sk; rp.heads_q = Hq; rp.heads_kv = Hkv;
    rp.head_dim = D; rp.scale = scale; rp.causal = c.causal != wrong_reference;
    if (want_q) rp.lens_q = {lens_q[b]};
    if (want_k) rp.lens_k = {lens_k[b]};
    ref::attention(rp, &qd[b * Sq * Hq * D], &kd[b * Sk * Hkv * D], &vd[b * Sk * Hkv * D],
                   &ref_o[b * Sq * Hq * D], &ref_lse[b * Hq * Sq]);
  };
  {
    const int64_t workers = std::max<int64_t>(1, std::min<int64_t>(B, std::thread::hardware_concurrency()));
    std::vector<std::thread> pool;
    for (int64_t w = 0; w < workers; ++w)
      pool.emplace_back([&, w] { for (int64_t b = w; b < B; b += workers) ref_batch(b); });
    for (auto& t : pool) t.join();
  }

  // Compare.
  double diff2 = 0, ref2 = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < Sq; ++s)
      for (int64_t h = 0; h < Hq; ++h)
        for (int64_t d = 0; d < D; ++d) {
          const uint16_t bits = out_l[offset(c.layout, Sq, Hq, D, b, s, h) + d];
          const double r = ref_o[((b * Sq + s) * Hq + h) * D + d];
          if (bits == kPoison16) { ++e.unwritten; continue; }
          const double o = from_bits(bits, c.dtype);
          if (std::isnan(r) != std::isnan(o)) { ++e.nan_mismatch; continue; }
          if (std::isnan(r)) continue;
          diff2 += (o - r) * (o - r);
          ref2 += r * r;
        }
  e.o_rel_l2 = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  if (c.with_lse)
    for (size_t i = 0; i < lse_bits.size(); ++i) {
      if (lse_bits[i] == kPoison32) { ++e.unwritten; continue; }
      float f;
      std::memcpy(&f, &lse_bits[i], 4);
      const double r = ref_lse[i];
      if (std::isnan(r) != std::isnan(f)) { ++e.nan_mismatch; continue; }
      if (std::isnan(r)) continue;
      if (std::isinf(r) || std::isinf(f)) { if (r != f) ++e.inf_mismatch; continue; }
      e.lse_max_rel = std::max(e.lse_max_rel, std::abs(f - r) / std::max(1.0, std::abs(r)));
    }
  return e;
}

}  // namespace dhp::testing
