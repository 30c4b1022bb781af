// Host-side entry points of the portable kernel, one per (dtype, head dim);
// defined in the instantiate_*.cu files so that each compiles on its own.
#pragma once
#include <cuda_runtime.h>

#include "kernels/forward_args.hpp"

namespace dhp::sm80 {

// has_lengths selects the instantiation that masks by select in every tile.
cudaError_t launch_forward_fp16_d64(const kernels::ForwardArgs& a, bool has_lengths, cudaStream_t s);
cudaError_t launch_forward_fp16_d128(const kernels::ForwardArgs& a, bool has_lengths, cudaStream_t s);
cudaError_t launch_forward_fp16_d256(const kernels::ForwardArgs& a, bool has_lengths, cudaStream_t s);
cudaError_t launch_forward_bf16_d64(const kernels::ForwardArgs& a, bool has_lengths, cudaStream_t s);
cudaError_t launch_forward_bf16_d128(const kernels::ForwardArgs& a, bool has_lengths, cudaStream_t s);
cudaError_t launch_forward_bf16_d256(const kernels::ForwardArgs& a, bool has_lengths, cudaStream_t s);

}  // namespace dhp::sm80
