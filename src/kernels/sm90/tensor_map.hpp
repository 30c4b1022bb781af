// Host side of TMA: encoding CUtensorMap descriptors for 16-bit tensors with
// the 128-byte swizzle the wgmma descriptors expect (wgmma.cuh). The driver
// entry point is looked up through the runtime, so the library does not
// link libcuda directly.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>

namespace dhp::sm90 {

// L2 promotion (bytes) of the tensor maps' copies: 256 for the dense
// kernels; 128 -- a box row -- for the memory-bound decode path, where 256
// made every kernel look up 1.25x the sectors it reads (each 128-B row's
// other half again) with the L2 at 90 % of its peak: B32 GQA 32/8 S_k 4096
// D128 132.8 -> 122.6 us; the dense D256 rows lost 1-4 % on 128
// (docs/perf-log.md, session 42). DHP_SM90_L2_PROMOTION=none|64|128|256
// overrides every map's (A/B).
inline constexpr int kL2PromotionDense = 256;
inline constexpr int kL2PromotionDecode = 128;

struct TensorMapSpec {
  int rank = 2;                 // 1..5
  uint64_t dims[5] = {};        // elements, innermost first
  uint64_t strides_bytes[4] = {};  // byte strides of dims 1..rank-1 (multiples of 16)
  uint32_t box[5] = {};         // box extent per dim; box[0] * 2 bytes <= 128
  bool bf16 = false;            // element type: fp16 or bf16
  // L2 promotion of each copy, in bytes (0: none, 64, 128, 256; above).
  int l2_promotion = kL2PromotionDense;
};

// Encodes `spec` for `global` with SWIZZLE_128B and zero fill out of bounds.
// Returns an empty string on success, else a message naming the field.
std::string encode_tensor_map(CUtensorMap& out, const void* global, const TensorMapSpec& spec);

// A [B, S, H, D] tensor of 16-bit elements (any element strides, d
// contiguous) as a 4-D map (d, sequence, head, batch) with boxes of 64
// columns x `rows` rows. Strides of size-1 dimensions are never used by a
// copy; they are replaced by packed ones, which TMA accepts. The spec
// (pure), and the map (true on success).
TensorMapSpec bshd_spec(int64_t S, int64_t H, int64_t B, int D, int64_t s_seq, int64_t s_head, int64_t s_batch,
                        int rows, bool bf16);
bool make_bshd_map(CUtensorMap& m, const void* base, int64_t S, int64_t H, int64_t B, int D, int64_t s_seq,
                   int64_t s_head, int64_t s_batch, int rows, bool bf16, int l2_promotion = kL2PromotionDense);

// The decode kernel's Q with S_q > 1 and the G = H / H_kv query heads of a
// kv head packed as rows, position-major (sm90/decode.hpp): a 5-D map
// (d, g, position, kv head, batch) over the same [B, S, H, D] tensor, with
// boxes of 64 columns x G heads x rows / G positions, which the copy
// engine lays out in shared memory as rows s * G + g of a `rows`-row tile
// (the box's dimensions beyond the first, flattened in order). G divides
// `rows`.
TensorMapSpec packed_rows_spec(int64_t S, int64_t G, int64_t H_kv, int64_t B, int D, int64_t s_seq, int64_t s_head,
                               int64_t s_batch, int rows, bool bf16);
bool make_packed_rows_map(CUtensorMap& m, const void* base, int64_t S, int64_t G, int64_t H_kv, int64_t B, int D,
                          int64_t s_seq, int64_t s_head, int64_t s_batch, int rows, bool bf16,
                          int l2_promotion = kL2PromotionDense);

}  // namespace dhp::sm90
