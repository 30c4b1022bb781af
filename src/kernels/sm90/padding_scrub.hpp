// Secret key lengths on the Hopper kernel: before the attention kernel, a
// copy of V with every row at or past its sequence's L_k set to zero.
//
// Why: padding may hold anything, NaN included, and a zero weight does not
// cancel it in P·V (0 · NaN = NaN), so those rows must be zero before the
// GEMM reads them. Zeroing them inside the attention kernel costs a
// read-modify-write of every V tile in shared memory, in every CTA that
// loads it (each query tile of a head loads the whole of V again): 12 % of
// the B4 H16 S_max 4096 D128 launch (H200, docs/perf-log.md). Zeroing once
// per call costs one read and one write of V in global memory: about 3 %.
// Not made for causal launches with one shared length array: there only
// each query tile's diagonal band can hold padding that meets a valid row,
// and the kernel zeroes V there in shared memory (kernel_traits.cuh,
// v_band_tiles; launch.cuh).
//
// Two ways to run the copy (launch.cuh picks one from the public shape):
//  * before the attention (launch_padding_scrub): the whole GPU copies V,
//    and the attention waits for that kernel to complete (programmatic
//    dependent launch, griddepcontrol.wait). At the DRAM roof: ~45 us of the
//    B4 H16 S_max 4096 D128 call's ~850 on the H100.
//  * beside it (launch_copy_beside, CopyBesidePlan): every CTA of the copy
//    kernel first copies, together, the pairs the attention's first round of
//    tiles reads; a few CTAs then copy the other pairs, in the order the
//    static tile schedule reaches them, on the SMs the attention's grid
//    leaves idle, while the attention runs. Per (batch, kv head) pair a
//    counter of copied chunks (release); the attention's producer waits
//    (acquire) until a pair's counter is complete before the first V load of
//    a tile in that pair. The attention is launched right after the copy
//    kernel's CTAs have all started (each triggers the dependent launch as
//    it starts), so every CTA a producer can wait on is already running and
//    never waits on the attention: no deadlock, whatever the placement.
//
// Constant-time: every row of V is read and written at addresses fixed by
// the public shape; a row's L_k only selects the value written (zero or the
// row). The counters count chunks, whose number and order are public; how
// long a producer waits depends on the copy's progress (timing), never on
// a value. The scratch memory comes from a pool the library owns (one per
// device, stream-ordered, kept for reuse: it holds up to the largest V seen).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/forward_args.hpp"

namespace dhp::sm90 {

// Bytes of the zero-padded copy of V: packed [B, S_k, H_kv, D], 16-bit.
inline size_t padded_v_bytes(const kernels::ForwardArgs& a, int head_dim) {
  return static_cast<size_t>(a.batch) * a.seqlen_k * a.heads_kv * head_dim * 2;
}

// Enqueues the copy of a.v into `dst` (padded_v_bytes; 16-byte aligned) on
// `stream`, rows >= L_k zeroed.
cudaError_t launch_padding_scrub(const kernels::ForwardArgs& a, int head_dim, void* dst, cudaStream_t stream);

// The copy beside the attention: chunks of 64 KB of one pair's rows; the
// first `first_pairs` pairs copied by the whole copy grid, the rest by
// `beside_ctas` CTAs. beside_ctas == 0: copy before the attention instead.
struct CopyBesidePlan {
  int32_t head_dim = 0, chunk_rows = 0, box_rows = 0, chunks_per_pair = 0, first_pairs = 0, beside_ctas = 0;
};
inline constexpr int kCopyBesideMaxCtas = 4;
inline constexpr int kCopyBesideChunkBytes = 64 * 1024;
inline constexpr int32_t copy_beside_chunk_rows(int head_dim) { return kCopyBesideChunkBytes / (2 * head_dim); }

// Which items a CTA of the copy beside takes, in order (host and device;
// tests/gpu/test_schedule.cu checks that every item is taken exactly once):
// items cta, cta + grid, ... below first_pairs * chunks_per_pair, then, for
// the first beside_ctas CTAs, first_items + cta, + beside_ctas, ... below
// `items`. Public: shape, plan and CTA index only.
struct CopyDeal {
  int32_t cta, grid, first_items, beside, n_first, n_beside;
  __host__ __device__ CopyDeal(int32_t cta_, int32_t grid_, int32_t first_items_, int32_t beside_, int32_t items)
      : cta(cta_), grid(grid_), first_items(first_items_), beside(beside_) {
    n_first = cta < first_items ? (first_items - 1 - cta) / grid + 1 : 0;
    n_beside = cta < beside && first_items + cta < items ? (items - 1 - first_items - cta) / beside + 1 : 0;
  }
  __host__ __device__ int32_t count() const { return n_first + n_beside; }
  __host__ __device__ int32_t item(int32_t k) const {
    return k < n_first ? cta + k * grid : first_items + cta + (k - n_first) * beside;
  }
};

// The copy kernel's CTAs: enough for the first part (at most one per SM),
// and never fewer than the CTAs that stay beside.
inline int64_t copy_beside_grid(const CopyBesidePlan& p, int sms) {
  const int64_t first_items = static_cast<int64_t>(p.first_pairs) * p.chunks_per_pair;
  return first_items > sms ? sms : first_items > p.beside_ctas ? first_items : p.beside_ctas;
}

// Host, pure (tests/gpu/test_schedule.cu): the plan for a launch whose
// attention grid is `grid` CTAs on `sms` SMs, given `first_pairs` (one more
// than the highest pair the first round of tiles reads; the launcher counts
// it from the schedule). Beside where the grid leaves at least two SMs idle
// and later rounds read pairs the first does not; `force` (tests, A/B)
// takes it wherever there is one pair, on at least one CTA.
inline CopyBesidePlan plan_copy_beside(const kernels::ForwardArgs& a, int head_dim, int64_t grid, int sms,
                                       int64_t first_pairs, bool force) {
  CopyBesidePlan p;
  const int64_t pairs = static_cast<int64_t>(a.batch) * a.heads_kv;
  const int64_t idle = sms - grid;
  if (pairs < 1 || (!force && (idle < 2 || first_pairs >= pairs))) return p;
  p.head_dim = head_dim;
  p.chunk_rows = copy_beside_chunk_rows(head_dim);
  p.box_rows = p.chunk_rows < 256 ? p.chunk_rows : 256;  // a TMA box spans at most 256 rows
  p.chunks_per_pair = static_cast<int32_t>((a.seqlen_k + p.chunk_rows - 1) / p.chunk_rows);
  p.first_pairs = static_cast<int32_t>(first_pairs < pairs ? first_pairs : pairs);
  p.beside_ctas = static_cast<int32_t>(idle < 1 ? 1 : idle < kCopyBesideMaxCtas ? idle : kCopyBesideMaxCtas);
  return p;
}

// Scratch for the copy beside: the packed copy, then one 32-bit counter per
// pair at this byte offset.
inline size_t copy_beside_counters_offset(const kernels::ForwardArgs& a, int head_dim) {
  return (padded_v_bytes(a, head_dim) + 255) / 256 * 256;
}
inline size_t copy_beside_bytes(const kernels::ForwardArgs& a, int head_dim) {
  return copy_beside_counters_offset(a, head_dim) + 4 * static_cast<size_t>(a.batch) * a.heads_kv;
}

// Enqueues the counters' reset and the copy kernel (layout [B, H_kv, S_k, D]:
// each pair's rows contiguous) on `stream`; the attention must follow it at
// once, launched with programmatic stream serialization, and wait on the
// counters (ForwardArgs::v_ready, v_ready_count = plan.chunks_per_pair).
// cudaErrorNotSupported, with nothing enqueued, where V or the copy cannot
// be described as a TMA tensor map.
cudaError_t launch_copy_beside(const kernels::ForwardArgs& a, const CopyBesidePlan& plan, void* dst,
                               uint32_t* counters, int sms, cudaStream_t stream);

// Stream-ordered scratch memory from the library's pool on the current
// device; nullptr (and no sticky error) when it cannot be had.
void* scratch_alloc(size_t bytes, cudaStream_t stream);
void scratch_free(void* p, cudaStream_t stream);

}  // namespace dhp::sm90
