// The Hopper decode path: few query rows against a long key sequence (an
// LLM generating one token, S_q = 1, or checking a few drafted ones, S_q
// up to 32 or 64: decode_max_seqlen_q below; where it pays:
// takes_decode_path). Host-only and pure, so that
// the CPU tests can check what a shape gets.
//
// Why a path of its own: the dense kernel's work unit is a query tile (one
// head, 64-192 rows), each walking all of its key tiles. With S_q = 1 a
// call has B x H_q units of one real row each: 32 units (B1, 32 heads) on
// 132 SMs, each streaming all of S_k alone -- 0.11-0.35x cuDNN
// (docs/perf-log.md, session 31). Two changes, both public structure:
//  * split-KV: each query tile's key range is cut into chunks (work units
//    of their own, fp32 partial O and lse) and a combine kernel merges them
//    (split_combine.hpp);
//  * GQA packing: with S_q = 1 the H_q / H_kv query heads that share a K/V
//    head become the rows of one tile, so that one K/V stream serves them
//    all (a strided view of Q and O: no copy); at S_q > 1 too where the
//    group is a power of two dividing the tile's rows, position-major
//    through a 5-D Q tensor map (decode_args below; off with
//    DHP_SM90_DECODE_PACK_SQ=0 or a DHP_SM90_PACKED_ROWS=0 build).
// The chunking is a function of S_k, the query blocks and the kv heads --
// never of the batch size -- so a sequence is reduced in the same order
// alone or in any batch (threat model G5). The decode kernel masks like
// the dense one (absolute key positions; chunks past a secret L_k are
// computed and masked, never skipped).
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/forward_args.hpp"

namespace dhp::sm90 {

// Decode work units the plan aims at per batch entry: about one per SM of
// an H100 / H200. A constant, not the device's SM count, so that a shape
// gets the same chunks (and bits) on every GPU.
constexpr int64_t kDecodeUnitsTarget = 128;
// Half that at D = 256, on either decode kernel: a key there carries twice
// D128's bytes, so the same units move twice the data. Longer chunks give
// the batch fewer, longer units in fewer rounds, and one batch entry's 64
// units still draw nearly the bandwidth of 128. Measured on an H200, GQA
// 32/8 S_q 1 D256 (docs/perf-log.md):
// - the 64-row kernel (80-key tiles, session 45), S_k 8192 13-tile chunks
//   (64 units per entry) against 7 (120): B1 24.8 against 23.9 us, B8
//   131.6 against 140.8, B32 509.4 / 523.4; over S_k 4096-16384 B8-B32 1-7 %
//   faster, B1 4-7 % slower;
// - the narrow kernel (64-key tiles, session 46), 64 units against 128,
//   two A/B runs: B8 S_k 4096 68.4-68.6 against 71.6-72.2 us (FA2
//   70.0-70.5), B16 129.5-132.2 / 136.1-138.2, B8 S_k 8192 126.3-126.9 /
//   130.6-130.7, S_q 2 B8 69.8-69.9 / 73.5-73.8; B1 level (S_k 4096
//   12.8-13.9 / 13.8-14.0; MHA 32/32 36.5 / 34.6), B32 level (merging
//   units).
// At 32 units per entry B1 lost 45-80 % (S_k 2048-4096, the 64-row
// kernel's 13-tile chunks), which the kDecodeMinChunkTiles floor keeps away
// at short S_k. The head dim is public: the chunks are a function of the
// shape alone (G5).
constexpr int64_t kDecodeUnitsTargetD256 = 64;
inline int64_t decode_units_target(int head_dim) {
  return head_dim >= 256 ? kDecodeUnitsTargetD256 : kDecodeUnitsTarget;
}
// The fewest key tiles per chunk: a unit's fixed cost (Q load, the
// pipeline's fill and drain, the epilogue) spread over at least this many.
constexpr int32_t kDecodeMinChunkTiles = 4;

struct DecodePlan {
  int32_t q_pack = 1;           // query heads packed as rows, position-major (GQA)
  int32_t q_shift = 0;          // log2(q_pack) where S_q > 1 was packed, else 0
  int32_t heads = 0, rows = 0;  // the kernel's heads and rows per head after packing
  int32_t splits = 1, split_key_tiles = 0;
};

// Whether S_q > 1 packs the GQA group as rows: a power of two that
// divides the decode tile's block_m rows (whole boxes of Q's 5-D map).
inline bool packs_query_rows(int32_t kv_group, int block_m) {
  return kv_group > 1 && (kv_group & (kv_group - 1)) == 0 && block_m % kv_group == 0;
}

// The longest S_q that may take the decode path (takes_decode_path below
// decides within it), from the public shape only
// -- never the batch, so that a sequence's bits do not depend on what it
// is batched with (threat model G5). Measured against the dense kernels in
// one run (docs/perf-log.md, session 34; H200, fp16, S_k 4096-8192): with
// GQA packing (heads sharing one K/V stream) the decode path was faster up
// to S_q 64 at D 128 and 256 and B 1-32 (B1 S_q 64: 28.6 vs 94.5 us; B32:
// 434.8 vs 465.7); unpacked (MHA, a group of 6) it was faster or level up
// to S_q 32 (B1 S_q 32 MHA: 38.8 vs 94.0; B8 and B32 level) but 5-7 %
// slower at S_q 64 from B4 on (the partials' round trip outweighs the
// split once the dense kernel fills the GPU).
// With merging units (`merging_units`: the decode kernel merges its own
// chunks where the batch fills the GPU, decode_local.cuh; D <= 128) the
// unpacked cost from B8 on falls to 1-2 % (MHA S_q 64 S_k 4096 B8: 137.6
// us against the dense kernels' 135.1, split units 155.0) while B1 gains
// 1.9x (MHA S_q 64 S_k 8192: 40.7 against 77.2; session 37): unpacked S_q
// up to 64 there too.
constexpr int32_t kDecodeMaxSqUnpacked = 32;
constexpr int32_t kDecodeMaxSqPacked = 64;
constexpr int32_t kDecodeMaxSqMerging = 64;
inline int32_t decode_max_seqlen_q(const kernels::ForwardArgs& a, int block_m, bool pack_sq, bool merging_units) {
  if (pack_sq && packs_query_rows(a.kv_group, block_m)) return kDecodeMaxSqPacked;
  return merging_units ? kDecodeMaxSqMerging : kDecodeMaxSqUnpacked;
}

// The call's plan from its public shape (block_m: the decode kernel's
// query rows per tile; block_n: its key tile). `chunk_tiles` > 0 forces
// the chunk length in key tiles (A/B knob DHP_SM90_DECODE_CHUNK);
// `min_chunk_tiles` is the shortest chunk the plan makes otherwise (A/B knob
// DHP_SM90_DECODE_MIN_CHUNK; session 44 measured longer chunks at D256);
// `units_target` the units it aims at per batch entry (decode_units_target;
// A/B knob DHP_SM90_DECODE_UNITS).
// `pack_sq`: pack S_q > 1 too (DHP_SM90_DECODE_PACK_SQ), where the group
// is a power of two that divides block_m: rows s * q_pack + g, which Q's
// 5-D tensor map (tensor_map.hpp, packed_rows_spec) loads whole boxes of.
inline DecodePlan decode_plan(const kernels::ForwardArgs& a, int block_m, int block_n, int32_t chunk_tiles,
                              bool pack_sq, int32_t min_chunk_tiles = kDecodeMinChunkTiles,
                              int64_t units_target = kDecodeUnitsTarget) {
  DecodePlan p;
  const int32_t g = a.kv_group;
  if (a.seqlen_q == 1) {
    p.q_pack = g;
  } else if (pack_sq && packs_query_rows(g, block_m)) {
    p.q_pack = g;
    while ((1 << p.q_shift) < g) ++p.q_shift;
  }
  p.heads = a.heads_q / p.q_pack;
  p.rows = a.seqlen_q * p.q_pack;
  const int64_t key_tiles = std::max<int64_t>(1, (static_cast<int64_t>(a.seqlen_k) + block_n - 1) / block_n);
  const int64_t m_blocks = (static_cast<int64_t>(p.rows) + block_m - 1) / block_m;
  const int64_t tiles = m_blocks * p.heads;
  int64_t wanted = std::max<int64_t>(1, (units_target + tiles - 1) / tiles);
  // A smaller target never leaves one chunk where the 128-unit plan cuts
  // two (64-127 query tiles per entry): MHA 64 heads S_k 4096 D256 in one
  // chunk (the dense kernels) ran 70.1 / 520.5 us at B1 / B8 against 66.2 /
  // 491.6 in two (H200, session 45).
  if (units_target < kDecodeUnitsTarget)
    wanted = std::max(wanted, std::min<int64_t>(2, (kDecodeUnitsTarget + tiles - 1) / tiles));
  int64_t per_chunk = std::max<int64_t>(std::max(1, min_chunk_tiles), (key_tiles + wanted - 1) / wanted);
  if (chunk_tiles > 0) per_chunk = chunk_tiles;
  per_chunk = std::min(per_chunk, key_tiles);
  p.split_key_tiles = static_cast<int32_t>(per_chunk);
  p.splits = static_cast<int32_t>((key_tiles + per_chunk - 1) / per_chunk);
  return p;
}

// Whether a shape within decode_max_seqlen_q takes the decode path (the
// launcher's choice unless DHP_SM90_DECODE_MAX_SQ forces one). Public
// shape only, never the batch (G5). The dense kernels it is weighed
// against run 64-row tiles at S_q <= 64 (launch.cuh), the decode kernel's
// height, so the decode path gains only in two ways, and pays for its fp32
// partials and the combine kernel:
//  * GQA packing shares K/V streams: the packed rows fill fewer decode
//    tiles than the group's heads would alone. Where it at least halves
//    them (S_q 1-32 with a group of 4) it is taken at any S_k: 0.57-0.94x
//    the dense kernels' time on the rows measured, S_q 8-32 at B8-B32
//    (S_q 32 S_k 1024 B32 0.84x, S_q 16 S_k 256 B32 0.76x, S_q 16 S_k 4096
//    B8 0.57x; D 256 S_q 8 S_k 4096 B8 0.57x).
//  * otherwise only the split adds work units, which helps when the batch
//    leaves SMs idle and costs the partials' round trip when it does not.
//    With one chunk (S_k <= 4 key tiles) it cannot help. At S_q > 1 it is
//    taken from S_k 4096, where B1 runs 0.33-0.61x the dense time (group 4
//    S_q 40-64, MHA S_q 16-32, D 256 S_q 64) at a cost of 5-21 % from B8
//    on (S_q 64 group 4 S_k 4096 B8 109.4 vs 90.2 us, B32 437.8 vs 361.9;
//    MHA S_q 32 B8 146.0 vs 133.5): the B1 shapes are 0.5-0.7x FA2 on the
//    dense kernels, the B8-B32 ones stay above cuDNN on the decode path.
//    Below S_k 4096 the gain at B1 is small (S_q 40-64 S_k 1024 0.92x) and
//    the loss from B8 large (1.15-1.53x). At S_q = 1 the partials are one
//    row per head: taken from two chunks (MHA S_k 2048 B1 0.63x, B8 1.08x;
//    D 256 S_k 4096 B1 0.55x, S_k 1024 B8 1.13x).
// docs/perf-log.md, sessions 35-36 (H200, fp16, D 128 and 256; the costs
// above are split units'). Merging units (one CTA merging its tile's
// chunks in the combine's exact order where the batch fills the GPU; D <=
// 128, decode_local.cuh) cut the cost from B8 on to 1-9 % (session 37: S_q
// 64 group 4 S_k 4096 B8 97.4 vs 90.5 us, B32 386.5 vs 357.7; MHA S_q 32
// B8 139.1 vs 137.2; S_q 1 MHA S_k 2048 B8 74.8 vs 68.7), the chunk
// restarts a merging unit pays where the dense kernel runs through.
constexpr int32_t kDecodeMinKeysUnshared = 4096;
// The packing is decode_plan's (q_pack): the packed rows fill
// ceil(S_q q_pack / block_m) tiles per kv head, the q_pack heads alone
// q_pack ceil(S_q / block_m). The chunk count grows with S_k and never
// falls, so the answer changes at most once along S_k. The rule judges the
// default chunking (DHP_SM90_DECODE_CHUNK is an A/B knob of the launcher,
// not seen here).
inline bool takes_decode_path(const kernels::ForwardArgs& a, int block_m, int block_n, bool pack_sq,
                              bool merging_units, int64_t units_target = kDecodeUnitsTarget) {
  if (a.seqlen_q < 1 || a.seqlen_q > decode_max_seqlen_q(a, block_m, pack_sq, merging_units)) return false;
  const DecodePlan p = decode_plan(a, block_m, block_n, 0, pack_sq, kDecodeMinChunkTiles, units_target);
  const int64_t packed_tiles = (static_cast<int64_t>(p.rows) + block_m - 1) / block_m;
  const int64_t own_tiles = p.q_pack * ((static_cast<int64_t>(a.seqlen_q) + block_m - 1) / block_m);
  if (2 * packed_tiles <= own_tiles) return true;
  if (p.splits < 2) return false;
  return a.seqlen_q == 1 || a.seqlen_k >= kDecodeMinKeysUnshared;
}

// Whether the decode kernel (D <= 128: kMergeChunks) runs a call's
// decode work as merging units (decode_local.cuh: one per query tile, which merges its own
// chunks) rather than split units and the combine: where the tiles alone
// fill the grid (`sms` CTAs) and, in whole rounds, take no more than 3/2
// the rounds of chunks the split units would. Both give the same bits, so
// this may look at the batch (through `tiles`) and the device. The 3/2:
// split units pay for partials, the combine and short units more than the
// round count shows (B8 S_q 40 group 4 S_k 4096, 192 tiles of 6 chunks on
// 132 SMs: 12 rounds against 9, and 86.3 us on the 64-row dense kernels --
// a merging unit's work -- against 92.3 split; docs/perf-log.md, session
// 36). Session 37's A/B (H200, D128, the same run): where this takes
// merging units they ran 0.88-0.98x the split units' time (B8 S_q 64 group
// 4 S_k 4096 97.4 vs 108.1 us, B32 386.5 vs 437.2, B32 S_q 8 135.7 vs
// 152.5, MHA S_q 64 B8 137.6 vs 155.0), level at 12 rounds against 9 (B8
// S_q 40: 92.0 vs 91.6), on the S_k 4096 shapes the decode path takes; where
// it does not (B1, 32 tiles) they ran 2.0-2.5x slower (47.1 vs 18.6).
inline bool merging_units_pay(int64_t tiles, int32_t splits, int sms) {
  if (splits < 2 || sms <= 0 || tiles < sms) return false;
  const int64_t merged_rounds = (tiles + sms - 1) / sms * splits;
  const int64_t split_rounds = (tiles * splits + sms - 1) / sms;
  return 2 * merged_rounds <= 3 * split_rounds;
}

// Whether the combine kernel (split_combine.hpp) is launched with PDL --
// as the attention kernel starts, its CTAs parked until that kernel
// completes -- rather than after it in stream order: only where the
// attention kernel's `units` fit in one round of its CTA slots (`sms` x
// `per_sm`) and the slots they leave free hold the combine's CTAs at four
// per SM's worth of slots. A reading of the measurements: PDL's CTAs
// become resident wherever room frees first, so where little is free they
// pile up there and the merge after the wait runs on a few SMs. H200
// (docs/perf-log.md, session 44), us per call in chains of 20:
//  * stream order faster: B8 GQA 32/8 S_k 4096 D256 (832 units, 64 combine
//    CTAs) 76.1 against 80.3 with PDL -- CUPTI read the call's end 5.8 us
//    after the attention kernel's against 8.9; B1 S_q 4 S_k 8192 D128 (128
//    units on 132 SMs, 32 CTAs: 8 per free SM) 15.2 against 16.6;
//  * PDL faster or level at 4 CTAs per free SM: B2 S_q 1 D128 and B1 S_q 2
//    S_k 8192 (128 units, 16 CTAs) level / 0.2 faster; B2 D64 S_k 8192
//    (256 units of the two-per-SM narrow kernel, 16 CTAs: the dudect
//    configuration) 26.2 against 27.4; and where much is free, B1 S_q 1
//    D128 8.9 against 9.2, D256 15.1 against 15.9.
// Between 4 and 8 per SM is unmeasured.
// Where the combine has at most one CTA per SM (combine_spreads) it is now
// launched with PDL whatever the attention grid, its CTAs spread one to an
// SM (kCombineSpreadSmem below): that removes the pile-up, and what is left
// of stream order is its dependent launch. Session 47 (H200, us per call,
// PDL with the spread against stream order): B8 GQA 32/8 S_k 4096 D128
// 36.6 against 37.1 (cuDNN 37.3), D64 20.6 against 21.6 (21.3), D256 67.9
// against 68.7, D256 S_k 2048 38.1 against 38.8, B16 D256 131.2 against
// 131.9; where PDL was already taken level or better (B1 D128 / D256 9.2 /
// 13.1 both, B2 D64 S_k 8192 13.3 against 13.5); B1 S_q 4 S_k 8192 D128
// (32 combine CTAs, stream order by the rule above) 14.9 against 15.6.
// Public: the unit count, the device's SMs and the shape (the combine's
// grid). Both modes give the same bits
// (Decode.CombineInStreamOrderMatchesPdlBitwise), so the batch may decide.
inline bool combine_spreads(int64_t combine_ctas, int sms) { return sms > 0 && combine_ctas <= sms; }
inline bool combine_with_pdl(int64_t units, int sms, int per_sm, int64_t combine_ctas) {
  if (combine_spreads(combine_ctas, sms)) return true;
  const int64_t free_slots = static_cast<int64_t>(sms) * per_sm - units;
  return free_slots > 0 && per_sm * combine_ctas <= 4 * free_slots;
}
// The shared memory each combine CTA reserves (and never uses) where it
// spreads: more than half an SM's 228 KB, so that no two share an SM and
// none sits beside a decode CTA (100-200 KB each leave less room).
// Under PDL the combine's CTAs are placed as SMs free up; 128-thread CTAs
// with no shared memory piled up 8-16 to an SM there and ran their merge
// on a few SMs (B8 D256 80.3 us against 76.1 in stream order, session 44;
// with 200 KB: 67.9 against 68.7, session 47; 100 KB, two per SM, and
// 64 KB, three, read 0-1 % slower than 200 KB).
constexpr int kCombineSpreadSmem = 200 * 1024;

// Whether a decode-path call runs on the narrow decode kernel
// (decode_narrow.cuh; every head dim, the launcher decides -- A/B knobs
// DHP_SM90_NARROW=0, DHP_SM90_NARROW256=0): a plan that
// packs at most 8 rows per tile -- at S_q = 1 (where decode_args drops the
// causal mask) MHA or a GQA group of at most 8; at S_q > 1 MHA S_q <= 8, a
// packed group of 4 at S_q 2, of 2 at S_q <= 4, the causal mask then by
// select per row in the kernel. Public shape only, never the batch: a
// sequence gets the same kernel, and so the same bits, in any batch (G5).
// There the 64-row decode kernel computed 8-64x the live rows; the narrow
// one ran 1.02-1.22x faster on every S_q = 1 shape timed (H200, D 64 and
// 128, B1-B32; docs/perf-log.md, session 39), 1.04-1.11x at S_q 2-8
// causal (session 41). DHP_SM90_NARROW_MULTI_SQ=0 (A/B knob): S_q = 1 only.
#ifndef DHP_SM90_NARROW_MULTI_SQ
#define DHP_SM90_NARROW_MULTI_SQ 1
#endif
constexpr int32_t kNarrowRows = 8;
inline bool takes_narrow_kernel(const kernels::ForwardArgs& a, int block_m, int block_n, bool pack_sq) {
  return (a.seqlen_q == 1 || DHP_SM90_NARROW_MULTI_SQ != 0) &&
         decode_plan(a, block_m, block_n, 0, pack_sq).rows <= kNarrowRows;
}

// The kernel's view of the call under the plan. Packed at S_q = 1: Q and
// O as [B, q_pack, H_kv, D] -- row r of head h' is query head h' q_pack + r
// -- and no causal flag: with one query row, bottom-right causal masking
// (key j visible iff j <= L_k - L_q, L_q <= 1) hides no key that the key
// length does not, so dropping it is exact; the same holds unpacked at
// S_q = 1. The secret L_q (0 or 1) covers the q_pack rows
// (kernels/common/lengths.cuh, load_lengths_packed). Packed at S_q > 1
// (q_shift > 0): row s q_pack + g of head h' is query head h' q_pack + g
// at position s, which no stride of one row dimension reaches; the
// launcher loads Q through a 5-D map made from the call's strides (the
// 4-D fields keep them, unused), the causal mask is kept and takes
// row >> q_shift as a row's position (consumer_view.cuh), and L_q covers
// L_q q_pack rows.
inline kernels::ForwardArgs decode_args(const kernels::ForwardArgs& a, const DecodePlan& p) {
  kernels::ForwardArgs d = a;
  d.kv_splits = p.splits;
  d.split_key_tiles = p.split_key_tiles;
  d.q_pack = p.q_pack;
  d.q_shift = p.q_shift;
  if (a.seqlen_q == 1) d.causal = 0;
  if (p.q_pack > 1) {
    d.heads_q = p.heads;
    d.seqlen_q = p.rows;
    d.kv_group = 1;
  }
  if (p.q_pack > 1 && p.q_shift == 0) {
    d.q_stride_seq = a.q_stride_head;
    d.q_stride_head = a.q_stride_head * p.q_pack;
    d.o_stride_seq = a.o_stride_head;
    d.o_stride_head = a.o_stride_head * p.q_pack;
  }
  d.v_zero_band = 0;  // (the tile order and lists: the split scheduler ignores them)
  d.decode_local = 0;  // split units unless the launcher finds the tiles fill the GPU
  return d;
}

// Partial results of a plan: fp32 O then lse, each [splits, B, heads, rows(, D)].
inline int64_t decode_partial_rows(const kernels::ForwardArgs& a, const DecodePlan& p) {
  return static_cast<int64_t>(p.splits) * a.batch * p.heads * p.rows;
}

}  // namespace dhp::sm90
