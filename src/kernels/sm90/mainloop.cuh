// Consumer warpgroup main loop of the Hopper kernel: per key tile,
//   S = Q·Kᵀ        (SS wgmma, D/16 instructions of m64nBNk16)
//   mask, softmax   (on the accumulator fragment; the portable kernel's
//                    select-based mask and exp2 online softmax, MT = 1)
//   O += P·V        (RS wgmma: P packed to 16 bit in registers as A, V
//                    MN-major from shared memory; BN/16 instructions)
// The wgmma accumulator fragment of one warp is the mma.sync m16n8 C
// fragment over BN/8 (or D/8) column blocks, so the portable mask and
// softmax code applies unchanged to it viewed as [1][N/8][4].
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "kernels/forward_args.hpp"
#include "kernels/sm80/forward_kernel.cuh"
#include "kernels/sm80/mask.cuh"
#include "kernels/sm80/softmax.cuh"
#include "kernels/sm80/warp_mma.cuh"
#include "kernels/sm90/kernel_traits.cuh"
#include "kernels/sm90/tma.cuh"
#include "kernels/sm90/wgmma.cuh"

namespace dhp::sm90 {

template <int N>
__device__ __forceinline__ float (&as_frag(float (&x)[N / 2]))[1][N / 8][4] {
  return *reinterpret_cast<float(*)[1][N / 8][4]>(&x);
}

template <typename T>
constexpr DType dtype_of() {
  return std::is_same_v<T, __half> ? DType::F16 : DType::BF16;
}

// Returns, through o and sm, the unnormalised O rows and the softmax state
// of this warpgroup's 64 rows. g: consumer warpgroup (0, 1); wtid: thread in
// the warpgroup.
template <typename Traits>
__device__ __forceinline__ void run_consumer(SharedStorage<Traits>& st, const kernels::ForwardArgs& args,
                                             const sm80::KeyTileRange<Traits::kBlockM, Traits::kBlockN>& range,
                                             int32_t m0, int g, int wtid, float (&o)[Traits::kHeadDim / 2],
                                             sm80::OnlineSoftmax<1>& sm) {
  using T = typename Traits::T;
  constexpr DType DT = dtype_of<T>();
  constexpr int BM = Traits::kBlockM, BN = Traits::kBlockN, D = Traits::kHeadDim, S = Traits::kStages;
  const int warp = wtid / 32, lane = wtid % 32;
  const int32_t first_row = m0 + 64 * g + 16 * warp + lane / 4;
  const uint32_t lens_addr = static_cast<uint32_t>(__cvta_generic_to_shared(st.lens));
  auto lengths = [&](int32_t& L_q, int32_t& L_k) {
    if constexpr (Traits::kHasLengths) {
      asm volatile("ld.shared.v2.s32 {%0, %1}, [%2];" : "=r"(L_q), "=r"(L_k) : "r"(lens_addr));
    } else {
      L_q = args.seqlen_q;
      L_k = args.seqlen_k;
    }
  };
#pragma unroll
  for (int i = 0; i < D / 2; ++i) o[i] = 0.0f;
  sm.init();
  const uint32_t q_base = static_cast<uint32_t>(__cvta_generic_to_shared(st.q)) + 64 * g * 128;
  tma::wait(&st.q_full, 0);

  for (int32_t it = 0; it < range.n_end; ++it) {  // public trip count
    const int s = it % S;
    const uint32_t phase = (it / S) & 1;
    const int32_t n = range.n_end - 1 - it;
    const uint32_t k_base = static_cast<uint32_t>(__cvta_generic_to_shared(st.k[s]));
    const uint32_t v_base = static_cast<uint32_t>(__cvta_generic_to_shared(st.v[s]));

    float sacc[BN / 2];
    tma::wait(&st.k_full[s], phase);
    wg::fence();
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
      MmaSS<DT, BN>::template run<0>(sacc, desc::k_major_sw128(q_base + (kk / 4) * BM * 128 + (kk % 4) * 32),
                                     desc::k_major_sw128(k_base + (kk / 4) * BN * 128 + (kk % 4) * 32), kk > 0);
    wg::commit();
    wg::wait<0>();
    wg::fence_operands(sacc);
    tma::arrive(&st.k_empty[s]);

    auto& s3 = as_frag<BN>(sacc);
    auto& o3 = as_frag<D>(o);
    int32_t L_q, L_k;
    lengths(L_q, L_k);
    if (Traits::kHasLengths || range.needs_mask(args, n, m0)) {  // public unless kHasLengths
      sm80::RowLimits<1> rows;
      rows.init(first_row, L_q, L_k, args.causal != 0);
      sm80::mask_scores(s3, n * BN + 2 * (lane % 4), rows);
    }
    sm.update(s3, o3, args.scale_log2);
    // P as the A operand: registers 8k..8k+7 of S hold keys 16k..16k+15.
    uint32_t p[BN / 16][4];
#pragma unroll
    for (int k = 0; k < BN / 16; ++k)
#pragma unroll
      for (int r = 0; r < 4; ++r) p[k][r] = sm80::pack2<T>(sacc[8 * k + 2 * r], sacc[8 * k + 2 * r + 1]);

    tma::wait(Traits::kHasLengths ? &st.v_ready[s] : &st.v_full[s], phase);
    wg::fence();
#pragma unroll
    for (int k = 0; k < BN / 16; ++k)
      MmaRS<DT, D>::template run<1>(o, p[k], desc::mn_major_sw128(v_base + k * 16 * 128, BN), 1);
    wg::commit();
    wg::wait<0>();
    wg::fence_operands(o);
    tma::arrive(&st.v_empty[s]);
  }
}

}  // namespace dhp::sm90
