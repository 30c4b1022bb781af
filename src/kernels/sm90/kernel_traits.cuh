// Tile shapes and shared-memory layout of the Hopper kernel, per head dim.
//
// CTA = 1 + kConsumers warpgroups: WG0 produces (TMA), the others consume
// 64 query rows each (BM = 128 with two; 192 with three, D64 long
// sequences). Tiles live in shared memory in the 128-byte swizzled
// layout TMA writes and wgmma reads: column blocks of 64 elements (128 B per
// row), each block `rows` x 128 B, 1024-byte aligned.
#pragma once

#include <cstdint>

#ifndef DHP_SM90_BN64
#define DHP_SM90_BN64 128
#endif
#ifndef DHP_SM90_BN128
#define DHP_SM90_BN128 128
#endif
// D = 64 keeps three K/V stages (16 KB tiles, so a third fits at every
// height): the next tile's first K/V land earlier at tile boundaries, +0.4
// to +1.5 % (docs/perf-log.md, sessions 8 and 9). Its producer then waits on
// empty slots, and those try-wait retries vary between launches; gate 1's
// per-instruction check (tools/validate/per_pc.py) tells them apart.
#ifndef DHP_SM90_STAGES64
#define DHP_SM90_STAGES64 3
#endif
#ifndef DHP_SM90_BN256
#define DHP_SM90_BN256 80
#endif
// K/V stages of the D = 256 kernel with the overlapped main loop (A/B knob).
#ifndef DHP_SM90_STAGES256
#define DHP_SM90_STAGES256 2
#endif
#ifndef DHP_SM90_O_IN_RING
#define DHP_SM90_O_IN_RING 1
#endif
// A shared-memory buffer of its own for the O staging (DHP_SM90_O_BUFFER,
// a mask of the D = 64 kernels, where two Q buffers and it fit: 1 / 2 / 4
// the one- / two- / three-consumer kernel), so that a tile's Q buffer goes
// back to the producer right after the tile's last S GEMM -- as D = 256
// does with O staged in the ring -- instead of after the next tile's first
// S GEMM, once the epilogue's stores have read it: the producer can load
// the Q two tiles ahead, which short causal tiles need. Five-round A/B
// (H200): D64 causal S512 / S1024 / S2048 +2.0 / +1.6 / +0.8 % with the
// two-consumer kernel; the three-consumer kernel's rows -0.9 to -1.2 %, so
// not there. Nor in the one-consumer kernel (small grids, one tile per CTA:
// +0.1 to +0.9 %), where gate 1 rejected it: a hardware instruction count
// (smsp__thread_inst_executed_pred_on; the SASS-level counts stayed
// identical) varied with timing in a way that separated the length classes
// (docs/perf-log.md, session 17).
#ifndef DHP_SM90_O_BUFFER
#define DHP_SM90_O_BUFFER 2
#endif
// Q columns each consumer thread holds in registers for S = Q·Kᵀ (A from
// registers for those k-steps, from shared memory for the rest), by kernel:
// D = 128 with 128- / 160-key tiles, D = 256 with two K/V stages; 0: Q read
// from shared memory by every S GEMM. The SM's shared-memory traffic per key
// tile -- the TMA's K/V writes plus the wgmma reads of Q, K and V -- is
// 224 KB (D128, 128 keys), 272 KB (160 keys), 304 KB (D256) against 128
// B/clk (docs/perf-log.md, session 19); Q held in registers is read once per
// tile instead of once per key tile (docs/perf-log.md, session 30). Where
// registers allow: all of Q in the 128-key D128 kernels (S 64 + P 32 + O 64
// + Q 32 registers; +1.4 / +1.5 % on D128 S1024 / causal S4096, H200); the
// 160-key kernels lost 0.5-1.4 % with 64 columns; D256 spills with 32.
// A/B knobs: a multiple of 16 up to D.
#ifndef DHP_SM90_Q_REG_COLS128
#define DHP_SM90_Q_REG_COLS128 128
#endif
#ifndef DHP_SM90_Q_REG_COLS160
#define DHP_SM90_Q_REG_COLS160 0
#endif
#ifndef DHP_SM90_Q_REG_COLS256
#define DHP_SM90_Q_REG_COLS256 0
#endif
// K/V stages of the decode kernels (DECODE_ below), by head dim: the dense
// kernels' three and two. Their 64-row Q buffers leave room for six and
// three, which measured 1-5 % slower on every decode shape (H200, A/B:
// docs/perf-log.md, session 32): more bytes in flight per SM is not what
// bounds them. A/B knobs.
#ifndef DHP_SM90_DECODE_STAGES64
#define DHP_SM90_DECODE_STAGES64 3
#endif
#ifndef DHP_SM90_DECODE_STAGES128
#define DHP_SM90_DECODE_STAGES128 2
#endif
// The narrow decode kernel's (decode_narrow.cuh): no merged O in shared
// memory, so more room for the ring at D = 64. A/B knobs.
#ifndef DHP_SM90_NARROW_STAGES64
#define DHP_SM90_NARROW_STAGES64 3
#endif
#ifndef DHP_SM90_NARROW_STAGES128
#define DHP_SM90_NARROW_STAGES128 2
#endif
// D = 256 (session 45; taken by default since session 46, launch.cuh):
// 64-key tiles -- the Sᵀ GEMM's m-blocks are 64 keys, the dense D256 tile's
// 80 is not a multiple -- 64 KB of K and V per stage, two stages beside
// the two 32 KB Q buffers (192 KB).
#ifndef DHP_SM90_NARROW_STAGES256
#define DHP_SM90_NARROW_STAGES256 2
#endif
#ifndef DHP_SM90_NARROW_BN256
#define DHP_SM90_NARROW_BN256 64
#endif
// Rows of the narrow decode kernel's Q buffers and TMA box: 64 as the
// 64-row kernel (shipped), or 8, the rows it reads -- 2 KB instead of 16 at
// D = 128, which leaves room for a third K/V stage there
// (DHP_SM90_NARROW_STAGES128=3). An A/B knob, off: measured in session 40
// (docs/perf-log.md) with the third D128 stage and five D64 stages, it gained
// nothing (B8 GQA 32/8 S_k 4096: D128 39.3 -> 40.3 µs, D64 23.9 -> 24.2).
#ifndef DHP_SM90_NARROW_Q_ROWS
#define DHP_SM90_NARROW_Q_ROWS 64
#endif
static_assert(DHP_SM90_NARROW_Q_ROWS == 8 || DHP_SM90_NARROW_Q_ROWS == 64, "narrow Q buffers: 8 or 64 rows");
// Narrow decode CTAs per SM at D = 64: 2 (shipped since session 41) or 1
// (an A/B knob). Session 40's stall profile of the narrow kernel at B8 GQA
// 32/8 S_k 4096 D64 had its consumer waiting for K and V to land in ≈ 25 %
// of its samples, yet more stages gained nothing: one CTA's serial chain
// (wait, Sᵀ GEMM, max exchange, P exchange, wait, Oᵀ GEMM) leaves its SM's
// memory pipe idle between its bursts; cuDNN's kernel runs two CTAs per SM
// at these shapes (docs/perf-log.md, session 39). With 2: the launch bounds
// ask for two resident CTAs (128 registers per thread at launch; the
// setmaxnreg split below stays within them), shared memory at most half an
// SM's less the per-CTA reserve, two K/V stages, the grid up to twice the
// SMs (launch.cuh). H200, sessions 40-41: B8 GQA 32/8 S_k 4096 23.7 -> 22.3
// µs (0.89 -> 0.95x cuDNN), B32 and B8 MHA 4-7 % faster. D = 128 stays at
// one CTA: two, on 64-key tiles (two stages) or on 128-key tiles (one
// stage), measured slower (B8 39.3 -> 40.7 µs; B1 10.0 -> 12.3 µs).
#ifndef DHP_SM90_NARROW_CTAS64
#define DHP_SM90_NARROW_CTAS64 2
#endif
static_assert(DHP_SM90_NARROW_CTAS64 == 1 || DHP_SM90_NARROW_CTAS64 == 2, "narrow CTAs per SM at D = 64: 1 or 2");
// GQA heads packed as rows at S_q > 1 in the decode kernels (decode.hpp;
// the 5-D Q load and the causal mask on row >> q_shift). On by default
// since its suites and gates ran on a GPU (docs/perf-log.md, session 34);
// DHP_SM90_PACKED_ROWS=0 compiles it out (the unpacked S_q > 1 kernels of
// session 33), DHP_SM90_DECODE_PACK_SQ=0 turns it off at run time (A/B
// within one build).
#ifndef DHP_SM90_PACKED_ROWS
#define DHP_SM90_PACKED_ROWS 1
#endif
// Dense 64-row tiles (one consumer warpgroup) for S_q <= 64 at D = 128 and
// 256, where a 128-row tile computes at least half padding rows
// (launch.cuh). On by default since session 36 (H200: 1.24-1.33x the
// 128-row tiles on GQA S_q 64 S_k 1024-2048, docs/perf-log.md);
// DHP_SM90_DENSE_64ROWS=0 compiles them out, and the run-time variable of
// the same name, set to 0, turns them off for an A/B within one build.
#ifndef DHP_SM90_DENSE_64ROWS
#define DHP_SM90_DENSE_64ROWS 1
#endif
#ifndef DHP_SM90_PRODUCER_REGS
#define DHP_SM90_PRODUCER_REGS 40
#endif
#ifndef DHP_SM90_CONSUMER_REGS
#define DHP_SM90_CONSUMER_REGS 232
#endif

namespace dhp::sm90 {

// A head dim's bit in the compile-time switches that are masks by head dim
// (DHP_SM90_INTRA_WG_OVERLAP, DHP_SM90_PRODUCER_WARP_WAITS).
constexpr int head_dim_bit(int d) { return d == 64 ? 1 : d == 128 ? 2 : 4; }

template <int D>
struct Sm90Config;
// Key tile: as wide as registers allow (S tile = BN/2 fp32 registers, O =
// D/2) with two K/V stages in shared memory (three at D = 64); the
// one-GEMM D = 256 kernel takes 128 keys and one stage (Sm90Traits).
template <>
struct Sm90Config<64> {
  static constexpr int kBlockN = DHP_SM90_BN64;
};
template <>
struct Sm90Config<128> {
  static constexpr int kBlockN = DHP_SM90_BN128;
};
template <>
struct Sm90Config<256> {
  static constexpr int kBlockN = DHP_SM90_BN256;
};
// The narrow decode kernel's key tile (decode_narrow.cuh: a multiple of 64).
template <int D>
constexpr int kNarrowBlockN = D == 256 ? DHP_SM90_NARROW_BN256 : Sm90Config<D>::kBlockN;

// NC_: consumer warpgroups (1, 2 or 3). D = 64 is built with all three
// (launch.cuh picks by shape); the other head dims with 2. BN_: key tile
// width, Sm90Config's unless launch.cuh picks another by shape (D = 128).
// HALF_: 32-row tiles (one consumer warpgroup at D = 64, below).
// ONE_GEMM_: one GEMM in flight per consumer warpgroup (mainloop.cuh,
// kOneGemm): S(j), its wait, the softmax, P(j)·V(j), its wait, so that S
// and P are never live together. What lets D = 256 take 128-key tiles
// (cuDNN's D256 shape; docs/perf-log.md, session 23): O 128 + S 64
// registers at the peak, consumers at 240 and the producer at 24, one K/V
// stage beside the 64 KB Q (64 + 64 + 64 KB). launch.cuh takes it where
// it measured faster (short and causal sequences).
// DECODE_: the decode kernel (sm90/decode.hpp): one consumer warpgroup of
// 64 query rows, each work unit a chunk of a query tile's key range
// (ForwardArgs::kv_splits), O and lse written as fp32 partials that a
// combine kernel merges (sm90/split_combine.cu); or, where kMergeChunks and
// the launcher asks for it, a whole tile whose chunks the unit merges
// itself (decode_local.cuh). DECODE_ = 2: the narrow decode kernel
// (decode_narrow.cuh: at most 8 query rows, the GEMMs transposed so that
// the keys, not the padded query rows, fill the wgmma's 64 rows).
template <typename T_, int D, bool HAS_LENGTHS_, int NC_ = 2, int BN_ = Sm90Config<D>::kBlockN, bool HALF_ = false,
          bool ONE_GEMM_ = false, int DECODE_ = 0>
struct Sm90Traits {
  using T = T_;
  static constexpr int kHeadDim = D;
  static constexpr bool kHasLengths = HAS_LENGTHS_;
  // Consumer warpgroups of 64 query rows each, taking turns (ping-pong);
  // with three, two warpgroups' GEMMs cover one softmax (FA3's D = 64 shape).
  static constexpr int kConsumers = NC_;
  static constexpr int kConsumerThreads = 128 * kConsumers;
  // Rows of a Q buffer: each warpgroup's m64 wgmma operand.
  static constexpr int kQRows = DECODE_ == 2 ? DHP_SM90_NARROW_Q_ROWS : 64 * kConsumers;
  // Half-row tiles (kHalfRows): 32 query rows per tile, for grids too small
  // to fill the GPU (the small call). A thread of an m64 fragment holds two
  // rows of its warp's 16-row slab, g and g + 8; the tile's 32 rows are the
  // first halves (Q buffer rows 16w .. 16w + 7 hold tile rows 8w .. 8w + 7,
  // w = warp), so every warp, and with it every sub-partition's MUFU, still
  // works, on half the exp2, max and sum work per thread. The tensor work
  // stays that of 64 rows (the small call uses ~6 % of the tensor pipe).
  // Each row meets the same instructions in the same order as in a 64-row
  // tile, so the bits do not depend on the height (TileHeights tests).
  static constexpr bool kHalfRows = HALF_;
  static_assert(!HALF_ || (NC_ == 1 && D == 64), "half-row tiles: the one-consumer D = 64 kernel");
  static constexpr int kBlockM = HALF_ ? 32 : kQRows;  // query rows per tile
  static constexpr int kBlockN = BN_;
  static_assert(BN_ % 16 == 0, "P.V takes 16 keys per wgmma");
  static constexpr bool kOneGemm = ONE_GEMM_;
  static constexpr bool kDecode = DECODE_ != 0;
  static constexpr bool kNarrow = DECODE_ == 2;  // decode_narrow.cuh
  static_assert(DECODE_ >= 0 && DECODE_ <= 2 && (!kNarrow || BN_ % 64 == 0), "decode kernels: 1, or 2 (narrow: 64-key blocks)");
  static constexpr bool kPackedRows = kDecode && DHP_SM90_PACKED_ROWS != 0;  // S_q > 1 packed (above)
  // Decode units that may merge their own chunks (decode_local.cuh), taken
  // where the batch fills the GPU (decode.hpp, merging_units_pay): 0.88-
  // 0.98x the split units' time there on the S_k 4096 shapes measured (B8
  // GQA 32/8 S_q 64 97.4 vs 108.1 us, B32 S_q 8 135.7 vs 152.5;
  // docs/perf-log.md, session 37). The running O in shared memory, 64 x D
  // fp32 -- room beside Q and the ring up to D = 128 (32 KB), not at 256.
  static constexpr bool kMergeChunks = DECODE_ == 1 && D <= 128;
  static_assert(!kDecode || (NC_ == 1 && !HALF_ && !ONE_GEMM_), "decode: one consumer warpgroup, 64-row tiles");
  // Built and tested for D = 256 without secret lengths only (launch.cuh);
  // elsewhere its register split and one stage have not been checked.
  static_assert(!ONE_GEMM_ || (D == 256 && !HAS_LENGTHS_ && NC_ == 2 && !HALF_),
                "one GEMM in flight: the dense D = 256 kernel, two consumer warpgroups");
  // Q columns held in registers (DHP_SM90_Q_REG_COLS* above): the
  // two-consumer D = 128 / 256 kernels with both GEMMs in flight.
  static constexpr int kQRegCols = NC_ != 2 || ONE_GEMM_ || HALF_ ? 0
                                   : D == 256                   ? DHP_SM90_Q_REG_COLS256
                                   : D != 128                   ? 0
                                   : BN_ == 160                 ? DHP_SM90_Q_REG_COLS160
                                                                : DHP_SM90_Q_REG_COLS128;
  static_assert(kQRegCols % 16 == 0 && kQRegCols >= 0 && kQRegCols <= D, "Q columns in registers: 16 per k-step");
  // Resident CTAs per SM (__launch_bounds__, the decode grid): 2 only for
  // the narrow D = 64 kernel (above), with two K/V stages in half an SM.
  static constexpr int kCtasPerSm = kNarrow && D == 64 ? DHP_SM90_NARROW_CTAS64 : 1;
  static constexpr int kStages = kCtasPerSm == 2       ? 2
                                 : kNarrow && D == 64  ? DHP_SM90_NARROW_STAGES64
                                 : kNarrow && D == 128 ? DHP_SM90_NARROW_STAGES128
                                 : kNarrow && D == 256 ? DHP_SM90_NARROW_STAGES256
                                 : kDecode && D == 64  ? DHP_SM90_DECODE_STAGES64
                                 : kDecode && D == 128 ? DHP_SM90_DECODE_STAGES128
                                 : D == 64             ? DHP_SM90_STAGES64
                                 : D == 256            ? (ONE_GEMM_ ? 1 : DHP_SM90_STAGES256)
                                                       : 2;
  static constexpr int kThreads = 128 + kConsumerThreads;
  static constexpr int kColBlocks = D / 64;  // TMA boxes per tile (64 elements = 128 B wide)
  static constexpr int kQBytes = kQRows * D * 2;      // a Q buffer
  static constexpr int kQLoadBytes = kBlockM * D * 2;  // what the copies write into it per tile
  static constexpr int kKVBytes = kBlockN * D * 2;
  // Register split (setmaxnreg): 128 x 40 + 256 x 232 <= 64K (two
  // consumers); 128 x 32 + 384 x 160 = 64K (three); one consumer has room
  // to spare (64-row tiles for grids that would not fill the GPU).
  // One GEMM in flight (kOneGemm): 128 x 24 + 256 x 240 = 64 512, the
  // launch's 168 x 384.
  // Two narrow CTAs per SM: 128 x 40 + 128 x 216 = 32K each.
  static constexpr int kProducerRegs = kCtasPerSm == 2   ? 40
                                       : kConsumers == 3 ? 32
                                       : kOneGemm        ? 24
                                                         : DHP_SM90_PRODUCER_REGS;
  // The one consumer warpgroup of the decode kernel and of the dense 64-row
  // D = 128 / 256 kernels takes all it may (the D = 256 decode kernel with
  // lengths spilled 40 bytes at 232). The 64-row D = 64 kernel keeps 232.
  static constexpr int kConsumerRegs = kCtasPerSm == 2                    ? 216
                                       : kConsumers == 3                  ? 160
                                       : kOneGemm                         ? 240
                                       : kDecode || (NC_ == 1 && D != 64) ? 256
                                                                          : DHP_SM90_CONSUMER_REGS;
  static_assert(kConsumers >= 1 && kConsumers <= 3, "1, 2 or 3 consumer warpgroups");
  // The split fits the register file of an SM (64K) with kCtasPerSm CTAs
  // resident: setmaxnreg.inc would otherwise wait for registers no CTA frees.
  static_assert(kCtasPerSm * (128 * kProducerRegs + kConsumerThreads * kConsumerRegs) <= 64 * 1024,
                "setmaxnreg split beyond the register file");
  // Q ring: two buffers where they fit beside the K/V ring (D = 64, 128),
  // so the producer loads the next tile's Q -- and, behind it, that tile's
  // first K/V -- while this tile runs; one at D = 256 (64 KB per Q tile).
  // With two, O is staged for its TMA store in the tile's own Q buffer,
  // each warpgroup in its own 64 rows (which only its own S GEMMs read), so
  // no buffer of its own is needed -- except where kOBuffer (below) gives it
  // one; with one Q buffer, in the ring (below).
  // Per CTA: an SM's 228 KB less 1 KB reserved per resident CTA.
  static constexpr int kSmemLimit = kCtasPerSm == 2 ? 113 * 1024 : 227 * 1024;
  static constexpr int kRingBytes = 2 * kStages * kKVBytes;
  // + 2048: SharedStorage rounds its barrier block up to 1024 bytes, and the
  // launch adds 1024 of alignment slack.
  static constexpr int kQStages = 2 * kQBytes + kRingBytes + 2048 <= kSmemLimit ? 2 : 1;
  static_assert(kQBytes + kRingBytes + 2048 <= kSmemLimit, "Q and the K/V ring must fit in shared memory");
  // With one Q buffer (D = 256) the tile's O is staged in the ring slot of
  // its last key tile instead -- warpgroup 0 in the K half, warpgroup 1 in
  // the V half, 64 rows each -- so that Q is released as soon as the tile's
  // last S GEMM has read it and the next tile's Q loads under the last key
  // tile and the epilogue (mainloop.cuh, forward_kernel.cuh). It waited for
  // the epilogue's stores before: D256 +1.5 to +7 % (medians) in an A/B
  // (docs/perf-log.md, session 8). DHP_SM90_O_IN_RING=0 restores that (A/B).
  static constexpr bool kStageOInRing = kQStages == 1 && DHP_SM90_O_IN_RING != 0;
  // The decode kernel stores O from registers (fp32 partials): no staging.
  static_assert(!kDecode || kQStages == 2, "decode: two Q buffers");
  static_assert(!kStageOInRing || (kConsumers == 2 && kKVBytes >= 64 * D * 2),
                "one warpgroup's 64 rows of O per half of a ring slot");
  // O staged in a buffer of its own (DHP_SM90_O_BUFFER above); the Q buffer
  // is then released at the tile's last S GEMM (mainloop.cuh, release_k).
  static constexpr bool kOBuffer = D == 64 && (DHP_SM90_O_BUFFER & (1 << (kConsumers - 1))) != 0 && kQStages == 2 &&
                                   3 * kQBytes + kRingBytes + 2048 <= kSmemLimit;
  // Lengths slots, by tile count: the producer writes tile t's when it
  // loads t's Q, which an early Q release lets it do two tiles ahead.
  static constexpr int kLensSlots = kOBuffer ? 4 : 2;
  // Where O is not staged in Q (the ring, or an O buffer), each consumer
  // thread releases the tile's Q buffer at its last S GEMM.
  static constexpr bool kQFreeAtLastS = kStageOInRing || kOBuffer;
  // Secret lengths: V tiles can be zeroed past L_k in shared memory by the
  // producer's warps 1-3 (ForwardArgs::v_zero_band, producer.cuh), which
  // then release every V tile on v_ready.
  static constexpr bool kVReady = HAS_LENGTHS_;
};

// ForwardArgs::v_zero_band: of a query tile's key tiles (taken last first,
// n = n_end - 1 - it), the first `band` -- those holding keys at or past
// the tile's first row m0 -- are the ones where V's padding can meet a valid
// row: with causal masking and one shared length L (diagonal j <= i), a
// valid row i (< L) of the tile sees keys j <= i, and keys below m0 <= i <
// L are never padding. Rows at or past L are padding, set to 0 by a select
// in the epilogue whatever P·V gave them. Public: positions only.
template <int BN>
__host__ __device__ __forceinline__ int32_t v_band_tiles(int32_t v_zero_band, int32_t m0, int32_t n_end) {
  const int32_t first = m0 / BN;  // the first key tile with a key >= m0
  return v_zero_band != 0 && n_end > first ? n_end - first : 0;
}

// v_ready[s]: V tile s landed and, where it lies in a tile's band, zeroed
// past L_k (kVReady), else nothing.
template <typename Traits, bool = Traits::kVReady>
struct VReady {};
template <typename Traits>
struct VReady<Traits, true> {
  uint64_t ready[Traits::kStages];
};

template <typename Traits, bool = Traits::kOBuffer>
struct OStaging {};
template <typename Traits>
struct OStaging<Traits, true> {
  alignas(1024) uint8_t o[Traits::kQBytes];
};

// The running O of a decode unit that merges its chunks (kMergeChunks):
// each consumer thread's own D / 2 values, element i of thread t at
// i * 128 + t (no bank conflict, no barrier: no other thread reads them).
template <typename Traits, bool = Traits::kMergeChunks>
struct MergedO {};
template <typename Traits>
struct MergedO<Traits, true> {
  float acc[Traits::kHeadDim / 2][128];
};

// The narrow decode kernel's exchange (decode_narrow.cuh): P of two key
// tiles as the B operand of Oᵀ += Vᵀ Pᵀ (8 query rows x BN keys, K-major,
// 128-B swizzle: BN / 64 atoms of 1 KB), and the per-warp row maxima and
// sums the warpgroup reduces through (double-buffered: by tile, by chunk).
template <typename Traits, bool = Traits::kNarrow>
struct NarrowScratch {};
template <typename Traits>
struct NarrowScratch<Traits, true> {
  alignas(1024) uint8_t p[2][8 * Traits::kBlockN * 2];
  float max[2][4][8];
  float sum[2][4][8];
};

// Shared memory: tiles first (1024-B aligned), barriers and lengths, then
// the O buffer where there is one (1024-B aligned; empty otherwise).
template <typename Traits>
struct SharedStorage {
  alignas(1024) uint8_t q[Traits::kQStages][Traits::kQBytes];  // Q, then (two buffers, no kOBuffer) the tile's O staging
  alignas(1024) uint8_t k[Traits::kStages][Traits::kKVBytes];
  alignas(1024) uint8_t v[Traits::kStages][Traits::kKVBytes];
  alignas(8) uint64_t q_full[Traits::kQStages], q_empty[Traits::kQStages];  // Q landed / buffer free
  uint64_t k_full[Traits::kStages], k_empty[Traits::kStages];
  uint64_t v_full[Traits::kStages], v_empty[Traits::kStages];
  int32_t lens[Traits::kLensSlots][2];  // per tile count: L_q, L_k (secret; clamped)
  OStaging<Traits> ostage;                // empty unless Traits::kOBuffer
  VReady<Traits> vr;                      // empty unless Traits::kVReady
  MergedO<Traits> merged;                 // empty unless Traits::kMergeChunks
  NarrowScratch<Traits> narrow;           // empty unless Traits::kNarrow
};

}  // namespace dhp::sm90
