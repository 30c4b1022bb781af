// TEST-ONLY timeline of one CTA (DHP_SM90_TIMELINE=N, never set in a shipped
// build): the leader thread of each warpgroup of CTA 0 stamps clock64 at
// named points (row 0 = producer, 1 + g = consumer g), and after the N-th
// launch a separate one-thread kernel prints the stamps relative to
// consumer 0's start. The print is a kernel of its own because a printf in
// the attention kernel makes ptxas serialise its wgmma pipeline (C7510),
// which would time a different kernel. Used to see where a launch's time
// goes (docs/perf-log.md).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#ifndef DHP_SM90_TIMELINE
#define DHP_SM90_TIMELINE 0
#endif
// TEST-ONLY builds must say so (scripts/length-timing-diag.sh,
// scripts/timeline-run.sh): a shipped build cannot carry this by accident.
#if DHP_SM90_TIMELINE && !defined(DHP_TEST_ONLY_BUILD)
#error "DHP_SM90_TIMELINE is a TEST-ONLY diagnostic (per-CTA timestamps in global memory); define DHP_TEST_ONLY_BUILD to build it"
#endif

namespace dhp::sm90::timeline {

// mark(): consumer slots: 0 start, 1 Q landed, then per own key tile i:
// 2+3i K landed, 3+3i S landed, 4+3i softmax done; 40 last P·V done, 42
// epilogue done. Producer: 0 start, 1 Q issued, 2+2t K issued, 3+2t V
// issued, 40 tile decoded and the PDL wait passed, 41 q_empty passed, 42 Q
// bytes announced. Row 3: 0 kernel entry. Later tiles overwrite earlier ones.
// tile(): the tile boundary, per tile tc < kTiles of CTA 0 (events below).
inline constexpr int kSlots = 44, kTiles = 12, kEvents = 8;
// Consumer events: 0 loop top, 1 tile decoded, 2 Q landed, 3 first S landed,
// 4 last P·V done, 5 O normalised, 6 O stores issued, 7 staging read (Q
// buffer released; with kOBuffer right after 6: Q went at the last S
// GEMM). Producer: 0 loop top, 1 q_empty passed, 2 Q issued, 3 first K
// issued, 4 last V issued.
// DHP_SM90_TIMELINE_TILE=k: mark() stamps only during CTA 0's tile k (its
// per-key-tile steps), instead of letting later tiles overwrite them.
#ifndef DHP_SM90_TIMELINE_TILE
#define DHP_SM90_TIMELINE_TILE -1
#endif
#if DHP_SM90_TIMELINE
static __device__ unsigned long long g_marks[4][kSlots];
static __device__ unsigned long long g_tiles[4][kTiles][kEvents];
static __device__ int g_current_tile[4];
__device__ __forceinline__ void mark(int row, int slot) {
  if (blockIdx.x == 0 && threadIdx.x % 128 == 0 && slot < kSlots &&
      (DHP_SM90_TIMELINE_TILE < 0 || g_current_tile[row] == DHP_SM90_TIMELINE_TILE))
    g_marks[row][slot] = clock64();
}
__device__ __forceinline__ void tile(int row, uint32_t tc, int event) {
  if (blockIdx.x == 0 && threadIdx.x % 128 == 0 && event == 0) g_current_tile[row] = static_cast<int>(tc);
  if (blockIdx.x == 0 && threadIdx.x % 128 == 0 && tc < kTiles) g_tiles[row][tc][event] = clock64();
}
// cta_time(): every CTA's wall clock (%globaltimer, ns): 0 kernel entry,
// 1 the producer past the PDL wait, 2 the last consumer warpgroup done with
// its last tile (each stamps; the later store stays). The print kernel
// reports them relative to the earliest PDL pass, and which CTA ends last:
// the call ends with the last CTA, not with CTA 0.
inline constexpr int kCtas = 1024;
static __device__ unsigned long long g_cta[kCtas][3];
__device__ __forceinline__ void cta_time(int event) {
  if (threadIdx.x % 128 == 0 && blockIdx.x < kCtas) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    g_cta[blockIdx.x][event] = t;
  }
}
static __global__ void print_kernel() {
  {
    unsigned long long pdl_min = ~0ull, pdl_max = 0, end_max = 0, end_min = ~0ull, entry_min = ~0ull;
    int last = -1, n = 0;  // n: the CTAs that stamped (the grid's CTAs come first)
    for (int c = 0; c < kCtas && g_cta[c][2] != 0; ++c, ++n) {
      entry_min = g_cta[c][0] < entry_min ? g_cta[c][0] : entry_min;
      pdl_min = g_cta[c][1] < pdl_min ? g_cta[c][1] : pdl_min;
      pdl_max = g_cta[c][1] > pdl_max ? g_cta[c][1] : pdl_max;
      end_min = g_cta[c][2] < end_min ? g_cta[c][2] : end_min;
      if (g_cta[c][2] > end_max) end_max = g_cta[c][2], last = c;
    }
    printf("ctas %d: entry %lld, pdl pass 0..%lld, end %lld..%lld ns (last: CTA %d, pdl %lld)\n", n,
           static_cast<long long>(entry_min - pdl_min), static_cast<long long>(pdl_max - pdl_min),
           static_cast<long long>(end_min - pdl_min), static_cast<long long>(end_max - pdl_min), last,
           last >= 0 ? static_cast<long long>(g_cta[last][1] - pdl_min) : -1);
    for (int c = 0; c < n; c += 8) {
      printf("cta %3d..:", c);
      for (int d = c; d < c + 8 && d < n; ++d) printf(" %lld", static_cast<long long>(g_cta[d][2] - pdl_min));
      printf("\n");
    }
  }
  const long long t0 = static_cast<long long>(g_tiles[1][0][0]);
  for (int r = 0; r < 4; ++r)
    for (int s = 0; s < kSlots; s += 4)
      printf("timeline row %d slot %2d: %lld %lld %lld %lld\n", r, s, static_cast<long long>(g_marks[r][s]) - t0,
             static_cast<long long>(g_marks[r][s + 1]) - t0, static_cast<long long>(g_marks[r][s + 2]) - t0,
             static_cast<long long>(g_marks[r][s + 3]) - t0);
  for (int r = 0; r < 4; ++r)  // row 3: the third consumer warpgroup (192-row tiles)
    for (int t = 0; t < kTiles; ++t) {
      printf("tiles row %d tile %2d:", r, t);
      for (int e = 0; e < kEvents; ++e) printf(" %lld", static_cast<long long>(g_tiles[r][t][e]) - t0);
      printf("\n");
    }
}
// Host side, after each launch: prints after the N-th of this unit (each
// instantiation unit has its own marks, counter and print kernel).
static void after_launch(cudaStream_t stream) {
  static int launches = 0;
  if (++launches == DHP_SM90_TIMELINE) print_kernel<<<1, 1, 0, stream>>>();
}
#else
__device__ __forceinline__ void cta_time(int) {}
__device__ __forceinline__ void mark(int, int) {}
__device__ __forceinline__ void tile(int, uint32_t, int) {}
inline void after_launch(cudaStream_t) {}
#endif

}  // namespace dhp::sm90::timeline
