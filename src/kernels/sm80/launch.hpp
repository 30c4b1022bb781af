// Host-side entry points of the portable kernel, one per (dtype, head dim);
// defined in the instantiate_*.cu files so that each compiles on its own.
#pragma once
#include <cuda_runtime.h>

#include "kernels/common/launch_util.hpp"

namespace dhp::sm80 {

// has_lengths selects the instantiation that masks by select in every tile.
DHP_DECLARE_FORWARD_LAUNCHERS

}  // namespace dhp::sm80
