// The arithmetic that merges a query row's key-range chunks (decode.hpp),
// in one place for the two that run it: the combine kernel
// (split_combine.cu), reading the chunks' fp32 partials, and a decode unit
// that merges its own chunks as it finishes them (decode_local.cuh). Both
// take the chunks in the same order with these functions, so a row gets
// the same bits whichever ran it -- which is what lets the launcher choose
// between them by the batch size (threat model G5; shipped since session
// 37, docs/perf-log.md).
//
// A chunk c of a row leaves x_c = O_c / l_c (fp32; 0 where it saw no key or
// the row is padding) and lse_c (natural log of l_c in the scores' scale,
// -inf where x_c is 0). The merge is streaming, chunk after chunk:
//   s = lse_c log2 e,  m' = max(m, s),
//   alpha = exp2(m - m') (0 while nothing is summed),  w = exp2(s - m'),
//   l = l alpha + w,  acc = acc alpha + w x_c,
// then O = acc / l (0 where l = 0) and lse = (m + log2 l) ln 2 (-inf
// there). Every operation is written as an explicit round-to-nearest
// intrinsic (__fmaf_rn, __fmul_rn, ...), so that no contraction can differ
// between the two callers, and -inf is replaced by 0 (m_used) before any
// subtraction, so that an empty prefix never makes inf - inf.
//
// Constant time: fixed-latency MUFU (ct_exp2, ct_log2, ct_rcp) and
// selects only; a NaN lse (NaN inputs) is ignored by the max (ct_fmax) and
// carried by its own weight, so the row turns NaN as the reference does.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/common/ct.cuh"

namespace dhp::sm90::chunk_merge {

constexpr float kLog2e = 1.4426950408889634f, kLn2 = 0.69314718055994531f;

// -inf (no key seen yet) read as 0 wherever it would be subtracted.
__device__ __forceinline__ float used(float m) { return ct::ct_select_eq_f(m, -INFINITY, 0.0f, m); }

// A chunk's lse from its row statistics (raw-score max, the row's sum l):
// keep = a real row that saw a key.
__device__ __forceinline__ float chunk_lse(float row_max, float l, ct::Mask keep, float scale_log2) {
  return ct::ct_select(keep, __fmul_rn(__fmaf_rn(used(row_max), scale_log2, ct::ct_log2(l)), kLn2), -INFINITY);
}

// A chunk's x from its unnormalised O (inv_l = ct_rcp(l)).
__device__ __forceinline__ float chunk_x(float o, float inv_l, ct::Mask keep) {
  return ct::ct_select(keep, __fmul_rn(o, inv_l), 0.0f);
}

// The running state of one row (m in log2 units).
struct Row {
  float m, l;
};
__device__ __forceinline__ Row start() { return Row{-INFINITY, 0.0f}; }

// The factors that fold one chunk into acc (fold below).
struct Step {
  float alpha, w;
};

// Folds chunk lse (natural log) into the row; returns its factors.
__device__ __forceinline__ Step step(Row& r, float lse) {
  const float s = __fmul_rn(lse, kLog2e);
  const float m_new = ct::ct_fmax(r.m, s);
  const float u_new = used(m_new);
  // Nothing summed yet: alpha 0 (acc is 0), never exp2 of a difference
  // from a substituted 0, which may overflow.
  const float alpha = ct::ct_select_eq_f(r.l, 0.0f, 0.0f, ct::ct_exp2(__fsub_rn(used(r.m), u_new)));
  const float w = ct::ct_exp2(__fsub_rn(s, u_new));
  r.l = __fmaf_rn(r.l, alpha, w);
  r.m = m_new;
  return Step{alpha, w};
}

// acc alpha + w x.
__device__ __forceinline__ float fold(float acc, Step k, float x) { return __fmaf_rn(k.w, x, __fmul_rn(acc, k.alpha)); }

// The row's result: keep (some chunk saw a key; a NaN l is kept), then O
// and lse.
__device__ __forceinline__ ct::Mask keep(const Row& r) { return ct::ct_mask_not(ct::ct_mask_eq_f(r.l, 0.0f)); }
__device__ __forceinline__ float out(float acc, float inv_l, ct::Mask kept) {
  return ct::ct_select(kept, __fmul_rn(acc, inv_l), 0.0f);
}
__device__ __forceinline__ float lse(const Row& r, ct::Mask kept) {
  return ct::ct_select(kept, __fmul_rn(__fadd_rn(used(r.m), ct::ct_log2(r.l)), kLn2), -INFINITY);
}

// One output value as the bits of T, rounded to nearest -- the one
// conversion every writer of O uses (the combine, the merging units of both
// decode kernels), so that NaN payloads come out alike too. Bits through
// the intrinsics, not a reference cast: that put the value on the stack
// (local memory, which dhp-audit reads as unknown data).
template <typename T>
__device__ __forceinline__ uint16_t out_bits(float x) {
  if constexpr (std::is_same_v<T, __half>)
    return __half_as_ushort(__float2half_rn(x));
  else
    return __bfloat16_as_ushort(__float2bfloat16_rn(x));
}

// Two output values as one 32-bit word of T, each rounded on its own.
template <typename T>
__device__ __forceinline__ uint32_t out_pair(float lo, float hi) {
  return static_cast<uint32_t>(out_bits<T>(lo)) | (static_cast<uint32_t>(out_bits<T>(hi)) << 16);
}

}  // namespace dhp::sm90::chunk_merge
