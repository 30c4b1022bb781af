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

// Ends ptxas's basic block here. ptxas schedules within a basic block and
// moves independent arithmetic across a named-barrier wait freely; a
// conditional branch it cannot resolve stops that. The condition is a
// public count (never negative) through an opaque copy, so that neither
// compiler folds it; the trap is never reached. Costs a compare and a
// branch. Pass a different value at each site that must stay: ptxas drops a
// test whose outcome an earlier identical test already decided.
// DHP_BOUNDARY_BRKPT=1 ends the never-taken path with brkpt instead: with
// trap, ptxas spilled in the D = 128 / 256 and three-warpgroup kernels when
// they took the exp2 turn (an A/B setting only: mainloop.cuh); brkpt keeps
// them spill-free but lets ptxas move the first key tile's turn hand-off.
#ifndef DHP_BOUNDARY_BRKPT
#define DHP_BOUNDARY_BRKPT 0
#endif
__device__ __forceinline__ void block_boundary(int32_t public_nonnegative) {
  if (opaque_copy(public_nonnegative) < 0) {  // public: a count, never negative
    if (DHP_BOUNDARY_BRKPT)
      asm volatile("brkpt;");
    else
      asm volatile("trap;");
  }
}

}  // namespace dhp::kernels
