// opaque_copy(x): x, through an empty volatile asm that the compiler must
// assume changes it. Values computed from the copy are computed where it is
// taken instead of being hoisted out of the persistent tile loop and held in
// registers through the main loop. The Hopper kernels with three consumer
// warpgroups (160 registers per thread, 128 of them the S, P and O
// fragments) have no register to spare for such loop-invariant values; a few
// integer instructions per tile are cheaper than a spill. No instruction is
// emitted for the copy itself.
#pragma once

#include <cstdint>

namespace dhp::kernels {

template <typename U>
__device__ __forceinline__ U opaque_copy(U x) {
  static_assert(sizeof(U) == 4, "32-bit values");
  asm volatile("" : "+r"(x));
  return x;
}

}  // namespace dhp::kernels
