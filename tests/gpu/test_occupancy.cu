// How many CTAs of a Hopper kernel the hardware places per SM, as built:
// the half-row kernel (kernel_traits.cuh, kCtasPerSm) is built for two, so
// that in a chain of small calls the next launch's CTA (programmatic
// dependent launch) finds room beside a running one and does its set-up
// under it (docs/perf-log.md, session 31). That takes its launch bounds,
// register split, shared memory and carveout (launch.cuh, prepare_kernel)
// together: any one of them off and the occupancy query reads 1.
#include <gtest/gtest.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "kernels/sm90/launch.cuh"
#include "support/require_gpu.hpp"

namespace {

namespace sm90 = dhp::sm90;

template <typename Traits>
void expect_ctas_per_sm(int expected) {
  ASSERT_EQ(sm90::prepare_kernel<Traits>(), cudaSuccess);
  cudaFuncAttributes attr{};
  ASSERT_EQ(cudaFuncGetAttributes(&attr, sm90::attention_forward_sm90<Traits>), cudaSuccess);
  EXPECT_EQ(attr.localSizeBytes, 0u) << "register spills";
  EXPECT_LE(attr.numRegs * Traits::kThreads * expected, 65536) << attr.numRegs << " registers at launch";
  int ctas = 0;
  ASSERT_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas, sm90::attention_forward_sm90<Traits>,
                                                          Traits::kThreads, sm90::kernel_smem_bytes<Traits>()),
            cudaSuccess);
  EXPECT_EQ(ctas, expected) << "CTAs per SM (launch registers " << attr.numRegs << ", shared memory "
                            << sm90::kernel_smem_bytes<Traits>() << " B)";
}

TEST(Occupancy, HalfRowKernelFitsTwoCtasPerSm) {
  DHP_REQUIRE_GPU();
  cudaDeviceProp p{};
  ASSERT_EQ(cudaGetDeviceProperties(&p, 0), cudaSuccess);
  if (p.major != 9) GTEST_SKIP() << "skipped: needs an sm_90 GPU";
  expect_ctas_per_sm<sm90::Sm90Traits<__half, 64, false, 1, 128, true>>(2);
  expect_ctas_per_sm<sm90::Sm90Traits<__nv_bfloat16, 64, false, 1, 128, true>>(2);
}

}  // namespace
