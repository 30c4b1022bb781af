// opaque_copy(x): x, through an empty volatile asm that the compiler must
// assume changes it, so the compiler front end does not hoist what is
// computed from it out of the persistent tile loop (to be held in registers
// through the main loop). The Hopper kernels with three consumer warpgroups
// (160 registers per thread, 128 of them the S, P and O fragments) have no
// register to spare for such loop-invariant values; a few integer
// instructions per tile are cheaper than a spill. No instruction reaches
// ptxas, which could in principle hoist again: the SASS is what confirms it
// (0 spills, checked by every build's ptxas report).
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
