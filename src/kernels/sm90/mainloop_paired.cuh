// Consumer main loop of the paired 64-row tile (Traits::kPairedRows): two
// consumer warpgroups compute the same 64 query rows and take the tile's
// key tiles in turn -- warpgroup 0 the even ones (it = 0, 2, ...),
// warpgroup 1 the odd ones. Used where the grid leaves SMs idle (B = 1,
// short sequences): there one warpgroup's serial chain of S GEMM, softmax
// and P·V per key tile was the whole call, and a second warpgroup on the
// same SM halves the softmax part of it.
//
// Bitwise the same as the one-warpgroup kernels (batch invariance: which
// tile height a sequence gets depends on the batch). Every value is
// computed by the same instructions in the same order as in the serial
// chain; only *which warpgroup* computes it changes:
//   * the running row max m(it) is handed over after each key tile's max
//     phase (shared memory, named barriers), so the next tile's max starts
//     from the same m as it would in one warpgroup;
//   * P(it) of an odd tile goes to shared memory (stmatrix, 16 bit: the
//     same values the register A operand would hold) with its alpha and
//     partial row sums; warpgroup 0, which holds O, does every P·V in key
//     tile order -- its own from registers (RS wgmma), the odd ones from
//     shared memory (SS wgmma) -- and folds the row sums in the same order:
//     O = O * alpha(it) + P(it)·V(it), l = l * alpha(it) + sum(it).
// The two warpgroups' exp2 streams run at the same time (warpgroup 0's of
// key tile it beside warpgroup 1's of it - 1), and warpgroup 0's own P·V
// under its next S GEMM.
//
// Hand-offs (named barriers of 256 threads: one warpgroup arrives, the
// other syncs; every arrive has exactly one matching sync, counted from the
// public key-tile count n alone, so the barriers are balanced after every
// tile):
//   10  m(it) from warpgroup 0 (even it < n - 1)        -> warpgroup 1 at it + 1
//   11  m(it) from warpgroup 1 (every odd it)           -> warpgroup 0 at it + 1, or at the end
//   12  P(it), alpha, sums ready (every odd it)         -> warpgroup 0's P·V(it)
//   13  P buffer free (after P·V(it), odd it + 2 < n)   -> warpgroup 1 before writing P(it + 2)
// No barrier is needed between tiles: each warpgroup's first write of a
// tile waits, directly or through these hand-offs, for the other's last
// read of the previous tile (see run_consumer_paired).
#pragma once

#include <cstdint>

#include "kernels/common/opaque.cuh"
#include "kernels/sm90/consumer_view.cuh"
#include "kernels/sm90/epilogue.cuh"
#include "kernels/sm90/softmax.cuh"

namespace dhp::sm90 {

namespace paired {
// Immediate barrier ids (mainloop.cuh and forward_kernel.cuh use 0-9).
__device__ __forceinline__ void m_from_0_arrive() { asm volatile("bar.arrive 10, 256;\n" ::: "memory"); }
__device__ __forceinline__ void m_from_0_wait() { asm volatile("bar.sync 10, 256;\n" ::: "memory"); }
__device__ __forceinline__ void m_from_1_arrive() { asm volatile("bar.arrive 11, 256;\n" ::: "memory"); }
__device__ __forceinline__ void m_from_1_wait() { asm volatile("bar.sync 11, 256;\n" ::: "memory"); }
__device__ __forceinline__ void p_ready_arrive() { asm volatile("bar.arrive 12, 256;\n" ::: "memory"); }
__device__ __forceinline__ void p_ready_wait() { asm volatile("bar.sync 12, 256;\n" ::: "memory"); }
__device__ __forceinline__ void p_free_arrive() { asm volatile("bar.arrive 13, 256;\n" ::: "memory"); }
__device__ __forceinline__ void p_free_wait() { asm volatile("bar.sync 13, 256;\n" ::: "memory"); }

__device__ __forceinline__ void put2(float (&slot)[2], const float (&x)[2]) {
  *reinterpret_cast<float2*>(slot) = make_float2(x[0], x[1]);
}
__device__ __forceinline__ void get2(const float (&slot)[2], float (&x)[2]) {
  const float2 v = *reinterpret_cast<const float2*>(slot);
  x[0] = v.x, x[1] = v.y;
}
}  // namespace paired

// One paired tile of consumer warpgroup `role` (0 or 1). The view is built
// with g = 0 in both warpgroups (both own the tile's 64 rows). Warpgroup 0
// ends with O and the softmax state of the whole tile in out_sm; warpgroup
// 1's o and out_sm are not used. after_first_issue() and before_tail_wait()
// run once per tile in each warpgroup (as in run_consumer).
template <typename Traits, typename View, typename AfterFirstIssue, typename BeforeTailWait>
__device__ __forceinline__ void run_consumer_paired(const View& view, const PairedRing<Traits::kStages>& ring,
                                                    int role, int wtid, float (&o)[View::D / 2],
                                                    sm80::OnlineSoftmax<1>& out_sm,
                                                    AfterFirstIssue&& after_first_issue,
                                                    BeforeTailWait&& before_tail_wait) {
  using T = typename View::T;
  constexpr int BM = View::BM, BN = View::BN, D = View::D;
  constexpr DType DT = View::DT;
  static_assert(BM == 64, "one warpgroup's rows");
  auto& st = view.st;
  const auto& args = view.args;
  constexpr uint32_t kStageBytes = Traits::kKVBytes;
  const uint64_t dq = desc::k_major_sw128(view.q_base);
  const uint64_t dk0 = desc::k_major_sw128(static_cast<uint32_t>(__cvta_generic_to_shared(st.k[0])));
  const uint64_t dv0 = desc::mn_major_sw128(static_cast<uint32_t>(__cvta_generic_to_shared(st.v[0])), BN);
  const uint64_t dp = desc::k_major_sw128(static_cast<uint32_t>(__cvta_generic_to_shared(st.p)));

  float sacc[BN / 2];
  uint32_t p[BN / 16][4];
  auto issue_qk = [&](int s) { issue_s_gemm<DT, BM, BN, D>(sacc, dq, desc::advance_lo(dk0, s * kStageBytes)); };
  auto issue_pv_regs = [&](int s) {  // O += P·V, P from this warpgroup's registers
    issue_pv_gemm<DT, BN, D>(o, p, desc::advance_lo(dv0, s * kStageBytes));
  };
  auto issue_pv_smem = [&](int s) {  // O += P·V, P (warpgroup 1's) from shared memory
    const uint64_t dv = desc::advance_lo(dv0, s * kStageBytes);
#pragma unroll
    for (int k = 0; k < BN / 16; ++k)
      MmaSS<DT, D>::template run<1>(o, desc::advance_lo(dp, (k / 4) * BM * 128 + (k % 4) * 32),
                                    desc::advance_lo(dv, k * 16 * 128), 1);
    wg::commit();
  };
  auto pack_p = [&] {
#pragma unroll
    for (int k = 0; k < BN / 16; ++k)
#pragma unroll
      for (int r = 0; r < 4; ++r) p[k][r] = sm80::pack2<T>(sacc[8 * k + 2 * r], sacc[8 * k + 2 * r + 1]);
  };
  SplitSoftmax sm;
  sm.init();
  float alpha[2], sums[2];
  // Mask and max phase of the landed S tile for key tile n (the serial
  // chain's scores_to_p up to the exp2 stream).
  auto max_phase = [&](int32_t n) {
    auto& s3 = as_frag<BN>(sacc);
    view.mask(s3, n);
    sm.max_phase(s3, args.scale_log2, alpha);
  };
  auto take_m = [&](int from) {  // the running max after the other warpgroup's key tile
    paired::get2(st.m_from[from][wtid], sm.row_max);
  };

#pragma unroll
  for (int i = 0; i < D / 2; ++i) o[i] = 0.0f;
  tma::wait<true>(&st.q_full[view.q_buf], view.q_phase);
  const int32_t n_tiles = view.range.n_end;  // public
  if (role == 1) {  // public: warpgroup index
    after_first_issue();  // releases only the previous tile's Q (warpgroup 1 stages no O)
    for (int32_t it = 1; it < n_tiles; it += 2) {  // public trip count
      const int s = ring.stage(it);
      tma::wait<true>(&st.k_full[s], ring.parity(it));
      wg::fence_operands(sacc);
      wg::fence();
      issue_qk(s);
      paired::m_from_0_wait();  // m(it - 1)
      take_m(0);
      wg::wait<0>();
      wg::fence_operands(sacc);
      tma::arrive(&st.k_empty[s]);
      max_phase(n_tiles - 1 - it);
      paired::put2(st.m_from[1][wtid], sm.row_max);
      paired::m_from_1_arrive();
      // ptxas moves arithmetic across barrier operations within a basic
      // block: the boundaries keep the exp2 stream after the hand-off of m
      // (warpgroup 0 waits for it) and before the wait for the P buffer.
      kernels::block_boundary(it);
      sm.exp_phase_sums(as_frag<BN>(sacc), args.scale_log2, sums);
      pack_p();
      kernels::block_boundary(n_tiles + it);
      if (it >= 3) paired::p_free_wait();  // warpgroup 0's P·V(it - 2) has read the buffer
      epilogue::stmatrix_rows<BM, BN>(st.p, 16 * (wtid / 32), wtid % 32, [&](int j, int i) { return p[j][i]; });
      *reinterpret_cast<float4*>(st.alpha_sum[wtid]) = make_float4(alpha[0], alpha[1], sums[0], sums[1]);
      tma::fence_generic_to_async();  // P is read by the tensor cores (async proxy)
      paired::p_ready_arrive();
    }
    before_tail_wait();
    sm.export_to(out_sm);
    return;
  }

  // Warpgroup 0. Iteration it (even): S(it) and, beside it, the deferred
  // P(it - 2)·V(it - 2); the softmax of S(it); then P(it - 1)·V(it - 1)
  // from shared memory; O and l are brought up to date in key tile order.
  // Key tile 0 is peeled off the loop so that every wgmma inside it is
  // issued unconditionally (ptxas serialises the wgmma pipeline around an
  // accumulator issued on one path of a branch).
  // V(j) has been waited for by the caller: a try-wait here let ptxas put
  // the softmax's row-sum adds or the rescale's multiplies between it and
  // its guard branch, where the per-instruction gate's retry-block check
  // (tools/validate/per_pc.py) no longer finds the guard.
  auto odd_pv = [&](int32_t j) {  // warpgroup 1's tile j: fold, rescale, issue (not waited)
    paired::p_ready_wait();
    const float4 as = *reinterpret_cast<const float4*>(st.alpha_sum[wtid]);
    const float a_j[2] = {as.x, as.y};
    sm.fold_row(0, as.x, as.z);
    sm.fold_row(1, as.y, as.w);
    SplitSoftmax::rescale(as_frag<D>(o), a_j);
    wg::fence_operands(o);
    wg::fence();
    issue_pv_smem(ring.stage(j));
  };
  // The end of an even key tile: l and O up to date (its P·V is issued with
  // the next S GEMM, or in the tail).
  auto finish_even = [&] {
    sm.fold_row(0, alpha[0], sums[0]);
    sm.fold_row(1, alpha[1], sums[1]);
    SplitSoftmax::rescale(as_frag<D>(o), alpha);
  };
  if (n_tiles > 0) {  // public
    const int s = ring.stage(0);
    tma::wait<true>(&st.k_full[s], ring.parity(0));
    wg::fence_operands(sacc);
    wg::fence();
    issue_qk(s);
    after_first_issue();
    wg::wait<0>();
    wg::fence_operands(sacc);
    tma::arrive(&st.k_empty[s]);
    max_phase(n_tiles - 1);
    if (n_tiles > 1) {  // public
      paired::put2(st.m_from[0][wtid], sm.row_max);
      paired::m_from_0_arrive();
    }
    sm.exp_phase_sums(as_frag<BN>(sacc), args.scale_log2, sums);
    pack_p();
    finish_even();  // O = 0: the rescale is harmless, as in the serial chain
  }
  for (int32_t it = 2; it < n_tiles; it += 2) {  // public trip count
    const int s = ring.stage(it), s_prev = ring.stage(it - 2);
    tma::wait<true>(&st.k_full[s], ring.parity(it));
    tma::wait<true>(&st.v_full[s_prev], ring.parity(it - 2));
    tma::wait<true>(&st.v_full[ring.stage(it - 1)], ring.parity(it - 1));  // loaded before K(it)
    wg::fence_operands(sacc);
    wg::fence_operands(o);
    wg::fence_operands(p);
    wg::fence();
    issue_qk(s);
    issue_pv_regs(s_prev);  // O was scaled by alpha(it - 2) at the end of it - 2
    paired::m_from_1_wait();  // m(it - 1)
    take_m(1);
    wg::wait<0>();
    wg::fence_operands(sacc);
    wg::fence_operands(o);
    wg::fence_operands(p);
    tma::arrive(&st.k_empty[s]);
    tma::arrive(&st.v_empty[s_prev]);
    max_phase(n_tiles - 1 - it);
    if (it < n_tiles - 1) {  // public
      paired::put2(st.m_from[0][wtid], sm.row_max);
      paired::m_from_0_arrive();
    }
    // This exp2 stream runs beside warpgroup 1's of key tile it - 1 (both
    // started from m(it - 2) and m(it - 1) as soon as those were known);
    // then that tile's P·V, from shared memory. P(it) is packed before the
    // boundary (its registers are free: P(it - 2)·V has completed), so
    // that ptxas keeps the stream before the wait for P(it - 1).
    kernels::block_boundary(it);
    sm.exp_phase_sums(as_frag<BN>(sacc), args.scale_log2, sums);
    pack_p();
    kernels::block_boundary(n_tiles + it);
    odd_pv(it - 1);
    wg::wait<0>();
    wg::fence_operands(o);
    tma::arrive(&st.v_empty[ring.stage(it - 1)]);
    if (it + 1 < n_tiles) paired::p_free_arrive();  // public: warpgroup 1 writes P(it + 1)
    finish_even();
  }
  if (n_tiles > 0) {  // public
    const int32_t last_even = (n_tiles - 1) & ~1;
    const int s = ring.stage(last_even);
    tma::wait<true>(&st.v_full[s], ring.parity(last_even));
    wg::fence_operands(o);
    wg::fence_operands(p);
    wg::fence();
    issue_pv_regs(s);
    before_tail_wait();
    wg::wait<0>();
    wg::fence_operands(o);
    wg::fence_operands(p);
    tma::arrive(&st.v_empty[s]);
    if (last_even != n_tiles - 1) {  // public: the last key tile is warpgroup 1's
      tma::wait<true>(&st.v_full[ring.stage(n_tiles - 1)], ring.parity(n_tiles - 1));
      odd_pv(n_tiles - 1);
      wg::wait<0>();
      wg::fence_operands(o);
      tma::arrive(&st.v_empty[ring.stage(n_tiles - 1)]);
      paired::m_from_1_wait();  // the final m, for the epilogue's lse
      take_m(1);
    }
  } else {
    after_first_issue();
    before_tail_wait();
  }
  sm.export_to(out_sm);
}

}  // namespace dhp::sm90
