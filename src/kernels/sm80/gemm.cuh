// The two warp-level GEMMs of one key tile, from swizzled shared memory:
//   S  = Q_w K^T   (Q_w: this warp's rows; A and B both by ldmatrix)
//   O += P V       (P: the warp's weights, already in registers as A;
//                   V by ldmatrix.trans so that it serves as a "col" B)
// Every shared-memory address is a function of lane, warp and loop indices.
#pragma once
#include <cstdint>

#include "kernels/common/ct.cuh"
#include "kernels/sm80/mask.cuh"
#include "kernels/sm80/smem_tile.cuh"
#include "kernels/sm80/warp_mma.cuh"

namespace dhp::sm80 {

template <typename T, int MT, int NT, int BM, int BN, int D>
__device__ __forceinline__ void gemm_qk(float (&s)[MT][NT][4], SmemTile<BM, D> sq,
                                        SmemTile<BN, D> sk, int warp_row0, int lane) {
  static_assert(NT * 8 == BN, "S tile width");
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[mt][nt][e] = 0.0f;
  // A: lane l reads row l % 16 at chunk 2*ks + l / 16 (matrices a0..a3).
  const LdmatrixCursor<BM, D> q_cur(sq, warp_row0 + lane % 16, lane / 16);
  // B: matrices (n 0-7, k lo), (n 0-7, k hi), (n 8-15, k lo), (n 8-15, k hi).
  const LdmatrixCursor<BN, D> k_cur(sk, (lane / 16) * 8 + lane % 8, (lane / 8) % 2);
#pragma unroll
  for (int ks = 0; ks < D / 16; ++ks) {
    uint32_t qa[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) ldmatrix_x4(qa[mt], q_cur.at(mt * 16, ks));
#pragma unroll
    for (int np = 0; np < NT / 2; ++np) {
      uint32_t kb[4];
      ldmatrix_x4(kb, k_cur.at(np * 16, ks));
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        mma_16816<T>(s[mt][2 * np], qa[mt], kb[0], kb[1]);
        mma_16816<T>(s[mt][2 * np + 1], qa[mt], kb[2], kb[3]);
      }
    }
  }
}

// Weights of a tile as the A operand of P*V: 16-bit pairs in the m16k16
// fragment order (a0..a3 of k-step kk come from S n-tiles 2kk and 2kk+1).
// Packing right after the softmax halves the registers P holds across the
// barrier that precedes P*V.
template <typename T, int MT, int NT>
__device__ __forceinline__ void pack_weights(uint32_t (&pa)[MT][NT / 2][4],
                                             const float (&p)[MT][NT][4]) {
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int kk = 0; kk < NT / 2; ++kk) {
      pa[mt][kk][0] = pack2<T>(p[mt][2 * kk][0], p[mt][2 * kk][1]);
      pa[mt][kk][1] = pack2<T>(p[mt][2 * kk][2], p[mt][2 * kk][3]);
      pa[mt][kk][2] = pack2<T>(p[mt][2 * kk + 1][0], p[mt][2 * kk + 1][1]);
      pa[mt][kk][3] = pack2<T>(p[mt][2 * kk + 1][2], p[mt][2 * kk + 1][3]);
    }
}

// O += P V. With MASK_V, padded keys' V entries (key >= L_k) are zeroed
// before use; key0 is this lane's first key column (tile start + 2t). The
// masks are built per k-step rather than held through the loop (registers).
template <typename T, bool MASK_V, int MT, int KSTEPS, int NTO, int BN, int D>
__device__ __forceinline__ void gemm_pv(float (&acc_o)[MT][NTO][4], const uint32_t (&pa)[MT][KSTEPS][4],
                                        SmemTile<BN, D> sv, int32_t key0, int32_t L_k, int lane) {
  static_assert(NTO * 8 == D && KSTEPS * 16 == BN, "tile shapes");
  // Transposed B: matrices (keys 0-7, d lo), (keys 8-15, d lo), (keys 0-7,
  // d hi), (keys 8-15, d hi); here the "step" runs over d chunk pairs.
  const LdmatrixCursor<BN, D> v_cur(sv, ((lane / 8) % 2) * 8 + lane % 8, lane / 16);
#pragma unroll
  for (int kk = 0; kk < KSTEPS; ++kk) {
    KeyMask key_mask;
    if constexpr (MASK_V) key_mask.init(L_k - key0 - kk * 16);
#pragma unroll
    for (int dp = 0; dp < D / 16; ++dp) {
      uint32_t vb[4];
      ldmatrix_x4_trans(vb, v_cur.at(kk * 16, dp));
      if constexpr (MASK_V) {
        vb[0] = ct::ct_and_mask(key_mask.b0, vb[0]);
        vb[1] = ct::ct_and_mask(key_mask.b1, vb[1]);
        vb[2] = ct::ct_and_mask(key_mask.b0, vb[2]);
        vb[3] = ct::ct_and_mask(key_mask.b1, vb[3]);
      }
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        mma_16816<T>(acc_o[mt][2 * dp], pa[mt][kk], vb[0], vb[1]);
        mma_16816<T>(acc_o[mt][2 * dp + 1], pa[mt][kk], vb[2], vb[3]);
      }
    }
  }
}

}  // namespace dhp::sm80
