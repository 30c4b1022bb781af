#include "harness.hpp"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
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

// Element strides of a [B, S, H, D] tensor in layout l, and the elements
// its buffer spans (gaps included).
Strides layout_strides(Layout l, int64_t S, int64_t H, int64_t D) {
  if (l == Layout::kBSHD) return bshd_strides(S, H, D);
  if (l == Layout::kBHSD) return bhsd_strides(S, H, D);
  const int64_t head = D + 8, seq = H * head + 8;
  return {S * seq + 8, seq, head};
}
int64_t layout_elements(Layout l, int64_t B, int64_t S, int64_t H, int64_t D) {
  return B * layout_strides(l, S, H, D).batch;
}
// Element offset of (b, s, h, 0) in a tensor with strides st.
int64_t offset(const Strides& st, int64_t b, int64_t s, int64_t h) { return b * st.batch + s * st.seq + h * st.head; }

// Bytes of poison on each side of o and lse: a store past either end lands
// there and is counted.
constexpr size_t kGuardBytes = 4096;

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
     << (layout == Layout::kBHSD ? " bhsd" : layout == Layout::kPadded ? " padded" : " bshd")
     << (scale > 0 ? " scale=" + std::to_string(scale) : "") << (poison_padding ? " nan-padding" : "")
     << (nan_query_row >= 0 ? " nan-row" : "") << (broadcast_kv_heads ? " kv-heads-broadcast" : "") << (corrupt_row >= 0 || corrupt_past_end ? " corrupted" : "");
  return os.str();
}

std::string Errors::describe() const {
  std::ostringstream os;
  os << "seed=" << seed << " o_rel_l2=" << o_rel_l2 << " o_row_max_rel=" << o_row_max_rel
     << " lse_max_rel=" << lse_max_rel << " nan_mismatch=" << nan_mismatch << " inf_mismatch=" << inf_mismatch
     << " unwritten=" << unwritten << " out_of_bounds=" << out_of_bounds;
  if (!status.empty()) os << " status=\"" << status << "\"";
  return os.str();
}

double o_tolerance(DType d) { return d == DType::kFloat16 ? 2e-3 : 1e-2; }
double o_row_tolerance(DType d) { return d == DType::kFloat16 ? 2e-3 : 1.5e-2; }

bool passes(const Errors& e, DType d) {
  return e.status.empty() && e.unwritten == 0 && e.out_of_bounds == 0 && e.nan_mismatch == 0 &&
         e.inf_mismatch == 0 && e.o_rel_l2 <= o_tolerance(d) && e.o_row_max_rel <= o_row_tolerance(d) &&
         e.lse_max_rel <= kLseTolerance;  // <= is false for NaN: a NaN error never passes
}

double reference_o_rel_l2(const ref::Problem& rp, const std::vector<uint16_t>& q, const std::vector<uint16_t>& k,
                          const std::vector<uint16_t>& v, const std::vector<uint16_t>& o, DType d, int64_t* nan) {
  auto wide = [d](const std::vector<uint16_t>& x) {
    std::vector<double> w(x.size());
    for (size_t i = 0; i < x.size(); ++i) w[i] = from_bits(x[i], d);
    return w;
  };
  const std::vector<double> qd = wide(q), kd = wide(k), vd = wide(v);
  std::vector<double> ref_o(q.size()), ref_lse(static_cast<size_t>(rp.batch * rp.heads_q * rp.seqlen_q));
  ref::attention(rp, qd.data(), kd.data(), vd.data(), ref_o.data(), ref_lse.data());
  double diff2 = 0, ref2 = 0;
  *nan = 0;
  for (size_t i = 0; i < o.size(); ++i) {
    const double x = from_bits(o[i], d);
    *nan += std::isnan(x) ? 1 : 0;
    diff2 += (x - ref_o[i]) * (x - ref_o[i]);
    ref2 += ref_o[i] * ref_o[i];
  }
  return ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
}

uint64_t fresh_seed() { return (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}(); }

Errors run_case(const Case& c, uint64_t seed, bool wrong_reference) {
  Errors e;
  e.seed = seed != 0 ? seed : fresh_seed();
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
  // K/V heads broadcast: every kv head holds head 0's values (the reference
  // sees them so), stored once with head stride 0.
  if (c.broadcast_kv_heads)
    for (auto* x : {&k, &v})
      for (int64_t r = 0; r < B * Sk; ++r)
        for (int64_t h = 1; h < Hkv; ++h) std::memcpy(&(*x)[(r * Hkv + h) * D], &(*x)[r * Hkv * D], D * 2);
  const Strides kv_strides =
      c.broadcast_kv_heads ? Strides{Sk * D, D, 0} : layout_strides(c.layout, Sk, Hkv, D);
  const int64_t kv_elements = c.broadcast_kv_heads ? B * Sk * D : layout_elements(c.layout, B, Sk, Hkv, D);

  // Device copies in the requested layout; gaps between rows (kPadded) hold
  // NaN, which no output may show.
  auto to_layout = [&](const std::vector<uint16_t>& x, int64_t S, int64_t H, Strides st, int64_t elements) {
    std::vector<uint16_t> y(static_cast<size_t>(elements), to_bits(std::numeric_limits<float>::quiet_NaN(), c.dtype));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t s = 0; s < S; ++s)
        for (int64_t h = 0; h < H; ++h)
          std::memcpy(&y[offset(st, b, s, h)], &x[((b * S + s) * H + h) * D], D * 2);
    return y;
  };
  DeviceBuffer dq, dk, dv, dout, dlse, dlq, dlk;
  const size_t nq = static_cast<size_t>(layout_elements(c.layout, B, Sq, Hq, D)),
               nk = static_cast<size_t>(kv_elements), nlse = static_cast<size_t>(B * Hq * Sq);
  const Strides q_strides = layout_strides(c.layout, Sq, Hq, D);
  HARNESS_CUDA(cudaMalloc(&dq.ptr, nq * 2));
  HARNESS_CUDA(cudaMalloc(&dk.ptr, nk * 2));
  HARNESS_CUDA(cudaMalloc(&dv.ptr, nk * 2));
  // o and lse between guard bands; everything poisoned (kPoison16 / 32).
  HARNESS_CUDA(cudaMalloc(&dout.ptr, nq * 2 + 2 * kGuardBytes));
  HARNESS_CUDA(cudaMalloc(&dlse.ptr, nlse * 4 + 2 * kGuardBytes));
  HARNESS_CUDA(cudaMemcpy(dq.ptr, to_layout(q, Sq, Hq, q_strides, nq).data(), nq * 2, cudaMemcpyHostToDevice));
  HARNESS_CUDA(cudaMemcpy(dk.ptr, to_layout(k, Sk, Hkv, kv_strides, nk).data(), nk * 2, cudaMemcpyHostToDevice));
  HARNESS_CUDA(cudaMemcpy(dv.ptr, to_layout(v, Sk, Hkv, kv_strides, nk).data(), nk * 2, cudaMemcpyHostToDevice));
  HARNESS_CUDA(cudaMemset(dout.ptr, 0xFF, nq * 2 + 2 * kGuardBytes));
  HARNESS_CUDA(cudaMemset(dlse.ptr, 0xFF, nlse * 4 + 2 * kGuardBytes));
  void* const o_ptr = static_cast<char*>(dout.ptr) + kGuardBytes;
  float* const lse_ptr = reinterpret_cast<float*>(static_cast<char*>(dlse.ptr) + kGuardBytes);
  if (want_q) {
    HARNESS_CUDA(cudaMalloc(&dlq.ptr, B * 4));
    HARNESS_CUDA(cudaMemcpy(dlq.ptr, lens_q.data(), B * 4, cudaMemcpyHostToDevice));
  }
  if (want_k && c.lengths != Lengths::kShared) {
    HARNESS_CUDA(cudaMalloc(&dlk.ptr, B * 4));
    HARNESS_CUDA(cudaMemcpy(dlk.ptr, lens_k.data(), B * 4, cudaMemcpyHostToDevice));
  }

  Params p = make_params(c.dtype, B, Sq, Sk, Hq, Hkv, D, dq.ptr, dk.ptr, dv.ptr, o_ptr);
  set_q_strides(p, q_strides);
  set_o_strides(p, q_strides);
  set_k_strides(p, kv_strides);
  set_v_strides(p, kv_strides);
  p.causal = c.causal;
  // The reference takes the scale the kernel gets (a float).
  const double scale = c.scale > 0 ? static_cast<double>(static_cast<float>(c.scale)) : default_softmax_scale(D);
  if (c.scale > 0) {
    p.has_softmax_scale = 1;
    p.softmax_scale = static_cast<float>(c.scale);
  }
  p.lse = c.with_lse ? lse_ptr : nullptr;
  if (c.lengths == Lengths::kShared) p.seqlens = static_cast<const int32_t*>(dlq.ptr);
  else {
    p.seqlens_q = static_cast<const int32_t*>(dlq.ptr);
    p.seqlens_k = static_cast<const int32_t*>(dlk.ptr);
  }
  const Status st = attention_forward(p);
  if (!st) { e.status = st.message; return e; }
  HARNESS_CUDA(cudaDeviceSynchronize());
  HARNESS_CUDA(cudaGetLastError());

  if (c.corrupt_past_end) HARNESS_CUDA(cudaMemset(static_cast<char*>(o_ptr) + nq * 2, 0, 2));
  // Whole buffers, guard bands included.
  std::vector<uint16_t> out_all(nq + 2 * kGuardBytes / 2);
  std::vector<uint32_t> lse_all(nlse + 2 * kGuardBytes / 4);
  HARNESS_CUDA(cudaMemcpy(out_all.data(), dout.ptr, out_all.size() * 2, cudaMemcpyDeviceToHost));
  HARNESS_CUDA(cudaMemcpy(lse_all.data(), dlse.ptr, lse_all.size() * 4, cudaMemcpyDeviceToHost));
  std::vector<uint16_t> out_l(out_all.begin() + kGuardBytes / 2, out_all.end() - kGuardBytes / 2);
  if (c.corrupt_row >= 0)
    for (int64_t d = 0; d < D; ++d) {
      uint16_t& x = out_l[offset(q_strides, 0, c.corrupt_row, 0) + d];
      x = to_bits(1.1f * from_bits(x, c.dtype), c.dtype);
    }
  const std::vector<uint32_t> lse_bits(lse_all.begin() + kGuardBytes / 4, lse_all.end() - kGuardBytes / 4);
  for (size_t i = 0; i < kGuardBytes / 2; ++i)
    e.out_of_bounds += (out_all[i] != kPoison16) + (out_all[out_all.size() - 1 - i] != kPoison16);
  for (size_t i = 0; i < kGuardBytes / 4; ++i)
    e.out_of_bounds += (lse_all[i] != kPoison32) + (lse_all[lse_all.size() - 1 - i] != kPoison32);
  if (!c.with_lse)
    for (uint32_t x : lse_bits) e.out_of_bounds += x != kPoison32;  // no lse asked: none written
  {
    // O's gaps (kPadded): every element that is not some (b, s, h, d).
    std::vector<char> inside(nq, 0);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t s2 = 0; s2 < Sq; ++s2)
        for (int64_t h = 0; h < Hq; ++h)
          std::fill_n(inside.begin() + offset(q_strides, b, s2, h), D, 1);
    for (size_t i = 0; i < nq; ++i) e.out_of_bounds += !inside[i] && out_l[i] != kPoison16;
  }

  // Reference, one batch entry per task, spread over the host's cores.
  std::vector<double> ref_o(static_cast<size_t>(B * Sq * Hq * D)), ref_lse(lse_bits.size());
  auto widen = [&](const std::vector<uint16_t>& x) {
    std::vector<double> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = from_bits(x[i], c.dtype);
    return y;
  };
  const std::vector<double> qd = widen(q), kd = widen(k), vd = widen(v);
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

  // Compare: the whole output, and each row on its own.
  double diff2 = 0, ref2 = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < Sq; ++s)
      for (int64_t h = 0; h < Hq; ++h) {
        double row_diff2 = 0, row_ref2 = 0;
        for (int64_t d = 0; d < D; ++d) {
          const uint16_t bits = out_l[offset(q_strides, b, s, h) + d];
          const double r = ref_o[((b * Sq + s) * Hq + h) * D + d];
          if (bits == kPoison16) { ++e.unwritten; continue; }
          const double o = from_bits(bits, c.dtype);
          if (std::isnan(r) != std::isnan(o)) { ++e.nan_mismatch; continue; }
          if (std::isnan(r)) continue;
          row_diff2 += (o - r) * (o - r);
          row_ref2 += r * r;
        }
        diff2 += row_diff2;
        ref2 += row_ref2;
        const double row_rel = std::sqrt(row_diff2) / std::max(std::sqrt(row_ref2), 1e-30);
        if (!(row_rel <= e.o_row_max_rel)) e.o_row_max_rel = row_rel;  // NaN sticks
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
      const double rel = std::abs(f - r) / std::max(1.0, std::abs(r));
      if (!(rel <= e.lse_max_rel)) e.lse_max_rel = rel;  // NaN sticks
    }
  static const bool verbose = std::getenv("DHP_TEST_VERBOSE") != nullptr;
  if (verbose)
    std::printf("[errors] %s%s: %s\n", c.name().c_str(), wrong_reference ? " wrong-reference" : "",
                e.describe().c_str());
  return e;
}

}  // namespace dhp::testing
