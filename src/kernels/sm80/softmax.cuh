// Online softmax over score fragments, in the exp2 domain.
//
// Per row the thread keeps m (running max of the raw, unscaled scores over
// every key seen so far) and l (its partial sum of exp2 weights over its own
// columns; the quad's partial sums are added once, at the end). For a new
// tile with row max mx:
//   m' = max(m, mx);  u = (m' == -inf) ? 0 : m'        (select, never NaN)
//   p  = exp2(s * c - u * c)         c = scale * log2(e), one FFMA per score
//   alpha = exp2((m - u) * c);  l = l * alpha + sum(p);  O *= alpha
// The rescale is unconditional: same instructions whether or not m moved.
// With scale > 0 (validated on the host) max over raw scores equals max over
// scaled ones, which is what lets the scale fold into the FFMA.
#pragma once
#include <cmath>

#include "kernels/common/ct.cuh"
#include "kernels/sm80/warp_mma.cuh"

namespace dhp::sm80 {

template <int MT>
struct OnlineSoftmax {
  float row_max[MT][2];  // raw-score running max; -inf until a key is visible
  float row_sum[MT][2];  // this thread's partial sum of weights

  __device__ __forceinline__ void init() {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        row_max[mt][hh] = -INFINITY;
        row_sum[mt][hh] = 0.0f;
      }
  }

  // Turns scores s into weights p in place and rescales the O accumulator.
  template <int NT, int NTO>
  __device__ __forceinline__ void update(float (&s)[MT][NT][4], float (&acc_o)[MT][NTO][4],
                                         float scale_log2) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        float mx = row_max[mt][hh];
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
          mx = ct::ct_fmax(mx, ct::ct_fmax(s[mt][nt][2 * hh], s[mt][nt][2 * hh + 1]));
        mx = quad_allreduce_max(mx);
        const float used = ct::ct_select_eq_f(mx, -INFINITY, 0.0f, mx);
        const float used_scaled = used * scale_log2;
        const float alpha = ct::ct_exp2((row_max[mt][hh] - used) * scale_log2);
        row_max[mt][hh] = mx;
        float sum = 0.0f;
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const float p = ct::ct_exp2(fmaf(s[mt][nt][2 * hh + e], scale_log2, -used_scaled));
            s[mt][nt][2 * hh + e] = p;
            sum += p;
          }
        row_sum[mt][hh] = fmaf(row_sum[mt][hh], alpha, sum);
#pragma unroll
        for (int dt = 0; dt < NTO; ++dt) {
          acc_o[mt][dt][2 * hh] *= alpha;
          acc_o[mt][dt][2 * hh + 1] *= alpha;
        }
      }
  }
};

}  // namespace dhp::sm80
