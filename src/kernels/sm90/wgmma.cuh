// Hopper warpgroup MMA (wgmma.mma_async) through our own inline PTX: the
// shared-memory matrix descriptor, the fence / commit / wait protocol, and
// the m64nNk16 multiply-accumulate wrappers (generated: wgmma_ops.inc; A
// from shared memory K-major, or MN-major with trans-a; B either way).
//
// A warpgroup is 4 consecutive warps (128 threads). One wgmma computes a
// 64 x N tile of D += A * B with K = 16: A is 64 x 16 (shared memory through
// a descriptor, or registers), B is 16 x N (shared memory through a
// descriptor). Accumulator fragment (fp32, N/2 registers per thread): for
// thread t (warp w = t / 32, lane l), register 4j + e holds
//   row = 16 w + l / 4 + 8 * (e / 2),  col = 8 j + 2 (l % 4) + (e % 2),
// the mma.sync m16n8 C fragment repeated over N / 8 column blocks.
// The register A fragment (4 x b32 = 8 halves) is the mma.sync m16n8k16 A
// fragment of the warp's 16 rows.
//
// ---------------------------------------------------------------------------
// Shared-memory matrix descriptor (64 bits, PTX ISA "Matrix Descriptor
// Format"); addresses and offsets are in bytes and encoded >> 4:
//   bits  0-13  start address       (shared window address >> 4)
//   bits 16-29  leading byte offset (LBO >> 4)
//   bits 32-45  stride byte offset  (SBO >> 4)
//   bits 49-51  base offset         (0: every tile we use is 1024-B aligned)
//   bits 62-63  swizzle             (1 = 128 B, 2 = 64 B, 3 = 32 B, 0 = none)
// With the 128-byte swizzle (the layout TMA's SWIZZLE_128B writes), a tile
// is stored in "column blocks" of 64 16-bit elements (128 B per row); within
// an 8-row, 1024-byte atom the 16-byte chunk c of row r sits at c ^ (r % 8).
//  * K-major operand (Q and K for S = Q Kᵀ: rows = M or N, K contiguous):
//    SBO = 1024 (next 8 rows); LBO unused (encoded 1). The k-th 16-column
//    step starts at  block (k / 4) * rows * 128 + (k % 4) * 32  bytes.
//  * MN-major operand (V for O += P V, stored [key][d] with d contiguous,
//    used with trans-b = 1): SBO = 1024 (next 8 keys, the K direction),
//    LBO = rows * 128 (next 64-wide column block, the N direction). The
//    k-th 16-key step starts at k * 16 * 128 bytes. The same descriptor
//    serves V as the A operand (trans-a = 1) of the narrow decode kernel's
//    Oᵀ += Vᵀ Pᵀ (decode_narrow.cuh): there M = 64 d's, one column block,
//    so LBO is not read; block b of D starts at b * rows * 128 bytes.
// tests/gpu/test_wgmma.cu checks these against a plain matmul on the GPU
// (N = 8 too, the narrow kernel's width).
#pragma once

#include <cstdint>

namespace dhp::sm90 {

enum class DType { F16, BF16 };

namespace desc {

enum Swizzle : uint64_t { kNone = 0, kSwizzle128B = 1, kSwizzle64B = 2, kSwizzle32B = 3 };

__host__ __device__ constexpr uint64_t encode(uint32_t smem_addr, uint32_t lbo_bytes, uint32_t sbo_bytes,
                                              Swizzle swizzle) {
  return (static_cast<uint64_t>((smem_addr & 0x3FFFF) >> 4)) |
         (static_cast<uint64_t>((lbo_bytes & 0x3FFFF) >> 4) << 16) |
         (static_cast<uint64_t>((sbo_bytes & 0x3FFFF) >> 4) << 32) | (static_cast<uint64_t>(swizzle) << 62);
}

// K-major, 128-byte swizzle: Q / K tiles for S = Q Kᵀ.
__host__ __device__ constexpr uint64_t k_major_sw128(uint32_t smem_addr) {
  return encode(smem_addr, 16, 1024, kSwizzle128B);
}

// MN-major, 128-byte swizzle: V tiles for O += P V (trans-b). rows = keys in
// the tile, so a 64-wide column block is rows * 128 bytes.
__host__ __device__ constexpr uint64_t mn_major_sw128(uint32_t smem_addr, uint32_t rows) {
  return encode(smem_addr, rows * 128, 1024, kSwizzle128B);
}

// Advancing a descriptor by `bytes` moves only its start address (the
// swizzle is applied by the hardware to the final address, so the +32 B
// steps inside a 128-B row stay valid).
__host__ __device__ constexpr uint64_t advance(uint64_t d, uint32_t bytes) { return d + (bytes >> 4); }
// The same as a 32-bit add on the low word: the address field (bits 0-13)
// cannot carry into the LBO field for addresses inside the 228 KB shared
// window, and one IADD per wgmma is what the main loop can afford.
__host__ __device__ constexpr uint64_t advance_lo(uint64_t d, uint32_t bytes) {
  return (d & 0xFFFFFFFF00000000ull) | static_cast<uint32_t>(static_cast<uint32_t>(d) + (bytes >> 4));
}

}  // namespace desc

// Byte offset of element (row, col) in a 128-B-swizzled tile with `rows`
// rows and 16-bit elements: the layout TMA SWIZZLE_128B produces when the
// box is 64 elements wide, stacked column block after column block.
__host__ __device__ constexpr uint32_t sw128_offset(uint32_t row, uint32_t col, uint32_t rows) {
  const uint32_t block = col / 64, in_row = (col % 64) * 2;
  return block * rows * 128 + row * 128 + ((((in_row >> 4) ^ (row & 7)) << 4) | (in_row & 15));
}

namespace wg {

// Orders this warpgroup's prior register / shared-memory writes before the
// following wgmma reads them.
__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Waits until at most N committed groups are still in flight.
template <int N>
__device__ __forceinline__ void wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accumulator reads / writes across the
// asynchronous MMA (the registers are in flight until wait()).
template <int R>
__device__ __forceinline__ void fence_operands(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
template <int A, int B>
__device__ __forceinline__ void fence_operands(float (&d)[A][B]) {
#pragma unroll
  for (int i = 0; i < A; ++i)
#pragma unroll
    for (int j = 0; j < B; ++j) asm volatile("" : "+f"(d[i][j])::"memory");
}
// Same for register A operands (P): they are read asynchronously until the
// group completes, so their registers must not be reused before wait().
template <int K>
__device__ __forceinline__ void fence_operands(uint32_t (&a)[K][4]) {
#pragma unroll
  for (int i = 0; i < K; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) asm volatile("" : "+r"(a[i][j])::"memory");
}

}  // namespace wg

template <DType T, int N>
struct MmaSS;
template <DType T, int N>
struct MmaRS;
#include "wgmma_ops.inc"

}  // namespace dhp::sm90
