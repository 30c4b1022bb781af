// Launch template shared by the instantiation units.
#pragma once
#include <cuda_runtime.h>

#include "kernels/common/launch_util.hpp"
#include "kernels/sm80/forward_kernel.cuh"
#include "kernels/sm80/launch.hpp"

namespace dhp::sm80 {

template <typename Traits>
cudaError_t launch_forward(const kernels::ForwardArgs& a, cudaStream_t stream) {
  auto* kernel = &attention_forward_sm80<Traits>;
  constexpr int kSmem = Traits::kSmemBytes;
  static thread_local int configured_device = -1;
  if (const cudaError_t err = kernels::ensure_smem_limit(kernel, kSmem, configured_device); err != cudaSuccess)
    return err;
  const dim3 grid((a.seqlen_q + Traits::kBlockM - 1) / Traits::kBlockM, a.heads_q, a.batch);
  // Through launch_pdl (without PDL) for the launch's own status.
  return kernels::launch_pdl(kernel, grid, dim3(Traits::kThreads), kSmem, stream, false, a);
}

}  // namespace dhp::sm80

// Defines launch_forward_<NAME>(args, has_lengths, stream) for one dtype and
// head dim: two instantiations (public lengths / secret lengths).
#define DHP_SM80_DEFINE_LAUNCH(NAME, TYPE, D)                                              \
  namespace dhp::sm80 {                                                                    \
  cudaError_t launch_forward_##NAME(const kernels::ForwardArgs& a, bool has_lengths,       \
                                    cudaStream_t s) {                                      \
    return has_lengths ? launch_forward<Sm80Traits<TYPE, D, true>>(a, s)                   \
                       : launch_forward<Sm80Traits<TYPE, D, false>>(a, s);                 \
    }                                                                                      \
  }
