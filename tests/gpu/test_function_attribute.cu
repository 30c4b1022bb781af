// kernels::set_function_attribute (src/kernels/common/function_attribute.hpp)
// on an sm_90 GPU: it raises a kernel's dynamic shared-memory cap (a launch
// over the default 48 KB fails before and runs after); the runtime's
// occupancy query, which the narrow decode launcher uses right after setting
// the carveout this way (launch.cuh: two CTAs per SM), sees the cap and the
// carveout (half the carveout: one 100 KB CTA per SM; all of it: two); and
// an error the caller left pending is still pending after it -- the reason
// it exists: cudaFuncSetAttribute clears that record (session 53). The
// attributes are reset first, so the test also holds under --gtest_repeat.
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
  struct Buffer {
    float* p = nullptr;
    ~Buffer() { cudaFree(p); }
  } out;
  ASSERT_EQ(cudaMalloc(&out.p, kThreads * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemset(out.p, 0xff, kThreads * sizeof(float)), cudaSuccess);  // poison: NaN
  // Back to the defaults (an earlier repeat may have raised them).
  ASSERT_EQ(set_function_attribute(kernel, FunctionAttribute::kMaxDynamicSharedBytes, 48 * 1024), cudaSuccess);
  ASSERT_EQ(set_function_attribute(kernel, FunctionAttribute::kPreferredSharedCarveout, cudaSharedmemCarveoutDefault),
            cudaSuccess);

  // The default cap binds: the launch is refused (and its error cleared).
  sum_of_filled_smem<<<1, kThreads, kBytes>>>(out.p, kFloats);
  ASSERT_NE(cudaGetLastError(), cudaSuccess) << "a 100 KB launch must fail under the default cap";

  void* huge = nullptr;
  ASSERT_EQ(cudaMalloc(&huge, size_t{1} << 60), cudaErrorMemoryAllocation);  // the caller's pending error
  const cudaError_t cap = set_function_attribute(kernel, FunctionAttribute::kMaxDynamicSharedBytes, kBytes);
  const cudaError_t half = set_function_attribute(kernel, FunctionAttribute::kPreferredSharedCarveout, 50);
  const cudaError_t left = cudaGetLastError();  // read and cleared before any assertion
  ASSERT_EQ(cap, cudaSuccess);
  ASSERT_EQ(half, cudaSuccess);
  EXPECT_EQ(left, cudaErrorMemoryAllocation) << "the pending error must survive: " << cudaGetErrorName(left);

  int at_half = 0, at_all = 0, over_cap = 0;
  ASSERT_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&at_half, kernel, kThreads, kBytes), cudaSuccess);
  ASSERT_EQ(set_function_attribute(kernel, FunctionAttribute::kPreferredSharedCarveout, cudaSharedmemCarveoutMaxShared),
            cudaSuccess);
  ASSERT_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&at_all, kernel, kThreads, kBytes), cudaSuccess);
  ASSERT_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&over_cap, kernel, kThreads, 150 * 1024), cudaSuccess);
  EXPECT_EQ(at_half, 1) << "half the carveout (about 114 KB) holds one 100 KB CTA";
  EXPECT_EQ(at_all, 2) << "the whole carveout (228 KB) holds two 100 KB CTAs (+ 1 KB reserved each)";
  EXPECT_EQ(over_cap, 0) << "150 KB is over the raised cap";

  sum_of_filled_smem<<<1, kThreads, kBytes>>>(out.p, kFloats);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> got(kThreads);
  ASSERT_EQ(cudaMemcpy(got.data(), out.p, kThreads * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  for (int t = 0; t < kThreads; ++t) {
    float want = 0.f;
    for (int i = t; i < kFloats; i += kThreads) want += static_cast<float>(i % 1024);
    ASSERT_EQ(got[t], want) << "thread " << t;
  }
}

}  // namespace
