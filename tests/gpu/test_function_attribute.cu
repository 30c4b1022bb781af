// kernels::set_function_attribute (src/kernels/common/function_attribute.hpp)
// on an sm_90 GPU: it raises a kernel's dynamic shared-memory cap (a launch
// over the default 48 KB fails before and runs after), the occupancy query
// the narrow decode launcher relies on (launch.cuh: two CTAs per SM once the
// carveout asks for all shared memory) sees the cap and the carveout, and an
// error the caller left pending is still pending after it -- the reason it
// exists: cudaFuncSetAttribute clears that record (session 53).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <vector>

#include "kernels/common/function_attribute.hpp"
#include "support/require_gpu.hpp"

namespace {

using dhp::kernels::FunctionAttribute;
using dhp::kernels::set_function_attribute;

// Writes i to every float of its dynamic shared memory, then each thread
// sums a stride of it: the output shows that all of it was there.
__global__ void sum_of_filled_smem(float* out, int floats) {
  extern __shared__ float s[];
  for (int i = threadIdx.x; i < floats; i += blockDim.x) s[i] = static_cast<float>(i % 1024);
  __syncthreads();
  float sum = 0.f;
  for (int i = threadIdx.x; i < floats; i += blockDim.x) sum += s[i];
  out[threadIdx.x] = sum;
}

TEST(FunctionAttribute, RaisesTheCapKeepsThePendingErrorAndOccupancySeesIt) {
  DHP_REQUIRE_GPU();
  constexpr int kBytes = 100 * 1024, kThreads = 128, kFloats = kBytes / 4;
  const void* kernel = reinterpret_cast<const void*>(&sum_of_filled_smem);
  float* out = nullptr;
  ASSERT_EQ(cudaMalloc(&out, kThreads * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemset(out, 0xff, kThreads * sizeof(float)), cudaSuccess);  // poison: NaN

  // The default cap binds: the launch is refused (and its error cleared).
  sum_of_filled_smem<<<1, kThreads, kBytes>>>(out, kFloats);
  ASSERT_NE(cudaGetLastError(), cudaSuccess) << "a 100 KB launch must fail under the default cap";

  void* huge = nullptr;
  ASSERT_EQ(cudaMalloc(&huge, size_t{1} << 60), cudaErrorMemoryAllocation);  // the caller's pending error
  ASSERT_EQ(set_function_attribute(kernel, FunctionAttribute::kMaxDynamicSharedBytes, kBytes), cudaSuccess);
  ASSERT_EQ(set_function_attribute(kernel, FunctionAttribute::kPreferredSharedCarveout, cudaSharedmemCarveoutMaxShared),
            cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaErrorMemoryAllocation) << "the pending error must survive";

  int two = 0, one = 0;
  ASSERT_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&two, kernel, kThreads, kBytes), cudaSuccess);
  ASSERT_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&one, kernel, kThreads, 150 * 1024), cudaSuccess);
  EXPECT_EQ(two, 2) << "2 x 100 KB fit the SM's 228 KB only with the whole carveout as shared memory";
  EXPECT_EQ(one, 0) << "150 KB is over the raised cap";

  sum_of_filled_smem<<<1, kThreads, kBytes>>>(out, kFloats);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> got(kThreads);
  ASSERT_EQ(cudaMemcpy(got.data(), out, kThreads * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  for (int t = 0; t < kThreads; ++t) {
    float want = 0.f;
    for (int i = t; i < kFloats; i += kThreads) want += static_cast<float>(i % 1024);
    ASSERT_EQ(got[t], want) << "thread " << t;
  }
  cudaFree(out);
}

}  // namespace
