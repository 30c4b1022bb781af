// Epilogue of the Hopper kernel: O (normalised by sm80::finalize_rows) goes
// from registers to shared memory with stmatrix, in the 128-byte swizzled
// column-block layout TMA uses (wgmma.cuh, sw128_offset), and from there to
// global memory with one TMA store per 64-column block and warp.
//
// Why TMA stores: one instruction per 16 x 64 box (8 x 64 for half-row
// tiles) replaces a per-thread loop
// of shared loads, 16-byte global stores and their address arithmetic, and
// the row guard (row < S_q) becomes the copy engine's clipping at the
// tensor map's public extent: rows at or past S_q are never written, without
// a branch. Every address and coordinate here is public (thread and tile
// indices).
//
// Buffer reuse: each warp stages only its own 16 rows (of the tile's Q
// buffer, of the two-consumer D = 64 kernel's O buffer, or at D = 256 of a
// ring slot: kernel_traits.cuh), and only lane 0
// of the warp issues (and so may wait for) its stores. Before the buffer is
// released for a later load (or, in the O buffer, rewritten by the next
// tile), lane 0 waits until the stores have read the rows
// (wait_staging_free, which also syncs the warp); forward_kernel.cuh says
// where.
#pragma once

#include <cstdint>

#include "kernels/common/opaque.cuh"
#include "kernels/sm80/warp_mma.cuh"
#include "kernels/sm90/tma.cuh"

namespace dhp::sm90::epilogue {

// Lane 0's previous stores from the staging rows have read them.
__device__ __forceinline__ void wait_staging_free(int lane) {
  if (lane == 0) tma::store_wait_read<0>();  // public: lane index
  __syncwarp();
}

// Stages this warp's 16 rows of O (fp32 accumulator, wgmma fragment as
// [1][D/8][4]) as T and stores them at rows row0.. of (head, batch): as
// many rows per store as the O map's box (16; 8 with half-row tiles, whose
// warps hold 8 real rows, the first of each 8 x 8 pair: launch.cuh).
// stage: the staging tile in shared memory (BM rows, D / 64 column blocks
// of BM x 128 B, 1024-byte aligned); warp_row0: the warp's first row in it
// (a multiple of 16, so each lane's row % 8 is its own and the swizzle is
// per lane).
template <typename T, int BM, int D, bool kRebuild = false>
__device__ __forceinline__ void store_rows_tma(const float (&o)[1][D / 8][4], const uint8_t* stage, int warp_row0,
                                               const void* tm_o, int32_t row0, int32_t head, int32_t batch,
                                               int lane) {
  // stmatrix .x4: lanes 8i..8i+7 give the row addresses of 8 x 8 matrix i;
  // matrix 0 / 1 = rows 0-7 / 8-15 of a 16-column step's first 8 columns,
  // 2 / 3 the same for its last 8. Register i is matrix i's mma-C fragment.
  // The addresses below are the same in every tile. kRebuild: built here
  // from an opaque copy of the lane rather than held through the main loop
  // (kernels/common/opaque.cuh; the three-warpgroup kernel).
  const int lane_here = kRebuild ? kernels::opaque_copy(lane) : lane;
  const int i = lane_here / 8, r = (lane_here % 8) + 8 * (i & 1), half = i >> 1;
  const uint32_t row_base =
      static_cast<uint32_t>(__cvta_generic_to_shared(stage)) + static_cast<uint32_t>((warp_row0 + r) * 128);
  // The swizzled chunk of step j depends on j % 4 only (4 steps = 128 B);
  // 4 per-lane addresses, the column block as an immediate.
  uint32_t addr[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) addr[j] = row_base + static_cast<uint32_t>(((2 * j + half) ^ (r & 7)) << 4);
#pragma unroll
  for (int j = 0; j < D / 16; ++j) {
    const uint32_t a = addr[j % 4] + static_cast<uint32_t>((j / 4) * BM * 128);
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(a),
                 "r"(sm80::pack2<T>(o[0][2 * j][0], o[0][2 * j][1])),
                 "r"(sm80::pack2<T>(o[0][2 * j][2], o[0][2 * j][3])),
                 "r"(sm80::pack2<T>(o[0][2 * j + 1][0], o[0][2 * j + 1][1])),
                 "r"(sm80::pack2<T>(o[0][2 * j + 1][2], o[0][2 * j + 1][3]))
                 : "memory");
  }
  tma::fence_generic_to_async();  // this lane's writes, before the copy engine reads them
  __syncwarp();
  if (lane == 0) {  // public: lane index
#pragma unroll
    for (int b = 0; b < D / 64; ++b)
      tma::store_4d(tm_o, stage + b * BM * 128 + warp_row0 * 128, 64 * b, row0, head, batch);
    tma::store_commit();
  }
}

// The decode kernel's partial O (sm90/decode.hpp): this warp's 16 rows of
// the fp32 accumulator (as [1][D/8][4]: a thread holds rows lane/4 and
// lane/4 + 8, columns 8j + 2 (lane % 4) + {0, 1}) stored straight from
// registers, 8 bytes per store, a quad writing 32 contiguous bytes of a
// row. rows: the tile's first row of the work unit's [S_q, D] block;
// warp_row0 / first_row: the warp's first row in the tile / in the
// sequence. Rows at or past S_q (public) are not written.
template <int D>
__device__ __forceinline__ void store_rows_fp32(const float (&o)[1][D / 8][4], float* rows, int warp_row0,
                                                int32_t first_row, int32_t seqlen_q, int lane) {
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    if (first_row + hh * 8 + g < seqlen_q) {  // public: position
      float* row = rows + static_cast<int64_t>(warp_row0 + hh * 8 + g) * D + 2 * t;
#pragma unroll
      for (int j = 0; j < D / 8; ++j)
        *reinterpret_cast<float2*>(row + 8 * j) = make_float2(o[0][j][2 * hh], o[0][j][2 * hh + 1]);
    }
  }
}

}  // namespace dhp::sm90::epilogue
