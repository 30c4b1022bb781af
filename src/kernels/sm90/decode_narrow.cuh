// The narrow decode kernel (Sm90Traits DECODE_ = 2; decode.hpp,
// takes_narrow_kernel): a decode tile of at most 8 query rows -- one LLM
// step, S_q = 1, its GQA group (<= 8) packed as rows; S_q > 1 with at most
// 8 rows, e.g. drafted tokens (decode.hpp, DHP_SM90_NARROW_MULTI_SQ) -- with both GEMMs
// transposed so that the keys fill the wgmma's 64 rows instead of padding:
//   Sᵀ = K Qᵀ    (per key tile: BN / 64 m64n8k16 chains over D; A = K,
//                 B = the Q buffer's first 8 rows, both K-major)
//   Oᵀ += Vᵀ Pᵀ  (D / 64 chains over the BN keys; A = V stored [key][d]
//                 read MN-major (trans-a), B = P through shared memory)
// Every head dim: the key tile is a multiple of 64 keys (kNarrowBlockN: 64
// at D = 256, whose dense tile is 80; taken there since session 46,
// launch.cuh).
// The 64-row decode kernel (mainloop.cuh) computes 64 rows whatever the live
// ones: with S_q = 1 it spent 8 x the tensor work and 64 exp2 per thread per
// key tile on rows it then dropped, and on an H200 ran 0.77-0.91x cuDNN's
// kernel time at B8-B32 with its warps mostly waiting on its own softmax
// chain (docs/perf-log.md, session 39). Here a thread holds BN / 16 scores
// per key tile (BN / 64 m-blocks x 2 keys x 2 query rows):
//   fragment element e of m-block mb: key 64 mb + 16 w + g + 8 (e / 2),
//   query row 2 t + (e % 2)   (warp w, lane l, g = l / 4, t = l % 4).
// A query row's scores are spread over the warpgroup, so its row max is
// reduced across lanes (shuffles) and warps (shared memory and a named
// barrier; a second one per key tile publishes P); its sum stays per
// thread until the chunk ends.
//
// Work units as in the decode kernel: a split unit (one chunk of the key
// range, fp32 partials for the combine kernel) or a merging unit (every
// chunk of the tile, folded in registers with the combine's own
// chunk_merge steps, in the combine's order): the same bits either way, so
// the launcher may choose by the batch (threat model G5). The chunk results
// use chunk_merge.cuh's arithmetic, as decode_local.cuh does.
//
// Constant time: every loop runs to a public count (chunks, key tiles);
// masking is by select (key < L_k or the row's causal limit, row < L_q:
// ct_mask_lt, ct_min, ct_select) in every key tile; exp2 / rcp / log2 by
// MUFU (ct.cuh); stores are guarded by public positions (row < the view's
// S_q) and lane indices only.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/common/ct.cuh"
#include "kernels/forward_args.hpp"
#include "kernels/sm90/chunk_merge.cuh"
#include "kernels/sm90/consumer_view.cuh"
#include "kernels/sm90/decode.hpp"  // DHP_SM90_NARROW_MULTI_SQ
#include "kernels/sm90/decode_local.cuh"
#include "kernels/sm90/kernel_traits.cuh"
#include "kernels/sm90/mainloop.cuh"
#include "kernels/sm90/scheduler.cuh"
#include "kernels/sm90/tma.cuh"
#include "kernels/sm90/wgmma.cuh"

// With 8-row Q boxes the narrow plan packs only groups dividing 8, and at
// S_q > 1 would run wider groups as unpacked tiles, each re-reading K/V.
static_assert(!(DHP_SM90_NARROW_MULTI_SQ != 0 && DHP_SM90_NARROW_Q_ROWS == 8),
              "DHP_SM90_NARROW_MULTI_SQ with DHP_SM90_NARROW_Q_ROWS=8: not a combination to build");

namespace dhp::sm90::narrow {

constexpr int kRows = 8;  // query rows per tile: the wgmma's N

// A chunk's state in one consumer thread: its two query rows' running raw
// max (the same in every thread that holds the row), its own partial sums,
// and its Oᵀ fragment (d = 64 mb + 16 w + g + 8 (e / 2), row 2 t + e % 2).
template <int D>
struct ChunkState {
  float m[2], l[2];
  float o[D / 64][4];
};

// Where a thread is in the warpgroup, and the unit's public and secret
// bounds (L_q in rows, L_k in keys; clamped by the producer,
// kernels/common/lengths.cuh load_lengths_packed).
struct Place {
  int w, g, t;
  int32_t L_q, L_k;
};

// The four warps' per-row partials (maxima, sums) through shared memory:
// warp w's rows 2t and 2t+1 at buf[w][2t] (8-B aligned), written by the
// lanes with g = 0 and read by every lane after a barrier. Explicit
// st.shared / ld.shared with 32-bit addresses: through a C++ reference into
// SharedStorage ptxas emitted generic 64-bit ST.E / LD.E here, which sit in
// the per-key-tile chain (level in time: H200, session 41, B8 GQA D64
// 23.8 -> 23.7 µs). The values are secret; the addresses are public.
struct RowPair {
  float v[2];
};
__device__ __forceinline__ void put_rows(float (&buf)[4][kRows], int w, int t, float a, float b) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(&buf[w][2 * t]));
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(addr), "f"(a), "f"(b) : "memory");
}
__device__ __forceinline__ RowPair get_rows(float (&buf)[4][kRows], int w, int t) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(&buf[w][2 * t]));
  RowPair p;
  asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];" : "=f"(p.v[0]), "=f"(p.v[1]) : "r"(addr) : "memory");
  return p;
}

// The key tiles [n_begin, n_end) of one chunk, last first, from ring
// position kv on: Sᵀ, mask, softmax, P to shared memory, Oᵀ += Vᵀ Pᵀ.
template <typename Traits>
__device__ __forceinline__ ChunkState<Traits::kHeadDim> run_chunk(SharedStorage<Traits>& st,
                                                                  const kernels::ForwardArgs& args, const Place& at,
                                                                  uint32_t q_addr, int32_t n_begin, int32_t n_end,
                                                                  uint32_t kv) {
  using T = typename Traits::T;
  constexpr DType DT = dtype_of<T>();
  constexpr int BN = Traits::kBlockN, D = Traits::kHeadDim, S = Traits::kStages, QR = Traits::kQRows;
  constexpr int MB = BN / 64, DB = D / 64;
  static_assert(BN % 64 == 0 && D % 64 == 0, "narrow decode: 64-key and 64-column blocks");
  constexpr uint32_t kStageBytes = Traits::kKVBytes;
  const uint64_t dq = desc::k_major_sw128(q_addr);
  const uint64_t dk0 = desc::k_major_sw128(static_cast<uint32_t>(__cvta_generic_to_shared(st.k[0])));
  const uint64_t dv0 = desc::mn_major_sw128(static_cast<uint32_t>(__cvta_generic_to_shared(st.v[0])), BN);
  const uint32_t p_addr = static_cast<uint32_t>(__cvta_generic_to_shared(st.narrow.p[0]));
  const uint64_t dp0 = desc::k_major_sw128(p_addr);
  constexpr uint32_t kPBytes = sizeof(st.narrow.p[0]);
  const float c = args.scale_log2;

  ChunkState<D> cs;
  cs.m[0] = cs.m[1] = -INFINITY;
  cs.l[0] = cs.l[1] = 0.0f;
#pragma unroll
  for (int b = 0; b < DB; ++b)
#pragma unroll
    for (int e = 0; e < 4; ++e) cs.o[b][e] = 0.0f;
  float s[MB][4];

#if DHP_SM90_NARROW_MULTI_SQ
  // S_q > 1 (decode.hpp, DHP_SM90_NARROW_MULTI_SQ): with the causal flag (public), row q
  // -- position q >> q_shift of the packed rows, L_q counting rows -- sees
  // keys up to its diagonal (q >> q_shift) + L_k - (L_q >> q_shift), as the
  // 64-row kernel's packed mask (consumer_view.cuh); the key limit per row
  // is then min(L_k, diagonal + 1). Secret with lengths: arithmetic only.
  // (With DHP_SM90_NARROW_MULTI_SQ=0 the mask reads L_k itself: an array
  // of two L_k there moved instructions in that build's SASS.)
  int32_t key_limit[2] = {at.L_k, at.L_k};
  if (args.causal != 0) {  // public
    const int32_t lag = at.L_k - (at.L_q >> args.q_shift);  // a shift by a public amount
#pragma unroll
    for (int r = 0; r < 2; ++r) key_limit[r] = ct::ct_min(at.L_k, ((2 * at.t + r) >> args.q_shift) + lag + 1);
  }
#endif

  const int32_t n_tiles = n_end - n_begin;  // public
  for (int32_t it = 0; it < n_tiles; ++it) {  // public trip count
    const uint32_t pos = kv + static_cast<uint32_t>(it);
    const int st_i = static_cast<int>(pos % S);
    const uint32_t ph = (pos / S) & 1;
    const int32_t n = n_end - 1 - it;  // key tiles last first, as the producer loads them
    tma::wait<true>(&st.k_full[st_i], ph);
    wg::fence_operands(s);
    wg::fence();
#pragma unroll
    for (int mb = 0; mb < MB; ++mb)
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk)
        MmaSS<DT, kRows>::template run<0, 0>(
            s[mb], desc::advance_lo(dk0, st_i * kStageBytes + mb * 64 * 128 + (kk / 4) * BN * 128 + (kk % 4) * 32),
            desc::advance_lo(dq, (kk / 4) * QR * 128 + (kk % 4) * 32), kk > 0);
    wg::commit();
    wg::wait<0>();  // Sᵀ(it), and Oᵀ += Vᵀ Pᵀ of the key tile before it
    wg::fence_operands(s);
    wg::fence_operands(cs.o);
    tma::arrive(&st.k_empty[st_i]);
    if (it > 0) tma::arrive(&st.v_empty[(pos - 1) % S]);  // public predicate

    // Mask by select: key < L_k (or the row's causal limit) and row < L_q
    // (secret with lengths).
    const int32_t key0 = n * BN + 16 * at.w + at.g;
#pragma unroll
    for (int mb = 0; mb < MB; ++mb)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
#if DHP_SM90_NARROW_MULTI_SQ
        const int32_t limit = key_limit[e % 2];
#else
        const int32_t limit = at.L_k;
#endif
        const ct::Mask seen = ct::ct_mask_and(ct::ct_mask_lt(key0 + 64 * mb + 8 * (e / 2), limit),
                                              ct::ct_mask_lt(2 * at.t + (e % 2), at.L_q));
        s[mb][e] = ct::ct_select(seen, s[mb][e], -INFINITY);
      }
    // The key tile's max per row: the thread's keys, the lanes of its
    // column (same t), the four warps (shared memory: written before the
    // barrier below, read after it; the next tile's write comes after this
    // tile's second barrier, so one buffer would do -- two cost nothing).
    float mx[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      mx[r] = ct::ct_fmax(s[0][r], s[0][2 + r]);
#pragma unroll
      for (int mb = 1; mb < MB; ++mb) mx[r] = ct::ct_fmax(mx[r], ct::ct_fmax(s[mb][r], s[mb][2 + r]));
#pragma unroll
      for (int off = 4; off < 32; off *= 2) mx[r] = ct::ct_fmax(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], off));
    }
    float(&red)[4][kRows] = st.narrow.max[pos & 1];
    if (at.g == 0) put_rows(red, at.w, at.t, mx[0], mx[1]);  // public: lane index
    consumer_warpgroup_sync(0);
    const RowPair warp_max[4] = {get_rows(red, 0, at.t), get_rows(red, 1, at.t), get_rows(red, 2, at.t),
                                 get_rows(red, 3, at.t)};
    float alpha[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float tile_max = ct::ct_fmax(ct::ct_fmax(warp_max[0].v[r], warp_max[1].v[r]),
                                         ct::ct_fmax(warp_max[2].v[r], warp_max[3].v[r]));
      const float m_new = ct::ct_fmax(cs.m[r], tile_max);
      const float used = chunk_merge::used(m_new);
      alpha[r] = ct::ct_exp2((cs.m[r] - used) * c);
      cs.m[r] = m_new;
      const float used_scaled = used * c;
      float sum = 0.0f;
#pragma unroll
      for (int mb = 0; mb < MB; ++mb)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float p = ct::ct_exp2(fmaf(s[mb][2 * h + r], c, -used_scaled));
          s[mb][2 * h + r] = p;
          sum += p;
        }
      cs.l[r] = fmaf(cs.l[r], alpha[r], sum);
    }
    // Unconditional rescale: the same multiplies whether the max moved.
#pragma unroll
    for (int b = 0; b < DB; ++b)
#pragma unroll
      for (int e = 0; e < 4; ++e) cs.o[b][e] *= alpha[e % 2];
    // P as [row][key] in 128-B-swizzled 64-key blocks: the K-major B operand,
    // each weight rounded to nearest (out_bits, as the 64-row kernel's pack2).
    // Written after the max barrier, which every warp reaches after its
    // wait<0> above, so the Oᵀ GEMM of the previous tile (the last reader
    // of any P buffer) has completed; the buffer alternates by tile all the
    // same.
    const uint32_t pb = p_addr + (pos & 1) * kPBytes;
#pragma unroll
    for (int mb = 0; mb < MB; ++mb)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const uint32_t a = pb + sw128_offset(2 * at.t + (e % 2), 64 * mb + 16 * at.w + at.g + 8 * (e / 2), kRows);
        asm volatile("st.shared.u16 [%0], %1;" ::"r"(a), "h"(chunk_merge::out_bits<T>(s[mb][e])) : "memory");
      }
    tma::fence_generic_to_async();  // wgmma reads P through the async proxy
    consumer_warpgroup_sync(0);     // every thread's P is written
    tma::wait<true>(&st.v_full[st_i], ph);
    wg::fence_operands(cs.o);
    wg::fence();
#pragma unroll
    for (int b = 0; b < DB; ++b)
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk)
        MmaSS<DT, kRows>::template run<0, 1>(
            cs.o[b], desc::advance_lo(dv0, st_i * kStageBytes + b * BN * 128 + kk * 16 * 128),
            desc::advance_lo(dp0, (pos & 1) * kPBytes + (kk / 4) * kRows * 128 + (kk % 4) * 32), 1);
    wg::commit();
  }
  wg::wait<0>();
  wg::fence_operands(cs.o);
  if (n_tiles > 0) tma::arrive(&st.v_empty[(kv + static_cast<uint32_t>(n_tiles) - 1) % S]);  // public
  return cs;
}

// A chunk's x = O / l (0 for a padding row or one that saw no key) in
// place, and lse per row (chunk_merge.cuh): the row sums reduced over the
// column's lanes and the four warps (shared memory, double-buffered by
// chunk: an empty chunk has no barrier of its own in between).
template <int D>
__device__ __forceinline__ void chunk_result(ChunkState<D>& cs, float (&sums)[2][4][kRows], uint32_t chunk,
                                             const Place& at, float scale_log2, float (&lse)[2]) {
  float l[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] = cs.l[r];
#pragma unroll
    for (int off = 4; off < 32; off *= 2) l[r] += __shfl_xor_sync(0xffffffffu, l[r], off);
  }
  float(&part)[4][kRows] = sums[chunk & 1];
  if (at.g == 0) put_rows(part, at.w, at.t, l[0], l[1]);  // public: lane index
  consumer_warpgroup_sync(0);
  const RowPair warp_sum[4] = {get_rows(part, 0, at.t), get_rows(part, 1, at.t), get_rows(part, 2, at.t),
                               get_rows(part, 3, at.t)};
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int q = 2 * at.t + r;
    const float total = (warp_sum[0].v[r] + warp_sum[1].v[r]) + (warp_sum[2].v[r] + warp_sum[3].v[r]);
    const ct::Mask keep = ct::ct_mask_and(ct::ct_mask_lt(q, at.L_q), ct::ct_mask_not(ct::ct_mask_eq_f(total, 0.0f)));
    const float inv_l = ct::ct_rcp(total);
#pragma unroll
    for (int b = 0; b < D / 64; ++b)
#pragma unroll
      for (int h = 0; h < 2; ++h) cs.o[b][2 * h + r] = chunk_merge::chunk_x(cs.o[b][2 * h + r], inv_l, keep);
    lse[r] = chunk_merge::chunk_lse(cs.m[r], total, keep, scale_log2);
  }
}

// One work unit of the narrow kernel: a split unit's chunk (fp32 partials)
// or a merging unit's chunks (ForwardArgs::decode_local), as the decode
// kernel's units (forward_kernel.cuh, decode_local.cuh). kv: the ring
// position, advanced by the unit's key tiles. release_previous_q runs at
// the unit's start, so that the producer loads the next unit's Q and first
// K/V during this one: safe, since the previous unit's Sᵀ GEMMs completed
// at its last wait and its lengths slot was read at its start. (Released
// after the first chunk instead -- a split unit's end -- each unit boundary
// paid one DRAM latency: B8 GQA 32/8 S_k 4096 D64 25.4 against 23.9 µs,
// docs/perf-log.md, session 40.) decode_next before the stores.
template <typename Traits, typename ReleaseQ, typename DecodeNext>
__device__ __forceinline__ void run_unit(SharedStorage<Traits>& st, const kernels::ForwardArgs& args,
                                         const ScheduledTile& cur, int wtid, uint32_t& kv, uint32_t tc,
                                         ReleaseQ&& release_previous_q, DecodeNext&& decode_next) {
  static_assert(Traits::kNarrow && Traits::kConsumers == 1 && Traits::kQStages == 2, "the narrow decode kernel");
  using T = typename Traits::T;
  constexpr int D = Traits::kHeadDim, DB = D / 64;
  const Tile tile = cur.tile;
  const int lane = wtid % 32;
  Place at{wtid / 32, lane / 4, lane % 4, args.seqlen_q, args.seqlen_k};
  const int q_buf = static_cast<int>(tc % 2);
  const uint32_t q_addr = static_cast<uint32_t>(__cvta_generic_to_shared(st.q[q_buf]));
  tma::wait<true>(&st.q_full[q_buf], (tc / 2) & 1);
  if constexpr (Traits::kHasLengths) {  // secret, written by the producer before q_full's arrive
    const uint32_t lens = static_cast<uint32_t>(__cvta_generic_to_shared(st.lens[tc % Traits::kLensSlots]));
    asm volatile("ld.shared.v2.s32 {%0, %1}, [%2];" : "=r"(at.L_q), "=r"(at.L_k) : "r"(lens));
  }
  const bool merging = args.decode_local != 0;  // public: the launcher's choice
  const int32_t chunks = merging ? args.kv_splits : 1;
  chunk_merge::Row rows[2] = {chunk_merge::start(), chunk_merge::start()};
  float acc[DB][4];
  float lse[2];
  ChunkState<D> cs;
  release_previous_q();
  for (int32_t i = 0; i < chunks; ++i) {  // public trip count: the last chunk first (the combine's order)
    KeyChunk range{cur.n_begin, cur.n_end};
    if (merging) range = key_chunk(cur.n_end, args.kv_splits - 1 - i, args.split_key_tiles);  // public
    cs = run_chunk<Traits>(st, args, at, q_addr, range.n_begin, range.n_end, kv);
    kv += static_cast<uint32_t>(range.n_end - range.n_begin);
    // The sums' buffer alternates by chunk across units (public counts).
    chunk_result<D>(cs, st.narrow.sum, tc * static_cast<uint32_t>(chunks) + static_cast<uint32_t>(i), at,
                    args.scale_log2, lse);
    if (merging) {  // public
      const chunk_merge::Step k0 = chunk_merge::step(rows[0], lse[0]);
      const chunk_merge::Step k1 = chunk_merge::step(rows[1], lse[1]);
#pragma unroll
      for (int b = 0; b < DB; ++b)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          acc[b][e] = chunk_merge::fold(i == 0 ? 0.0f : acc[b][e], e % 2 ? k1 : k0, cs.o[b][e]);  // public: i
    }
  }
  decode_next();
  // The consumers' first global stores: after the previous grid
  // (programmatic dependent launch, as forward_kernel.cuh's epilogue).
  if (!Traits::kHasLengths || args.v_ready == nullptr) pdl::wait_for_previous_grid();  // public
  const int32_t rows_q = args.seqlen_q;  // the view's rows (public)
  if (!merging) {  // public
    const int64_t lse_row0 = (static_cast<int64_t>(tile.batch) * args.heads_q + tile.head) * args.seqlen_q;
    const int64_t unit_row0 = static_cast<int64_t>(tile.split) * args.batch * args.heads_q * args.seqlen_q + lse_row0;
    float* o_rows = args.o_partial + unit_row0 * D;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int q = 2 * at.t + r;
      if (q < rows_q) {  // public: position
#pragma unroll
        for (int b = 0; b < DB; ++b)
#pragma unroll
          for (int h = 0; h < 2; ++h) o_rows[q * D + 64 * b + 16 * at.w + at.g + 8 * h] = cs.o[b][2 * h + r];
        if (at.w == 0 && at.g == 0) args.lse_partial[unit_row0 + q] = lse[r];  // public: lane
      }
    }
    return;
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int q = 2 * at.t + r;
    const ct::Mask kept = chunk_merge::keep(rows[r]);
    const float inv_l = ct::ct_rcp(rows[r].l);
    if (q < rows_q) {  // public: position
      const decode_local::CallRow to = decode_local::call_row(args, tile.batch, tile.head, q);
      uint16_t* dst = reinterpret_cast<uint16_t*>(static_cast<T*>(args.o) + to.o_offset);
#pragma unroll
      for (int b = 0; b < DB; ++b)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          dst[64 * b + 16 * at.w + at.g + 8 * h] =
              chunk_merge::out_bits<T>(chunk_merge::out(acc[b][2 * h + r], inv_l, kept));
      if (args.lse != nullptr && at.w == 0 && at.g == 0)  // public
        args.lse[to.lse_index] = chunk_merge::lse(rows[r], kept);
    }
  }
}

// The narrow kernel's consumer warpgroup: its units in the static
// schedule's order (forward_kernel.cuh's loop, one unit per iteration).
template <typename Traits>
__device__ __forceinline__ void run_consumer_loop(SharedStorage<Traits>& st, const kernels::ForwardArgs& args,
                                                  const TileScheduler<Traits::kBlockM, true>& sched, int wtid) {
  constexpr int BM = Traits::kBlockM, BN = Traits::kBlockN;
  ScheduledTile cur = scheduled_tile<BM, BN>(args, sched, 0), next;
  uint32_t kv = 0, tc = 0;
  for (int32_t r = 0; cur.t < sched.total; ++r) {  // public schedule
    auto release_previous_q = [&] {
      if (tc > 0) tma::arrive(&st.q_empty[(tc - 1) % 2]);  // public; the unit's Sᵀ GEMMs read it, none store there
    };
    auto decode_next = [&] { next = scheduled_tile<BM, BN>(args, sched, r + 1); };
    run_unit<Traits>(st, args, cur, wtid, kv, tc, release_previous_q, decode_next);
    ++tc;
    cur = next;
  }
}

}  // namespace dhp::sm90::narrow
