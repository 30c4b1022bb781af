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
// Constant-time: every row of V is read and written at addresses fixed by
// the public shape; a row's L_k only selects the value written (zero or the
// row). The scratch memory comes from a pool the library owns (one per
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

// Stream-ordered scratch memory from the library's pool on the current
// device; nullptr (and no sticky error) when it cannot be had.
void* scratch_alloc(size_t bytes, cudaStream_t stream);
void scratch_free(void* p, cudaStream_t stream);

}  // namespace dhp::sm90
