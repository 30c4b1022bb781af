// The decode kernel's combine step: split_combine.hpp says what and why.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <type_traits>

#include "kernels/common/ct.cuh"
#include "kernels/common/launch_util.hpp"
#include "kernels/sm90/chunk_merge.cuh"
#include "kernels/sm90/split_combine.hpp"
#include "kernels/sm90/tma.cuh"

namespace dhp::sm90 {
namespace {

constexpr int kWarpsPerBlock = kCombineWarpsPerBlock;  // split_combine.hpp

template <typename T, int E>
__device__ __forceinline__ void store_row(T* dst, const float (&x)[E]) {
  // E consecutive elements of 2 bytes: 4, 8 or 16 bytes, one store.
  static_assert(E == 2 || E == 4 || E == 8, "D / 32 elements per lane");
  uint32_t w[E / 2];
#pragma unroll
  for (int i = 0; i < E / 2; ++i) w[i] = chunk_merge::out_pair<T>(x[2 * i], x[2 * i + 1]);
  if constexpr (E == 2)
    *reinterpret_cast<uint32_t*>(dst) = w[0];
  else if constexpr (E == 4)
    *reinterpret_cast<uint2*>(dst) = make_uint2(w[0], w[1]);
  else
    *reinterpret_cast<uint4*>(dst) = make_uint4(w[0], w[1], w[2], w[3]);
}

// A lane's E consecutive fp32 values of one partial row (8, 16 or 32 bytes).
template <int E>
__device__ __forceinline__ void load_partial(const float* src, float (&x)[E]) {
  if constexpr (E == 2) {
    const float2 v = __ldg(reinterpret_cast<const float2*>(src));
    x[0] = v.x, x[1] = v.y;
  } else {
#pragma unroll
    for (int i = 0; i < E / 4; ++i) {
      const float4 v = __ldg(reinterpret_cast<const float4*>(src) + i);
      x[4 * i] = v.x, x[4 * i + 1] = v.y, x[4 * i + 2] = v.z, x[4 * i + 3] = v.w;
    }
  }
}

// Four blocks per SM asked for: without a minimum ptxas held the D = 64
// kernel to 32 registers and spilled 8 bytes (local memory, which dhp-audit
// reads as unknown data reaching the output address).
template <typename T, int D>
__global__ void __launch_bounds__(32 * kWarpsPerBlock, 4)
    split_combine(const __grid_constant__ CombineArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900  // the Hopper path's (griddepcontrol); no code elsewhere
  constexpr int E = D / 32;  // columns per lane
  // Grid (H_q / warps, S_q, B), a warp per head: the row's coordinates
  // without a 64-bit division (a call into a variable-time routine, which
  // dhp-audit rejects whatever the operands).
  const int lane = threadIdx.x % 32;
  const int32_t h = static_cast<int32_t>(blockIdx.x) * kWarpsPerBlock + static_cast<int32_t>(threadIdx.x / 32);
  const int32_t s = static_cast<int32_t>(blockIdx.y), b = static_cast<int32_t>(blockIdx.z);
  pdl::allow_next_grid();  // the next kernel's set-up may overlap this one (it waits before its accesses)
  if (h >= a.heads_q) return;  // public: position
  const int64_t prow = packed_partial_row(a, b, s, h);
  const int64_t unit = static_cast<int64_t>(a.batch) * a.part_heads * a.part_seqlen;  // rows per chunk
  pdl::wait_for_previous_grid();  // the partials: written by the attention kernel

  // The streaming merge of chunk_merge.cuh, chunks last first: the order
  // and the operations of a decode unit that merges its own chunks
  // (decode_local.cuh), so that a row gets the same bits from either.
  chunk_merge::Row row = chunk_merge::start();
  float acc[E];
#pragma unroll
  for (int e = 0; e < E; ++e) acc[e] = 0.0f;
  for (int32_t c = a.splits - 1; c >= 0; --c) {  // public trip count, fixed order
    const chunk_merge::Step k = chunk_merge::step(row, __ldg(a.lse_partial + c * unit + prow));
    float x[E];
    load_partial<E>(a.o_partial + (c * unit + prow) * D + lane * E, x);
#pragma unroll
    for (int e = 0; e < E; ++e) acc[e] = chunk_merge::fold(acc[e], k, x[e]);
  }
  const ct::Mask kept = chunk_merge::keep(row);
  const float inv_row_l = ct::ct_rcp(row.l);
#pragma unroll
  for (int e = 0; e < E; ++e) acc[e] = chunk_merge::out(acc[e], inv_row_l, kept);
  T* out_row = static_cast<T*>(a.o) + b * a.o_stride_batch + s * a.o_stride_seq + h * a.o_stride_head + lane * E;
  store_row<T, E>(out_row, acc);
  if (a.lse != nullptr && lane == 0)  // public
    a.lse[(static_cast<int64_t>(b) * a.heads_q + h) * a.seqlen_q + s] = chunk_merge::lse(row, kept);
#endif
}

template <typename T, int D>
cudaError_t launch_typed(const CombineArgs& a, bool overlap, cudaStream_t stream, int reserve_smem) {
  // Query rows and batch entries as grid dimensions: at most 65 535 each
  // (the batch by the API's limits, src/api/limits.hpp; S_q by the decode
  // path's, a few rows).
  if (a.seqlen_q > 65535 || a.batch > 65535) return cudaErrorNotSupported;
  const dim3 grid(static_cast<unsigned>((a.heads_q + kWarpsPerBlock - 1) / kWarpsPerBlock),
                  static_cast<unsigned>(a.seqlen_q), static_cast<unsigned>(a.batch));
  // The dynamic shared-memory cap past 48 KB: raised once per device to
  // the largest reservation asked for (a driver call, not per launch).
  static thread_local int capped_device = -1, cap = 48 * 1024;
  int device = 0;
  if (reserve_smem > 48 * 1024) {
    cudaError_t e = cudaGetDevice(&device);
    if (e == cudaSuccess && (device != capped_device || reserve_smem > cap)) {
      e = kernels::set_function_attribute(reinterpret_cast<const void*>(&split_combine<T, D>),
                                          kernels::FunctionAttribute::kMaxDynamicSharedBytes, reserve_smem);
      if (e == cudaSuccess) capped_device = device, cap = reserve_smem;
    }
    if (e != cudaSuccess) return e;
  }
  return kernels::launch_pdl(&split_combine<T, D>, grid, dim3(32 * kWarpsPerBlock), static_cast<size_t>(reserve_smem),
                             stream, overlap, a);
}

}  // namespace

cudaError_t launch_split_combine(const CombineArgs& a, bool bf16, int head_dim, bool overlap, cudaStream_t stream,
                                 int reserve_smem) {
  if (head_dim == 64)
    return bf16 ? launch_typed<__nv_bfloat16, 64>(a, overlap, stream, reserve_smem)
                : launch_typed<__half, 64>(a, overlap, stream, reserve_smem);
  if (head_dim == 128)
    return bf16 ? launch_typed<__nv_bfloat16, 128>(a, overlap, stream, reserve_smem)
                : launch_typed<__half, 128>(a, overlap, stream, reserve_smem);
  if (head_dim == 256)
    return bf16 ? launch_typed<__nv_bfloat16, 256>(a, overlap, stream, reserve_smem)
                : launch_typed<__half, 256>(a, overlap, stream, reserve_smem);
  return cudaErrorInvalidValue;
}

}  // namespace dhp::sm90
