// Online softmax for the overlapped Hopper main loop: the same exp2-domain
// arithmetic as the portable kernel (sm80/softmax.cuh), split in two so that
// the O rescale can wait for the P·V still in flight on the tensor cores:
//   weights(s)  -> turns scores into weights in place, returns alpha per row
//   rescale(o)  -> O *= alpha, after the previous P·V has completed.
// Per row: m' = max(m, tile max); u = (m' == -inf) ? 0 : m' (select);
// p = exp2(s*c - u*c); alpha = exp2((m - u)*c); l = l*alpha + sum(p).
#pragma once

#include <cmath>

// DHP_SM90_MAX_TREE, a mask by head dim (1: D = 64, 2: 128, 4: 256): the
// row max as a pairwise tree (the same 32 FMNMX per row and key tile, 6
// deep instead of 17); max is exact, so the bits are those of the chain.
// Shipped for D = 128 without secret lengths: +0.7 to +1.8 % on its ten
// FA3-grid rows in a six-round A/B; D = 64 and 256 -0.6 to 0 %, the
// secret-length D = 128 kernel -1.2 % (docs/perf-log.md, session 16).
// mainloop.cuh picks it per kernel (kMaxTree).
#ifndef DHP_SM90_MAX_TREE
#define DHP_SM90_MAX_TREE 2
#endif

#include "kernels/common/ct.cuh"
#include "kernels/sm80/warp_mma.cuh"

namespace dhp::sm90 {

template <bool MAX_TREE = false>
struct SplitSoftmax {
  float row_max[2];  // raw-score running max of the thread's two rows
  float row_sum[2];  // this thread's partial sums (quad-reduced at the end)
  float used_scaled[2];  // max_phase -> exp_phase: the max the weights subtract, times the scale

  __device__ __forceinline__ void init() {
    row_max[0] = row_max[1] = -INFINITY;
    row_sum[0] = row_sum[1] = 0.0f;
  }

  // One row's max: updates the running max and alpha, returns the max the
  // weights subtract, times the scale.
  template <int NT>
  __device__ __forceinline__ float row_max_step(const float (&s)[1][NT][4], int hh, float scale_log2,
                                                float (&alpha)[2]) {
    float mx = row_max[hh];
    if constexpr (MAX_TREE) {
      float v[NT];
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) v[nt] = ct::ct_fmax(s[0][nt][2 * hh], s[0][nt][2 * hh + 1]);
#pragma unroll
      for (int w = 1; w < NT; w *= 2)
#pragma unroll
        for (int nt = 0; nt + w < NT; nt += 2 * w) v[nt] = ct::ct_fmax(v[nt], v[nt + w]);
      mx = ct::ct_fmax(mx, v[0]);
    } else {
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) mx = ct::ct_fmax(mx, ct::ct_fmax(s[0][nt][2 * hh], s[0][nt][2 * hh + 1]));
    }
    mx = sm80::quad_allreduce_max(mx);
    const float used = ct::ct_select_eq_f(mx, -INFINITY, 0.0f, mx);
    const float used_scaled_here = used * scale_log2;
    alpha[hh] = ct::ct_exp2((row_max[hh] - used) * scale_log2);
    row_max[hh] = mx;
    return used_scaled_here;
  }

  // One row's weights (in place) and row sum.
  template <int NT>
  __device__ __forceinline__ void row_weights_step(float (&s)[1][NT][4], int hh, float scale_log2, float used_scaled,
                                                   const float (&alpha)[2]) {
    // One chain of FADDs, in column order (two or four interleaved partial
    // sums measured 1-6 % slower at D = 64: perf-log, session 16).
    float sum = 0.0f;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float p = ct::ct_exp2(fmaf(s[0][nt][2 * hh + e], scale_log2, -used_scaled));
        s[0][nt][2 * hh + e] = p;
        sum += p;
      }
    row_sum[hh] = fmaf(row_sum[hh], alpha[hh], sum);
  }

  // Max and weights row by row (the kernels that take the ping-pong turn
  // around their GEMM issue; kept in this order, their SASS is unchanged).
  template <int NT>
  __device__ __forceinline__ void weights(float (&s)[1][NT][4], float scale_log2, float (&alpha)[2]) {
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const float used_scaled_here = row_max_step(s, hh, scale_log2, alpha);
      row_weights_step(s, hh, scale_log2, used_scaled_here, alpha);
    }
  }

  // weights() in two phases, so that a caller can put something between the
  // row max (FMNMX chains, shuffles: no MUFU) and the exp2 stream (MUFU):
  // the same arithmetic per row, so the same bits.
  template <int NT>
  __device__ __forceinline__ void max_phase(const float (&s)[1][NT][4], float scale_log2, float (&alpha)[2]) {
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) used_scaled[hh] = row_max_step(s, hh, scale_log2, alpha);
  }
  template <int NT>
  __device__ __forceinline__ void exp_phase(float (&s)[1][NT][4], float scale_log2, const float (&alpha)[2]) {
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) row_weights_step(s, hh, scale_log2, used_scaled[hh], alpha);
  }

  // Half-row tiles (kernel_traits.cuh, kHalfRows): only the first row of
  // the thread's two holds a query row; the second's weights are 0 (its
  // scores, from unloaded Q rows, are never read) and its O never rescaled
  // or stored. The first row's arithmetic is weights()'s, op for op.
  template <int NT>
  __device__ __forceinline__ void weights_first_half(float (&s)[1][NT][4], float scale_log2, float (&alpha)[2]) {
    const float used_scaled_here = row_max_step(s, 0, scale_log2, alpha);
    row_weights_step(s, 0, scale_log2, used_scaled_here, alpha);
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) s[0][nt][2] = s[0][nt][3] = 0.0f;
    alpha[1] = 1.0f;
  }
  template <int NTO>
  __device__ __forceinline__ static void rescale_first_half(float (&o)[1][NTO][4], const float (&alpha)[2]) {
#pragma unroll
    for (int dt = 0; dt < NTO; ++dt)
#pragma unroll
      for (int e = 0; e < 2; ++e) o[0][dt][e] *= alpha[0];
  }

  // Unconditional: the same multiplies whether or not the max moved.
  template <int NTO>
  __device__ __forceinline__ static void rescale(float (&o)[1][NTO][4], const float (&alpha)[2]) {
#pragma unroll
    for (int dt = 0; dt < NTO; ++dt)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[0][dt][e] *= alpha[e / 2];
  }

  // The portable epilogue reads OnlineSoftmax<1>; same fields, same meaning.
  template <typename Portable>
  __device__ __forceinline__ void export_to(Portable& p) const {
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      p.row_max[0][hh] = row_max[hh];
      p.row_sum[0][hh] = row_sum[hh];
    }
  }
};

}  // namespace dhp::sm90
