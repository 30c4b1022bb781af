// Micro-benchmark (Hopper): how much does a softmax-like ALU stream slow
// down when a wgmma chain runs on the same SM -- issued by the same
// warpgroup, or by another one? The attention kernel's design question
// behind it (docs/perf-log.md, session 12): overlapping a warpgroup's
// softmax with its own P·V (intra-warpgroup overlap) or with the other
// warpgroup's GEMMs (ping-pong) pays only if the ALU stream keeps its speed
// beside the tensor cores.
//
// One CTA of two warpgroups per SM. In each mode a "GEMM" warpgroup issues
// kChain wgmma m64n128k16 (fp16 in, fp32 accumulate, SS or RS) on one
// accumulator and an "ALU" warpgroup runs kRounds x 64 steps of the
// softmax's per-score work (FFMA, ex2.approx, FADD row sum, FMNMX row max)
// over 16 scores of each of two rows per thread (256 exp2 per thread in all,
// as four 128-key tiles of one D128 warpgroup). Thread 0 of each warpgroup stamps
// clock64. Shared memory holds pseudo-random fp16 values (never zeros).
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Isrc \
//        tools/microbench/alu_beside_wgmma.cu -o alu_beside_wgmma && ./alu_beside_wgmma
// Prints cycles per mode (CTA 0; 1 CTA and one CTA per SM).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "kernels/sm90/wgmma.cuh"

using namespace dhp::sm90;

// wgmma per chain (a template parameter): 32 (longer than the issue queue:
// the issuing warp blocks in the issue), or 8 (one D128 S GEMM).
// ALU rounds of 16 scores per row and thread: 8 beside the 32-chain (256
// exp2 per thread, as four 128-key tiles of a D128 warpgroup), 2 beside the
// 8-chain (one 64-key half tile), so that the two take similar times.
template <int kChain>
constexpr int kRounds = kChain == 32 ? 8 : 2;
constexpr int kSmemBytes = 1024 + 8192 + 16384;

enum Mode : int {
  kAluAlone = 0,       // warpgroup 0: ALU; no wgmma
  kGemmAlone = 1,      // warpgroup 0: SS chain; no ALU
  kOwnSS = 2,          // warpgroup 0: SS chain issued, then its ALU, then the wait
  kOwnRS = 3,          // the same with the A operand from registers
  kOtherSS = 4,        // warpgroup 1 issues the SS chain, warpgroup 0 runs the ALU
  kOtherSSBothAlu = 5  // warpgroup 1 issues the SS chain and runs the ALU too; warpgroup 0 ALU
};

__device__ __forceinline__ float ex2(float x) {
  float y;
  asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// The softmax's per-score work on two rows: p = 2^(s*c - m*c), sum += p,
// max over s. The scores are rebuilt from p so that the rounds depend on
// each other and nothing folds away.
template <int ROUNDS>
__device__ __forceinline__ float alu_stream(float seed) {
  float s0[16], s1[16];
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    s0[j] = seed * (j + 1) * 0.01f;
    s1[j] = seed * (j + 2) * 0.013f;
  }
  float sum0 = 0.f, sum1 = 0.f, m0 = -1e30f, m1 = -1e30f;
  const float c = 1.4426950f, mc = 0.25f;
#pragma unroll 1
  for (int r = 0; r < ROUNDS; ++r) {
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      m0 = fmaxf(m0, s0[j]);
      m1 = fmaxf(m1, s1[j]);
      const float p0 = ex2(fmaf(s0[j], c, -mc)), p1 = ex2(fmaf(s1[j], c, -mc));
      sum0 += p0;
      sum1 += p1;
      s0[j] = p0 * 0.5f;
      s1[j] = p1 * 0.5f;
    }
  }
  return sum0 + sum1 + m0 + m1;
}

template <int MODE, int kChain>
__global__ void __launch_bounds__(256, 1) probe(float seed, float* sink, long long* stamps) {
  constexpr int mode = MODE;
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  __half* h = reinterpret_cast<__half*>(smem);
  for (int i = threadIdx.x; i < (8192 + 16384) / 2; i += blockDim.x) {
    const uint32_t x = (i * 2654435761u) ^ (blockIdx.x * 40503u);
    h[i] = __float2half(static_cast<float>(static_cast<int>(x % 201u) - 100) / 1024.0f);
  }
  __syncthreads();
  // Warp-uniform to ptxas (a lane-0 broadcast), so that the branches below
  // do not make it serialise the wgmma (C7518).
  const int wg = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 128), 0);
  const uint32_t a_addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const uint64_t da = desc::k_major_sw128(a_addr), db = desc::k_major_sw128(a_addr + 8192);
  float acc[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) acc[i] = 0.f;
  uint32_t areg[8][4];  // as P at 128-key tiles: one A fragment per 16-key step
#pragma unroll
  for (int k = 0; k < 8; ++k)
#pragma unroll
    for (int i = 0; i < 4; ++i) areg[k][i] = 0x3c003c00u ^ ((threadIdx.x + 37 * k + i) * 0x00010001u & 0x03ff03ffu);

  constexpr int kIssuer = (mode == kGemmAlone || mode == kOwnSS || mode == kOwnRS) ? 0
                          : (mode == kOtherSS || mode == kOtherSSBothAlu)          ? 1
                                                                                    : -1;
  auto runs_alu = [](int w) { return mode == kOtherSSBothAlu || (mode != kGemmAlone && w == 0); };
  float result = 0.f;
  long long t0, t1, t2, t3;
  asm volatile("bar.sync 1, 256;" ::: "memory");
  if (wg == kIssuer) {  // issue, the ALU stream (if any) beside the chain, wait
    t0 = clock64();
    wg::fence();
#pragma unroll
    for (int i = 0; i < kChain; ++i) {
      if constexpr (mode == kOwnRS)
        MmaRS<DType::F16, 128>::run<0>(acc, areg[i % 8], desc::advance_lo(db, (i % 4) * 32), 1);
      else
        MmaSS<DType::F16, 128>::run<0>(acc, desc::advance_lo(da, (i % 4) * 32), desc::advance_lo(db, (i % 4) * 32), 1);
    }
    wg::commit();
    t1 = clock64();
    if (runs_alu(kIssuer)) result = alu_stream<kRounds<kChain>>(seed + threadIdx.x * 1e-3f);
    t2 = clock64();
    wg::wait<0>();
    wg::fence_operands(acc);
    if constexpr (mode == kOwnRS) wg::fence_operands(areg);
    t3 = clock64();
  } else {
    t0 = t1 = clock64();
    if (runs_alu(wg)) result = alu_stream<kRounds<kChain>>(seed + threadIdx.x * 1e-3f);
    t2 = t3 = clock64();
  }
#pragma unroll
  for (int i = 0; i < 64; ++i) result += acc[i];
  sink[blockIdx.x * blockDim.x + threadIdx.x] = result;
  if (threadIdx.x % 128 == 0) {
    long long* st = stamps + (blockIdx.x * 2 + wg) * 3;
    st[0] = t1 - t0;  // wgmma issue
    st[1] = t2 - t1;  // ALU stream
    st[2] = t3 - t0;  // until the chain has completed
  }
}

using ProbeFn = void (*)(float, float*, long long*);
constexpr ProbeFn kProbes[2][6] = {{probe<0, 32>, probe<1, 32>, probe<2, 32>, probe<3, 32>, probe<4, 32>, probe<5, 32>},
                                   {probe<0, 8>, probe<1, 8>, probe<2, 8>, probe<3, 8>, probe<4, 8>, probe<5, 8>}};

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  for (auto& row : kProbes)
    for (ProbeFn f : row) cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
  float* sink;
  long long* stamps;
  cudaMalloc(&sink, sizeof(float) * sms * 256);
  cudaMalloc(&stamps, sizeof(long long) * sms * 6);
  const char* names[] = {"ALU alone", "GEMM alone (SS)", "own SS chain + ALU", "own RS chain + ALU",
                         "other WG's SS chain, ALU in WG0", "other WG's SS chain + ALU in both"};
  std::printf("chain: 32 or 8 x wgmma m64n128k16 (2^17 FMA each); ALU: 8 or 2 rounds x 16 scores x 2 rows per thread\n");
  std::printf("%-34s %5s %6s | %-26s | %-26s\n", "mode", "chain", "CTAs", "WG0 issue / ALU / total",
              "WG1 issue / ALU / total");
  for (int c = 0; c < 2; ++c) {
    for (int grid : {1, sms}) {
      for (int mode = 0; mode < 6; ++mode) {
        long long best[6] = {0};
        for (int rep = 0; rep < 5; ++rep) {  // minimum over runs 2-5 (the first warms up)
          kProbes[c][mode]<<<grid, 256, kSmemBytes>>>(1.0f + rep, sink, stamps);
          long long h[6];
          cudaMemcpy(h, stamps, sizeof(h), cudaMemcpyDeviceToHost);
          for (int i = 0; i < 6; ++i)
            if (rep == 1 || (rep > 1 && h[i] < best[i])) best[i] = h[i];
        }
        std::printf("%-34s %5d %6d | %7lld %7lld %7lld   | %7lld %7lld %7lld\n", names[mode], c == 0 ? 32 : 8,
                    grid, best[0], best[1], best[2], best[3], best[4], best[5]);
      }
    }
  }
  const cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) {
    std::printf("CUDA error: %s\n", cudaGetErrorString(err));
    return 1;
  }
  return 0;
}
