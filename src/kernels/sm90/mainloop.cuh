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

// A consumer thread's place in the tile, shared by both main loops: its
// first query row, where Q and the lengths live, and the select-based mask
// of an S tile (in every tile when lengths are secret, else only where the
// public structure needs it).
template <typename Traits>
struct ConsumerView {
  using T = typename Traits::T;
  static constexpr DType DT = dtype_of<T>();
  static constexpr int BM = Traits::kBlockM, BN = Traits::kBlockN, D = Traits::kHeadDim, S = Traits::kStages;
  using Range = sm80::KeyTileRange<BM, BN>;

  SharedStorage<Traits>& st;
  const kernels::ForwardArgs& args;
  const Range& range;
  int g, lane;
  int32_t m0, first_row;
  uint32_t lens_addr, q_base;
  uint32_t kv0;      // key tiles this CTA consumed before this tile (ring position)
  uint32_t q_phase;  // parity of this tile's q_full phase

  __device__ __forceinline__ ConsumerView(SharedStorage<Traits>& st_, const kernels::ForwardArgs& args_,
                                          const Range& range_, int32_t m0_, int g_, int wtid, uint32_t kv0_,
                                          uint32_t tile_count)
      : st(st_),
        args(args_),
        range(range_),
        g(g_),
        lane(wtid % 32),
        m0(m0_),
        first_row(m0_ + 64 * g_ + 16 * (wtid / 32) + (wtid % 32) / 4),
        lens_addr(static_cast<uint32_t>(__cvta_generic_to_shared(st_.lens[tile_count & 1]))),
        q_base(static_cast<uint32_t>(__cvta_generic_to_shared(st_.q)) + 64 * g_ * 128),
        kv0(kv0_),
        q_phase(tile_count & 1) {}

  // Ring slot and barrier parity of the tile's it-th key tile.
  __device__ __forceinline__ int stage(int32_t it) const { return (kv0 + it) % S; }
  __device__ __forceinline__ uint32_t parity(int32_t it) const { return ((kv0 + it) / S) & 1; }

  template <int NT>
  __device__ __forceinline__ void mask(float (&s3)[1][NT][4], int32_t n) const {
    int32_t L_q = args.seqlen_q, L_k = args.seqlen_k;
    if constexpr (Traits::kHasLengths)  // secret, re-read at a fixed address
      asm volatile("ld.shared.v2.s32 {%0, %1}, [%2];" : "=r"(L_q), "=r"(L_k) : "r"(lens_addr));
    if (Traits::kHasLengths || range.needs_mask(args, n, m0)) {  // public unless kHasLengths
      sm80::RowLimits<1> rows;
      rows.init(first_row, L_q, L_k, args.causal != 0);
      sm80::mask_scores(s3, n * Traits::kBlockN + 2 * (lane % 4), rows);
    }
  }
};

// Returns, through o and sm, the unnormalised O rows and the softmax state
// of this warpgroup's 64 rows. g: consumer warpgroup (0, 1); wtid: thread in
// the warpgroup.
template <typename Traits, typename View = ConsumerView<Traits>>
__device__ __forceinline__ void run_consumer(const View& view, float (&o)[View::D / 2], sm80::OnlineSoftmax<1>& sm) {
  using T = typename View::T;
  constexpr DType DT = View::DT;
  constexpr int BM = View::BM, BN = View::BN, D = View::D;
  auto& st = view.st;
  const auto& args = view.args;
  const auto& range = view.range;
  const uint32_t q_base = view.q_base;
#pragma unroll
  for (int i = 0; i < D / 2; ++i) o[i] = 0.0f;
  sm.init();
  tma::wait(&st.q_full, view.q_phase);

  for (int32_t it = 0; it < range.n_end; ++it) {  // public trip count
    const int s = view.stage(it);
    const uint32_t phase = view.parity(it);
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
    view.mask(s3, n);
    sm.update(s3, as_frag<D>(o), args.scale_log2);
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
