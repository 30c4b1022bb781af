// Epilogue: normalise O by 1/l (approximate reciprocal), replace empty and
// padded rows by o = 0 / lse = -inf with selects, stage O through shared
// memory and write it with 16-byte stores. Every row < S_q (public) is
// written on every call.
#pragma once
#include <cmath>
#include <cstdint>

#include "kernels/common/ct.cuh"
#include "kernels/sm80/smem_tile.cuh"
#include "kernels/sm80/softmax.cuh"
#include "kernels/sm80/warp_mma.cuh"

namespace dhp::sm80 {

// finalize_rows: the arithmetic half, shared with the Hopper kernel (whose
// stores go through TMA): O *= 1/l, empty / padded rows -> 0, and lse.
// acc_o: the warp's O accumulator; first_row: the warp's first query row in
// the sequence; L_q its (maybe secret) length: rows i >= L_q get o = 0,
// lse = -inf.
// HALVES = 1: only the first of each thread's two rows is a query row (the
// Hopper kernel's half-row tiles); the second is neither normalised nor
// written.
template <int MT, int NTO, int HALVES = 2>
__device__ __forceinline__ void finalize_rows(float (&acc_o)[MT][NTO][4], const OnlineSoftmax<MT>& sm,
                                              int32_t L_q, float scale_log2, int warp_row0,
                                              int32_t first_row, int32_t seqlen_q, float* lse_rows,
                                              int lane) {
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int hh = 0; hh < HALVES; ++hh) {
      const float l = quad_allreduce_sum(sm.row_sum[mt][hh]);
      // keep: a real row (i < L_q) that saw at least one key (l != 0). A NaN
      // l is kept so that NaN inputs propagate.
      const int32_t row = first_row + mt * 16 + hh * 8 + g;
      const ct::Mask keep = ct::ct_mask_and(ct::ct_mask_lt(row, L_q),
                                            ct::ct_mask_not(ct::ct_mask_eq_f(l, 0.0f)));
      const float inv_l = ct::ct_rcp(l);
#pragma unroll
      for (int dt = 0; dt < NTO; ++dt)
#pragma unroll
        for (int e = 0; e < 2; ++e)
          acc_o[mt][dt][2 * hh + e] = ct::ct_select(keep, acc_o[mt][dt][2 * hh + e] * inv_l, 0.0f);
      const float m = sm.row_max[mt][hh];
      const float m_used = ct::ct_select_eq_f(m, -INFINITY, 0.0f, m);
      // lse in natural log: (m * scale * log2 e + log2 l) * ln 2.
      const float lse =
          ct::ct_select(keep, (m_used * scale_log2 + ct::ct_log2(l)) * 0.69314718055994531f,
                        -INFINITY);
      const int32_t row_in_block = warp_row0 + mt * 16 + hh * 8 + g;
      if (lse_rows != nullptr && t == 0 && row < seqlen_q)  // public
        lse_rows[row_in_block] = lse;
    }
}

// write_output: finalize_rows, then the stores. `tile` holds this warp's own
// rows of a swizzled tile (only this warp reads or writes them from here on).
template <typename T, int MT, int NTO, int ROWS_PER_WARP, int BLOCK_ROWS, int D>
__device__ __forceinline__ void write_output(float (&acc_o)[MT][NTO][4],
                                             const OnlineSoftmax<MT>& sm,
                                             int32_t L_q, float scale_log2,
                                             SmemTile<BLOCK_ROWS, D> tile, int warp_row0,
                                             int32_t first_row, int32_t seqlen_q, T* o_rows,
                                             int64_t o_stride_seq, float* lse_rows, int lane) {
  finalize_rows(acc_o, sm, L_q, scale_log2, warp_row0, first_row, seqlen_q, lse_rows, lane);
  const int g = lane / 4, t = lane % 4;
  // Registers -> shared (this warp's rows), then coalesced 16-byte stores.
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int dt = 0; dt < NTO; ++dt)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const int row = warp_row0 + mt * 16 + hh * 8 + g;
        const uint32_t v = pack2<T>(acc_o[mt][dt][2 * hh], acc_o[mt][dt][2 * hh + 1]);
        asm volatile("st.shared.b32 [%0], %1;" ::"r"(tile.chunk_addr(row, dt) + 4 * t), "r"(v));
      }
  __syncwarp();
  constexpr int kChunksPerRow = D / 8;
#pragma unroll
  for (int c = lane; c < ROWS_PER_WARP * kChunksPerRow; c += 32) {
    const int row = c / kChunksPerRow, chunk = c % kChunksPerRow;
    uint4 v;
    asm volatile("ld.shared.v4.b32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "r"(tile.chunk_addr(warp_row0 + row, chunk)));
    if (first_row + row < seqlen_q)  // public: padded length
      *reinterpret_cast<uint4*>(o_rows + (warp_row0 + row) * o_stride_seq + chunk * 8) = v;
  }
}

}  // namespace dhp::sm80
