// Host helpers shared by the kernels' launch code.
#pragma once
#include <cuda_runtime.h>

#include "kernels/common/function_attribute.hpp"
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
// Leaves the thread's last-error record alone (set_function_attribute) and
// clears its own failures from it.
template <typename Kernel>
cudaError_t ensure_smem_limit(Kernel* kernel, int bytes, int& configured_device) {
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // its own failure: the caller's record was replaced already
    return err;
  }
  if (configured_device != device) {
    err = set_function_attribute(reinterpret_cast<const void*>(kernel), FunctionAttribute::kMaxDynamicSharedBytes, bytes);
    if (err != cudaSuccess) return err;
    configured_device = device;
  }
  return cudaSuccess;
}

// Launches `kernel` with programmatic dependent launch when `pdl` (the
// kernel may start while the previous one in the stream finishes; it must
// wait -- griddepcontrol.wait -- before touching what that kernel writes),
// else as an ordinary stream launch. Returns the launch's own status (not
// cudaGetLastError's, which would also report an error the caller left
// pending), and clears the thread's last-error record only after its own
// failure, so that the caller's next launch check does not see it again.
template <typename... Params, typename... Args>
cudaError_t launch_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                       bool pdl, Args&&... args) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = attr;
  config.numAttrs = pdl ? 1 : 0;
  const cudaError_t e = cudaLaunchKernelEx(&config, kernel, static_cast<Args&&>(args)...);
  if (e != cudaSuccess) (void)cudaGetLastError();
  return e;
}

}  // namespace dhp::kernels
