// Host-side entry points of the Hopper kernel, one per (dtype, head dim);
// defined in the instantiate_*.cu files. They return cudaErrorNotSupported,
// launching nothing, when the tensors cannot be described to TMA (a base
// address or a stride not a multiple of 16 bytes) or when no scratch memory
// can be had for the zero-padded copy of V (padding_scrub.hpp); the
// dispatcher then uses the portable kernel.
#pragma once
#include <cuda_runtime.h>

#include "kernels/common/launch_util.hpp"

namespace dhp::sm90 {

DHP_DECLARE_FORWARD_LAUNCHERS

}  // namespace dhp::sm90
