// The launch floor of a CUDA graph on this GPU: per-call time of a graph of
// back-to-back launches of an empty kernel with the small configuration's
// launch shape (grid, threads, dynamic shared memory), with and without
// programmatic dependent launch. It puts the "per call" figure of the small
// configuration (docs/benchmarks.md) in context: no kernel can go below it.
//   dhp_launch_floor [grid threads smem_bytes]   (default 32 384 99328)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void empty_kernel(int* sink) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
  if (sink != nullptr && threadIdx.x == 0) sink[blockIdx.x] = 1;  // never taken (sink is null)
}

static float per_call_us(int grid, int threads, int smem, bool pdl, int launches) {
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(threads);
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = attr;
  config.numAttrs = pdl ? 1 : 0;
  cudaGraph_t g;
  cudaGraphExec_t exec;
  cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  for (int i = 0; i < launches; ++i) cudaLaunchKernelEx(&config, empty_kernel, static_cast<int*>(nullptr));
  cudaStreamEndCapture(stream, &g);
  cudaGraphInstantiate(&exec, g, 0);
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<float> us;
  for (int i = 0; i < 35; ++i) {
    cudaEventRecord(a, stream);
    cudaGraphLaunch(exec, stream);
    cudaEventRecord(b, stream);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    if (i >= 5) us.push_back(ms * 1000.0f / launches);
  }
  std::sort(us.begin(), us.end());
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
  cudaStreamDestroy(stream);
  return us[us.size() / 2];
}

int main(int argc, char** argv) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::printf("skipped: no CUDA device\n");
    return 0;
  }
  const int grid = argc > 3 ? std::atoi(argv[1]) : 32;
  const int threads = argc > 3 ? std::atoi(argv[2]) : 384;
  const int smem = argc > 3 ? std::atoi(argv[3]) : 99328;
  cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  for (bool pdl : {false, true}) {
    const float us = per_call_us(grid, threads, smem, pdl, 20);
    if (cudaGetLastError() != cudaSuccess) return 1;
    std::printf("launch floor (empty kernel, grid %d x %d threads, %d B smem, graph of 20, PDL %s): %.2f us per call\n",
                grid, threads, smem, pdl ? "on" : "off", us);
  }
  return 0;
}
