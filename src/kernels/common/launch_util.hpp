// Host helpers shared by the kernels' launch code.
#pragma once
#include <cuda_runtime.h>

#include "kernels/forward_args.hpp"

// Declares launch_forward_<dtype>_d<D>(args, has_lengths, stream) for every
// (dtype, head dim) the library instantiates; each kernel family defines
// them in its instantiate_*.cu units.
#define DHP_DECLARE_FORWARD_LAUNCHERS                                                                 \
  cudaError_t launch_forward_fp16_d64(const kernels::ForwardArgs& a, bool has_lengths, cudaStream_t s);  \
  cudaError_t launch_forward_fp16_d128(const kernels::ForwardArgs& a, bool has_lengths, cudaStream_t s); \
  cudaError_t launch_forward_fp16_d256(const kernels::ForwardArgs& a, bool has_lengths, cudaStream_t s); \
  cudaError_t launch_forward_bf16_d64(const kernels::ForwardArgs& a, bool has_lengths, cudaStream_t s);  \
  cudaError_t launch_forward_bf16_d128(const kernels::ForwardArgs& a, bool has_lengths, cudaStream_t s); \
  cudaError_t launch_forward_bf16_d256(const kernels::ForwardArgs& a, bool has_lengths, cudaStream_t s);

namespace dhp::kernels {

// Raises a kernel's dynamic shared-memory cap to `bytes` on the current
// device. Per function and idempotent, but a driver call: done once per
// instantiation (the static lives in the caller's template) and device.
template <typename Kernel>
cudaError_t ensure_smem_limit(Kernel* kernel, int bytes, int& configured_device) {
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return err;
  if (configured_device != device) {
    err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    if (err != cudaSuccess) return err;
    configured_device = device;
  }
  return cudaSuccess;
}

// Launches `kernel` with programmatic dependent launch when `pdl` (the
// kernel may start while the previous one in the stream finishes; it must
// wait -- griddepcontrol.wait -- before touching what that kernel writes),
// else as an ordinary stream launch; in thread-block clusters of `cluster`
// CTAs along x where `cluster` > 1 (the grid a multiple of it).
template <typename... Params, typename... Args>
cudaError_t launch_in_clusters(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                               bool pdl, unsigned cluster, Args&&... args) {
  cudaLaunchAttribute attr[2];
  unsigned n = 0;
  if (pdl) {
    attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  if (cluster > 1) {
    attr[n].id = cudaLaunchAttributeClusterDimension;
    attr[n].val.clusterDim.x = cluster;
    attr[n].val.clusterDim.y = 1;
    attr[n].val.clusterDim.z = 1;
    ++n;
  }
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = attr;
  config.numAttrs = n;
  return cudaLaunchKernelEx(&config, kernel, static_cast<Args&&>(args)...);
}
template <typename... Params, typename... Args>
cudaError_t launch_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                       bool pdl, Args&&... args) {
  return launch_in_clusters(kernel, grid, block, smem, stream, pdl, 1u, static_cast<Args&&>(args)...);
}

// How many clusters of `cluster` CTAs of `kernel` (`block` threads, `smem`
// bytes of dynamic shared memory, the cap already raised) the device holds
// at once; 0 on an error.
template <typename... Params>
int max_active_clusters(void (*kernel)(Params...), dim3 block, size_t smem, unsigned cluster) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = cluster;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(cluster);
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.attrs = attr;
  config.numAttrs = 1;
  int n = 0;
  return cudaOccupancyMaxActiveClusters(&n, kernel, &config) == cudaSuccess ? n : 0;
}

}  // namespace dhp::kernels
