// The wgmma primitives (src/kernels/sm90/wgmma.cuh) against a plain matmul:
// descriptor encoding and the 128-B swizzled tile layout on the CPU; on an
// sm_90 GPU, one warpgroup multiplying 64 x K by K x N in the two forms the
// attention kernel uses: S = Q Kᵀ (A and B K-major from shared memory) and
// O = P V (A from registers, B = V stored [key][d], MN-major, trans-b);
// and the narrow decode kernel's two (decode_narrow.cuh, N = 8): Sᵀ = K Qᵀ
// (both K-major) and Oᵀ = Vᵀ Pᵀ (A = V stored [key][d], MN-major, trans-a;
// B = P K-major). A deliberately wrong MN-major descriptor (LBO and SBO
// swapped), and V read without trans-a, must give a wrong product: the
// checks can fail.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "kernels/sm90/wgmma.cuh"
#include "support/harness.hpp"
#include "support/require_gpu.hpp"

using dhp::sm90::DType;
namespace desc = dhp::sm90::desc;

namespace {

TEST(WgmmaDescriptor, EncodingMatchesThePtxBitLayout) {
  const uint64_t d = desc::encode(0x1400, 16, 1024, desc::kSwizzle128B);
  EXPECT_EQ(d & 0x3FFF, 0x140u);                 // start address >> 4
  EXPECT_EQ((d >> 16) & 0x3FFF, 1u);             // LBO >> 4
  EXPECT_EQ((d >> 32) & 0x3FFF, 64u);            // SBO >> 4
  EXPECT_EQ((d >> 49) & 0x7, 0u);                // base offset
  EXPECT_EQ(d >> 62, 1u);                        // 128-B swizzle
  EXPECT_EQ(desc::advance(d, 32) - d, 2u);       // +32 B = +2 in the start field
  EXPECT_EQ((desc::mn_major_sw128(0, 64) >> 16) & 0x3FFF, 64u * 128 / 16);
}

TEST(WgmmaDescriptor, Swizzle128LayoutIsAPermutationOfTheTile) {
  for (uint32_t rows : {8u, 64u, 128u})
    for (uint32_t cols : {64u, 128u, 256u}) {
      std::set<uint32_t> seen;
      for (uint32_t r = 0; r < rows; ++r)
        for (uint32_t c = 0; c < cols; ++c) {
          const uint32_t off = dhp::sm90::sw128_offset(r, c, rows);
          ASSERT_LT(off, rows * cols * 2);
          ASSERT_EQ(off % 2, 0u);
          seen.insert(off);
        }
      EXPECT_EQ(seen.size(), static_cast<size_t>(rows) * cols);
    }
  // Row 1's first 16-B chunk lands in chunk 1 (chunk 0 ^ row 1).
  EXPECT_EQ(dhp::sm90::sw128_offset(1, 0, 8), 128u + 16u);
}

#if defined(__CUDACC__)

__device__ uint32_t smem_addr(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

// D (64 x N) = A (64 x K, row-major) * B. B is given as Bt [N][K] (K-major)
// when !MN_MAJOR, or as B [K][N] (V-like) when MN_MAJOR. A_MN: A is stored
// transposed in shared memory ([K][64], V-like) and read with trans-a =
// A_TRANS (1 is right; 0 must give a wrong product).
template <DType T, int N, int K, bool A_REGS, bool MN_MAJOR, bool A_MN = false, int A_TRANS = 0>
__global__ void __launch_bounds__(128) wgmma_matmul(const uint16_t* a, const uint16_t* b, float* out, uint32_t lbo,
                                                    uint32_t sbo) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(1024) uint8_t smem[];
  uint8_t* sa = smem;
  uint8_t* sb = smem + 64 * K * 2;  // 64 x K x 2 B is a multiple of 1024
  const int t = threadIdx.x;
  for (int i = t; i < 64 * K; i += 128) {
    if (A_MN)  // a[m][k] at row k, column m of a [K][64] tile
      *reinterpret_cast<uint16_t*>(sa + dhp::sm90::sw128_offset(i % K, i / K, K)) = a[i];
    else
      *reinterpret_cast<uint16_t*>(sa + dhp::sm90::sw128_offset(i / K, i % K, 64)) = a[i];
  }
  for (int i = t; i < N * K; i += 128) {
    if (MN_MAJOR)  // b[k][n]: rows = K keys, columns = N
      *reinterpret_cast<uint16_t*>(sb + dhp::sm90::sw128_offset(i / N, i % N, K)) = b[i];
    else  // bt[n][k]: rows = N, columns = K
      *reinterpret_cast<uint16_t*>(sb + dhp::sm90::sw128_offset(i / K, i % K, N)) = b[i];
  }
  // Generic-proxy writes must be visible to the async proxy wgmma reads with.
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();

  float d[N / 2];
#pragma unroll
  for (int i = 0; i < N / 2; ++i) d[i] = __int_as_float(0x7fc00000);  // NaN: scale_d = 0 must ignore it
  const int w = t / 32, l = t % 32;
#pragma unroll
  for (int ks = 0; ks < K / 16; ++ks) {
    uint64_t db;
    if (MN_MAJOR)
      db = desc::encode(smem_addr(sb) + ks * 16 * 128, lbo, sbo, desc::kSwizzle128B);
    else
      db = desc::k_major_sw128(smem_addr(sb) + (ks / 4) * N * 128 + (ks % 4) * 32);
    dhp::sm90::wg::fence();
    if (A_REGS) {
      uint32_t ar[4];
      const int r0 = 16 * w + l / 4, c0 = 16 * ks + 2 * (l % 4);
      auto pair = [&](int r, int c) { return uint32_t(a[r * K + c]) | (uint32_t(a[r * K + c + 1]) << 16); };
      ar[0] = pair(r0, c0);
      ar[1] = pair(r0 + 8, c0);
      ar[2] = pair(r0, c0 + 8);
      ar[3] = pair(r0 + 8, c0 + 8);
      dhp::sm90::MmaRS<T, N>::template run<MN_MAJOR ? 1 : 0>(d, ar, db, ks > 0);
    } else if (A_MN) {
      const uint64_t da = desc::mn_major_sw128(smem_addr(sa) + ks * 16 * 128, K);
      dhp::sm90::MmaSS<T, N>::template run<MN_MAJOR ? 1 : 0, A_TRANS>(d, da, db, ks > 0);
    } else {
      const uint64_t da = desc::k_major_sw128(smem_addr(sa) + (ks / 4) * 64 * 128 + (ks % 4) * 32);
      dhp::sm90::MmaSS<T, N>::template run<MN_MAJOR ? 1 : 0, A_TRANS>(d, da, db, ks > 0);
    }
    dhp::sm90::wg::commit();
    dhp::sm90::wg::wait<0>();
    dhp::sm90::wg::fence_operands(d);
  }
#pragma unroll
  for (int j = 0; j < N / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int row = 16 * w + l / 4 + 8 * (e / 2), col = 8 * j + 2 * (l % 4) + (e % 2);
      out[row * N + col] = d[4 * j + e];
    }
#endif
}

// 16-bit patterns through the test harness's conversions.
template <DType T>
uint16_t to_bits(float x) {
  return dhp::testing::to_bits(x, T == DType::F16 ? dhp::DType::kFloat16 : dhp::DType::kBFloat16);
}
template <DType T>
float from_bits(uint16_t u) {
  return dhp::testing::from_bits(u, T == DType::F16 ? dhp::DType::kFloat16 : dhp::DType::kBFloat16);
}

// Runs one configuration; returns the max |error| / max |reference|.
template <DType T, int N, int K, bool A_REGS, bool MN_MAJOR, bool A_MN = false, int A_TRANS = 0>
double run_case(uint32_t lbo, uint32_t sbo) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<uint16_t> a(64 * K), b(N * K);
  for (auto& x : a) x = to_bits<T>(u(rng));
  for (auto& x : b) x = to_bits<T>(u(rng));
  std::vector<double> ref(64 * N, 0.0);
  for (int i = 0; i < 64; ++i)
    for (int n = 0; n < N; ++n) {
      double s = 0;
      for (int k = 0; k < K; ++k)
        s += double(from_bits<T>(a[i * K + k])) * from_bits<T>(MN_MAJOR ? b[k * N + n] : b[n * K + k]);
      ref[i * N + n] = s;
    }
  uint16_t *da, *db;
  float* dout;
  cudaMalloc(&da, a.size() * 2);
  cudaMalloc(&db, b.size() * 2);
  cudaMalloc(&dout, 64 * N * 4);
  cudaMemcpy(da, a.data(), a.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), b.size() * 2, cudaMemcpyHostToDevice);
  cudaMemset(dout, 0xFF, 64 * N * 4);  // poison: NaN
  const int smem = (64 * K + N * K) * 2;
  auto kern = wgmma_matmul<T, N, K, A_REGS, MN_MAJOR, A_MN, A_TRANS>;
  EXPECT_EQ(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem), cudaSuccess);
  kern<<<1, 128, smem>>>(da, db, dout, lbo, sbo);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> out(64 * N);
  cudaMemcpy(out.data(), dout, out.size() * 4, cudaMemcpyDeviceToHost);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dout);
  // An element still holding the poison (the kernel did not run or did not
  // write it) gives NaN, which fails both EXPECT_LT and EXPECT_GT below;
  // any other non-finite value, INFINITY.
  double err = 0, mag = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &out[i], 4);
    if (bits == 0xFFFFFFFFu) return NAN;
    if (!std::isfinite(out[i])) return INFINITY;
    err = std::max(err, std::abs(out[i] - ref[i]));
    mag = std::max(mag, std::abs(ref[i]));
  }
  return err / mag;
}

bool sm90_available() {
  if (!dhp::testing::cuda_device_available()) return false;
  cudaDeviceProp p{};
  cudaGetDeviceProperties(&p, 0);
  return p.major == 9;
}

#define REQUIRE_SM90()                                                                   \
  do {                                                                                   \
    DHP_REQUIRE_GPU(); \
    if (!sm90_available()) GTEST_SKIP() << "skipped: needs an sm_90 GPU";                \
  } while (0)

constexpr double kTol = 1e-5;  // fp32 accumulation of exact products, K <= 128

TEST(WgmmaGpu, QKtFormF16N64K64) {
  REQUIRE_SM90();
  EXPECT_LT((run_case<DType::F16, 64, 64, false, false>(0, 0)), kTol);
}
TEST(WgmmaGpu, QKtFormBF16N128K128) {
  REQUIRE_SM90();
  EXPECT_LT((run_case<DType::BF16, 128, 128, false, false>(0, 0)), kTol);
}
TEST(WgmmaGpu, QKtFormF16N256K64) {
  REQUIRE_SM90();
  EXPECT_LT((run_case<DType::F16, 256, 64, false, false>(0, 0)), kTol);
}
TEST(WgmmaGpu, PVFormF16N128K64) {
  REQUIRE_SM90();
  const uint64_t d = desc::mn_major_sw128(0, 64);
  const uint32_t lbo = ((d >> 16) & 0x3FFF) << 4, sbo = ((d >> 32) & 0x3FFF) << 4;
  EXPECT_LT((run_case<DType::F16, 128, 64, true, true>(lbo, sbo)), kTol);
}
TEST(WgmmaGpu, PVFormBF16N256K128) {
  REQUIRE_SM90();
  const uint64_t d = desc::mn_major_sw128(0, 128);
  const uint32_t lbo = ((d >> 16) & 0x3FFF) << 4, sbo = ((d >> 32) & 0x3FFF) << 4;
  EXPECT_LT((run_case<DType::BF16, 256, 128, true, true>(lbo, sbo)), kTol);
}
TEST(WgmmaGpu, PVFormSwappedOffsetsAreWrong) {
  REQUIRE_SM90();
  // LBO and SBO exchanged: the product must be wrong (the test can fail).
  const double err = run_case<DType::F16, 128, 64, true, true>(1024, 64 * 128);
  std::printf("swapped LBO/SBO: relative error %.3g (must be large)\n", err);
  EXPECT_GT(err, 1e-2);
}
// The narrow decode kernel's forms (N = 8): Sᵀ = K Qᵀ, K-major A and B.
TEST(WgmmaGpu, NarrowSTFormF16N8K128) {
  REQUIRE_SM90();
  EXPECT_LT((run_case<DType::F16, 8, 128, false, false>(0, 0)), kTol);
}
TEST(WgmmaGpu, NarrowSTFormBF16N8K64) {
  REQUIRE_SM90();
  EXPECT_LT((run_case<DType::BF16, 8, 64, false, false>(0, 0)), kTol);
}
// Oᵀ = Vᵀ Pᵀ: A = V stored [key][d] (MN-major, trans-a), B = P K-major.
TEST(WgmmaGpu, NarrowPVFormF16N8K128) {
  REQUIRE_SM90();
  EXPECT_LT((run_case<DType::F16, 8, 128, false, false, true, 1>(0, 0)), kTol);
}
TEST(WgmmaGpu, NarrowPVFormBF16N8K64) {
  REQUIRE_SM90();
  EXPECT_LT((run_case<DType::BF16, 8, 64, false, false, true, 1>(0, 0)), kTol);
}
TEST(WgmmaGpu, NarrowTransAOnKMajorDataIsWrong) {
  REQUIRE_SM90();
  // trans-a on an A stored K-major (its own descriptor): the product must be
  // wrong (the test can fail). The reverse -- MN-major data read without
  // trans-a through the MN-major descriptor -- reads past the tile and
  // faults, which would end the process's CUDA context.
  const double err = run_case<DType::F16, 8, 128, false, false, false, 1>(0, 0);
  std::printf("trans-a on K-major A: relative error %.3g (must be large)\n", err);
  EXPECT_GT(err, 1e-2);
}
#endif

}  // namespace
