// TEST-ONLY timeline of one CTA (DHP_SM90_TIMELINE=N, never set in a shipped
// build): the leader thread of each warpgroup of CTA 0 stamps clock64 at
// named points (row 0 = producer, 1 + g = consumer g), and the N-th launch
// prints the stamps relative to consumer 0's start. Used to see where a
// small launch's time goes (docs/perf-log.md).
#pragma once

#include <cstdint>
#include <cstdio>

#ifndef DHP_SM90_TIMELINE
#define DHP_SM90_TIMELINE 0
#endif

namespace dhp::sm90::timeline {

// Consumer slots: 0 start, 1 Q landed, then per own key tile i: 2+3i K
// landed, 3+3i S landed, 4+3i softmax done; 40 last P·V done, 42 epilogue
// done. Producer: 0 start, 1 Q issued, 2+2t K issued, 3+2t V issued, 40
// tile decoded and the PDL wait passed, 41 q_empty passed, 42 Q bytes
// announced. Row 3: 0 kernel entry (every warpgroup's leader writes it;
// with PDL on, a later launch may overwrite it before the report).
inline constexpr int kSlots = 44;
#if DHP_SM90_TIMELINE
static __device__ unsigned long long g_marks[4][kSlots];
static __device__ unsigned g_launches;
__device__ __forceinline__ void mark(int row, int slot) {
  if (blockIdx.x == 0 && threadIdx.x % 128 == 0 && slot < kSlots) g_marks[row][slot] = clock64();
}
__device__ __forceinline__ void report() {
  if (blockIdx.x != 0 || threadIdx.x != 128) return;
  __threadfence();
  if (atomicAdd(&g_launches, 1u) != DHP_SM90_TIMELINE) return;
  const volatile unsigned long long* m = &g_marks[0][0];
  const long long t0 = static_cast<long long>(m[1 * kSlots]);
  for (int r = 0; r < 4; ++r)
    for (int s = 0; s < kSlots; s += 4)
      printf("timeline row %d slot %2d: %lld %lld %lld %lld\n", r, s, static_cast<long long>(m[r * kSlots + s]) - t0,
             static_cast<long long>(m[r * kSlots + s + 1]) - t0, static_cast<long long>(m[r * kSlots + s + 2]) - t0,
             static_cast<long long>(m[r * kSlots + s + 3]) - t0);
}
#else
__device__ __forceinline__ void mark(int, int) {}
__device__ __forceinline__ void report() {}
#endif

}  // namespace dhp::sm90::timeline
