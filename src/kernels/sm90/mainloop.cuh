// Consumer main loop of the Hopper kernel, per key tile j:
//   S = Q·Kᵀ        (D/16 wgmma m64nBNk16: SS, or RS for the k-steps whose Q
//                    columns the warpgroup holds in registers, loaded once per
//                    tile: Traits::kQRegCols, the 128-key D = 128 kernels)
//   mask, softmax   (select-based mask, exp2 online softmax: sm90/softmax.cuh)
//   O += P·V        (RS wgmma: P packed to 16 bit in registers as the A
//                    operand, V MN-major from shared memory; BN/16 instructions)
// S(j+1) and P(j)·V(j) are issued together as two wgmma groups, and
//  * ping-pong between the consumer warpgroups (two, or three at D64 long
//    sequences): each issues its GEMMs only on its turn (named barriers
//    2, 3, 4), so one warpgroup's softmax overlaps the others' GEMMs;
//  * optional intra-warpgroup overlap (DHP_SM90_INTRA_WG_OVERLAP, a mask
//    by head dim): the softmax of S(j+1) runs while the warpgroup's own
//    P(j)·V(j) is still on the tensor cores. Measured 1-5 % slower than
//    ping-pong alone on every row of the quick grid (H200), and again at
//    D = 128 in session 12 (-1 to -3 %: the softmax then runs ≈ 500 cycles
//    longer, about the P·V's own time; docs/perf-log.md), so off by default.
// With one GEMM in flight (Traits::kOneGemm: D = 256 with 128-key tiles,
// where S, P and O do not fit in registers together) each step is S(j),
// its wait, the softmax, P(j)·V(j), its wait instead; the turns still
// alternate one GEMM at a time (run_one_gemm_steps below). The switches
// below that move work between overlapped GEMMs (DHP_SM90_INTRA_WG_OVERLAP,
// DHP_SM90_RESCALE_UNDER_S) do not apply to that loop.
// Every barrier operation runs the same number of times in both warpgroups
// (public trip count), so the hand-offs always balance. The turn order runs
// on across the tiles of the persistent loop: pingpong::begin before the
// first tile, pingpong::end after the last (a per-tile start and end would
// let warpgroup 1 arrive twice on one barrier before warpgroup 0 syncs).
#pragma once

#include <cstdint>

#include "kernels/common/opaque.cuh"
#include "kernels/sm90/consumer_view.cuh"
#include "kernels/sm90/softmax.cuh"
#include "kernels/sm90/timeline_probe.cuh"

namespace dhp::sm90 {

#ifndef DHP_SM90_INTRA_WG_OVERLAP
#define DHP_SM90_INTRA_WG_OVERLAP 0
#endif
// TEST-ONLY (scripts/length-timing-diag.sh): feeds a public pattern instead
// of zero weights to P·V, giving wrong results; never set in a shipped build.
#ifndef DHP_SM90_P_FILL
#define DHP_SM90_P_FILL 0
#endif
// TEST-ONLY builds must say so (scripts/length-timing-diag.sh,
// scripts/timeline-run.sh): a shipped build cannot carry this by accident.
#if DHP_SM90_P_FILL && !defined(DHP_TEST_ONLY_BUILD)
#error "DHP_SM90_P_FILL is a TEST-ONLY diagnostic (a select on secret scores, wrong results); define DHP_TEST_ONLY_BUILD to build it"
#endif
// Compile-time switch, a bit mask by head dim (1: D = 64, 2: D = 128,
// 4: D = 256); the kernels that wait for both GEMMs before their softmax
// (kSerial below) never overlap. Both forms pass the GPU suite
// (docs/perf-log.md).
template <typename Traits>
inline constexpr bool kIntraOverlapFor =
    (DHP_SM90_INTRA_WG_OVERLAP & head_dim_bit(Traits::kHeadDim)) != 0;
// The O rescale under the S GEMM (DHP_SM90_RESCALE_UNDER_S, a mask of
// kernels: 1 the one-consumer D = 64 kernel, 2 D = 128 with 128-key tiles,
// 4 D = 128 with 160-key tiles, 8 D = 256, 16 / 32 the two- / three-consumer
// D = 64 kernels). Each step issues S(j+1) and P(j)·V(j) together and waits
// for both before its softmax (ptxas hoists the P·V wait where the code
// does not); the O *= alpha(j) multiplies then run between the two issues,
// while S(j+1) runs, instead of before both (in the two-consumer D = 64
// kernel: outside its exp2 turn): the wgmma issue queue holds about eight
// m64n128k16, so the S issue returns at once, and the multiplies leave the
// warpgroup's serial chain. The same multiplies on the same values before
// the same P·V: the bits do not change. Shipped for the 160-key D = 128
// kernel only: +1 to +3 % there in two interleaved A/Bs; within ±1 %
// elsewhere, -3 % on one one-consumer D = 64 row (docs/perf-log.md,
// session 12).
#ifndef DHP_SM90_RESCALE_UNDER_S
#define DHP_SM90_RESCALE_UNDER_S 4
#endif
template <typename Traits>
inline constexpr int kRescaleUnderSBit =
    Traits::kHeadDim == 64    ? (Traits::kConsumers == 1 ? 1 : Traits::kConsumers == 2 ? 16 : 32)
    : Traits::kHeadDim == 128 ? (Traits::kBlockN == 128 ? 2 : 4)
                              : 8;
// What the ping-pong turn guards (DHP_SM90_TURN_EXP, a bit mask of the
// kernels that take the turn around the exp2 stream; the others take it
// around their GEMM issue):
//  * around the GEMM issue (S(j+1) and P(j)·V(j)): the softmaxes of the
//    warpgroups may run at the same time and share the sub-partitions' MUFU;
//  * around the exp2 stream of the softmax (the MUFU phase, with the O
//    rescale and the packing of P beside it): each warpgroup waits for both
//    of its GEMMs before its softmax and issues the next ones as soon as its
//    exp2 stream is done, so one warpgroup's exp2 stream never shares the
//    MUFU with the other's, and the other's row max, GEMM issue and GEMM
//    wait run under it. This is how cuDNN's D = 64 kernel takes its turns
//    (read in its SASS with scripts/ncu-sass-stalls --cudnn).
// Bit 1: the two-consumer D = 64 kernel (shipped: +3 % on D64 causal S512 /
// S1024, +4 to +7 % on every shape with 128-row tiles forced); bit 2: the
// three-consumer kernel (-3 to -4 %: one softmax at a time cannot keep three
// warpgroups' GEMMs fed); bit 4: also D = 128 / 256 (-2 %: there the
// softmax is longer than the other warpgroup's GEMMs). docs/perf-log.md,
// session 10.
#ifndef DHP_SM90_TURN_EXP
#define DHP_SM90_TURN_EXP 1
#endif
template <typename Traits>
inline constexpr bool kTurnExp =
    ((DHP_SM90_TURN_EXP & 1) && Traits::kConsumers == 2 || (DHP_SM90_TURN_EXP & 2) && Traits::kConsumers == 3) &&
    (Traits::kHeadDim == 64 || (DHP_SM90_TURN_EXP & 4));

// The row max as a tree (softmax.cuh, DHP_SM90_MAX_TREE): by head dim, and
// not in the secret-length kernels.
template <typename Traits>
inline constexpr bool kMaxTree = (DHP_SM90_MAX_TREE & head_dim_bit(Traits::kHeadDim)) != 0 && !Traits::kHasLengths;

// Named barriers: 0 is __syncthreads, 2-4 the consumers' ping-pong turns
// (pingpong below), 5-7 consumer warpgroup g's own sync (128 threads), 8-9
// the hand-off of the last ring slot to the O staging (D = 256). The narrow
// decode kernel's exchanges take 5 (decode_narrow.cuh). The id
// is an immediate per warpgroup: computed ids made ptxas spill at D = 256.
__device__ __forceinline__ void consumer_warpgroup_sync(int g) {
  if (g == 0)  // public: warpgroup index
    asm volatile("bar.sync 5, 128;\n" ::: "memory");
  else if (g == 1)
    asm volatile("bar.sync 6, 128;\n" ::: "memory");
  else
    asm volatile("bar.sync 7, 128;\n" ::: "memory");
}

namespace pingpong {
// Barrier 2 + g: "warpgroup g may issue". 256 = 128 waiting + 128 arriving.
// Turns go round the NC consumer warpgroups in order. With one consumer
// warpgroup (64-row tiles) there is no one to take turns with: no barriers.
template <int NC>
__device__ __forceinline__ void wait_turn(int g) {
  if constexpr (NC > 1) asm volatile("bar.sync %0, 256;\n" ::"r"(2 + g) : "memory");
}
template <int NC>
__device__ __forceinline__ void pass_turn(int g) {
  if constexpr (NC > 1) {
    const int next = NC == 2 ? 1 - g : (g + 1 == NC ? 0 : g + 1);
    asm volatile("bar.arrive %0, 256;\n" ::"r"(2 + next) : "memory");
  }
}
// Warpgroup 0 issues first; at the end it consumes the last warpgroup's
// last hand-off.
template <int NC>
__device__ __forceinline__ void begin(int g) {
  if (NC > 1 && g == NC - 1) pass_turn<NC>(NC - 1);  // a constant barrier id (ptxas spilled D256 without it)
}
template <int NC>
__device__ __forceinline__ void end(int g) {
  if (NC > 1 && g == 0) wait_turn<NC>(0);
}
}  // namespace pingpong

// Named barriers 8 and 9 (256 threads: one warpgroup arrives, the other
// syncs): with O staged in the ring (Traits::kStageOInRing), "warpgroup 1
// no longer reads the last K slot" and "warpgroup 0 no longer reads the
// last V slot". Immediate ids (computed ones made ptxas spill at D = 256).
namespace ring_handoff {
__device__ __forceinline__ void k_free_arrive() { asm volatile("bar.arrive 8, 256;\n" ::: "memory"); }
__device__ __forceinline__ void k_free_wait() { asm volatile("bar.sync 8, 256;\n" ::: "memory"); }
__device__ __forceinline__ void v_free_arrive() { asm volatile("bar.arrive 9, 256;\n" ::: "memory"); }
__device__ __forceinline__ void v_free_wait() { asm volatile("bar.sync 9, 256;\n" ::: "memory"); }
}  // namespace ring_handoff

// A tile in which none of this warpgroup's rows lies below S_q: the last row
// block of a sequence whose length is not a multiple of the tile height
// (192-row tiles: S_q = 512, 1024, ...). The warpgroup issues no GEMM and
// no softmax, but keeps every protocol step of the others: the ring
// barriers in the same order (it waits for each fill before it releases
// the slot, so that its arrivals count toward the right phase), one pass
// per ping-pong turn, the two callables. Its O stays zero; its stores are
// clipped at S_q by the tensor map and its lse stores by the row check.
// Rows below S_q are computed exactly as in a full tile.
template <typename Traits, typename View, typename AfterFirstIssue, typename BeforeTailWait>
__device__ __forceinline__ void run_idle_tile(const View& view, int32_t n_tiles, AfterFirstIssue&& after_first_issue,
                                              BeforeTailWait&& before_tail_wait) {
  constexpr int NC = Traits::kConsumers;
  auto& st = view.st;
  if (n_tiles == 0) {  // public
    if constexpr (Traits::kOBuffer) tma::arrive(&st.q_empty[view.q_buf]);  // never reads it
    after_first_issue();
    before_tail_wait();
    return;
  }
  tma::wait<true>(&st.k_full[view.stage(0)], view.parity(0));
  pingpong::wait_turn<NC>(view.g);
  pingpong::pass_turn<NC>(view.g);
  after_first_issue();
  tma::arrive(&st.k_empty[view.stage(0)]);
  for (int32_t it = 1; it < n_tiles; ++it) {  // public trip count
    tma::wait<true>(&st.k_full[view.stage(it)], view.parity(it));
    tma::wait<true>(view.v_landed(it - 1), view.parity(it - 1));
    pingpong::wait_turn<NC>(view.g);
    pingpong::pass_turn<NC>(view.g);
    tma::arrive(&st.k_empty[view.stage(it)]);
    tma::arrive(&st.v_empty[view.stage(it - 1)]);
  }
  if constexpr (Traits::kOBuffer) tma::arrive(&st.q_empty[view.q_buf]);  // as after a last S GEMM
  tma::wait<true>(view.v_landed(n_tiles - 1), view.parity(n_tiles - 1));
  if constexpr (!kTurnExp<Traits>) {  // with turns around the exp2 stream: one per key tile, no tail turn
    pingpong::wait_turn<NC>(view.g);
    pingpong::pass_turn<NC>(view.g);
  }
  before_tail_wait();
  tma::arrive(&st.v_empty[view.stage(n_tiles - 1)]);
}

// One tile of a consumer warpgroup. Two callables run where this warpgroup
// would otherwise only wait for its own GEMM, so that their latency hides
// under it: after_first_issue() once the tile's first S GEMM is issued,
// before_tail_wait() once its last P·V is issued. Both run exactly once per
// tile (in order, at once, for a tile without key tiles).
template <typename Traits, typename View, typename AfterFirstIssue, typename BeforeTailWait>
__device__ __forceinline__ void run_consumer(const View& view, float (&o)[View::D / 2],
                                             sm80::OnlineSoftmax<1>& out_sm, AfterFirstIssue&& after_first_issue,
                                             BeforeTailWait&& before_tail_wait) {
  using T = typename View::T;
  constexpr int QR = Traits::kQRows, BN = View::BN, D = View::D;
  constexpr DType DT = View::DT;
  // With three consumer warpgroups the other two cover one's softmax, and
  // 160 registers do not hold S, P and O at once: each warpgroup waits for
  // both of its GEMMs before its softmax (kSerial).
  constexpr bool kTurnExp = sm90::kTurnExp<Traits>;
  constexpr bool kSerial = Traits::kConsumers == 3 || kTurnExp;
  // The turn around the GEMM issue (with kTurnExp none: the turn is taken
  // in scores_to_p, before the exp2 stream, and passed in finish_tile).
  auto gemm_turn_wait = [&] { if constexpr (!kTurnExp) pingpong::wait_turn<Traits::kConsumers>(view.g); };
  auto gemm_turn_pass = [&] { if constexpr (!kTurnExp) pingpong::pass_turn<Traits::kConsumers>(view.g); };
  constexpr bool kIntraOverlap = kIntraOverlapFor<Traits> && !kSerial;  // P live during the softmax
  // The turn's max / exp phases work on both of a thread's rows; half-row
  // tiles must never read the second (threat-model.md).
  static_assert(!(Traits::kHalfRows && kTurnExp), "half-row tiles take no exp2 turn");
  constexpr bool kRescaleUnderS =
      (DHP_SM90_RESCALE_UNDER_S & kRescaleUnderSBit<Traits>) != 0 && !kIntraOverlap;
  auto& st = view.st;
  const auto& args = view.args;
  const int g = view.g;
  const uint32_t q_base = view.q_base;
  // Descriptors of stage 0 built once; a stage and a k-step only move the
  // start address (desc::advance_lo), which keeps the per-wgmma cost to an add.
  constexpr uint32_t kStageBytes = Traits::kKVBytes;
  const uint64_t dq = desc::k_major_sw128(q_base);
  // With three consumer warpgroups they are rebuilt per tile (opaque_copy:
  // no register to hold them through the loop); elsewhere that costs a
  // spill in the 160-key D = 128 kernel with lengths, so they are hoisted.
  uint32_t k_ring = static_cast<uint32_t>(__cvta_generic_to_shared(st.k[0]));
  uint32_t v_ring = static_cast<uint32_t>(__cvta_generic_to_shared(st.v[0]));
  if constexpr (Traits::kConsumers == 3) {
    k_ring = kernels::opaque_copy(k_ring);
    v_ring = kernels::opaque_copy(v_ring);
  }
  const uint64_t dk0 = desc::k_major_sw128(k_ring);
  const uint64_t dv0 = desc::mn_major_sw128(v_ring, BN);
  static_assert(sizeof(st.k[0]) == kStageBytes && sizeof(st.v[0]) == kStageBytes, "stages are contiguous");

  float sacc[BN / 2];
  uint32_t p[BN / 16][4];
  // Q's first QC columns in registers (Traits::kQRegCols): the A fragments
  // of those k-steps, loaded once per tile (load_q_regs) and read by every
  // S GEMM of the tile; the other k-steps read Q from shared memory.
  constexpr int QC = Traits::kQRegCols;
  uint32_t qa[QC > 0 ? QC / 16 : 1][4];
  auto load_q_regs = [&] {
    if constexpr (QC > 0) {
      // ldmatrix x4: lane l gives row (l % 8) + 8 ((l / 8) % 2) of the warp's
      // 16 rows at column 8 (l / 16) of the k-step: the matrices come back
      // as the m16n8k16 A fragment (rows 0-7 / 8-15 x k 0-7, then k 8-15).
      const uint32_t row = 16 * view.warp + view.lane % 8 + 8 * ((view.lane / 8) % 2);
#pragma unroll
      for (int kk = 0; kk < QC / 16; ++kk)
        sm80::ldmatrix_x4(qa[kk], q_base + sw128_offset(row, 16 * kk + 8 * (view.lane / 16), QR));
    }
  };
  auto issue_qk = [&](int s) {
    const uint64_t dk = desc::advance_lo(dk0, s * kStageBytes);
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      const uint64_t dkk = desc::advance_lo(dk, (kk / 4) * BN * 128 + (kk % 4) * 32);
      if (kk < QC / 16)
        MmaRS<DT, BN>::template run<0>(sacc, qa[kk < QC / 16 ? kk : 0], dkk, kk > 0);
      else
        MmaSS<DT, BN>::template run<0>(sacc, desc::advance_lo(dq, (kk / 4) * QR * 128 + (kk % 4) * 32), dkk, kk > 0);
    }
    wg::commit();
  };
  // The S GEMM reads qa asynchronously: its registers stay reserved until
  // the GEMM's group has completed (placed after each such wait).
  auto fence_q = [&] {
    if constexpr (QC > 0) wg::fence_operands(qa);
  };
  auto issue_pv = [&](int s) {
    const uint64_t dv = desc::advance_lo(dv0, s * kStageBytes);
#pragma unroll
    for (int k = 0; k < BN / 16; ++k)
      MmaRS<DT, D>::template run<1>(o, p[k], desc::advance_lo(dv, k * 16 * 128), 1);
    wg::commit();
  };
  // Mask (select) and softmax of the landed S tile for key tile n; packs P.
  SplitSoftmax<kMaxTree<Traits>> sm;
  sm.init();
  float alpha[2];
  // O *= alpha (half-row tiles: the first row of each thread only).
  auto rescale_o = [&] {
    if constexpr (Traits::kHalfRows)
      SplitSoftmax<>::rescale_first_half(as_frag<D>(o), alpha);
    else
      SplitSoftmax<>::rescale(as_frag<D>(o), alpha);
  };
  auto scores_to_p = [&](int32_t n) {
    auto& s3 = as_frag<BN>(sacc);
    view.mask(s3, n);
    if constexpr (kTurnExp) {
      sm.max_phase(s3, args.scale_log2, alpha);
      pingpong::wait_turn<Traits::kConsumers>(g);
      // ptxas would hoist the exp2 stream above the barrier wait (it moves
      // arithmetic across it): a block boundary keeps the stream behind it.
      kernels::block_boundary(static_cast<int32_t>(view.kv0) + n);
      sm.exp_phase(s3, args.scale_log2, alpha);
    } else {
      if constexpr (Traits::kHalfRows)
        sm.weights_first_half(s3, args.scale_log2, alpha);
      else
        sm.weights(s3, args.scale_log2, alpha);
    }
  };
  // Releases of a ring slot's K half (after the S GEMM that reads it) and of
  // the last V half (after the tail P·V). With O staged in the ring, the
  // tile's last slot is warpgroup 0's staging in its K half and warpgroup
  // 1's in its V half: each keeps its own release of that half until its O
  // stores have read it (forward_kernel.cuh) and tells the other when it no
  // longer reads it; and Q is released right after the last S GEMM, so the
  // next tile's Q loads under this tile's last key tile and epilogue (the
  // same with an O buffer of its own: kQFreeAtLastS).
  auto release_k = [&](int s, bool last) {
    if constexpr (Traits::kQFreeAtLastS)
      if (last) tma::arrive(&st.q_empty[view.q_buf]);  // public
    if constexpr (Traits::kStageOInRing) {
      if (last) {  // public
        if (g == 1) {  // public: warpgroup index
          tma::arrive(&st.k_empty[s]);
          ring_handoff::k_free_arrive();
        }
        return;
      }
    }
    tma::arrive(&st.k_empty[s]);
  };
  auto release_last_v = [&](int s) {
    if constexpr (Traits::kStageOInRing) {
      if (g == 0) {  // public: warpgroup index
        tma::arrive(&st.v_empty[s]);
        ring_handoff::v_free_arrive();
      }
      return;
    }
    tma::arrive(&st.v_empty[s]);
  };
  auto pack_p = [&] {
#pragma unroll
    for (int k = 0; k < BN / 16; ++k)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
#if DHP_SM90_P_FILL  // TEST-ONLY timing diagnostic: zero weights become a public pattern (wrong results)
        const float f0 = __uint_as_float(0x3E800000u | ((8 * k + 2 * r) * 0x2F1A3u & 0x7FFFFFu));
        const float f1 = __uint_as_float(0x3E800000u | ((8 * k + 2 * r + 1) * 0x2F1A3u & 0x7FFFFFu));
        p[k][r] = sm80::pack2<T>(sacc[8 * k + 2 * r] == 0.0f ? f0 : sacc[8 * k + 2 * r],
                                 sacc[8 * k + 2 * r + 1] == 0.0f ? f1 : sacc[8 * k + 2 * r + 1]);
#else
        p[k][r] = sm80::pack2<T>(sacc[8 * k + 2 * r], sacc[8 * k + 2 * r + 1]);
#endif
      }
  };

  // One GEMM in flight (Traits::kOneGemm): step it is S(it), its wait, the
  // softmax, P(it)·V(it), its wait; the ring slot's K and V halves are
  // released after their GEMM as in the other loop (release_k,
  // release_last_v: with O staged in the ring, the last slot's halves are
  // kept for it).
  auto run_one_gemm_steps = [&](int32_t n_tiles) {
    // (Its shape is asserted in Sm90Traits; the turn is this file's.)
    static_assert(!Traits::kOneGemm || !kTurnExp, "one GEMM in flight: turns around the GEMM issue");
    for (int32_t it = 0; it < n_tiles; ++it) {  // public trip count
      const int s = view.stage(it);
      const uint32_t ph = view.parity(it);
      const bool last = it == n_tiles - 1;  // public
      tma::wait<true>(&st.k_full[s], ph);
      gemm_turn_wait();
      wg::fence_operands(sacc);
      wg::fence();
      issue_qk(s);  // S(it)
      gemm_turn_pass();
      if (it == 0) after_first_issue();  // public
      wg::wait<0>();
      wg::fence_operands(sacc);
      release_k(s, last);
      scores_to_p(view.range.n_end - 1 - it);
      rescale_o();  // O = 0 at it = 0: harmless (alpha is finite)
      pack_p();
      tma::wait<true>(view.v_landed(it), ph);
      gemm_turn_wait();
      wg::fence_operands(o);
      wg::fence_operands(p);
      wg::fence();
      issue_pv(s);  // O += P(it) V(it)
      gemm_turn_pass();
      if (last) before_tail_wait();  // public
      wg::wait<0>();
      wg::fence_operands(o);
      wg::fence_operands(p);
      if (last)  // public
        release_last_v(s);
      else
        tma::arrive(&st.v_empty[s]);
    }
  };

#pragma unroll
  for (int i = 0; i < D / 2; ++i) o[i] = 0.0f;
  timeline::mark(1 + g, 0);
  tma::wait<true>(&st.q_full[view.q_buf], view.q_phase);
  load_q_regs();
  timeline::mark(1 + g, 1);
  timeline::tile(1 + g, view.tc, 2);
  // Key tiles n_end - 1 - it for it in [0, n_tiles), last first (absolute
  // indices: the masks' positions).
  const int32_t n_tiles = view.range.n_end - view.range.n_begin;  // public
  // Public: all of this warpgroup's rows lie past S_q. Only where tiles are
  // 192 rows high (three consumer warpgroups): the FA3 grid's lengths are
  // multiples of 128, and in the other kernels the extra path cost 2-4 %
  // of main-loop instructions for nothing. The branch must be warp-uniform
  // to ptxas (a compare on a warpgroup index it could not prove uniform
  // made it treat the main loop as divergent and move the wgmma
  // descriptors to vector registers: 4 % slower); g is, since it comes
  // from a lane-0 broadcast (forward_kernel.cuh).
  if (Traits::kConsumers == 3 && view.m0 + 64 * g >= args.seqlen_q) {
    run_idle_tile<Traits>(view, n_tiles, after_first_issue, before_tail_wait);
    sm.export_to(out_sm);  // no key seen: l = 0, so O = 0 and lse = -inf (clipped anyway)
    return;
  }
  if (n_tiles > 0 && Traits::kOneGemm) {  // public
    run_one_gemm_steps(n_tiles);
  } else if (n_tiles > 0) {
    // Prologue: S for the first key tile (n = n_end - 1).
    tma::wait<true>(&st.k_full[view.stage(0)], view.parity(0));
    timeline::mark(1 + g, 2);
    gemm_turn_wait();
    wg::fence_operands(sacc);
    wg::fence();
    issue_qk(view.stage(0));
    gemm_turn_pass();
    after_first_issue();
    wg::wait<0>();
    wg::fence_operands(sacc);
    fence_q();
    release_k(view.stage(0), n_tiles == 1);
    timeline::mark(1 + g, 3);
    timeline::tile(1 + g, view.tc, 3);
    scores_to_p(view.range.n_end - 1);
    timeline::mark(1 + g, 4);
    // Intra-warpgroup overlap (kIntraOverlap): each iteration ends with the
    // softmax of S(it) while P(it-1)·V(it-1) is still on the tensor cores;
    // the wait for that P·V, the O rescale and the packing of P(it) open the
    // next iteration. The loop back-edge between the two is a basic-block
    // boundary, which keeps ptxas from hoisting the wait above the softmax
    // (it does so within one block: 0 of 66 EX2 were left between the
    // waits). P is packed in one place per iteration, so it is not carried
    // around the loop. Without it, the same steps close each iteration.
    // finish_tile(it): it = key tiles whose softmax is done; P(it-1)·V(it-1),
    // if issued (it > 1), is the group in flight.
    auto finish_tile = [&](int32_t it) {
      if constexpr (!kSerial) {  // serial: already waited, before the softmax
        wg::wait<0>();
        wg::fence_operands(o);
        wg::fence_operands(p);
      }
      if (it > 1) tma::arrive(&st.v_empty[view.stage(it - 2)]);  // public predicate
      if constexpr (!kRescaleUnderS) rescale_o();  // O = 0 at it = 1: harmless
      pack_p();
      if constexpr (kTurnExp) pingpong::pass_turn<Traits::kConsumers>(g);  // the exp2 stream's turn
    };
    if constexpr (!kIntraOverlap) finish_tile(1);  // packs P(0); nothing in flight
    for (int32_t it = 1; it < n_tiles; ++it) {  // public trip count
      if constexpr (kIntraOverlap) finish_tile(it);
      const int s = view.stage(it), sp = view.stage(it - 1);
      const uint32_t ph = view.parity(it), php = view.parity(it - 1);
      tma::wait<true>(&st.k_full[s], ph);
      tma::wait<true>(view.v_landed(it - 1), php);
      timeline::mark(1 + g, 2 + 3 * it);
      gemm_turn_wait();
      wg::fence_operands(sacc);
      wg::fence_operands(o);
      wg::fence_operands(p);
      wg::fence();
      issue_qk(s);  // S(it)
      if constexpr (kRescaleUnderS) {  // O *= alpha(it-1) while S(it) runs; P(it-2)·V(it-2) has completed
        rescale_o();
        wg::fence_operands(o);
        wg::fence();
      }
      issue_pv(sp);  // O += P(it-1) V(it-1)
      gemm_turn_pass();
      if constexpr (kSerial) {  // both GEMMs done: P's registers are free for the softmax
        wg::wait<0>();
        wg::fence_operands(o);
        wg::fence_operands(p);
      } else {
        wg::wait<1>();  // S(it) landed; P·V may still run
      }
      wg::fence_operands(sacc);
      fence_q();
      release_k(s, it == n_tiles - 1);
      timeline::mark(1 + g, 3 + 3 * it);
      scores_to_p(view.range.n_end - 1 - it);
      timeline::mark(1 + g, 4 + 3 * it);
      wg::fence_operands(sacc);
      if constexpr (!kIntraOverlap) finish_tile(it + 1);
    }
    if constexpr (kIntraOverlap) finish_tile(n_tiles);
    if constexpr (kRescaleUnderS) rescale_o();  // no S GEMM left to hide it under
    // Tail: P·V of the last tile.
    const int sp = view.stage(n_tiles - 1);
    const uint32_t php = view.parity(n_tiles - 1);
    tma::wait<true>(view.v_landed(n_tiles - 1), php);
    gemm_turn_wait();
    wg::fence_operands(o);
    wg::fence_operands(p);
    wg::fence();
    issue_pv(sp);
    gemm_turn_pass();
    before_tail_wait();
    wg::wait<0>();
    wg::fence_operands(o);
    wg::fence_operands(p);
    release_last_v(sp);
    timeline::mark(1 + g, 40);
  } else {  // public: no key tile
    if constexpr (Traits::kOBuffer) tma::arrive(&st.q_empty[view.q_buf]);  // no S GEMM reads it
    after_first_issue();
    before_tail_wait();
  }
  sm.export_to(out_sm);
}

}  // namespace dhp::sm90
