// The portable constant-time attention forward kernel (sm_80+, mma.sync).
//
// One CTA computes a kBlockM-row block of O for one (batch, head). Its key
// loop runs over a trip count derived only from public values (S_k, and the
// causal diagonal when that is public); K and V tiles stream through shared
// memory with cp.async, K(n-1) loading during the P*V of tile n and V(n)
// during Q*K^T(n) and the softmax. Masking is by select: in every tile when
// lengths are secret, only in the public-structure tiles otherwise.
#pragma once
#include <cstdint>

#include "kernels/common/ct.cuh"
#include "kernels/common/lengths.cuh"
#include "kernels/forward_args.hpp"
#include "kernels/sm80/epilogue.cuh"
#include "kernels/sm80/gemm.cuh"
#include "kernels/sm80/kernel_traits.cuh"
#include "kernels/sm80/mask.cuh"
#include "kernels/sm80/smem_tile.cuh"
#include "kernels/sm80/softmax.cuh"

namespace dhp::sm80 {

// Number of key tiles the block visits and whether tile n needs masking
// when lengths are public. Everything here is public.
template <int BM, int BN>
struct KeyTileRange {
  int32_t n_end;  // tiles [n_begin, n_end) are visited, last first
  // 0 but in the Hopper decode kernel, whose work units are chunks of a
  // query tile's key range (sm90/scheduler.cuh, scheduled_tile).
  int32_t n_begin = 0;

  // Host too: the Hopper launcher's schedule model weighs tiles with it.
  __host__ __device__ __forceinline__ KeyTileRange(const kernels::ForwardArgs& a, int32_t m0) {
    n_end = (a.seqlen_k + BN - 1) / BN;
    if (a.causal && a.causal_diagonal_public) {
      const int32_t last_visible = m0 + BM - 1 + a.causal_offset;  // largest key any row sees
      n_end = last_visible < 0 ? 0 : ::min(n_end, last_visible / BN + 1);
    }
  }
  // With public lengths: does tile n contain any key some row cannot see?
  __device__ __forceinline__ bool needs_mask(const kernels::ForwardArgs& a, int32_t n,
                                             int32_t m0) const {
    const int32_t last_key = (n + 1) * BN - 1;
    return last_key >= a.seqlen_k || (a.causal && last_key > m0 + a.causal_offset);
  }
};

template <typename Traits>
__global__ void __launch_bounds__(Traits::kThreads, Traits::kMinBlocksPerSM)
    attention_forward_sm80(const __grid_constant__ kernels::ForwardArgs args) {
  using T = typename Traits::T;
  constexpr int BM = Traits::kBlockM, BN = Traits::kBlockN, D = Traits::kHeadDim;
  constexpr int MT = Traits::kMTiles, NT = Traits::kNTilesS, NTO = Traits::kNTilesO;
  constexpr int RW = Traits::kRowsPerWarp, NTHREADS = Traits::kThreads;

  extern __shared__ __align__(128) uint8_t smem[];
  const SmemTile<BM, D> sq{smem_u32(smem)};
  const SmemTile<BN, D> sk{sq.base + SmemTile<BM, D>::kBytes};
  const SmemTile<BN, D> sv{sk.base + SmemTile<BN, D>::kBytes};

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  // Causal: heaviest row blocks first (public reordering of the grid).
  const int32_t m_block = args.causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const int32_t head = blockIdx.y, batch = blockIdx.z, head_kv = head / args.kv_group;
  const int32_t m0 = m_block * BM;
  const int warp_row0 = warp * RW;

  const T* q = static_cast<const T*>(args.q) + batch * args.q_stride_batch +
               head * args.q_stride_head;
  const T* k = static_cast<const T*>(args.k) + batch * args.k_stride_batch +
               head_kv * args.k_stride_head;
  const T* v = static_cast<const T*>(args.v) + batch * args.v_stride_batch +
               head_kv * args.v_stride_head;

  // Lengths: secret values, loaded from a public address and clamped into
  // [0, S] arithmetically; without length masking they are the public S.
  // Secret lengths are parked in shared memory and re-read (at a fixed,
  // public address) where used: held in registers, they and the values the
  // compiler derives from them push the key loop into spilling.
  __shared__ int32_t lens_smem[2];
  if constexpr (Traits::kHasLengths) {
    if (tid == 0) {  // public: thread index
      int32_t lq, lk;
      kernels::load_lengths(args, batch, lq, lk);
      lens_smem[0] = lq;
      lens_smem[1] = lk;
    }
  }
  // Valid after the first __syncthreads.
  auto lengths = [&](int32_t& L_q, int32_t& L_k) {
    if constexpr (Traits::kHasLengths) {
      asm volatile("ld.shared.v2.s32 {%0, %1}, [%2];" : "=r"(L_q), "=r"(L_k) : "r"(smem_u32(lens_smem)));
    } else {
      L_q = args.seqlen_q;
      L_k = args.seqlen_k;
    }
  };
  const int32_t first_row = m0 + warp_row0 + (lane / 4);

  KeyTileRange<BM, BN> range(args, m0);
  if constexpr (Traits::kLeakyControl) {
    // DELIBERATE LEAK, test-only control (tools/validate): bound the key loop
    // by the secret L_k, skipping key tiles beyond it as a conventional
    // varlen kernel does. Shipped traits have kLeakyControl = false.
    int32_t lq, lk;
    kernels::load_lengths(args, batch, lq, lk);
    range.n_end = min(range.n_end, (lk + BN - 1) / BN);
  }

  load_tile_async<BM, D, NTHREADS>(sq, q + static_cast<int64_t>(m0) * args.q_stride_seq,
                                   args.q_stride_seq, 0, args.seqlen_q - m0, tid);
  cp_async_commit();
  if (range.n_end > 0)
    load_tile_async<BN, D, NTHREADS>(sk, k, args.k_stride_seq, (range.n_end - 1) * BN,
                                     args.seqlen_k, tid);
  cp_async_commit();

  float acc_o[MT][NTO][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int dt = 0; dt < NTO; ++dt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_o[mt][dt][e] = 0.0f;
  OnlineSoftmax<MT> softmax;
  softmax.init();

  for (int32_t it = 0; it < range.n_end; ++it) {  // public trip count
    const int32_t n = range.n_end - 1 - it;
    cp_async_wait<0>();
    __syncthreads();  // K(n) landed; every warp is done with V(n+1)
    load_tile_async<BN, D, NTHREADS>(sv, v, args.v_stride_seq, n * BN, args.seqlen_k, tid);
    cp_async_commit();

    float s[MT][NT][4];
    gemm_qk<T>(s, sq, sk, warp_row0, lane);
    const int32_t col0 = n * BN + 2 * (lane % 4);
    int32_t L_q, L_k;
    lengths(L_q, L_k);
    if (Traits::kHasLengths || range.needs_mask(args, n, m0)) {  // public unless kHasLengths
      RowLimits<MT> rows;
      rows.init(first_row, L_q, L_k, args.causal != 0);
      mask_scores(s, col0, rows);
    }
    softmax.update(s, acc_o, args.scale_log2);
    uint32_t p[MT][NT / 2][4];
    pack_weights<T>(p, s);

    cp_async_wait<0>();
    __syncthreads();  // V(n) landed; every warp is done with K(n)
    if (it + 1 < range.n_end)
      load_tile_async<BN, D, NTHREADS>(sk, k, args.k_stride_seq, (n - 1) * BN, args.seqlen_k, tid);
    cp_async_commit();

    lengths(L_q, L_k);
    gemm_pv<T, Traits::kHasLengths>(acc_o, p, sv, col0, L_k, lane);
  }

  cp_async_wait<0>();  // with zero key tiles the Q copy may still be in flight
  __syncthreads();     // ... and lens_smem may not be visible yet
  int32_t L_q, L_k;
  lengths(L_q, L_k);
  const int64_t lse_row0 =
      (static_cast<int64_t>(batch) * args.heads_q + head) * args.seqlen_q + m0;
  write_output<T, MT, NTO, RW, BM, D>(
      acc_o, softmax, L_q, args.scale_log2, sq, warp_row0, m0 + warp_row0, args.seqlen_q,
      static_cast<T*>(args.o) + batch * args.o_stride_batch + head * args.o_stride_head +
          static_cast<int64_t>(m0) * args.o_stride_seq,
      args.o_stride_seq, args.lse != nullptr ? args.lse + lse_row0 : nullptr, lane);
}

}  // namespace dhp::sm80
