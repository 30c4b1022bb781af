// Shared-memory tiles of ROWS x D 16-bit elements in a swizzled layout, and
// the cp.async loader that fills them from a strided global tensor.
//
// Layout: row r occupies D*2 bytes (a multiple of 128); its 16-byte chunk c
// is stored at chunk position c ^ (r % 8). Eight consecutive rows read at the
// same logical chunk (one ldmatrix phase) then hit eight different 16-byte
// bank groups: no bank conflicts for ldmatrix, cp.async or the epilogue.
// Every address below depends only on thread/row/chunk indices (public).
#pragma once
#include <cstdint>

#include "kernels/sm80/warp_mma.cuh"

namespace dhp::sm80 {

template <int ROWS, int D>
struct SmemTile {
  static constexpr int kChunksPerRow = D / 8;  // 16-byte chunks
  static constexpr int kBytes = ROWS * D * 2;
  static_assert(kChunksPerRow % 8 == 0, "swizzle needs rows of at least 128 bytes");

  uint32_t base;  // shared-space address of the tile

  // Byte address of 16-byte chunk `chunk` of row `row`.
  __device__ __forceinline__ uint32_t chunk_addr(int row, int chunk) const {
    return base + static_cast<uint32_t>((row * kChunksPerRow + (chunk ^ (row & 7))) * 16);
  }
};

// Per-lane ldmatrix addressing into a swizzled tile. The lane reads row
// (row_lane + r) at chunk (2*step + chunk_lane), with r a multiple of 8 and
// step a compile-time loop index. Since (row_lane + r) % 8 is fixed per lane,
// the swizzle of chunk 2*step + chunk_lane repeats every 4 steps, 128 bytes
// further on: four precomputed addresses plus an immediate cover the tile,
// instead of one register per (row, step) that the compiler would hoist.
template <int ROWS, int D>
struct LdmatrixCursor {
  static constexpr int kRowBytes = D * 2;
  uint32_t addr[4];

  __device__ __forceinline__ LdmatrixCursor(SmemTile<ROWS, D> tile, int row_lane, int chunk_lane) {
#pragma unroll
    for (int j = 0; j < 4; ++j)
      addr[j] = tile.base +
                static_cast<uint32_t>(row_lane * kRowBytes + (((2 * j + chunk_lane) ^ (row_lane & 7)) * 16));
  }
  __device__ __forceinline__ uint32_t at(int row_offset, int step) const {
    return addr[step % 4] + static_cast<uint32_t>(row_offset * kRowBytes + (step / 4) * 128);
  }
};

// Copies rows [row0, row0 + ROWS) of a [S, D] slice (rows `stride` elements
// apart) into `tile` with cp.async. Rows at or beyond the public padded
// length S are zero-filled without reading memory (public guard). All
// NTHREADS threads take part; the caller commits the group.
template <int ROWS, int D, int NTHREADS, typename T>
__device__ __forceinline__ void load_tile_async(SmemTile<ROWS, D> tile, const T* gmem,
                                                int64_t stride, int row0, int S, int tid) {
  constexpr int kChunksPerRow = SmemTile<ROWS, D>::kChunksPerRow;
  constexpr int kRowsPerPass = NTHREADS / kChunksPerRow;
  static_assert(NTHREADS % kChunksPerRow == 0 && ROWS % kRowsPerPass == 0, "even split");
  static_assert(kRowsPerPass % 8 == 0, "passes keep row % 8, so the swizzle is per thread");
  const int row = tid / kChunksPerRow, chunk = tid % kChunksPerRow;
  // The optimiser would otherwise hoist one 64-bit offset per pass out of
  // the key loop (and spill them); an opaque step keeps it to one add.
  int64_t step = stride * kRowsPerPass;
  asm volatile("" : "+l"(step));
  const T* src = gmem + static_cast<int64_t>(row0 + row) * stride + chunk * 8;
  const uint32_t dst = tile.chunk_addr(row, chunk);
#pragma unroll
  for (int pass = 0; pass < ROWS / kRowsPerPass; ++pass) {
    const bool in_range = row0 + row + pass * kRowsPerPass < S;  // public: S is the padded length
    // Out-of-range rows read 0 bytes from row 0 of the slice (always valid).
    cp_async_16(dst + pass * kRowsPerPass * D * 2, in_range ? src : gmem, in_range ? 16 : 0);
    src += step;
  }
}

}  // namespace dhp::sm80
