// The zero-padded copy of V for secret key lengths (padding_scrub.hpp), and
// the library's scratch pool.
#include "kernels/sm90/padding_scrub.hpp"

#include <mutex>
#include <vector>

#include "kernels/common/ct.cuh"
#include "kernels/common/lengths.cuh"

// TEST-ONLY (scripts/length-timing-diag.sh): a public pattern in V's
// padding instead of zeros; never set in a shipped build.
#ifndef DHP_SCRUB_FILL
#define DHP_SCRUB_FILL 0
#endif

namespace dhp::sm90 {
namespace {

constexpr int kThreads = 256;

// One 16-byte chunk (8 elements) per thread and step: block (x, y) copies
// rows_per_block rows of sequence positions for (batch, kv head) pairs
// y, y + gridDim.y, ...  Every bound is public; the row's visibility only
// masks the value stored.
__global__ void __launch_bounds__(kThreads) scrub_v_padding(const __grid_constant__ kernels::ForwardArgs args,
                                                            int32_t chunks_per_row, uint4* __restrict__ dst) {
  const int32_t rows_per_block = kThreads / chunks_per_row;
  const int32_t c = static_cast<int32_t>(threadIdx.x) % chunks_per_row;
  const int32_t s = static_cast<int32_t>(blockIdx.x) * rows_per_block + static_cast<int32_t>(threadIdx.x) / chunks_per_row;
  if (s >= args.seqlen_k) return;  // public: past the padded length
  const int32_t pairs = args.batch * args.heads_kv;
  for (int32_t bh = blockIdx.y; bh < pairs; bh += gridDim.y) {  // public trip count
    const int32_t b = bh / args.heads_kv, h = bh % args.heads_kv;
    int32_t L_q = 0, L_k = 0;
    kernels::load_lengths(args, b, L_q, L_k);
    const uint16_t* src = static_cast<const uint16_t*>(args.v) + b * args.v_stride_batch +
                          static_cast<int64_t>(s) * args.v_stride_seq + h * args.v_stride_head + c * 8;
    uint4 x;
    asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(x.x), "=r"(x.y), "=r"(x.z), "=r"(x.w)
                 : "l"(src));
    const ct::Mask keep = ct::ct_mask_lt(s, L_k);
#if DHP_SCRUB_FILL  // TEST-ONLY timing diagnostic: padding gets a finite public pattern, not zeros
    uint32_t hs = static_cast<uint32_t>(s) * 0x9E3779B1u + static_cast<uint32_t>(c) * 0x85EBCA77u;
    uint32_t pat[4];
    for (int i = 0; i < 4; ++i) {
      hs ^= hs >> 15, hs *= 0x2C1B3C6Du, hs ^= hs >> 12;
      pat[i] = hs & 0xBBFFBBFFu;  // clears an exponent bit in each 16-bit half: finite, |x| < 1
    }
    x.x = (x.x & keep) | (pat[0] & ~keep), x.y = (x.y & keep) | (pat[1] & ~keep);
    x.z = (x.z & keep) | (pat[2] & ~keep), x.w = (x.w & keep) | (pat[3] & ~keep);
#else
    x.x &= keep, x.y &= keep, x.z &= keep, x.w &= keep;
#endif
    const int64_t row = (static_cast<int64_t>(b) * args.seqlen_k + s) * args.heads_kv + h;
    dst[row * chunks_per_row + c] = x;
  }
}

// The copy beside the attention (padding_scrub.hpp, CopyBesidePlan). Item i
// is chunk i % chunks_per_pair of pair i / chunks_per_pair: rows
// chunk * chunk_rows .. + chunk_rows (below S_k) of that pair, 16 bytes per
// thread and step, all kCopyLoads steps' loads in flight before the stores.
// Items [0, first_pairs * chunks) are dealt over the whole grid; the rest,
// in order, over CTAs 0 .. beside_ctas - 1, which stay while the attention
// runs. After each item every thread fences its stores (GPU scope, and
// towards the async proxy that the attention's TMA reads through), the CTA
// meets at a barrier, and thread 0 adds 1 to the pair's counter with
// release semantics. Every trip count, address and counter is public.
constexpr int kCopyThreads = 1024, kCopyLoads = kCopyBesideChunkBytes / (16 * kCopyThreads);
static_assert(kCopyLoads * 16 * kCopyThreads == kCopyBesideChunkBytes, "a chunk is whole thread steps");

__device__ __forceinline__ void copy_item(const kernels::ForwardArgs& args, const CopyBesidePlan& plan,
                                          int32_t chunks_per_row, uint4* __restrict__ dst, int32_t item) {
  const int32_t pair = item / plan.chunks_per_pair, chunk = item % plan.chunks_per_pair;
  const int32_t b = pair / args.heads_kv, h = pair % args.heads_kv;
  int32_t L_q = 0, L_k = 0;
  kernels::load_lengths(args, b, L_q, L_k);
  uint4 x[kCopyLoads];
  int32_t row[kCopyLoads], col[kCopyLoads];
#pragma unroll
  for (int j = 0; j < kCopyLoads; ++j) {
    const int32_t e = j * kCopyThreads + static_cast<int32_t>(threadIdx.x);
    row[j] = chunk * plan.chunk_rows + e / chunks_per_row, col[j] = e % chunks_per_row;
    if (row[j] < args.seqlen_k) {  // public: past the padded length
      const uint16_t* src = static_cast<const uint16_t*>(args.v) + b * args.v_stride_batch +
                            static_cast<int64_t>(row[j]) * args.v_stride_seq + h * args.v_stride_head + col[j] * 8;
      asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
                   : "=r"(x[j].x), "=r"(x[j].y), "=r"(x[j].z), "=r"(x[j].w)
                   : "l"(src));
    }
  }
#pragma unroll
  for (int j = 0; j < kCopyLoads; ++j) {
    if (row[j] < args.seqlen_k) {  // public
      const ct::Mask keep = ct::ct_mask_lt(row[j], L_k);  // secret L_k: selects the value only
      uint4 y;
      y.x = ct::ct_and_mask(keep, x[j].x), y.y = ct::ct_and_mask(keep, x[j].y);
      y.z = ct::ct_and_mask(keep, x[j].z), y.w = ct::ct_and_mask(keep, x[j].w);
      dst[(static_cast<int64_t>(pair) * args.seqlen_k + row[j]) * chunks_per_row + col[j]] = y;
    }
  }
}

__global__ void __launch_bounds__(kCopyThreads) copy_v_beside(const __grid_constant__ kernels::ForwardArgs args,
                                                              const CopyBesidePlan plan, int32_t chunks_per_row,
                                                              uint4* __restrict__ dst, uint32_t* __restrict__ counters) {
  // Every CTA lets the attention launch as soon as it runs: the attention's
  // CTAs then start only once all of these have started, so none of its
  // waits can be on a CTA that is not running.
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  const int32_t first_items = plan.first_pairs * plan.chunks_per_pair;
  const int32_t items = args.batch * args.heads_kv * plan.chunks_per_pair;
  const int32_t cta = static_cast<int32_t>(blockIdx.x), grid = static_cast<int32_t>(gridDim.x);
  auto done = [&](int32_t item) {
    asm volatile("fence.proxy.async.global;" ::: "memory");
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {  // public
      uint32_t* c = counters + item / plan.chunks_per_pair;
      asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(c) : "memory");
    }
  };
  for (int32_t i = cta; i < first_items; i += grid) {  // public trip count
    copy_item(args, plan, chunks_per_row, dst, i);
    done(i);
  }
  if (cta >= plan.beside_ctas) return;  // public: the CTAs that stay
  for (int32_t i = first_items + cta; i < items; i += plan.beside_ctas) {  // public trip count
    copy_item(args, plan, chunks_per_row, dst, i);
    done(i);
  }
}

}  // namespace

cudaError_t launch_copy_beside(const kernels::ForwardArgs& a, int head_dim, const CopyBesidePlan& plan, void* dst,
                               uint32_t* counters, int sms, cudaStream_t stream) {
  const int64_t pairs = static_cast<int64_t>(a.batch) * a.heads_kv;
  if (const cudaError_t err = cudaMemsetAsync(counters, 0, 4 * pairs, stream); err != cudaSuccess) return err;
  const int64_t first_items = static_cast<int64_t>(plan.first_pairs) * plan.chunks_per_pair;
  const int64_t grid = first_items > sms ? sms : first_items > plan.beside_ctas ? first_items : plan.beside_ctas;
  copy_v_beside<<<static_cast<unsigned>(grid), kCopyThreads, 0, stream>>>(a, plan, head_dim / 8,
                                                                           static_cast<uint4*>(dst), counters);
  return cudaGetLastError();
}

cudaError_t launch_padding_scrub(const kernels::ForwardArgs& a, int head_dim, void* dst, cudaStream_t stream) {
  const int32_t chunks_per_row = head_dim / 8;
  const int32_t rows_per_block = kThreads / chunks_per_row;
  const int64_t pairs = static_cast<int64_t>(a.batch) * a.heads_kv;
  const dim3 grid(static_cast<unsigned>((a.seqlen_k + rows_per_block - 1) / rows_per_block),
                  static_cast<unsigned>(pairs < 65535 ? pairs : 65535));
  scrub_v_padding<<<grid, kThreads, 0, stream>>>(a, chunks_per_row, static_cast<uint4*>(dst));
  return cudaGetLastError();
}

void* scratch_alloc(size_t bytes, cudaStream_t stream) {
  static std::mutex mutex;
  static std::vector<cudaMemPool_t> pools;  // per device; created on first use
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return nullptr;
  cudaMemPool_t pool = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (pools.size() <= static_cast<size_t>(device)) pools.resize(device + 1, nullptr);
    if (pools[device] == nullptr) {
      cudaMemPoolProps props = {};
      props.allocType = cudaMemAllocationTypePinned;
      props.handleTypes = cudaMemHandleTypeNone;
      props.location.type = cudaMemLocationTypeDevice;
      props.location.id = device;
      if (cudaMemPoolCreate(&pools[device], &props) != cudaSuccess) {
        (void)cudaGetLastError();
        pools[device] = nullptr;
        return nullptr;
      }
      // Keep freed memory in the pool: a steady workload allocates once.
      uint64_t keep = UINT64_MAX;
      (void)cudaMemPoolSetAttribute(pools[device], cudaMemPoolAttrReleaseThreshold, &keep);
    }
    pool = pools[device];
  }
  void* p = nullptr;
  if (cudaMallocFromPoolAsync(&p, bytes, pool, stream) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return p;
}

void scratch_free(void* p, cudaStream_t stream) {
  if (p != nullptr) (void)cudaFreeAsync(p, stream);
}

}  // namespace dhp::sm90
